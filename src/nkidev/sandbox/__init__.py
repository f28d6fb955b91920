"""nkidev.sandbox: run a named library function in an isolated child process, with time and memory limits.

    from nkidev.sandbox import Limits, run, start

    value = run("nkidev.validate.api:validate_task_data", {"spec": "k.py::k"}, Limits(timeout_s=60),
                on_event=print)          # plain data back, or the function's named error re-raised
    job = start(...); job.cancel()       # the same, stoppable from another thread

The child is a fresh interpreter (`python -m nkidev.sandbox.child`, never a fork of the caller) in its own
process group. It sets RLIMIT_AS to `memory_bytes`, imports `preload`, reads the call, runs it and exits.
- The function gets keyword arguments that are plain data (JSON) and returns plain data. If it has a
  `progress` parameter it receives a callback; each `progress(event_dict)` reaches the caller's `on_event`
  while the child is still running (validate streams its cases this way).
- Outcomes: the return value; the function's `NkiError` re-raised with the same class and name;
  `err_timeout` (wall clock, measured from the call), `err_memory_limit` (a MemoryError or a kill under the
  limit), `err_child_exited` (the child ended without an answer: os._exit, a signal, a native crash). Every
  one of these maps to a non-zero exit code; a child that stops early is never a pass.
- Timeouts and `Job.cancel()` kill the child's whole process group (a kernel's threads and subprocesses go
  with it unless they started their own session).
- stdout/stderr of the child (what the task file, the kernel or native code printed) are captured per run:
  `Job.stdout` / `Job.stderr`; the caller's own streams are never redirected.
- `warm=True` takes a pre-started spare (`prestart`, already past `import nkidev...`; `spare=True` starts the
  next one in the background). A worker runs one call and exits, so no state survives from one task file to
  the next; a spare learns its memory limit with the job, before the job's code runs.

What it does not do: it is not a security boundary against code that wants to read or write the user's
files (the child runs as the user); it protects the caller from hangs, memory exhaustion, crashes, exits
and stray threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from nkidev.sandbox.job import Job, Worker
from nkidev.sandbox.limits import Limits, cli_limits, mcp_limits, parse_memory

__all__ = ["Job", "Limits", "Worker", "cli_limits", "mcp_limits", "parse_memory", "prestart", "run", "start"]

DEFAULT_PRELOAD = ("nkidev.validate.api",)


def start(
    function: str,
    kwargs: dict | None = None,
    limits: Limits | None = None,
    on_event: Callable[[dict], None] | None = None,
    *,
    preload: tuple[str, ...] = DEFAULT_PRELOAD,
    cwd: str | os.PathLike | None = None,
    warm: bool = False,
    spare: bool = False,
    label: str = "",
) -> Job:
    """Start `function` ("package.module:name") with `kwargs` in a child; returns the running Job. `warm`: use a
    waiting spare (`prestart`) if there is one; `spare`: then start the next spare for a later call."""
    from nkidev.sandbox import pool

    limits = limits or Limits()
    cwd = str(cwd) if cwd is not None else os.getcwd()
    if warm:
        worker = pool.take(tuple(preload), cwd, keep_spare=spare)
    else:
        worker = Worker(limits.memory_bytes, tuple(preload), cwd)
    return Job(worker, function, dict(kwargs or {}), limits, on_event, label)


def prestart(preload: tuple[str, ...] = DEFAULT_PRELOAD, cwd: str | os.PathLike | None = None) -> None:
    """Start a warm spare now for a `start(..., warm=True)` later (the CLI does this before parsing its options)."""
    from nkidev.sandbox import pool

    pool.prestart(tuple(preload), str(cwd) if cwd is not None else None)


def run(
    function: str,
    kwargs: dict | None = None,
    limits: Limits | None = None,
    on_event: Callable[[dict], None] | None = None,
    **options,
):
    """Run `function` in a child and return its plain-data result (see the module docstring)."""
    job = start(function, kwargs, limits, on_event, **options)
    try:
        return job.result()
    except BaseException:
        job.worker.kill()
        raise
