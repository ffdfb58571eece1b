#!/usr/bin/env python3
"""write-outside-tmp: on the first request, tries to write files, then plays correctly.

It writes /bot/escape.txt and /etc/escape.txt (both must fail on the read-only
root) and /tmp/ok.txt (the tmpfs: must work), logging `write PATH: ok` or
`write PATH: blocked (<error>)` for each.
"""

from stdio_bot import log, play

PATHS = ["/bot/escape.txt", "/etc/escape.txt", "/tmp/ok.txt"]


def on_request(index, _state):
    if index != 0:
        return
    for path in PATHS:
        try:
            with open(path, "w") as file:
                file.write("written by write-outside-tmp\n")
            log(f"write {path}: ok")
        except OSError as error:
            log(f"write {path}: blocked ({error})")


play(on_request)
