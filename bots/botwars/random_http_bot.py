#!/usr/bin/env python3
"""Example Skookum Botwars bot for matchfarm over the `http` transport, as the
original game's bots were: an HTTP server answering `POST /`.

  * It listens on 127.0.0.1:$FARM_PORT (the farm sets it; 8080 by default): the
    farm reaches it there, in its container or on the worker's machine; no other
    machine can.
  * Each turn the farm POSTs the request object (the same JSON as one stdio line;
    or, for original bots, a form field `data=<json>`) and reads the moves, a JSON
    array such as [{"from":21,"to":22}], from the response body.
  * The farm gives up on a request after the rules' deadline (5 s): answer fast.

The moves come from random_bot.py beside this file, so both bots play alike.
Standard library only.
"""

import http.server
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_bot  # noqa: E402  (found through the line above)


class Handler(http.server.BaseHTTPRequestHandler):
    rng = random_bot.make_rng()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            body = urllib.parse.parse_qs(body).get("data", [""])[0]
        reply = random_bot.SAFE_REPLY
        try:
            player, rows, cols, grid = random_bot.parse_request(body)
            moves = random_bot.choose_moves(player, rows, cols, grid, self.rng)
            reply = json.dumps(moves, separators=(",", ":"))
        except Exception as error:  # a bad request must never kill the server
            random_bot.log(f"bad request ({error}); replying {reply}")
        payload = reply.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format, *args):
        """Quiet: one line per turn would drown the bot's own log."""


def main():
    port = int(os.environ.get("FARM_PORT") or 8080)
    random_bot.log(f"serving on port {port}")
    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
