#!/usr/bin/env python3
"""break-out: on the first request, reaches for what is not its own, then plays correctly.

It tries to read the farm's files and another bot's code (`Cargo.toml` and
`bots/vindinium/random_bot.py`, from the directory its command runs in, and each
`read:PATH` among its arguments, such as a farm's ledger), to write to every
descriptor it holds beyond stdin, stdout and stderr (what it inherited), and to make
system calls a sandbox's seccomp filter denies: `keyctl`, `ptrace` of another
process (a child of its own) and `unshare` of a user namespace. It logs one line
each: `break-out: read PATH: blocked (<error>)` or `break-out: read PATH: OPEN`,
`break-out: fd N: blocked (<error>)` or `break-out: fd N: WROTE` (or
`break-out: fds: none beyond stdio`), `break-out: CALL: blocked (<error>)` or
`break-out: CALL: OPEN`.

The system calls are made by their x86-64 numbers (the farm's platform), through
the C library's `syscall`.
"""

import ctypes
import os
import sys

from stdio_bot import log, play

FARM_FILES = ["Cargo.toml", "bots/vindinium/random_bot.py"]
# x86-64 system call numbers and their arguments.
SYS_PTRACE, SYS_KEYCTL, SYS_UNSHARE = 101, 250, 272
PTRACE_ATTACH = 16
KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING = 0, -3
CLONE_NEWUSER = 0x10000000
# Descriptors above this are not looked for (the farm's limit is 1024).
MOST_FDS = 1024


def try_reading(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as file:
                file.read(1)
        log(f"break-out: read {path}: OPEN")
    except OSError as error:
        log(f"break-out: read {path}: blocked ({error})")


def try_descriptors():
    held = []
    for fd in range(3, MOST_FDS):
        try:
            os.fstat(fd)
        except OSError:
            continue
        held.append(fd)
    for fd in held:
        try:
            os.write(fd, b"written by break-out\n")
            log(f"break-out: fd {fd}: WROTE")
        except OSError as error:
            log(f"break-out: fd {fd}: blocked ({error})")
    if not held:
        log("break-out: fds: none beyond stdio")


def try_call(name, number, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(arg) for arg in args))
    if result == -1:
        errno = ctypes.get_errno()
        log(f"break-out: {name}: blocked ([Errno {errno}] {os.strerror(errno)})")
    else:
        log(f"break-out: {name}: OPEN")


def try_ptrace():
    """Attaches to a child of its own, which waits on a pipe until it is closed."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(writer)
        os.read(reader, 1)
        os._exit(0)
    os.close(reader)
    try:
        try_call("ptrace", SYS_PTRACE, PTRACE_ATTACH, child, 0, 0)
    finally:
        os.kill(child, 9)
        os.close(writer)
        os.waitpid(child, 0)


def on_request(index, _state):
    if index != 0:
        return
    asked = [arg[len("read:"):] for arg in sys.argv[1:] if arg.startswith("read:")]
    for path in FARM_FILES + asked:
        try_reading(path)
    try_descriptors()
    try_call("keyctl", SYS_KEYCTL, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1)
    try_ptrace()
    try_call("unshare", SYS_UNSHARE, CLONE_NEWUSER)


play(on_request)
