"""The well-behaved part of every hostile bot: the Vindinium stdio protocol.

Each hostile bot (one file beside this one) plays correctly except for its one
misbehaviour: it reads one JSON state per line on stdin and answers one direction
per line on stdout, flushed at once; stderr is its log; EOF on stdin ends it with
status 0. Moves are random, seeded from FARM_SEED and FARM_SEAT like the example
bots, so a run can be repeated.

Standard library only (the images run Debian's python3 on a read-only root).
"""

import json
import os
import random
import sys

DIRECTIONS = ["North", "South", "East", "West"]
SAFE_REPLY = "Stay"

def log(message):
    """One line on stderr, the bot's log. Never on stdout."""
    print(message, file=sys.stderr, flush=True)


def env_u64(name):
    """An unsigned 64-bit integer from the environment; 0 when missing or bad."""
    try:
        value = int(os.environ.get(name, "").strip())
    except ValueError:
        return 0
    return value if 0 <= value < 2**64 else 0


def make_rng():
    """A generator seeded from the match seed and the seat, as the example bots do."""
    return random.Random((env_u64("FARM_SEED") * 1_000_003 + env_u64("FARM_SEAT")) % 2**64)


def requests():
    """Yield (index, parsed state or None) for each request line until EOF."""
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    for index, line in enumerate(sys.stdin):
        try:
            state = json.loads(line)
        except ValueError:
            state = None
        yield index, state


def move(state, rng):
    """A valid reply: a random direction, or Stay for a line that is not a state."""
    return rng.choice(DIRECTIONS) if isinstance(state, dict) else SAFE_REPLY


def reply(line):
    """Write one reply line and flush it at once."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def play(on_request=None):
    """Answer every request correctly, calling `on_request(index, state)` first.

    The hook is where a bot misbehaves; whatever it returns is ignored. Exits 0 on
    EOF and quietly when the farm stops reading (broken pipe).
    """
    rng = make_rng()
    try:
        for index, state in requests():
            if on_request is not None:
                on_request(index, state)
            reply(move(state, rng))
    except BrokenPipeError:
        # The farm stopped reading: the match is over. Silence the exit-time flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)
