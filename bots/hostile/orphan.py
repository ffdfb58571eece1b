#!/usr/bin/env python3
"""orphan: on every request, leaves a process behind in a session of its own, then
plays correctly.

Each orphan is double-forked (its parent exits at once, so it belongs to nobody the
bot knows), calls setsid() (a new session and process group: a kill of the bot's
process group misses it), ignores SIGTERM and sleeps forever. The farm must still
end every one of them with the match. It logs `orphan: left N` per request.
"""

import os
import signal
import time

from stdio_bot import log, play


def leave_orphan():
    if os.fork() != 0:
        os.wait()
        return
    # The middle process: a new session, one more fork, and gone.
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while True:
        time.sleep(3600)


def on_request(index, _state):
    leave_orphan()
    log(f"orphan: left {index + 1}")


play(on_request)
