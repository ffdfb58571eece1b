#!/usr/bin/env python3
"""memory-bomb: on the first request, allocates memory until the OOM killer kills it.

Blocks of 16 MiB are filled (so every page is touched, not just reserved) and kept.
Under a 512 MiB limit with no swap the kernel kills the bot: the container ends
with OOMKilled=true, the hero crashes and the match goes on.
"""

from stdio_bot import log, play

BLOCK = 16 << 20


def on_request(_index, _state):
    log("memory-bomb: allocating 16 MiB blocks until killed")
    blocks = []
    while True:
        blocks.append(b"\xa5" * BLOCK)  # filled: every page touched
        if len(blocks) % 8 == 0:
            log(f"memory-bomb: holding {len(blocks) * 16} MiB")


play(on_request)
