#!/usr/bin/env python3
"""A careless client of the original Vindinium server's API (transport
vindinium-server), not a stdio bot: it starts with a wrong key, then its own; posts a
direction that is none, a move with a wrong token, a move with no direction, one good
move; then posts nothing at all, until the farm ends it. Each answer is logged as
`NAME: STATUS BODY` (the body as a Python string), each state as `state turn N`."""

import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def log(line):
    print(line, file=sys.stderr, flush=True)


def post(name, url, form):
    """Posts `form`; logs and returns the status and the body."""
    data = urllib.parse.urlencode(form).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method="POST"), timeout=600) as answer:
            status, body = answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        status, body = refused.code, refused.read().decode()
    log(f"{name}: {status} {body if status == 200 else repr(body)}"[:200])
    return status, body


def state_of(body):
    import json

    state = json.loads(body)
    log(f"state turn {state['game']['turn']}")
    return state


def main():
    server, key = os.environ["FARM_VINDINIUM_SERVER"], os.environ["FARM_VINDINIUM_KEY"]
    post("wrong-key", f"{server}/api/arena", {"key": key + "x"})
    state = state_of(post("start", f"{server}/api/arena", {"key": key})[1])
    state = state_of(post("not-a-direction", state["playUrl"], {"dir": "jump"})[1])
    wrong = state["playUrl"].replace(f"/{state['token']}/", "/zzzz/" if state["token"] != "zzzz" else "/yyyy/")
    post("wrong-token", wrong, {"dir": "North"})
    post("no-direction", state["playUrl"], {})
    state_of(post("move", state["playUrl"], {"dir": "North"})[1])
    log("silent: posting nothing more")
    while True:
        time.sleep(3600)


main()
