"""`validate(kernel, reference, cases)`: numerics against a float64 CPU reference, plus the anti-cheat checks.

Per case the kernel runs on (1) the case's inputs, (2) the same inputs with a different fill for fresh
memory (and (3) once more only if (2) differed, to tell nondeterminism from unwritten memory), (4) `seeds`
new inputs of the same shapes and dtypes, and (5) when it has several array inputs, each input changed on
its own. Every run is checked against the reference; the runs are compared with each other for the cheat
verdicts in `verdicts.py`. The kernel's source is scanned once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from nkidev.emulator.jit import as_kernel
from nkidev.errors import NkiUsageError
from nkidev.hardware import get_target
from nkidev.taskfile import case_list, load_task, parse_spec
from nkidev.validate import source_check
from nkidev.validate.case import Setup, check_case
from nkidev.validate.inputs import seed_cases
from nkidev.validate.result import Finding, ValidationResult
from nkidev.validate.tolerance import check_spec
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
    seeds: int = 3,
    allow: Iterable[str] = (),
    label: str | None = None,
) -> ValidationResult:
    """Check `kernel` against `reference` on every case, with the anti-cheat checks on.

    kernel: an `@nki.jit` kernel (or plain function). reference: `reference(*inputs)` in NumPy or PyTorch;
    it receives float inputs widened to float64. cases: a list of input tuples, or a function returning one
    (if it takes `seed`, extra seeds call it with seed=1, 2, ...). tolerance: `dict(atol, rtol, rel_l2, cosine,
    precision)`; atol/rtol override it. target: trn1 | trn2 | trn3. seeds: extra random inputs per case.
    allow: verdict names to report as warnings instead of failures (e.g. "cheat_precision_downgrade").

    Raises NkiUsageError for malformed input, NkiError (err_kernel_raised or the kernel's rule error) when the
    kernel raises, and NkiError err_reference_failed when the reference raises or returns NaN/Inf.
    """
    kernel = as_kernel(kernel)
    label = label or kernel.__name__
    target = get_target(target)  # resolved once; the runs get the Target object
    cases_fn = cases if callable(cases) else None
    cases_ = case_list(cases, f"{label}: cases")
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
    )
    if seeds < 0:
        raise NkiUsageError("err_invalid_argument", f"seeds={seeds}", "pass 0 or more extra seeds")
    static, notes = _static(setup)
    variants = [seed_cases(cases_fn, cases_, s + 1) for s in range(seeds)]
    results, warnings = [], []
    for i, case in enumerate(cases_):
        result = check_case(setup, i, case, [v[0][i] for v in variants], [v[1] for v in variants], warnings, notes)
        result.findings[:0] = [replace(f, case=None) for f in static]
        results.append(result)
    cheats = _unique([f for r in results for f in r.findings if f.verdict.startswith("cheat_")])
    out = ValidationResult(label, target.name, results, cheats, list(dict.fromkeys(warnings)), notes)
    return _apply_allow(out, setup.allow)


def validate_task(
    spec: str, reference: str = "reference", cases: str = "cases", target: str | None = None, seeds: int = 3, **options
) -> ValidationResult:
    """Validate FILE::KERNEL from a task file (its `reference`, `cases` and optional `TOLERANCE`)."""
    path, name = parse_spec(spec)
    target = get_target(target)
    task = load_task(path)
    kernel = task.kernel(name)
    ref_fn = task.function(reference, "reference(*inputs) returning the expected output(s)")
    cases_fn = task.function(cases, "cases() returning a list of input tuples")
    tolerance = options.pop("tolerance", None) or task.attr("TOLERANCE")
    label = f"{path}::{name or kernel.__name__}"
    return validate(
        kernel, ref_fn, cases_fn, tolerance=check_spec(tolerance, str(path)), target=target, seeds=seeds, label=label, **options
    )


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


def _unique(findings: list[Finding]) -> list[Finding]:
    """One finding per verdict and kernel line (per verdict and case when there is no line)."""
    seen, out = set(), []
    for f in findings:
        key = (f.verdict, f.location, None if f.location else f.case)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _apply_allow(result: ValidationResult, allow: frozenset) -> ValidationResult:
    for f in result.cheats + [f for c in result.cases for f in c.findings]:
        if f.verdict in allow:
            f.severity = "warn"
    return result
