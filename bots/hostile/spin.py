#!/usr/bin/env python3
"""spin: reads the first request, then spins the CPU forever without answering.

The farm should time the bot out on its first move (the hero crashes), hold it to
its CPU limit meanwhile, and kill it at the end of the match.
"""

from stdio_bot import log, play


def on_request(_index, _state):
    log("spin: got the first request; spinning forever")
    while True:
        pass


play(on_request)
