#!/usr/bin/env python3
"""wrong-shape: answers every request with valid JSON of the wrong shape.

Every reply is `{"move": "North"}`, which is not a direction: the farm plays it as
Stay (the hero does not crash: the bot answered in time).
"""

import os
import sys

from stdio_bot import reply, requests

try:
    for _index, _state in requests():
        reply('{"move": "North"}')
except BrokenPipeError:
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
