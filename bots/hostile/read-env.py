#!/usr/bin/env python3
"""read-env: on the first request, logs the names of its environment variables (never
their values), then plays correctly.

A bot must find only what the game gives it (FARM_SEED, FARM_SEAT, a PATH, a locale,
a home): nothing of the worker's own environment, such as its broker URL or storage
keys. The log line is `read-env: NAME NAME ...`, sorted.
"""

import os

from stdio_bot import log, play


def on_request(index, _state):
    if index == 0:
        log("read-env: " + " ".join(sorted(os.environ)))


play(on_request)
