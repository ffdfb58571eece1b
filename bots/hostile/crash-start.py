#!/usr/bin/env python3
"""crash-start: exits with status 1 before reading anything.

The farm should find the bot dead before its first reply: its hero crashes (and is
played as Stay from then on); the match goes on.
"""

import sys

print("crash-start: exiting with status 1 before reading anything", file=sys.stderr, flush=True)
sys.exit(1)
