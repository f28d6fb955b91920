"""The child process: `python -m nkidev.sandbox.child --fd N [--memory BYTES] [--preload MODULE ...]`.

It limits its own address space (at start with --memory, or from the job: always before any user code runs),
imports the preload modules (a warm worker waits here), says "ready", reads one job from stdin, runs it and writes
exactly one result or error to the message pipe, then leaves with os._exit so that threads the kernel
started cannot keep it alive. stdin is /dev/null while the job runs; stdout and stderr go to the parent,
which keeps them as the run's output. A watchdog thread stops the child's process group if the parent dies
or the job's time limit is long past (`_start_watchdog`).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import signal
import sys
import threading
import time

_RESERVE = 4 << 20  # freed on MemoryError, so the error can still be encoded and sent


class _Channel:
    def __init__(self, fd: int):
        self.fd = fd
        self.lock = threading.Lock()

    def send(self, message: dict) -> None:
        from nkidev.sandbox.wire import encode

        data = encode(message)
        with self.lock:
            while data:
                data = data[os.write(self.fd, data) :]


def _limit_memory(nbytes: int | None) -> None:
    if not nbytes:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    except (ImportError, ValueError, OSError):  # not enforced on this OS: the emulator's budget still applies
        pass


WATCH_INTERVAL_S = 0.5
TIMEOUT_GRACE_S = 5.0  # the parent's own timer fires first and reports err_timeout; this is the backstop


def _start_watchdog(parent: int, timeout_s: float | None) -> None:
    """The parent enforces the time limit and kills the child's process group; if the parent itself dies (killed,
    crashed) nobody would, and an endless kernel would run forever. So the child stops its own group when it is
    orphaned, or when the time limit plus a grace period has passed. A thread does this (Python switches threads
    every few milliseconds even in a busy loop), not PR_SET_PDEATHSIG, which fires when the parent *thread* that
    started us exits, and the MCP server starts children from short-lived threads."""
    deadline = time.monotonic() + timeout_s + TIMEOUT_GRACE_S if timeout_s else None

    def watch() -> None:
        while os.getppid() == parent and (deadline is None or time.monotonic() < deadline):
            time.sleep(WATCH_INTERVAL_S)
        if os.getpgrp() == os.getpid():  # we lead our own group (Worker starts us so): stop what the kernel started too
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os._exit(70)

    threading.Thread(target=watch, name="nkidev-sandbox-watchdog", daemon=True).start()


def resolve(name: str):
    """'package.module:function' -> the function."""
    module, _, attr = name.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _run(job: dict, channel: _Channel) -> dict:
    from nkidev.errors import NkiError
    from nkidev.sandbox.wire import error_to_wire

    reserve = bytearray(_RESERVE)
    try:
        fn = resolve(job["function"])
        kwargs = dict(job.get("kwargs") or {})
        if "progress" in inspect.signature(fn).parameters:
            kwargs["progress"] = lambda event: channel.send({"kind": "event", "event": event})
        return {"kind": "result", "value": fn(**kwargs)}
    except NkiError as e:
        return {"kind": "error", "error": error_to_wire(e)}
    except MemoryError:
        del reserve
        return {"kind": "error", "error": _limit_error()}
    except BaseException as e:  # noqa: BLE001 - the library call should have named it: an nkidev bug
        if os.environ.get("NKIDEV_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exc()
        return {
            "kind": "error",
            "error": {
                "name": "err_internal",
                "message": f"{job.get('function')}: {type(e).__name__}: {e}",
                "fix": "this is a bug in nkidev; rerun with NKIDEV_DEBUG=1 for the traceback and report it",
                "location": None,
                "class": "NkiError",
            },
        }


def _limit_error() -> dict:
    return {
        "name": "err_memory_limit",
        "message": "the run ran out of memory under its limit (--memory)",
        "fix": None,
        "location": None,
        "class": "NkiError",
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="nkidev.sandbox.child")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--memory", type=int, default=0)
    parser.add_argument("--preload", action="append", default=[])
    args = parser.parse_args(argv)
    parent = os.getppid()
    _limit_memory(args.memory)
    os.set_inheritable(args.fd, False)  # grandchildren the kernel may start get no channel
    channel = _Channel(args.fd)
    for module in args.preload:
        importlib.import_module(module)
    channel.send({"kind": "ready"})
    line = sys.stdin.buffer.readline()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    if not line:
        os._exit(0)  # the parent went away (a spare worker that was never used)
    import json

    job = json.loads(line)
    _limit_memory(job.get("memory_bytes"))  # a warm worker learns its limit with the job, before any user code runs
    _start_watchdog(parent, job.get("timeout_s"))
    message = _run(job, channel)
    try:
        channel.send(message)
    except (TypeError, ValueError) as e:  # the value is not plain data: a bug in the library function
        channel.send(
            {
                "kind": "error",
                "error": {"name": "err_internal", "message": f"result is not plain data: {e}", "location": None, "class": "NkiError"},
            }
        )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
