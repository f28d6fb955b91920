"""Executors: run one plain-data function over many items, on this machine or on a Ray cluster, same results.

    from nkidev.executors import get_executor

    executor = get_executor("local", jobs=4)             # or get_executor("ray", ray_address="ray://head:10001")
    results = executor.map(evaluate, items)                # a list, in the order of `items`
    executor.close()                                      # also: `with get_executor(...) as executor:`

The contract (the loops `tune` / `optimize` and the benchmark suite rely on it; keep it stable):
- `fn` is a module-level function of an importable module (so both a process pool and Ray can find it by
  name) taking ONE item and returning plain data (JSON-like: dicts, lists, str, numbers, bool, None).
- Items are plain data too, and must carry everything the work needs *as data*: a worker on another machine
  has no access to this one's files, so ship the task file's and the kernel's source text, not their paths
  (`nkidev.loops.evaluate` writes them to a private temporary directory on the worker).
- `map` returns `[fn(item) for item in items]`, in item order, whatever order the work finished in;
  `on_result(index, result)`, when given, is called in the caller's process as each item finishes (in
  completion order), so long runs can stream their results. An
  exception raised by `fn` propagates from `map` (the first one, by item order); functions that must not stop
  the whole map should return their errors as data (the loops return `{"error": NkiError.to_dict()}`).
- `local`: a pool of `jobs` worker processes (default: the number of cores), started from a clean interpreter
  (`spawn`, never a fork of the caller, which may hold locks) and reused across `map` calls; `jobs=1` runs in
  the calling process (no pool, easiest to debug). `ray`: Ray tasks, one per item, on the cluster at
  `ray_address` (an existing cluster: "auto", "ray://host:10001", "host:6379") or on a local Ray instance
  started for this executor with `jobs` CPUs when no address is given. Ray is an optional extra
  (`pip install 'nkidev[ray]'`), imported only here; without it `get_executor("ray")` is `err_missing_extra`.
  Workers of a Ray cluster need nkidev installed (the function travels by name, the data by value).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any, Protocol

from nkidev.errors import NkiUsageError

EXECUTORS = ("local", "ray")
OnResult = Callable[[int, Any], None]
RAY_INSTALL = "pip install 'nkidev[ray]'"


class Executor(Protocol):
    name: str
    jobs: int

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], on_result: OnResult | None = None) -> list: ...

    def close(self) -> None: ...


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_jobs(jobs: int | None) -> int:
    if jobs is None:
        return default_jobs()
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise NkiUsageError("err_invalid_argument", f"--jobs {jobs!r}", "pass a number of worker processes of 1 or more")
    return jobs


class _Context:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalExecutor(_Context):
    """A process pool on this machine (in-process when jobs == 1)."""

    name = "local"

    def __init__(self, jobs: int | None = None):
        self.jobs = check_jobs(jobs)
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], on_result: OnResult | None = None) -> list:
        items = list(items)
        report = on_result or (lambda index, result: None)
        if self.jobs == 1 or len(items) <= 1:
            results = []
            for index, item in enumerate(items):
                results.append(fn(item))
                report(index, results[-1])
            return results
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("spawn"))
        futures = {self._pool.submit(fn, item): index for index, item in enumerate(items)}
        done: dict[int, Any] = {}
        failed: dict[int, BaseException] = {}
        for future in as_completed(futures):
            index = futures[future]
            if future.exception() is not None:
                failed[index] = future.exception()
                continue
            done[index] = future.result()
            report(index, done[index])
        if failed:
            raise failed[min(failed)]  # the first failure by item order, as the contract says
        return [done[i] for i in range(len(items))]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class RayExecutor(_Context):
    """Ray tasks on a cluster (`address`) or on a local Ray instance this executor starts and stops."""

    name = "ray"

    def __init__(self, jobs: int | None = None, address: str | None = None):
        self.ray = import_ray()
        self.jobs = check_jobs(jobs)
        self.address = address
        self._started = False
        if not self.ray.is_initialized():
            if address:
                self.ray.init(address=address, log_to_driver=False)
            else:
                # A private local instance: no dashboard, no usage report, only the CPUs asked for.
                self.ray.init(num_cpus=self.jobs, include_dashboard=False, log_to_driver=False, configure_logging=False)
            self._started = True
        self._remotes: dict[Callable, Any] = {}

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], on_result: OnResult | None = None) -> list:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = self.ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = [remote.remote(item) for item in items]  # items are shipped by value to the workers
        if on_result is not None:
            index_of = {ref: i for i, ref in enumerate(refs)}
            pending = list(refs)
            while pending:
                ready, pending = self.ray.wait(pending, num_returns=1)
                try:
                    on_result(index_of[ready[0]], self.ray.get(ready[0]))
                except Exception:  # noqa: BLE001 - a failed item is raised below, by item order
                    pass
        return list(self.ray.get(refs))

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()
        self._started = False


def import_ray():
    """The `ray` module, or err_missing_extra with the install command."""
    try:
        import ray
    except ImportError:
        raise NkiUsageError(
            "err_missing_extra",
            "--executor ray needs Ray, which is not installed",
            f"install the extra: {RAY_INSTALL} (or use --executor local)",
        ) from None
    return ray


def get_executor(name: str = "local", jobs: int | None = None, ray_address: str | None = None) -> LocalExecutor | RayExecutor:
    """The executor called `name` ("local" | "ray"); see the module docstring for the contract."""
    if name == "local":
        if ray_address:
            raise NkiUsageError("err_invalid_argument", "--ray-address was given with --executor local", "pass --executor ray to use it")
        return LocalExecutor(jobs)
    if name == "ray":
        return RayExecutor(jobs, ray_address)
    raise NkiUsageError("err_invalid_argument", f"--executor {name!r}", f"use one of: {', '.join(EXECUTORS)}")
