"""Warm spare workers: a child that has already imported nkidev waits for its job.

A worker runs exactly one job and exits, so nothing a task file did (imports, globals, monkeypatches,
threads, the `nki` modules it saw) can reach the next run; what is reused is only the start-up work done
*before* any user code ran. After a spare is taken a new one is started in the background. Spares are kept
per (memory limit, preload modules, working directory), since the limit is set before the imports.
"""

from __future__ import annotations

import atexit
import threading

from nkidev.sandbox.job import Worker

_lock = threading.Lock()
_spares: dict[tuple, Worker] = {}


def take(memory_bytes: int | None, preload: tuple[str, ...], cwd: str | None, keep_spare: bool) -> Worker:
    """A started worker for one job (a warm spare if one is waiting); start the next spare when asked."""
    key = (memory_bytes, preload, cwd)
    with _lock:
        worker = _spares.pop(key, None)
        if worker is not None and not worker.alive():
            worker = None
        if worker is None:
            worker = Worker(memory_bytes, preload, cwd)
        if keep_spare:
            _spares[key] = Worker(memory_bytes, preload, cwd)
    return worker


def shutdown() -> None:
    """Let every spare exit (they see end-of-file on stdin)."""
    with _lock:
        spares = list(_spares.values())
        _spares.clear()
    for worker in spares:
        worker.retire()


atexit.register(shutdown)
