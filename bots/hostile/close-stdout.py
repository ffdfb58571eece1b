#!/usr/bin/env python3
"""close-stdout: answers 3 requests, then closes its stdout and stays, never exiting.

It can no longer answer: the farm should crash the hero at its 4th move at once, as
if it had exited, in every sandbox. It runs on, silent, until the match ends and it
is killed (signal 9, not an early exit).
"""

import os
import sys
import time

from stdio_bot import log, play

ANSWERS = 3


def on_request(index, _state):
    if index == ANSWERS:
        log(f"close-stdout: answered {ANSWERS} requests, closing stdout and staying")
        os.close(sys.stdout.fileno())
        while True:
            time.sleep(3600)


play(on_request)
