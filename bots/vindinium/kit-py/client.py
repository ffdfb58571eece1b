#!/usr/bin/env python3
"""A Vindinium starter kit in Python: a client of the original Vindinium server's
HTTP API, written the way the original kits are, which runs unchanged against
vindinium.org's API and against matchfarm's (transport "vindinium-server").

    python3 client.py [KEY] [training|arena] [GAMES] [SERVER_URL] [--trace]

(the original kits' arguments, each optional). It starts a game (POST /api/training
or /api/arena with its key), then posts one direction to the state's playUrl per
turn until the game is finished, GAMES times (1 by default). The key and the server
default to what matchfarm gives a bot, FARM_VINDINIUM_KEY and FARM_VINDINIUM_SERVER;
the mode to arena. The moves are bot.py's: replace its choose_move.
"""

import argparse
import os
import sys

import requests

from bot import RandomBot

# An arena start waits for three other heroes; a move for the three heroes after
# yours (1 s each on the original server).
START_TIMEOUT_S = 600
MOVE_TIMEOUT_S = 15


def log(*words):
    print(*words, file=sys.stderr, flush=True)


def post(session, url, form, timeout, trace):
    """The state the server answers `form` with, or None when it refuses or fails
    (the game is over for this client, as in the original kits)."""
    try:
        answer = session.post(url, data=form, timeout=timeout)
    except requests.RequestException as error:
        log(f"error: {url}: {error}")
        return None
    if answer.status_code != 200:
        log(f"refused: {answer.status_code} {answer.text!r}")
        return None
    if trace:
        log("state", answer.text)
    return answer.json()


def play(session, args, bot):
    """One game, from its start request to its finished state."""
    form = {"key": args.key}
    if args.mode == "training":
        form["turns"] = str(args.turns)
        if args.map:
            form["map"] = args.map
    state = post(session, f"{args.server}/api/{args.mode}", form, START_TIMEOUT_S, args.trace)
    if state is None:
        return
    log(f"playing {state['viewUrl']} as hero {state['hero']['id']}")
    while not state["game"]["finished"]:
        direction = bot.choose_move(state)
        state = post(session, state["playUrl"], {"dir": direction}, MOVE_TIMEOUT_S, args.trace)
        if state is None:
            return
    hero = state["hero"]
    log(f"finished: turn {state['game']['turn']}, gold {hero['gold']}, crashed {hero['crashed']}")


MODES = ("training", "arena")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], usage="%(prog)s [KEY] [training|arena] [GAMES] [SERVER_URL] [--trace]"
    )
    parser.add_argument("words", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=300, help="training: turns per hero (300)")
    parser.add_argument("--map", help="training: m1 to m6 (a random map if not given)")
    parser.add_argument("--trace", action="store_true", help="log every state received to stderr, a line each")
    args = parser.parse_args()
    words = list(args.words)

    def take(fits):
        """The next word, if it is of its kind: each is optional, in this order."""
        return words.pop(0) if words and fits(words[0]) else None

    args.key = take(lambda word: word not in MODES and not word.isdigit()) or os.environ.get("FARM_VINDINIUM_KEY")
    args.mode = take(lambda word: word in MODES) or "arena"
    args.games = int(take(str.isdigit) or 1)
    args.server = take(lambda word: "://" in word) or os.environ.get("FARM_VINDINIUM_SERVER", "http://vindinium.org")
    if words:
        parser.error(f"unexpected {' '.join(words)!r}")
    if not args.key:
        parser.error("no key: give it first, or set FARM_VINDINIUM_KEY")
    args.server = args.server.rstrip("/")
    bot = RandomBot(int(os.environ.get("FARM_SEED", "0")))
    with requests.Session() as session:
        for _ in range(args.games):
            play(session, args, bot)


if __name__ == "__main__":
    main()
