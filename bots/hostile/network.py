#!/usr/bin/env python3
"""network: on the first request, checks the network is off, then plays correctly.

It tries a TCP connection to 127.0.0.1:5672 (the container's own loopback: the
host's RabbitMQ must not be reachable) and to example.com:80, each with a 2 s
timeout, and logs one line per attempt: `network: blocked (<error>)` or
`network: OPEN <which>`, then the interfaces of its network namespace.

Safety: it never sends a packet off the machine. If the container has any network
interface besides `lo`, it does not try example.com at all and logs
`network: OPEN interfaces ...` instead (an interface is already a sandbox failure).
No other address is ever used.
"""

import os
import socket
import threading

from stdio_bot import log, play

TIMEOUT_S = 2.0
LOOPBACK = ("127.0.0.1", 5672)
OUTSIDE = ("example.com", 80)


def interfaces():
    """The interfaces of the bot's own network namespace, from /proc/self/net/dev
    (a /sys mounted elsewhere can show another namespace's)."""
    try:
        with open("/proc/self/net/dev", encoding="ascii") as dev:
            return sorted(line.split(":")[0].strip() for line in dev.readlines()[2:])
    except OSError as error:
        log(f"network: cannot read /proc/self/net/dev ({error})")
        return []


def try_connect(address, label):
    try:
        with socket.create_connection(address, timeout=TIMEOUT_S):
            log(f"network: OPEN {label}")
    except OSError as error:
        log(f"network: blocked ({label}: {error})")


def resolve(host, port):
    """getaddrinfo with a 2 s limit (it has no timeout of its own)."""
    result = {}

    def run():
        try:
            result["addresses"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    if thread.is_alive():
        raise TimeoutError(f"resolving {host} took more than {TIMEOUT_S:g} s")
    if "error" in result:
        raise result["error"]
    return result["addresses"]


def probe():
    try_connect(LOOPBACK, "%s:%d" % LOOPBACK)
    names = interfaces()
    label = "%s:%d" % OUTSIDE
    others = [name for name in names if name != "lo"]
    if others:
        log(f"network: OPEN interfaces {' '.join(others)} (not trying {label})")
    else:
        try:
            addresses = resolve(*OUTSIDE)
        except OSError as error:
            log(f"network: blocked ({label}: resolve: {error})")
        else:
            family, kind, proto, _, address = addresses[0]
            try:
                with socket.socket(family, kind, proto) as sock:
                    sock.settimeout(TIMEOUT_S)
                    sock.connect(address)
                    log(f"network: OPEN {label} ({address[0]})")
            except OSError as error:
                log(f"network: blocked ({label} {address[0]}: {error})")
    log(f"network: interfaces {' '.join(names) or '(none)'}")


def on_request(index, _state):
    if index == 0:
        probe()


play(on_request)
