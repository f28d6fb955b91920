"""The loops' unit of work: one candidate kernel module judged against the ORIGINAL task file.

    evaluate_item({"source": text, "task_text": text, "task_name": "swiglu.py", "kernel": "swiglu", ...}) -> dict

`evaluate_item` is what an executor maps (`nkidev.executors`): its item carries the candidate's and the task
file's source *as text*, so a Ray worker without the caller's files can run it. It writes the task file to a
private temporary directory and runs `evaluate_candidate` in an isolated child (`nkidev.sandbox`, with the
item's time and memory limits). In the child: the full validation gate (`validate_source`: the task's
reference, cases and TOLERANCE, every anti-cheat check; the candidate's own reference or cases are never
used), then, if it passed, a profile on one case with the cost model (the trace only: the numerics were just
checked) and optionally the analysis findings of that profile.

The result is plain data, the same on every executor:
    {"passed": bool, "verdicts": [names], "error": null | {name, message, fix, location}, "total_time_ns": float | null,
     "validation": {...} | null, "findings": [...], "bottleneck_engine": str | null, "peak_percent": float | null}
`verdicts` names why a candidate failed: the validation verdicts (`fail_tolerance`, `cheat_input_modified`, ...),
or the error's name when it raised or was stopped (`err_timeout`, `err_memory_limit`, `err_kernel_raised`, ...).
Temporary paths in messages are replaced by the names the caller gave (`display`, `task_display`).
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nkidev.errors import NkiError

PRELOAD = ("nkidev.validate.api", "nkidev.profile.api", "nkidev.analysis.api")
_CANDIDATE_TMP = re.compile(r"/[^\s'\"():]*?nkidev-(?:candidate|eval)-[^/\s'\"]+/[^\s'\":()]+?\.py")
_CANDIDATE_NAME = re.compile(r"\b\w+_candidate\.py\b")  # the private copy's file name, in messages
MAX_FINDINGS = 12


def evaluate_item(item: dict) -> dict:
    """Judge one candidate (an executor's work item; see the module docstring for its keys and result)."""
    from nkidev import sandbox
    from nkidev.sandbox.limits import Limits

    with tempfile.TemporaryDirectory(prefix="nkidev-task-") as tmp:
        task = Path(tmp) / item["task_name"]
        task.write_text(item["task_text"])
        grid = item.get("grid") or ""
        kwargs = {
            "source": item["source"],
            "task_spec": f"{task}::{item['kernel']}{grid}",
            "target": item.get("target"),
            "case": item.get("case", 0),
            "seeds": item.get("seeds", 3),
            "gate": item.get("gate", True),
            "analyze": item.get("analyze", False),
            "profile": item.get("profile", True),
            "tuned": item.get("tuned", []),
        }
        limits = Limits(item.get("timeout_s", 600.0), item.get("memory_bytes"))
        started = time.monotonic()
        try:
            # A warm spare (already past its imports) runs this one and the next spare starts importing meanwhile:
            # in a loop, a candidate's start-up overlaps the previous candidate's run. One cwd for all, so spares match.
            result = sandbox.run(
                "nkidev.loops.evaluate:evaluate_candidate",
                kwargs,
                limits,
                preload=PRELOAD,
                cwd=tempfile.gettempdir(),
                label=item.get("display") or "candidate",
                warm=True,
                spare=True,
            )
        except NkiError as e:
            result = failed(e)
        result["eval_s"] = round(time.monotonic() - started, 3)  # the wall time of the gate (not part of the verdict)
        return relabel(result, {str(task): item.get("task_display") or item["task_name"]}, item.get("display") or "candidate.py")


def failed(error: NkiError) -> dict:
    return {
        "passed": False,
        "verdicts": [error.name],
        "error": error.to_dict(),
        "total_time_ns": None,
        "validation": None,
        "findings": [],
        "bottleneck_engine": None,
        "peak_percent": None,
    }


def evaluate_candidate(
    source: str,
    task_spec: str,
    target: str | None = None,
    case: int = 0,
    seeds: int = 3,
    gate: bool = True,
    analyze: bool = False,
    profile: bool = True,
    progress: Callable[[dict], None] | None = None,
    tuned: list[str] | tuple[str, ...] = (),
) -> dict:
    """Gate, profile and (optionally) analyze one candidate module; runs in the sandbox child. `profile=False`:
    the gate only (debug). `tuned`: the parameters whose defaults the candidate rewrote (tune's config)."""
    from nkidev.validate.api import validate_source

    out = failed(NkiError("err_internal", "not evaluated"))
    out.update(error=None, verdicts=[])
    if tuned:
        try:
            check_not_pinned(task_spec, case, tuned)
        except NkiError as e:
            return failed(e)
    if gate:
        try:
            validation = validate_source(source, task_spec, target=target, seeds=seeds, progress=progress)
        except NkiError as e:
            return failed(e)
        out["validation"] = _trim(validation)
        out["verdicts"] = verdict_names(validation)
        if not validation["passed"] or not profile:
            out["passed"] = validation["passed"]
            return out
    try:
        timed = profile_candidate(source, task_spec, target, case, analyze)
    except NkiError as e:
        return {**failed(e), "validation": out["validation"]}
    out.update(timed)
    out["passed"] = gate  # a screened-only candidate is never "passed"
    return out


def check_not_pinned(task_spec: str, case: int, tuned) -> None:
    """err_bad_tunable when the timed case passes a tuned parameter itself (`Case(x, tile=128)`): its value would
    override every config's default, so every config would time the same kernel."""
    from nkidev.case import brief
    from nkidev.errors import NkiUsageError
    from nkidev.taskfile import kernel_spec, load_task

    spec = kernel_spec(task_spec)
    cases = load_task(spec.path).calls()
    pinned = [name for name in tuned if 0 <= case < len(cases) and name in cases[case].kwargs]
    if pinned:
        raise NkiUsageError(
            "err_bad_tunable",
            f"{spec.path}: case {case} passes {', '.join(f'{n}={brief(cases[case].kwargs[n])}' for n in pinned)} itself, "
            f"which overrides the tuned default{'s' if len(pinned) > 1 else ''}",
            f"drop {', '.join(pinned)} from that case's keywords, tune on another --case, or tune other parameters",
        )


def verdict_names(validation: dict) -> list[str]:
    names = [v for c in validation["cases"] for v in c["verdicts"]]
    names += [f["verdict"] for f in validation["cheats"] if f["severity"] == "fail"]
    return list(dict.fromkeys(names))


def _trim(validation: dict) -> dict:
    """The validation without per-seed and per-output details (the loops keep one per candidate)."""
    cases = [{k: c[k] for k in ("index", "shape", "passed", "max_abs_diff", "rel_l2", "reason", "verdicts")} for c in validation["cases"]]
    return {**validation, "cases": cases}


def profile_candidate(source: str, task_spec: str, target: str | None, case: int, analyze: bool) -> dict:
    """Profile the candidate on case `case` of the ORIGINAL task's cases (trace only; its keyword inputs too) and
    read its time and findings."""
    from nkidev.analysis.api import analyze as analyze_profile
    from nkidev.errors import NkiUsageError
    from nkidev.profile.api import profile_case
    from nkidev.taskfile import KernelSpec, kernel_spec, load_task

    spec = kernel_spec(task_spec)
    task = load_task(spec.path)
    cases = task.calls()
    if not 0 <= case < len(cases):
        raise NkiUsageError("err_invalid_argument", f"--case {case}: the task has {len(cases)} case(s)", f"pass 0 to {len(cases) - 1}")
    with tempfile.TemporaryDirectory(prefix="nkidev-eval-") as tmp:
        path = Path(tmp) / f"{spec.path.stem}_candidate.py"
        path.write_text(source)
        candidate = load_task(path)
        grid = spec.grid or (task.grid(spec.name) if spec.name else None)
        kernel = candidate.launch(KernelSpec(path, spec.name, grid))
        result = profile_case(kernel, cases[case], target=target, out=Path(tmp) / "profile", compute=False)
        out = {"total_time_ns": round(result.total_time_ns, 1), "findings": [], "bottleneck_engine": None, "peak_percent": None}
        if analyze:
            analysis = analyze_profile(result.profile_dir, source_root=tmp)
            out["findings"] = [f.to_dict() for f in analysis.findings[:MAX_FINDINGS]]
            out["bottleneck_engine"] = analysis.bottleneck_engine
            out["peak_percent"] = peak_percent(analysis.bounds)
    return out


def peak_percent(bounds: dict) -> float | None:
    """How close the kernel is to its roofline: the ideal memory or compute time (whichever is larger) over its time."""
    total = bounds.get("total_time_ns") or 0.0
    ideal = max(bounds.get("memory_bound_ideal_ns") or 0.0, bounds.get("compute_bound_ideal_flops_ns") or 0.0)
    return round(100.0 * ideal / total, 2) if total else None


def relabel(value, names: dict[str, str], candidate: str):
    """Replace temporary paths (the shipped task file, the candidate's private copies) by the caller's names."""
    if isinstance(value, str):
        for tmp, shown in names.items():
            value = value.replace(tmp, shown)
        value = _CANDIDATE_TMP.sub(candidate, value)
        return _CANDIDATE_NAME.sub(Path(candidate).name, value)
    if isinstance(value, dict):
        return {k: relabel(v, names, candidate) for k, v in value.items()}
    if isinstance(value, list):
        return [relabel(v, names, candidate) for v in value]
    return value
