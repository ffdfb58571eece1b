#!/usr/bin/env python3
"""traces: on the first request, reports what an earlier match left in its container,
then leaves traces of its own everywhere it can, then plays correctly.

It reports every entry of /tmp, /dev/shm and /dev/mqueue, every System V IPC object
(/proc/sysvipc) and every process that is not its own (scanned in /proc), as
`traces: found nothing` or `traces: found <what>, ...`, and its host name as
`traces: host <name>` (a container's host name is its id: a test tells from it
whether two matches ran in the same container). Then it leaves: files and a locked
directory in /tmp, a file in /dev/shm, a POSIX message queue, a System V shared
memory segment, message queue and semaphore set, a process in a session of its own
and a process that ignores SIGTERM, and logs `traces: left`.

A container reused between matches must always report `found nothing`.

It also reports, as `traces: kernel pid=P sysv-id=I time-wait=T cgroup-usec=U`, the
kernel state a reset does not renew (the book lists it, docs/src/operators/containers.md: "What a reused container
keeps"): its own pid (the namespace's pid counter), the id a new System V segment
gets (the IPC id sequence), how many TCP sockets of its loopback are in TIME_WAIT, and
the CPU time its cgroup has counted. Then it leaves some of each: a loopback connection
it closes first (TIME_WAIT), besides the processes and the segment above.
"""

import ctypes
import os
import signal
import socket
import subprocess
import sys

from stdio_bot import log, play

PLACES = ("/tmp", "/dev/shm", "/dev/mqueue")
MARK = "farm-trace"
IPC_CREAT = 0o1000
IPC_RMID = 0
TCP_TIME_WAIT = "06"
O_CREAT, O_RDWR = 0o100, 0o2


def found():
    items = []
    for place in PLACES:
        try:
            items.extend(f"{place}/{name}" for name in sorted(os.listdir(place)))
        except OSError:
            pass
    for table in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{table}", encoding="ascii") as rows:
                items.extend(f"sysv {table} {row.split()[1]}" for row in rows.readlines()[1:])
        except OSError:
            pass
    mine = {os.getpid(), os.getppid()}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in mine and int(entry) != 1:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            items.append(f"process {entry} {command}")
    return items


def kernel_state(libc):
    """The kernel state a reset leaves, as `key=value` words."""
    segment = libc.shmget(0, 4096, IPC_CREAT | 0o600)  # IPC_PRIVATE: always a new one
    if segment >= 0:
        libc.shmctl(segment, IPC_RMID, None)
    time_wait = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                time_wait += sum(1 for row in rows.readlines()[1:] if row.split()[3] == TCP_TIME_WAIT)
        except OSError:
            pass
    usec = "unknown"
    try:
        with open("/sys/fs/cgroup/cpu.stat", encoding="ascii") as stat:
            usec = next(line.split()[1] for line in stat if line.startswith("usage_usec "))
    except (OSError, StopIteration):
        pass
    return f"pid={os.getpid()} sysv-id={segment} time-wait={time_wait} cgroup-usec={usec}"


def leave_time_wait():
    """A loopback connection this side closes first: its socket stays in TIME_WAIT."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    client.close()
    server.close()
    listener.close()


def keep_running(name, ignore_term, new_session):
    """A python process that sleeps for an hour, named in its command line."""
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "time.sleep(3600)\n"
    subprocess.Popen(
        [sys.executable, "-c", code, f"{MARK}-{name}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=new_session,
    )


def leave():
    with open(f"/tmp/{MARK}-file", "w", encoding="ascii") as trace:
        trace.write("left by an earlier match\n")
    locked = f"/tmp/{MARK}-locked"
    os.makedirs(f"{locked}/inner", exist_ok=True)
    with open(f"{locked}/inner/file", "w", encoding="ascii") as trace:
        trace.write("x")
    os.chmod(f"{locked}/inner", 0)
    os.chmod(locked, 0)
    try:
        with open(f"/dev/shm/{MARK}", "w", encoding="ascii") as trace:
            trace.write("x")
    except OSError as error:
        log(f"traces: no /dev/shm ({error})")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mq_open.restype = ctypes.c_int
    if libc.mq_open(f"/{MARK}".encode(), O_CREAT | O_RDWR, 0o600, None) < 0:
        log(f"traces: mq_open failed ({os.strerror(ctypes.get_errno())})")
    for name, result in (
        ("shmget", libc.shmget(0x5EED, 4096, IPC_CREAT | 0o600)),
        ("msgget", libc.msgget(0x5EEE, IPC_CREAT | 0o600)),
        ("semget", libc.semget(0x5EEF, 1, IPC_CREAT | 0o600)),
    ):
        if result < 0:
            log(f"traces: {name} failed ({os.strerror(ctypes.get_errno())})")
    leave_time_wait()
    keep_running("session", ignore_term=False, new_session=True)
    keep_running("stubborn", ignore_term=True, new_session=False)
    log("traces: left")


def on_request(index, _state):
    if index != 0:
        return
    items = found()
    log("traces: found " + (", ".join(items) if items else "nothing"))
    log(f"traces: host {socket.gethostname()}")
    log("traces: kernel " + kernel_state(ctypes.CDLL(None, use_errno=True)))
    leave()


# The traces are left before the first reply: they exist however soon the match ends.
signal.signal(signal.SIGTERM, signal.SIG_IGN)
play(on_request)
