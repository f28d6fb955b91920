"""One task's evaluation, the benchmark's unit of work: plain data in, plain data out (run it in the sandbox).

`evaluate_task(task, source, target, quick, seeds)` validates the solution (`source`: a kernel module's text
defining the task's ENTRY; None: the task's own baseline) with the full anti-cheat gate against the *task
file's* reference, quick cases and TOLERANCE, then predicts its time with the cost model on the timed cases
(the quick cases, or the full ones with the numerics skipped) and compares it with the baseline's time and
with the roofline-ideal time of the same cases.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from nkidev.bench import inputs, registry, roofline
from nkidev.costmodel import schedule
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run
from nkidev.errors import NkiError
from nkidev.hardware import Target, get_target
from nkidev.taskfile import Task, load_task
from nkidev.validate.api import validate_task
from nkidev.validate.inputs import first_shape

QUICK, FULL = "quick_cases", "full_cases"


def evaluate_task(
    task: str,
    source: str | None = None,
    target: str | None = None,
    quick: bool = True,
    seeds: int = 1,
    task_source: str | None = None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """The `bench run --json` row of one task (see the module docstring), with the per-case times under
    "cases" and, when the solution failed, the failing cases' reasons or the named error under "error".
    `task_source`: the text of a task file outside the suite (a KernelBench problem with the adapter appended);
    without a baseline kernel in it, baseline_time_ns and speedup are None."""
    with _task_file(task, task_source) as path:
        return _evaluate(task, path, source, get_target(target), quick, seeds, progress)


@contextmanager
def _task_file(task: str, task_source: str | None) -> Iterator[Path | None]:
    if task_source is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="nkidev-bench-task-") as tmp:
        path = Path(tmp) / f"{task}.py"
        path.write_text(task_source)
        yield path


def _evaluate(task, path, source, hw, quick, seeds, progress) -> dict:
    info, baseline_task = registry.load(task, path)
    emit = progress or (lambda event: None)
    row = {"task": task, "passed": False, "verdicts": [], "total_time_ns": None, "baseline_time_ns": None}
    row |= {"speedup": None, "percent_of_peak": None, "ideal_time_ns": None, "cases": [], "reasons": [], "error": None}
    try:
        emit({"event": "stage", "stage": f"{task}: validating"})
        result = validate_task(info.spec, cases=QUICK, target=hw, seeds=seeds, kernel_source=source).to_dict()
        row["passed"] = result["passed"]
        row["verdicts"] = _verdicts(result)
        row["reasons"] = [c["reason"] for c in result["cases"] if c["reason"]]
        if not row["passed"]:
            return row
        emit({"event": "stage", "stage": f"{task}: timing on {hw.name}"})
        with _solution(info, baseline_task, source) as solution:
            timed = _time_cases(solution, info, baseline_task, hw, quick)
        if source is None:
            baseline = timed
        elif info.entry in baseline_task.kernels:
            baseline = _time_cases(baseline_task, info, baseline_task, hw, quick)
        else:
            baseline = None
    except NkiError as e:
        row["error"] = e.to_dict()
        row["verdicts"] = row["verdicts"] or [e.name]
        row["passed"] = False
        return row
    total = sum(c["time_ns"] for c in timed)
    base = sum(c["time_ns"] for c in baseline) if baseline is not None else None
    ideal = sum(c["ideal_ns"] for c in timed)
    row |= {"total_time_ns": round(total, 1), "ideal_time_ns": round(ideal, 1), "cases": timed}
    row["baseline_time_ns"] = round(base, 1) if base is not None else None
    row["speedup"] = round(base / total, 4) if base is not None and total > 0 else None
    row["percent_of_peak"] = percent_of_peak(ideal, total)
    return row


def percent_of_peak(ideal_ns: float, time_ns: float) -> float | None:
    """ideal / predicted x 100, in (0, 100]. The ideal is a lower bound on any predicted time, so a value above
    100 is a cost-model bug; it is capped at 100 rather than reported as faster than the hardware."""
    if time_ns <= 0 or ideal_ns <= 0:
        return None
    return round(min(100.0, 100.0 * ideal_ns / time_ns), 3)


def evaluate_item(item: dict) -> dict:
    """`evaluate_task(**item)`: the executor's form (one plain-data item in)."""
    return evaluate_task(**item)


def _verdicts(result: dict) -> list[str]:
    names = [f["verdict"] for f in result["cheats"] if f["severity"] == "fail"]
    names += [v for c in result["cases"] for v in c["verdicts"]]
    return list(dict.fromkeys(names))


@contextmanager
def _solution(info: registry.TaskInfo, baseline: Task, source: str | None) -> Iterator[Task]:
    """The task file to time: the baseline's, or the solution's module written to a private temporary file."""
    if source is None:
        yield baseline
        return
    with tempfile.TemporaryDirectory(prefix="nkidev-bench-") as tmp:
        path = Path(tmp) / f"{info.name}_solution.py"
        path.write_text(source)
        yield load_task(path)


def _time_cases(solution: Task, info: registry.TaskInfo, task: Task, hw: Target, quick: bool) -> list[dict]:
    """Predicted time and roofline-ideal time of the solution's ENTRY on each timed case of the task."""
    kernel = solution.kernel(info.entry)
    if quick:
        cases = task.calls(QUICK)
    else:
        with inputs.shapes_only():  # full sizes are timed with the numerics skipped: their values never matter
            cases = task.calls(FULL)
    out = []
    for case in cases:
        trace = run(kernel, case.args, case.kwargs, options=EmulatorOptions(target=hw, compute=quick)).trace
        time_ns = schedule(trace, hw).total_ns
        ideal = roofline.ideal_ns(case.call(task.attr("FLOPS")), case.call(task.attr("MIN_BYTES")), hw, case.values())
        shape = first_shape(case)
        out.append(
            {
                "shape": list(shape) if shape else None,
                "time_ns": round(time_ns, 1),
                "ideal_ns": round(ideal["ideal_ns"], 1),
                "bound": ideal["bound"],
                "instructions": len(trace.instructions),
            }
        )
    return out
