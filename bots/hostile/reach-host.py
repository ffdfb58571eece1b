#!/usr/bin/env python3
"""reach-host: an `http` bot that first tries to reach the worker's host, then serves
its moves.

Before it listens on FARM_PORT it tries a TCP connection, with a 2 s timeout, to
port 47913 (REACH_PORT, where the test listens on the host) at 127.0.0.1 and at
every gateway of its network namespace's routes (/proc/net/route: the host, on a
bridge network), and logs `reach-host: blocked (<address>: <error>)` or
`reach-host: OPEN <address>` per attempt, then `reach-host: gateways <list>`. In a
container with no network there is no gateway, and 127.0.0.1 is its own.

Then it answers every POST with a random direction (the request body is the state).
Standard library only. Safety: it never addresses anything but its own loopback and
the gateways its namespace routes to.
"""

import http.server
import os
import socket
import struct

from stdio_bot import DIRECTIONS, log, make_rng

REACH_PORT = 47913
TIMEOUT_S = 2.0


def gateways():
    try:
        with open("/proc/net/route", encoding="ascii") as routes:
            rows = [line.split() for line in routes.readlines()[1:]]
    except OSError:
        return []
    found = {socket.inet_ntoa(struct.pack("<L", int(row[2], 16))) for row in rows if len(row) > 2}
    return sorted(found - {"0.0.0.0"})


def try_reach(address):
    try:
        with socket.create_connection((address, REACH_PORT), timeout=TIMEOUT_S):
            log(f"reach-host: OPEN {address}:{REACH_PORT}")
    except OSError as error:
        log(f"reach-host: blocked ({address}:{REACH_PORT}: {error})")


class Moves(http.server.BaseHTTPRequestHandler):
    rng = make_rng()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = Moves.rng.choice(DIRECTIONS).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


routes = gateways()
for target in ["127.0.0.1", *routes]:
    try_reach(target)
log(f"reach-host: gateways {' '.join(routes) or 'none'}")
port = int(os.environ.get("FARM_PORT", "8080"))
http.server.HTTPServer(("127.0.0.1", port), Moves).serve_forever()
