#!/usr/bin/env python3
"""Example Ostibot bot for matchfarm: every adventurer wanders at random.

It speaks the farm's stdio protocol itself (no harness); the rules and the JSON
shapes are in /work/shared/games/ostibot.md ("I/O JSON", "Settled questions").

  * The farm writes one request per line on stdin:
      {"call": "shop", "seq": n, "input": {"you": 1, "round": 1, "rules": {...},
                                            "teamsGold": {"1": 3, ...},
                                            "adventurers": [...], "state": ...}}
      {"call": "play", "seq": n, "input": {"you": 1, "rules": {...},
                                            "gameState": {"turn": 7, "map": [...],
                                                          "entities": [...], ...},
                                            "state": ...}}
  * For every line the bot writes exactly one reply line on stdout and flushes:
      shop: {"seq": n, "actions": [{"buy": {"adventurerId": "a1",
                                            "itemType": "rusty_sword", "equip": true}}]}
      play: {"seq": n, "actions": [{"adventurerId": "a1", "move": {"direction": "LEFT"}}]}
    "seq" is echoed when the request has one. A reply without "state" keeps the
    team's state as it was; this bot needs none.
  * stderr is the bot's log; write anything you like there, never to stdout.
  * When stdin closes (EOF) the match is over: exit with status 0.

Strategy: shop buys a Rusty Sword for one unarmed adventurer when the bank can
pay for it. play drinks a potion when an adventurer is below half hp; otherwise
it steps in a random direction that costs no block damage (not into a wall, an
intact spawner, the map's edge, or a health tile it cannot pay for). Moving into
a chest, vase, door, portal or another adventurer hits it (or hands a teammate
our gold), as the rules say.

Randomness is seeded from FARM_SEED (this bot's own seed, derived from the
match seed) and FARM_SEAT (this bot's seat, from 0), so the same match plays the same way every time.

Copy this file and replace `choose_shop` and `choose_play` with something smarter.
Standard library only.
"""

import json
import os
import random
import sys

DIRECTIONS = {"UP": (0, -1), "DOWN": (0, 1), "LEFT": (-1, 0), "RIGHT": (1, 0)}
# The fallback when input.rules lacks a key.
DEFAULT_SWORD_COST = 2
DEFAULT_HEAL_COST = 2
CONSUMABLES = ("health_potion", "greater_health_potion")


def log(message):
    """Write one line to the bot's log (stderr). Never log to stdout."""
    print(f"[ostibot random_bot.py] {message}", file=sys.stderr, flush=True)


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
    # Mixing in the seat makes the bots of one match play differently.
    return random.Random((seed * 1_000_003 + seat) % 2**64)


def choose_shop(inp, rng):
    """Shop actions: a Rusty Sword (equipped) for one unarmed adventurer, if affordable."""
    rules = inp.get("rules") or {}
    sword = (rules.get("items") or {}).get("rusty_sword") or {}
    cost = sword.get("cost", DEFAULT_SWORD_COST)
    bank = (inp.get("teamsGold") or {}).get(str(inp["you"]), 0)
    unarmed = [a for a in inp.get("adventurers") or []
               if not (a.get("equipment") or {}).get("weapon")]
    if bank < cost or not unarmed:
        return []
    buyer = rng.choice(unarmed)
    return [{"buy": {"adventurerId": buyer["id"], "itemType": "rusty_sword", "equip": True}}]


def blocked(game, x, y, adventurer, heal_cost):
    """Whether stepping to (x, y) would cost block damage."""
    if not (0 <= y < game["height"] and 0 <= x < game["width"]):
        return True  # out of bounds counts as a wall
    cell = game["map"][y][x]
    if cell == "#" or cell.isdigit():  # wall or intact spawner
        return True
    if cell == "H":  # a health tile heals only who can pay
        return adventurer.get("gold", 0) < heal_cost
    return False


def choose_play(inp, rng):
    """One action per own adventurer: a potion when hurt, else a random safe step."""
    game = inp["gameState"]
    heal_cost = (inp.get("rules") or {}).get("healCost", DEFAULT_HEAL_COST)
    actions = []
    for adventurer in game.get("entities") or []:
        if adventurer.get("type") != "adventurer" or adventurer.get("team") != inp["you"]:
            continue
        potions = [item for item in adventurer.get("inventory") or []
                   if item.get("itemType") in CONSUMABLES]
        if potions and adventurer["hp"] <= adventurer.get("maxHp", 120) / 2:
            actions.append({"adventurerId": adventurer["id"],
                            "use": {"itemId": potions[0]["id"], "reason": "hurt"}})
            continue
        x, y = adventurer["x"], adventurer["y"]
        safe = [name for name, (dx, dy) in DIRECTIONS.items()
                if not blocked(game, x + dx, y + dy, adventurer, heal_cost)]
        if safe:  # boxed in: stay idle (no entry) rather than walk into a wall
            actions.append({"adventurerId": adventurer["id"],
                            "move": {"direction": rng.choice(safe), "reason": "random"}})
    return actions


def answer(line, rng):
    """The reply object for one request line; never raises."""
    request = None
    try:
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("input"), dict):
            raise ValueError("not a request object with an input")
        call = request.get("call")
        if call == "shop":
            actions = choose_shop(request["input"], rng)
        elif call == "play":
            actions = choose_play(request["input"], rng)
        else:
            raise ValueError(f"unknown call {call!r}")
        reply = {"actions": actions}
    except Exception as error:  # a bad line must never kill the bot
        log(f"bad request ({error!r}); replying with no actions")
        reply = {"actions": []}
    # Echo the call's seq (first, like the spec's examples) so the farm can
    # match the reply to its call. No "state": the team's state stays as it is.
    if isinstance(request, dict) and "seq" in request:
        reply = {"seq": request["seq"], **reply}
    return reply


def main():
    # Read stdin as UTF-8 whatever the locale, and never die on a bad byte: it
    # becomes U+FFFD and the line is answered as a bad request.
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    rng = make_rng()
    # One request per line, until the farm closes stdin (end of the match).
    for line in sys.stdin:
        # Exactly one reply line per request, flushed at once.
        print(json.dumps(answer(line, rng), separators=(",", ":")), flush=True)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # The farm stopped reading our replies: the match is over. Point stdout
        # at /dev/null so Python does not complain while flushing at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
