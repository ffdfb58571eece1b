#!/usr/bin/env python3
"""fd-hog: on the first request, logs its open-file and core-size limits, opens files
until it may open no more, closes them, then plays correctly.

The log lines are `fd-hog: nofile SOFT HARD core SOFT HARD` (-1: unlimited) and
`fd-hog: opened N files, then <error>`. The farm holds every bot to a fixed number of
open files and no core dumps, so N stays under the limit and nothing is dumped.
"""

import os
import resource

from stdio_bot import log, play


def hog():
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    core = resource.getrlimit(resource.RLIMIT_CORE)
    log(f"fd-hog: nofile {nofile[0]} {nofile[1]} core {core[0]} {core[1]}")
    opened = []
    try:
        # Bounded even without a limit: 100,000 descriptors are enough to tell.
        while len(opened) < 100_000:
            opened.append(os.open("/dev/null", os.O_RDONLY))
        log(f"fd-hog: opened {len(opened)} files, then stopped")
    except OSError as error:
        log(f"fd-hog: opened {len(opened)} files, then {error}")
    finally:
        for fd in opened:
            os.close(fd)


def on_request(index, _state):
    if index == 0:
        hog()


play(on_request)
