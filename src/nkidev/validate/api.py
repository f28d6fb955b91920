"""`validate(kernel, reference, cases)`: numerics against a float64 CPU reference, plus the anti-cheat checks.

Per case the kernel runs on (1) the case's inputs, (2) the same inputs with a different fill for fresh
memory (and (3) once more only if (2) differed, to tell nondeterminism from unwritten memory), (4) `seeds`
new inputs of the same shapes and dtypes, and (5) when it has several array inputs, each input changed on
its own (in the first case that passes it). Every run is checked against the reference; the runs are compared with each other for the cheat
verdicts in `verdicts.py`. The kernel's source is scanned once.

A case's keyword inputs (`nkidev.Case(x, w=w, eps=1e-6)`) go to the kernel and to the reference by keyword in
every run; arrays among them are inputs like positional ones (new values in (4) and (5)), constants never change.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np

from nkidev.emulator import blas, versions
from nkidev.emulator.jit import as_kernel
from nkidev.errors import NkiUsageError
from nkidev.hardware.calibration import calibrated_target
from nkidev.taskfile import CASES_FN, KernelSpec, case_list, check_cases, kernel_spec, load_task
from nkidev.validate import source_check
from nkidev.validate.case import Setup, check_case
from nkidev.validate.inputs import first_shape, new_array_inputs, seed_cases
from nkidev.validate.report import case_line
from nkidev.validate.result import Finding, ValidationResult, unique_findings
from nkidev.validate.runner import param_names
from nkidev.validate.tolerance import check_spec, check_value
from nkidev.validate.verdicts import VERDICTS


def validate(
    kernel,
    reference: Callable,
    cases,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    tolerance: dict | None = None,
    target: str | None = None,
    calibration: str | None = None,
    seeds: int = 3,
    allow: Iterable[str] = (),
    label: str | None = None,
    progress: Callable[[dict], None] | None = None,
    shard: tuple[int, int] | None = None,
) -> ValidationResult:
    """Check `kernel` against `reference` on every case, with the anti-cheat checks on.

    kernel: an `@nki.jit` kernel (or plain function). reference: `reference(*inputs, **keywords)` in NumPy or
    PyTorch; it receives float inputs widened to float64. cases: a list of cases, or a function returning one
    (if it takes `seed`, extra seeds call it with seed=1, 2, ...); a case is a tuple of positional inputs or an
    `nkidev.Case(*args, **kwargs)`, whose keywords the kernel and the reference both receive by name (arrays
    among them are resampled like positional ones; numbers, strings, enums, bools and None stay as given).
    tolerance: `dict(atol, rtol, rel_l2, cosine, precision)`; atol/rtol override it. target: trn1 | trn2 | trn3
    (`calibration`: a calibration file applied to it). seeds: extra random inputs per case.
    allow: verdict names to report as warnings instead of failures (e.g. "cheat_precision_downgrade").
    progress: called with a plain dict per event, as the work goes: {"event": "start", "cases": n},
    {"event": "case_start", "index": i, "stage": ...}, then {"event": "case", "index": i, "case": CaseResult.to_dict(),
    "line": the case's PASS/FAIL line} as soon as case i is decided (the CLI streams these; the sandbox forwards them).
    Safe to call from several threads at once (per-thread emulator state, captures and tripwires).
    shard: (k, n) checks only the cases whose index is k modulo n (one of n parallel workers: `parallel.py`);
    the result then says which warnings and notes each case added (`by_case`), so the parts merge in case order.

    Raises NkiUsageError for malformed input, NkiError (err_kernel_raised or the kernel's rule error) when the
    kernel raises, and NkiError err_reference_failed when the reference raises or returns NaN/Inf.
    """
    kernel = as_kernel(kernel)
    label = label or kernel.__name__
    target = calibrated_target(target, calibration)  # resolved once; the runs get the Target object
    atol = check_value("atol", atol, label) if atol is not None else None
    rtol = check_value("rtol", rtol, label) if rtol is not None else None
    check_seeds(seeds)
    shard = check_shard(shard) if shard is not None else None
    cases_fn = cases if callable(cases) else None
    cases_ = case_list(cases, f"{label}: cases")
    check_cases(kernel, cases_, f"{label}: cases")
    setup = Setup(
        kernel,
        reference,
        cases_fn,
        label,
        target,
        check_spec(tolerance, label),
        atol,
        rtol,
        _allowed(allow),
        tuple(f for f in (reference, cases_fn) if f is not None),
        new_array_inputs(cases_, param_names(kernel)),
    )
    emit = progress or (lambda event: None)
    emit({"event": "start", "kernel": label, "cases": len(cases_), "stage": f"checking the source of {label}"})
    static, notes = _static(setup)
    variants = [seed_cases(cases_fn, cases_, s + 1) for s in range(seeds)]
    results, warnings, by_case = [], [], {}
    mine = range(len(cases_)) if shard is None else range(shard[0], len(cases_), shard[1])
    # nkidev's own NaN/overflow arithmetic is reported as verdicts, not warnings; references and metrics run with
    # one BLAS thread like the emulator (why: emulator/blas.py)
    with np.errstate(all="ignore"), blas.single_thread():
        for i in mine:
            case = cases_[i]
            warned, noted = len(warnings), len(notes)
            stage = f"checking case {i + 1} of {len(cases_)}" + (f" (shape {first_shape(case)})" if first_shape(case) else "")
            emit({"event": "case_start", "index": i, "stage": stage})
            result = check_case(setup, i, case, [v[0][i] for v in variants], [v[1] for v in variants], warnings, notes)
            result.findings[:0] = [replace(f, case=None) for f in static]
            _allow_findings(result.findings, setup.allow)
            results.append(result)
            by_case[i] = (warnings[warned:], notes[noted:])
            emit({"event": "case", "index": i, "case": result.to_dict(), "line": case_line(result.to_dict()), "stage": stage})
    cheats = unique_findings([f for r in results for f in r.findings if f.verdict.startswith("cheat_")])
    out = ValidationResult(label, target.name, results, cheats, list(dict.fromkeys(warnings)), notes)
    if shard is not None:
        out.by_case = by_case
    return _apply_allow(out, setup.allow)


def check_shard(shard) -> tuple[int, int]:
    """(k, n): worker k of n, 0 <= k < n."""
    ok = isinstance(shard, tuple | list) and len(shard) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in shard)
    if not ok or not 0 <= shard[0] < shard[1]:
        raise NkiUsageError("err_invalid_argument", f"shard={shard!r}", "pass shard=(k, n) with 0 <= k < n")
    return int(shard[0]), int(shard[1])


MAX_SEEDS = 100


def check_seeds(seeds) -> int:
    """--seeds is a count of extra runs per case: 0 to 100."""
    if not isinstance(seeds, int) or isinstance(seeds, bool) or not 0 <= seeds <= MAX_SEEDS:
        raise NkiUsageError("err_invalid_argument", f"seeds={seeds!r}", f"pass 0 to {MAX_SEEDS} extra seeds (default 3)")
    return seeds


def validate_task(
    spec: str,
    reference: str = "reference",
    cases: str = "cases",
    target: str | None = None,
    seeds: int = 3,
    progress: Callable[[dict], None] | None = None,
    nki_version: str | None = None,
    calibration: str | None = None,
    **options,
) -> ValidationResult:
    """Validate FILE::KERNEL (or FILE::KERNEL[grid]) from a task file: its `reference`, `cases` and optional
    `TOLERANCE` and `GRID`. `kernel_source`: validate this module text instead of FILE's own kernel (see
    `validate_source`). `nki_version`: the NKI version the kernel is checked against (default: the task's
    NKI_VERSION, else $NKIDEV_NKI_VERSION, else the newest)."""
    with versions.scope(nki_version):
        return _validate_task(spec, reference, cases, calibrated_target(target, calibration), seeds, progress, options)


def _validate_task(spec, reference, cases, target, seeds, progress, options) -> ValidationResult:
    parsed = kernel_spec(spec)
    check_seeds(seeds)
    task = load_task(parsed.path)
    source = options.pop("kernel_source", None)
    with _candidate(source, parsed, task) if source is not None else nullcontext(task.launch(parsed)) as kernel:
        ref_fn = task.function(reference, "reference(*inputs) returning the expected output(s)")
        cases_fn = task.function(cases, CASES_FN)
        tolerance = options.pop("tolerance", None) or task.attr("TOLERANCE")
        grid = f"[{','.join(map(str, kernel.grid))}]" if getattr(kernel, "grid", None) else ""
        label = f"{parsed.path}::{parsed.name or kernel.__name__}{grid}"
        with task.version_scope():
            return validate(
                kernel,
                ref_fn,
                cases_fn,
                tolerance=check_spec(tolerance, str(parsed.path)),
                target=target,
                seeds=seeds,
                label=label,
                progress=progress,
                **options,
            )


def validate_task_data(spec: str, progress: Callable[[dict], None] | None = None, **options) -> dict:
    """`validate_task(...).to_dict()`: the plain-data form the sandbox returns (the CLI's and MCP's entry point).
    With `shard=[k, n]` the dict also has "by_case": each checked case's index, warnings and notes."""
    result = validate_task(spec, progress=progress, **options)
    out = result.to_dict()
    if result.by_case is not None:
        out["by_case"] = [{"index": i, "warnings": w, "notes": n} for i, (w, n) in sorted(result.by_case.items())]
    return out


def validate_source(
    source: str, task_spec: str, progress: Callable[[dict], None] | None = None, kernel: str | None = None, **options
) -> dict:
    """Validate a candidate kernel module given as source text against another task file's reference, cases,
    TOLERANCE and GRID (the optimization loops' entry point; run it in the sandbox:
    `sandbox.run("nkidev.validate.api:validate_source", {"source": text, "task_spec": "task.py::k"})`).
    The candidate is written to a private temporary file and imported under emulation; `kernel` names its
    kernel when it is not the task spec's name. Returns the `--json` dict."""
    spec = task_spec if kernel is None else f"{kernel_spec(task_spec).path}::{kernel}"
    return validate_task(spec, progress=progress, kernel_source=source, **options).to_dict()


@contextmanager
def _candidate(source: str, parsed: KernelSpec, task):
    """The kernel of a candidate module (source text) with the task's launch grid, imported from a private
    temporary file that lives while the candidate is validated (its lines are read for errors and the scan)."""
    with tempfile.TemporaryDirectory(prefix="nkidev-candidate-") as tmp:
        path = Path(tmp) / f"{parsed.path.stem}_candidate.py"
        path.write_text(source)
        candidate = load_task(path)
        yield candidate.launch(KernelSpec(path, parsed.name, parsed.grid or (task.grid(parsed.name) if parsed.name else None)))


# ---------------------------------------------------------------- inputs


def _allowed(allow: Iterable[str]) -> frozenset:
    allow = frozenset(allow or ())
    unknown = sorted(a for a in allow if a not in VERDICTS)
    if unknown:
        raise NkiUsageError("err_invalid_argument", f"unknown verdicts {unknown}", f"allow only names from: {', '.join(VERDICTS)}")
    return allow


# ---------------------------------------------------------------- whole-kernel checks and the result


def _static(setup: Setup) -> tuple[list[Finding], list[str]]:
    found, has_source = source_check.scan(setup.kernel, {"reference": setup.reference, "cases": setup.cases_fn})
    notes = [] if has_source else [f"{setup.label}: kernel source not found, the static check was skipped"]
    return [Finding(f.verdict, f"the kernel {f.message}", f.location) for f in found], notes


def _allow_findings(findings: list[Finding], allow: frozenset) -> None:
    for f in findings:
        if f.verdict in allow:
            f.severity = "warn"


def _apply_allow(result: ValidationResult, allow: frozenset) -> ValidationResult:
    _allow_findings(result.cheats + [f for c in result.cases for f in c.findings], allow)
    return result
