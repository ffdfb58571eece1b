#!/usr/bin/env python3
"""slowly.py MS COMMAND...: runs the bot COMMAND, holding each line it writes back MS
milliseconds, so that a match of quick example bots lasts long enough to be watched
live (coordinator/tests/live.rs). Everything else passes through unchanged: stdin to
the bot, its stderr, its exit status."""

import subprocess
import sys
import threading
import time


def main():
    delay = int(sys.argv[1]) / 1000
    bot = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def forward_requests():
        try:
            for line in sys.stdin.buffer:
                bot.stdin.write(line)
                bot.stdin.flush()
        except BrokenPipeError:
            pass
        finally:
            try:
                bot.stdin.close()
            except BrokenPipeError:
                pass

    threading.Thread(target=forward_requests, daemon=True).start()
    for line in bot.stdout:
        time.sleep(delay)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(bot.wait())


if __name__ == "__main__":
    main()
