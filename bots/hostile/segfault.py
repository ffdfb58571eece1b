#!/usr/bin/env python3
"""segfault: answers 3 requests with valid moves, then sends itself SIGSEGV.

A process that signals itself dies as it would from a real fault, in a container as
outside one: the farm must see the same crash in every sandbox (a bot that is PID 1
of its container would survive its own signal and play on).
"""

import os
import signal

from stdio_bot import log, play


def on_request(index, _state):
    if index == 3:
        log("segfault: answered 3 requests, sending myself SIGSEGV")
        os.kill(os.getpid(), signal.SIGSEGV)


play(on_request)
