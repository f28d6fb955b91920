"""Library-style functions the sandbox tests run in a child (importable by name, plain data in and out)."""

from __future__ import annotations

import os
import sys
import threading
import time


def add(a: int, b: int) -> dict:
    print("printed by the child")
    print("to stderr", file=sys.stderr)
    return {"sum": a + b}


def counts(n: int, progress=None) -> list:
    for i in range(n):
        progress({"stage": f"step {i}", "i": i})
    return list(range(n))


def sleeps(seconds: float, progress=None) -> None:
    progress({"stage": "sleeping"})
    child = os.fork()
    if child == 0:  # a grandchild in the same process group must die with the timeout too
        time.sleep(seconds)
        os._exit(0)
    with open(os.environ["NKIDEV_TEST_PIDFILE"], "w") as f:
        f.write(str(child))
    time.sleep(seconds)


def exits_quietly() -> None:
    os._exit(0)


def hogs_memory(megabytes: int) -> int:
    blocks = [bytearray(1 << 20) for _ in range(megabytes)]
    return len(blocks)


def named_error() -> None:
    from nkidev.errors import NkiUsageError

    raise NkiUsageError("err_bad_task_file", "bad file", "fix it", "/x.py:3")


def raises_bug() -> None:
    raise KeyError("oops")


def leaves_thread() -> str:
    threading.Thread(target=time.sleep, args=(3600,)).start()  # non-daemon: must not keep the child alive
    return "done"


def spins(pidfile: str) -> None:
    """Never returns, in pure Python, with a grandchild spinning in the same process group; both pids go to `pidfile`."""
    child = os.fork()
    if child == 0:
        while True:
            pass
    with open(pidfile, "w") as f:
        f.write(f"{os.getpid()} {child}\n")
    while True:
        pass
