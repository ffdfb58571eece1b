#!/usr/bin/env python3
"""crash-mid: answers 5 requests with a valid move, then exits with status 2.

The farm should record 5 replies, then a dead bot on the 6th request: the hero
crashes and the match goes on.
"""

import sys

from stdio_bot import log, play

ANSWERS = 5


def on_request(index, _state):
    if index == ANSWERS:
        log(f"crash-mid: answered {ANSWERS} requests, exiting with status 2")
        sys.exit(2)


play(on_request)
