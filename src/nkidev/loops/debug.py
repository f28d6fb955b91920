"""`nkidev debug FILE::KERNEL`: the debugging loop, automated — ask a provider for a fix until the kernel validates.

1. FILE is backed up to FILE.pre-debug (refused if that exists, unless `force`) before anything else.
2. The current source is validated (the full gate against the ORIGINAL task file's reference, cases and
   TOLERANCE, in an isolated child). If it passes: RESOLVED.
3. The provider gets the named error with its line (or the verdicts), the docs page for that error and the
   history, and returns a complete module; it is validated the same way. At most `max_iterations` (10) fixes.
4. When stuck (the same failure three times, or from iteration 7) the request carries the next step of the
   simplification ladder (one tile, one case, stage-by-stage outputs), as the debugging agent's skill does.
5. RESOLVED: the passing module is written over FILE (the backup keeps the old bytes) and the diff is reported.
   BLOCKED: FILE is left as it was. Every candidate and report.json go to `out`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from pathlib import Path

from nkidev.atomic import write_bytes
from nkidev.errors import NkiUsageError
from nkidev.executors import LocalExecutor
from nkidev.hardware import get_target
from nkidev.loops.evaluate import evaluate_item
from nkidev.loops.providers import get_provider
from nkidev.loops.tune import base_item, read_task_source
from nkidev.sandbox.limits import Limits, cli_limits

MAX_ITERATIONS = 10
LADDER = (
    "Simplify: process a single tile (one partition block, one free-dim block) and get that right first.",
    "Simplify: make it correct for the first case only (the smallest shape), then generalize.",
    "Simplify: compute stage by stage (store each intermediate to an output and compare), splitting fused instructions.",
)
STUCK_REPEATS = 3
LADDER_FROM = 7


def _failure(result: dict) -> str:
    e = result["error"]
    if e:
        return f"{e['name']}: {e['message']}" + (f" at {e['location']}" if e.get("location") else "")
    cases = (result.get("validation") or {}).get("cases", [])
    return "; ".join(c["reason"] for c in cases if c.get("reason")) or ", ".join(result["verdicts"])


def _signature(result: dict) -> tuple:
    e = result["error"]
    return (e["name"], e.get("location")) if e else tuple(result["verdicts"])


def ladder_step(signatures: list[tuple]) -> str | None:
    """The simplification the next request asks for. `signatures`: the failure of the original, then of each fix
    so far. The ladder starts once the same failure came three times in a row, or at iteration 7, and climbs
    one rung per further iteration."""
    for at in range(len(signatures)):
        repeated = at + 1 >= STUCK_REPEATS and len(set(signatures[at + 1 - STUCK_REPEATS : at + 1])) == 1
        if repeated or at + 1 >= LADDER_FROM:
            return LADDER[min(len(LADDER) - 1, len(signatures) - 1 - at)]
    return None


def debug(
    spec: str,
    provider: str,
    *,
    out: str | Path | None = None,
    max_iterations: int = MAX_ITERATIONS,
    target: str | None = None,
    seeds: int = 3,
    model: str | None = None,
    base_url: str | None = None,
    region: str | None = None,
    limits: Limits | None = None,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Run the debugging loop; returns {"kernel", "status": "RESOLVED" | "BLOCKED", "iterations", "backup", "diff", "out"}."""
    if not isinstance(max_iterations, int) or not 1 <= max_iterations <= MAX_ITERATIONS:
        raise NkiUsageError("err_invalid_argument", f"--max-iterations {max_iterations!r}", f"pass 1 to {MAX_ITERATIONS}")
    emit = progress or (lambda event: None)
    path, source, kernel, grid = read_task_source(spec)
    hw = get_target(target)
    backup = path.with_name(path.name + ".pre-debug")
    if backup.exists() and not force:
        raise NkiUsageError("err_output_exists", f"{backup} exists (an earlier debug run's backup)", "move it away or pass --force")
    proposer = get_provider(provider, model, base_url, region)
    from nkidev.loops.optimize import default_out

    out = Path(out) if out is not None else default_out(kernel, "nkidev-debug")
    if out.exists() and any(out.iterdir()):
        raise NkiUsageError("err_output_exists", f"{out} exists and is not empty", "choose another --out")
    (out / "candidates").mkdir(parents=True, exist_ok=True)
    write_bytes(backup, path.read_bytes())
    common = base_item(path, source, kernel, grid, hw.name, 0, seeds, limits or cli_limits())
    pool = LocalExecutor(1)

    def judge(text: str, display: str) -> dict:
        return pool.map(evaluate_item, [{**common, "source": text, "display": display, "profile": False}])[0]

    history: list[dict] = []
    current = source
    result = judge(source, str(path))
    signatures = [_signature(result)]
    fixed = result["passed"]
    while not fixed and len(history) < max_iterations:
        history_view = [{k: h[k] for k in ("index", "reason", "simplify")} for h in history]
        step = ladder_step(signatures)
        request = {
            "mode": "debug",
            "kernel": kernel,
            "task_name": path.name,
            "target": hw.name,
            "original": source,
            "best_source": current,
            "best": {"index": None, "total_time_ns": None},
            "failure": _failure(result),
            "errors": [result["error"]] if result["error"] else [],
            "history": history_view,
            "simplify": step,
            "width": 1,
            "proposed": len(history),
        }
        emit({"event": "stage", "stage": f"asking {proposer.name} for fix {len(history) + 1}: {request['failure'][:120]}"})
        proposals = proposer.propose(request)
        if not proposals:
            break
        index = len(history) + 1
        cpath = out / "candidates" / f"{index:03d}.py"
        write_bytes(cpath, proposals[0].encode("utf-8"))
        result = judge(proposals[0], str(cpath))
        write_bytes(cpath.with_suffix(".json"), json.dumps(result, indent=2, default=str).encode("utf-8"))
        current = proposals[0]
        fixed = result["passed"]
        signatures.append(_signature(result))
        record = {
            "index": index,
            "source": str(cpath),
            "passed": fixed,
            "verdicts": result["verdicts"],
            "error": result["error"],
            "reason": "PASS" if fixed else _failure(result),
            "simplify": step,
        }
        history.append(record)
        emit({"event": "iteration", "iteration": record, "line": f"#{index:03d} {record['reason'][:200]}"})
    if fixed and history:
        write_bytes(path, current.encode("utf-8"))
    diff = "\n".join(difflib.unified_diff(source.splitlines(), current.splitlines(), f"{path.name}.pre-debug", path.name, lineterm=""))
    report = {
        "kernel": f"{path}::{kernel}{grid}",
        "target": hw.name,
        "status": "RESOLVED" if fixed else "BLOCKED",
        "iterations": history,
        "backup": str(backup),
        "file_changed": bool(fixed and history),
        "diff": diff if fixed else "",
        "last_failure": None if fixed else _failure(result),
        "out": str(out),
    }
    write_bytes(out / "report.json", (json.dumps(report, indent=2, default=str) + "\n").encode("utf-8"))
    return report
