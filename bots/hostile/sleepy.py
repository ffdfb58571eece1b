#!/usr/bin/env python3
"""sleepy: answers every request correctly, but only after sleeping 3 s.

Vindinium's deadline is 1 s, so every reply is late: the hero crashes at the first
move (after the startup grace), and the late replies must not be taken as answers
to later requests.
"""

import time

from stdio_bot import log, play

DELAY_S = 3.0


def on_request(index, _state):
    if index == 0:
        log(f"sleepy: sleeping {DELAY_S:g} s before every reply")
    time.sleep(DELAY_S)


play(on_request)
