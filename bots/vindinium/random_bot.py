#!/usr/bin/env python3
"""Example Vindinium bot for matchfarm: a random walker.

Protocol (the farm's `stdio` transport):
  * The farm writes one JSON state document per line on stdin.
  * For every line the bot writes exactly one reply line on stdout and flushes:
    North, South, East, West or Stay.
  * stderr is the bot's log; write anything you like there, never to stdout.
  * When stdin closes (EOF) the match is over: exit with status 0.

Randomness is seeded from FARM_SEED (this bot's own seed, derived from the
match seed) and FARM_SEAT (this bot's seat, from 0), so the same match plays the same way every time.

Copy this file and replace `choose_move` with something smarter.
Standard library only.
"""

import json
import os
import random
import sys

# The moves a random bot picks from. Like the original random bot, it never
# chooses "Stay" on purpose; "Stay" is only the safe reply to a bad request.
DIRECTIONS = ["North", "South", "East", "West"]
SAFE_REPLY = "Stay"


def log(message):
    """Write one line to the bot's log (stderr). Never log to stdout."""
    print(f"[vindinium random_bot.py] {message}", file=sys.stderr, flush=True)


def env_u64(name):
    """Read an unsigned 64-bit integer from the environment; 0 if missing or bad."""
    try:
        value = int(os.environ.get(name, "").strip())
    except ValueError:
        return 0
    return value if 0 <= value < 2**64 else 0


def make_rng():
    """A random generator seeded from the match seed and this bot's seat."""
    seed = env_u64("FARM_SEED")
    seat = env_u64("FARM_SEAT")
    log(f"seed {seed}, seat {seat}")
    # Any deterministic combination will do; mixing in the seat makes the
    # bots of one match play differently from each other.
    return random.Random((seed * 1_000_003 + seat) % 2**64)


def choose_move(state, rng):
    """Pick this turn's move from a parsed state document.

    Useful fields (see the Vindinium rules, "Bot I/O"):
      state["hero"]["id"], state["hero"]["pos"]   # pos: {"x": row, "y": column}
      state["game"]["board"]["size"]              # the board is size x size
      state["game"]["board"]["tiles"]             # 2 characters per tile, row by row
      state["game"]["heroes"]                     # all four heroes
    """
    return rng.choice(DIRECTIONS)


def main():
    # Read stdin as UTF-8 whatever the locale, and never die on a bad byte: it
    # becomes U+FFFD and the line is answered as a bad request.
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    rng = make_rng()
    first_turn = True
    # One request per line, until the farm closes stdin (end of the match).
    for line in sys.stdin:
        reply = SAFE_REPLY
        try:
            state = json.loads(line)
            if not isinstance(state, dict):
                raise ValueError("the state is not a JSON object")
            if first_turn:
                hero = state.get("hero") or {}
                log(f"playing hero id {hero.get('id')} at {hero.get('pos')}")
                first_turn = False
            reply = choose_move(state, rng)
        except Exception as error:  # a bad line must never kill the bot
            log(f"bad request ({error!r}); replying {SAFE_REPLY}")
        # Exactly one reply line per request, flushed at once.
        print(reply, flush=True)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # The farm stopped reading our replies: the match is over. Point stdout
        # at /dev/null so Python does not complain while flushing at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
