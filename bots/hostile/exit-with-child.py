#!/usr/bin/env python3
"""exit-with-child: answers 3 requests, then exits with status 3 while a process it
left behind still holds its stdout.

The child is double-forked into a session of its own, ignores SIGTERM and sleeps
with the bot's stdout open, so the bot's output never ends by itself: the farm must
go by the bot's own exit. It should crash the hero at its 4th move at once (not time
it out), record exit status 3, and end the child with the bot.
"""

import os
import signal
import sys
import time

from stdio_bot import log, play

ANSWERS = 3
STATUS = 3


def leave_child_holding_stdout():
    if os.fork() != 0:
        os.wait()
        return
    # The middle process: a new session, one more fork, and gone.
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(3600)


def on_request(index, _state):
    if index == ANSWERS:
        leave_child_holding_stdout()
        log(f"exit-with-child: answered {ANSWERS} requests, exiting with status {STATUS}; a child holds stdout")
        sys.exit(STATUS)


play(on_request)
