"""The hostile test bot: one program, one misbehaviour per mode.

`python3 hostile.py MODE` runs the bot MODE.py beside this file, as if it had been
started itself: the modes are the executable NAME.py files here (stdio_bot.py is
their shared library). The image matchfarm/hostile runs this file as its entrypoint,
so a tournament or a test picks the mode as the image's argument:
`image:matchfarm/hostile spin`. Without a known mode it says which exist and exits 2.
"""

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def modes():
    """Every executable NAME.py beside this file, by NAME."""
    return sorted(
        name[: -len(".py")]
        for name in os.listdir(HERE)
        if name.endswith(".py") and os.access(os.path.join(HERE, name), os.X_OK)
    )


def main():
    known = modes()
    if len(sys.argv) != 2 or sys.argv[1] not in known:
        given = " ".join(sys.argv[1:]) or "nothing"
        print(f"hostile: expected one mode of: {' '.join(known)} (got {given})", file=sys.stderr, flush=True)
        sys.exit(2)
    path = os.path.join(HERE, sys.argv[1] + ".py")
    sys.argv = [path]
    runpy.run_path(path, run_name="__main__")


main()
