#!/usr/bin/env python3
"""stderr-flood: plays correctly while a thread writes to stderr as fast as it can.

The farm keeps only the first part of a bot's log (a cap), must keep draining
stderr so the bot never blocks on it, and the bot plays a normal match.
"""

import os
import sys
import threading

from stdio_bot import play

LINE = b"stderr-flood: " + b"x" * 1009 + b"\n"  # 1024 bytes
LINES_PER_WRITE = 64


def flood():
    err = sys.stderr.fileno()
    block = LINE * LINES_PER_WRITE
    try:
        while True:
            os.write(err, block)
    except OSError:
        pass  # stderr closed: nothing left to flood


threading.Thread(target=flood, name="flood", daemon=True).start()
play()
