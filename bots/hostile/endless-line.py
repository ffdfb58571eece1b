#!/usr/bin/env python3
"""endless-line: on the first request, writes to stdout forever with no newline.

The farm must cap the length of a reply line (never buffer it all), time the bot
out (its hero crashes) and kill it at the end of the match.
"""

import os
import sys

from stdio_bot import log, play

CHUNK = b"North" * 13107  # 65535 bytes, and never a newline


def on_request(_index, _state):
    log("endless-line: writing to stdout forever with no newline")
    out = sys.stdout.fileno()
    written = 0
    try:
        while True:
            written += os.write(out, CHUNK)
    except BrokenPipeError:
        log(f"endless-line: stdout closed after {written} bytes")
        sys.exit(0)


play(on_request)
