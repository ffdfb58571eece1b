#!/usr/bin/env python3
"""Example Skookum Botwars bot for matchfarm: every botlet moves at random.

Protocol (the farm's `stdio` transport):
  * The farm writes one JSON request per line on stdin:
      {"player": "r" or "b",
       "state": {"rows": 20, "cols": 20, "maxTurns": 100, "turnsElapsed": N,
                 "grid": "<rows*cols characters of . r b * x X>",
                 "p1": {...}, "p2": {...}, "GameId": n},
       "gameId": n}
  * For every line the bot writes exactly one reply line on stdout and flushes:
    a JSON array of moves such as [{"from":21,"to":22}].
  * stderr is the bot's log; write anything you like there, never to stdout.
  * When stdin closes (EOF) the match is over: exit with status 0.

The grid is row by row: cell index = y * cols + x (x is the column). Your
botlets are the cells holding your "player" letter. A botlet may stay
(from == to) or move to one of its 4 neighbours; there is no wrap-around.
On turn 1 you have no botlets yet, so the reply is [].

Randomness is seeded from FARM_SEED (this bot's own seed, derived from the
match seed) and FARM_SEAT (this bot's seat, from 0), so the same match plays the same way every time.

Copy this file and replace `choose_moves` with something smarter.
Standard library only.
"""

import json
import os
import random
import sys

# The reply to a request the bot cannot understand: no moves (everyone stays).
SAFE_REPLY = "[]"


def log(message):
    """Write one line to the bot's log (stderr). Never log to stdout."""
    print(f"[botwars random_bot.py] {message}", file=sys.stderr, flush=True)


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
    # Any deterministic combination will do; mixing in the seat makes the two
    # bots of one match play differently from each other.
    return random.Random((seed * 1_000_003 + seat) % 2**64)


def parse_request(line):
    """Parse and check one request; return (player, rows, cols, grid).

    Raises ValueError (or another exception) when the request is malformed.
    """
    request = json.loads(line)
    player = request["player"]
    state = request["state"]
    rows, cols, grid = state["rows"], state["cols"], state["grid"]
    if player not in ("r", "b"):
        raise ValueError(f"unknown player {player!r}")
    for size in (rows, cols):
        # (bool is a kind of int in Python, but `true` is not a grid size)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise ValueError(f"bad grid size {rows!r} x {cols!r}")
    if not isinstance(grid, str) or len(grid) != rows * cols:
        raise ValueError(f"the grid is not {rows} x {cols} characters")
    return player, rows, cols, grid


def neighbours(index, rows, cols):
    """The cells a botlet at `index` may go to: itself (stay) and its in-grid 4-neighbours."""
    y, x = divmod(index, cols)
    cells = [index]  # staying is always allowed
    if y > 0:
        cells.append(index - cols)  # up
    if y < rows - 1:
        cells.append(index + cols)  # down
    if x > 0:
        cells.append(index - 1)  # left (not across the row edge)
    if x < cols - 1:
        cells.append(index + 1)  # right (not across the row edge)
    return cells


def choose_moves(player, rows, cols, grid, rng):
    """One move per own botlet, each picked uniformly among staying and the neighbours."""
    moves = []
    for index, cell in enumerate(grid):
        if cell == player:
            moves.append({"from": index, "to": rng.choice(neighbours(index, rows, cols))})
    return moves


def main():
    # Read stdin as UTF-8 whatever the locale, and never die on a bad byte: it
    # becomes U+FFFD and the line is answered as a bad request.
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    rng = make_rng()
    # One request per line, until the farm closes stdin (end of the match).
    for line in sys.stdin:
        reply = SAFE_REPLY
        try:
            player, rows, cols, grid = parse_request(line)
            reply = json.dumps(choose_moves(player, rows, cols, grid, rng), separators=(",", ":"))
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
