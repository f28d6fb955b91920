"""`validate --workers N`: the cases of one validation split over N sandbox children, merged into the result a
single child would have returned.

Worker k checks the cases whose index is k modulo n (`validate(shard=(k, n))`), each in its own isolated
process with the same time and memory limits as a single run (so N workers may use N times the memory).
Every worker loads the task file, builds all cases and scans the kernel's source; only the per-case work is
split (so a `cases()` that draws unseeded random numbers gives each worker its own draws, as two runs would).
Case lines stream as each worker decides them, so they may arrive out of index order; the merged result lists
cases in index order, with cheats, warnings and notes in the order one process would give.
If workers fail, the error is the one a single process would have hit first: that of the lowest case.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from nkidev.errors import NkiUsageError
from nkidev.validate.result import Finding, unique_findings

MAX_WORKERS = 64


def check_workers(workers) -> int:
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise NkiUsageError("err_invalid_argument", f"workers={workers!r}", f"pass 1 to {MAX_WORKERS} workers")
    return workers


def validate_parallel(
    spec: str,
    options: dict,
    limits,
    workers: int,
    on_event: Callable[[dict], None] | None = None,
    warm: bool = False,
    cwd: str | os.PathLike | None = None,
    started: list | None = None,
) -> tuple[dict, list[tuple[str, str]]]:
    """Run `validate_task_data(spec, **options)` as `workers` shards in sandbox children (working directory `cwd`,
    default this process's); returns the merged result dict and each worker's captured (stdout, stderr).
    `started`: a list the running jobs are put in, so another thread can cancel them (`job.cancel()`); a
    cancelled worker ends this call with its error."""
    from nkidev import sandbox

    n = check_workers(workers)
    events = _Events(on_event)
    jobs = started if started is not None else []
    jobs += [
        sandbox.start(
            "nkidev.validate.api:validate_task_data",
            {"spec": spec, **options, "shard": [k, n]},
            limits,
            events.forward,
            label=f"{spec} (worker {k + 1} of {n})",
            cwd=cwd,
            warm=warm and k == 0,
        )
        for k in range(n)
    ]
    try:
        with ThreadPoolExecutor(n) as pool:
            outcomes = list(pool.map(_outcome, jobs))
    finally:
        for job in jobs:
            job.worker.kill()
    failed = [(o[1], job) for o, job in zip(outcomes, jobs) if o[0] == "error"]
    if failed:
        raise min(failed, key=lambda f: _running_case(f[1]))[0]
    return merge([o[1] for o in outcomes]), [(job.stdout, job.stderr) for job in jobs]


def _outcome(job) -> tuple[str, object]:
    try:
        return "ok", job.result()
    except Exception as e:  # noqa: BLE001 - re-raised by the caller, the lowest case's first
        return "error", e


def _running_case(job) -> float:
    """The case a failed worker was checking (from its last event); infinity when it failed before any."""
    index = (job.last_event or {}).get("index")
    return index if isinstance(index, int) else float("inf")


class _Events:
    """Progress from several workers as one stream: one "start", every case line, each stage as it comes."""

    def __init__(self, on_event: Callable[[dict], None] | None):
        self.on_event = on_event
        self.lock = threading.Lock()
        self.started = False

    def forward(self, event: dict) -> None:
        if self.on_event is None:
            return
        with self.lock:
            if event.get("event") == "start":
                if self.started:
                    return
                self.started = True
            self.on_event(event)


def merge(parts: list[dict]) -> dict:
    """One result dict from the shards' dicts (each with "by_case"), as a single unsharded run returns it."""
    by_case = sorted((c for p in parts for c in p["by_case"]), key=lambda c: c["index"])
    cases = sorted((c for p in parts for c in p["cases"]), key=lambda c: c["index"])
    first = parts[0]
    case_notes = sum(len(c["notes"]) for c in first["by_case"])
    static_notes = first["notes"][: len(first["notes"]) - case_notes]  # the source scan's, the same in every worker
    ordered = sorted((Finding(**f) for p in parts for f in p["cheats"]), key=_case_order)
    cheats = [f.to_dict() for f in unique_findings(ordered)]
    warnings = list(dict.fromkeys(w for c in by_case for w in c["warnings"]))
    notes = static_notes + [note for c in by_case for note in c["notes"]]
    passed = bool(cases) and all(c["passed"] for c in cases) and all(f["severity"] != "fail" for f in cheats)
    return {
        "kernel": first["kernel"],
        "target": first["target"],
        "passed": passed,
        "cases": cases,
        "cheats": cheats,
        "warnings": warnings,
        "notes": notes,
    }


def _case_order(finding: Finding) -> int:
    """Whole-kernel findings (the source scan's) first, then by case: the order one process finds them in."""
    return -1 if finding.case is None else finding.case
