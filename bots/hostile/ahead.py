#!/usr/bin/env python3
"""ahead: answers ahead of the questions: a thread writes 20,000 `Stay` replies as
fast as the farm takes them, from the start, while the bot reads its requests and
answers nothing itself.

Replies are taken in order, so every move of its match is one of those `Stay`s, in
time (status ok). Far more is written than it is asked for, so at the end of the
match tens of kilobytes are still on their way: that is stdout, never log. Its log
(stderr) must hold only the line `ahead: writing 20000 replies ahead`.
"""

import os
import sys
import threading

from stdio_bot import log

REPLIES = 20_000


def write_ahead():
    try:
        for _ in range(REPLIES):
            sys.stdout.write("Stay\n")
            sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


log(f"ahead: writing {REPLIES} replies ahead")
threading.Thread(target=write_ahead, daemon=True).start()
for _request in sys.stdin:
    pass
sys.exit(0)
