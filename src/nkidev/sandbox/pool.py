"""Warm spare workers: a child that has already imported nkidev waits for its job.

A worker runs exactly one job and exits, so nothing a task file did (imports, globals, monkeypatches,
threads, the `nki` modules it saw) can reach the next run; what is reused is only the start-up work done
*before* any user code ran. Spares are kept per (preload modules, working directory); the memory limit
travels with the job and is set before the job's code runs. The CLI starts one spare as its very first step
(`prestart`), so the child's imports overlap the parent's; the MCP server keeps one spare ready after each call.
"""

from __future__ import annotations

import atexit
import os
import threading

from nkidev.sandbox.job import Worker

_lock = threading.Lock()
_spares: dict[tuple, Worker] = {}


def prestart(preload: tuple[str, ...], cwd: str | None = None) -> None:
    """Start a spare now (if none is waiting) for a job that will come later."""
    key = (tuple(preload), cwd or os.getcwd())
    with _lock:
        if key not in _spares or not _spares[key].alive():
            _spares[key] = Worker(None, key[0], key[1])


def take(preload: tuple[str, ...], cwd: str | None, keep_spare: bool) -> Worker:
    """A started worker for one job (a warm spare if one is waiting); start the next spare when asked."""
    key = (tuple(preload), cwd or os.getcwd())
    with _lock:
        worker = _spares.pop(key, None)
        if worker is not None and not worker.alive():
            worker = None
        if worker is None:
            worker = Worker(None, key[0], key[1])
        if keep_spare:
            _spares[key] = Worker(None, key[0], key[1])
    return worker


def shutdown() -> None:
    """Let every spare exit (they see end-of-file on stdin)."""
    with _lock:
        spares = list(_spares.values())
        _spares.clear()
    for worker in spares:
        worker.retire()


atexit.register(shutdown)
