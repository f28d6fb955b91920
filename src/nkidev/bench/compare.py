"""`nkidev bench compare RUN_A RUN_B`: two saved `bench run --json` results side by side, task by task.

speedup = A's time / B's time (above 1: B is faster) for tasks both runs passed; the stamps (target, cost model,
calibration) are compared too, since times from different cost models or targets are not comparable.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from nkidev.errors import NkiUsageError

STAMP_KEYS = ("target", "cost_model_version", "calibration", "quick")


def load_run(path: str | Path) -> dict:
    """A saved run (the JSON `bench run --json` prints, or writes with --save), checked for its shape."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise NkiUsageError(
            "err_bad_argument", f"{path}: not a readable bench run ({e})", "pass files written by `nkidev bench run --save FILE`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list) or "summary" not in data:
        raise NkiUsageError(
            "err_bad_argument", f'{path}: no "tasks" list and "summary"', "pass files written by `nkidev bench run --save FILE`"
        )
    return data


def compare_runs(run_a: str | Path, run_b: str | Path) -> dict:
    """{"a", "b" (their meta), "tasks": [{task, a_passed, b_passed, a_time_ns, b_time_ns, speedup, a_percent_of_peak,
    b_percent_of_peak}], "summary": {"a", "b", "geomean_speedup", "common_tasks"}, "notes"}."""
    a, b = load_run(run_a), load_run(run_b)
    rows_a = {r["task"]: r for r in a["tasks"]}
    rows_b = {r["task"]: r for r in b["tasks"]}
    rows, ratios = [], []
    for task in list(rows_a) + [t for t in rows_b if t not in rows_a]:
        ra, rb = rows_a.get(task, {}), rows_b.get(task, {})
        both = ra.get("passed") and rb.get("passed") and ra.get("total_time_ns") and rb.get("total_time_ns")
        speedup = round(ra["total_time_ns"] / rb["total_time_ns"], 4) if both else None
        if speedup:
            ratios.append(speedup)
        rows.append(
            {
                "task": task,
                "a_passed": ra.get("passed"),
                "b_passed": rb.get("passed"),
                "a_time_ns": ra.get("total_time_ns"),
                "b_time_ns": rb.get("total_time_ns"),
                "speedup": speedup,
                "a_percent_of_peak": ra.get("percent_of_peak"),
                "b_percent_of_peak": rb.get("percent_of_peak"),
            }
        )
    geomean = round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None
    meta_a, meta_b = a.get("meta", {}), b.get("meta", {})
    notes = [
        f"the runs differ in {k}: {meta_a.get(k)!r} vs {meta_b.get(k)!r}; their times are not directly comparable"
        for k in STAMP_KEYS
        if meta_a.get(k) != meta_b.get(k)
    ]
    summary = {"a": a["summary"], "b": b["summary"], "geomean_speedup": geomean, "common_tasks": len(ratios)}
    return {"a": meta_a, "b": meta_b, "tasks": rows, "summary": summary, "notes": notes}
