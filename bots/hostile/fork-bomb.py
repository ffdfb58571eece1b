#!/usr/bin/env python3
"""fork-bomb: on the first request, forks until fork fails, then plays correctly.

Every child sleeps forever, so the processes pile up until the container's pids
limit (128) makes fork fail. The bot logs how many children it got and the error,
then answers every request. The farm must still remove every process at the end.
"""

import os
import signal

from stdio_bot import log, play


def child():
    """A child never returns into the parent's code: it sleeps until it is killed."""
    try:
        while True:
            signal.pause()
    finally:
        os._exit(0)


def bomb():
    children = 0
    while True:
        try:
            pid = os.fork()
        except OSError as error:
            log(f"fork-bomb: forked {children} children, then fork failed: {error}")
            return
        if pid == 0:
            child()
        children += 1


def on_request(index, _state):
    if index == 0:
        bomb()


play(on_request)
