"""Where the suite's evaluations run: `get_executor(name, jobs, ray_address).map(fn, items)`.

The shared executors live in `nkidev.executors` (the optimization loops' engineer owns them). Until that module
is on main, a minimal stand-in with the same signature and contract is used: `local` maps over a thread pool
(each item starts its own sandboxed child process, so threads are enough for process-level parallelism) and
`ray` is err_missing_extra when Ray is absent.
TODO(bench): delete the fallback below once nkidev.executors is on main.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from nkidev.errors import NkiUsageError

try:
    from nkidev.executors import get_executor  # type: ignore[attr-defined]  # noqa: F401 - re-exported
except ImportError:  # the fallback: same names, same results

    class _LocalExecutor:
        name = "local"

        def __init__(self, jobs: int | None = None):
            if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
                raise NkiUsageError("err_invalid_argument", f"--jobs {jobs!r}", "pass a number of workers of 1 or more")
            self.jobs = jobs or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)

        def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list:
            items = list(items)
            if self.jobs == 1 or len(items) <= 1:
                return [fn(item) for item in items]
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                return list(pool.map(fn, items))

        def close(self) -> None:
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.close()

    def get_executor(name: str = "local", jobs: int | None = None, ray_address: str | None = None):
        if name == "local":
            return _LocalExecutor(jobs)
        if name == "ray":
            raise NkiUsageError(
                "err_missing_extra",
                "--executor ray needs nkidev's Ray executor (nkidev.executors) and Ray, which are not installed",
                "install the extra: pip install 'nkidev[ray]' (or use --executor local)",
            )
        raise NkiUsageError("err_invalid_argument", f"--executor {name!r}", "use one of: local, ray")
