"""Wanderer: a Skookum Botwars bot for matchfarm's python layout.

Protocol (stdio): the farm writes one JSON request per line on stdin,
    {"player": "r"|"b", "state": {"rows": R, "cols": C, "grid": "<R*C chars>", ...}, ...}
and reads exactly one line back per request, flushed: a JSON array of moves
[{"from": i, "to": j}, ...]. The grid is row-major (cell i is row i // C,
column i % C); the cells holding our letter are our botlets, and each may
stay (to == from) or step to one of its 4 neighbours inside the grid.
`[]` is always legal: it is the reply to any line we cannot read.
At end of input the match is over and we exit 0. Logs go to stderr only.

Strategy: every botlet picks uniformly among staying and its in-grid
neighbours, with a xorshift64 generator seeded from FARM_SEED and FARM_SEAT.
"""
import json
import os
import sys

MASK = (1 << 64) - 1


class XorShift64:
    """Marsaglia's xorshift64: tiny, deterministic, good enough for wandering."""

    def __init__(self, seed, seat):
        state = (seed * 0x9E3779B97F4A7C15 + seat + 1) & MASK
        self.state = state or 0x2545F4914F6CDD1D  # the state must never be 0

    def below(self, n):
        x = self.state
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        self.state = x
        return x % n


def env_int(name):
    try:
        return int(os.environ.get(name, "0")) & MASK
    except ValueError:
        return 0


def read_request(line):
    """(player, rows, cols, grid) of a request line; ValueError if malformed."""
    request = json.loads(line)
    if not isinstance(request, dict) or not isinstance(request.get("state"), dict):
        raise ValueError("not a request object")
    player, state = request.get("player"), request["state"]
    rows, cols, grid = state.get("rows"), state.get("cols"), state.get("grid")
    if player not in ("r", "b"):
        raise ValueError(f"bad player {player!r}")
    if not all(type(n) is int and n > 0 for n in (rows, cols)):
        raise ValueError(f"bad size {rows!r} x {cols!r}")
    if not isinstance(grid, str) or len(grid) != rows * cols:
        raise ValueError("the grid does not match its size")
    return player, rows, cols, grid


def wander(player, rows, cols, grid, rng):
    moves = []
    for cell, content in enumerate(grid):
        if content != player:
            continue
        row, col = divmod(cell, cols)
        options = [cell]
        if row > 0:
            options.append(cell - cols)
        if row < rows - 1:
            options.append(cell + cols)
        if col > 0:
            options.append(cell - 1)
        if col < cols - 1:
            options.append(cell + 1)
        moves.append({"from": cell, "to": options[rng.below(len(options))]})
    return moves


def main():
    rng = XorShift64(env_int("FARM_SEED"), env_int("FARM_SEAT"))
    stdin = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)
    for line in stdin:
        try:
            reply = json.dumps(wander(*read_request(line), rng), separators=(",", ":"))
        except Exception as error:  # a bad line must never end the match
            print(f"wanderer: bad request: {error}", file=sys.stderr, flush=True)
            reply = "[]"
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
