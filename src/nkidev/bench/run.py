"""`nkidev bench run`: every selected task evaluated in its own sandboxed child, on an executor, then summed up.

    from nkidev.bench.run import run_suite
    result = run_suite(tasks="softmax,matmul", kernels="my_kernels/", target="trn2", quick=True)
    result["tasks"], result["summary"], result["meta"]

Without `kernels` the baselines are scored (speedup 1). With it, `DIR/<task>.py` must define the task's ENTRY
kernel; its text is shipped to the worker (never its path) and validated against the task's own reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from nkidev import sandbox
from nkidev.bench import registry
from nkidev.bench.stamp import stamp
from nkidev.errors import NkiError, NkiUsageError
from nkidev.executors import get_executor
from nkidev.hardware import get_target
from nkidev.sandbox.limits import Limits

ROW_KEYS = ("task", "passed", "verdicts", "total_time_ns", "baseline_time_ns", "speedup", "percent_of_peak")
FAST_P = (1, 1.5, 2)
EVALUATE = "nkidev.bench.evaluate:evaluate_task"
PRELOAD = ("nkidev.bench.evaluate",)


def run_suite(
    tasks: str | list[str] | None = None,
    kernels: str | Path | None = None,
    target: str | None = None,
    quick: bool = False,
    executor: str = "local",
    jobs: int | None = None,
    ray_address: str | None = None,
    seeds: int = 1,
    limits: Limits | None = None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """{"tasks": [row], "summary": {...}, "details": {task: {...}}, "meta": {...}}: see the module docstring."""
    hw = get_target(target)
    names, sources = _solutions(tasks, kernels)
    limits = limits or Limits()
    item = {"target": hw.name, "quick": quick, "seeds": seeds, "timeout_s": limits.timeout_s, "memory_bytes": limits.memory_bytes}
    items = [{"task": n, "source": sources.get(n), **item} for n in names]
    emit = progress or (lambda event: None)
    emit({"event": "start", "cases": len(items), "stage": f"{len(items)} task(s) on {executor}"})
    with get_executor(executor, jobs, ray_address) as ex:  # each task's line is streamed as it finishes
        rows = ex.map(evaluate_isolated, items, on_result=lambda index, row: emit({"event": "case", "line": task_line(row)}))
    meta = stamp(hw, quick=quick, seeds=seeds, kernels=str(kernels) if kernels else None, executor=executor)
    return {
        "tasks": [{k: row[k] for k in ROW_KEYS} for row in rows],
        "summary": summarize(rows),
        "details": {row["task"]: {k: v for k, v in row.items() if k not in ROW_KEYS} for row in rows},
        "meta": meta,
    }


def evaluate_isolated(item: dict) -> dict:
    """One task's row, evaluated in a fresh sandboxed child (time and memory limits); a child that times out,
    runs out of memory or dies becomes a failed row carrying the named error, never a crash of the suite."""
    item = dict(item)
    limits = Limits(item.pop("timeout_s", None), item.pop("memory_bytes", None))
    try:
        return sandbox.run(EVALUATE, item, limits, preload=PRELOAD, label=item["task"])
    except NkiError as e:
        empty = {k: None for k in ROW_KEYS} | {"task": item["task"], "passed": False, "verdicts": [e.name]}
        return empty | {"ideal_time_ns": None, "cases": [], "reasons": [], "error": e.to_dict()}


def summarize(rows: list[dict]) -> dict:
    """fast_p: share of all tasks that passed and are >= p times as fast as the baseline; the geometric-mean
    speedup over the tasks that passed with a baseline, the mean % of peak over the tasks that passed (None when
    none did)."""
    good = [r for r in rows if r["passed"] and r["speedup"]]
    n = len(rows) or 1
    out = {f"fast_{p:g}": round(sum(r["speedup"] >= p for r in good) / n, 4) for p in FAST_P}
    out["geomean_speedup"] = round(math.exp(sum(math.log(r["speedup"]) for r in good) / len(good)), 4) if good else None
    peaks = [r["percent_of_peak"] for r in rows if r["passed"] and r["percent_of_peak"] is not None]
    out["mean_percent_of_peak"] = round(sum(peaks) / len(peaks), 3) if peaks else None
    return out


def task_line(row: dict) -> str:
    """One human line per task: PASS/FAIL, time, speedup, % of peak (or why it failed)."""
    if not row["passed"]:
        why = (row.get("error") or {}).get("message") or "; ".join(row.get("reasons") or []) or ", ".join(row["verdicts"])
        return f"FAIL {row['task']}: {', '.join(row['verdicts'])}: {why}"
    return (
        f"PASS {row['task']}: {row['total_time_ns'] / 1e3:,.1f} us, {row['speedup']:.2f}x baseline, {row['percent_of_peak']:.1f}% of peak"
    )


def _solutions(tasks, kernels) -> tuple[list[str], dict[str, str]]:
    """The tasks to run and the solution sources by task (empty without --kernels)."""
    if kernels is None:
        return registry.select(tasks), {}
    folder = Path(kernels)
    if not folder.is_dir():
        raise NkiUsageError("err_bad_task_file", f"--kernels {folder}: no such directory", "pass a folder of <task>.py solution files")
    present = {p.stem: p for p in folder.glob("*.py")}
    if tasks:
        names = registry.select(tasks)
        missing = [n for n in names if n not in present]
        if missing:
            raise NkiUsageError(
                "err_bad_task_file",
                f"--kernels {folder} has no solution for {', '.join(missing)}",
                "add DIR/<task>.py for each task in --tasks",
            )
    else:
        names = [n for n in registry.task_names() if n in present]
        if not names:
            raise NkiUsageError(
                "err_bad_task_file",
                f"--kernels {folder} holds no <task>.py of a bench task",
                "name each solution after its task (nkidev bench list)",
            )
    return names, {n: present[n].read_text() for n in names}
