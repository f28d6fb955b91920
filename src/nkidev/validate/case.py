"""Checking one case: the kernel's run on the case's inputs against the reference, then the runs that
compare it with itself (another fill for fresh memory, a rerun, extra seeds, each input changed alone)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from nkidev.case import Case, describe
from nkidev.emulator.location import internal_error, raised_in_nkidev
from nkidev.errors import NkiError
from nkidev.hardware import Target
from nkidev.validate import fill, precision, reference, runner
from nkidev.validate.checks import (
    first_difference,
    measure,
    metric_finding,
    program_difference,
    short,
    structure,
    unresponsive,
)
from nkidev.validate.inputs import array_slots, first_shape, same_bits, vary_case
from nkidev.validate.result import CaseResult, Finding
from nkidev.validate.tolerance import Tolerance, expected_dtype, mantissa_bits, resolve

UNWRITTEN = ("fail_output_not_written", "cheat_output_not_written")

# kernel errors that are verdicts rather than crashes
ERROR_VERDICTS = {"err_numpy_on_kernel_data": "cheat_numpy_on_kernel_data", "err_tensor_output_not_written_to": "cheat_output_not_written"}


@dataclass(frozen=True)
class Setup:
    kernel: object  # nkidev Kernel
    reference: Callable
    cases_fn: Callable | None
    label: str
    target: Target
    spec: dict
    atol: float | None
    rtol: float | None
    allow: frozenset
    guarded: tuple
    new_arrays: tuple[frozenset[str], ...]  # per case: the array inputs it is the first case to pass (inputs.new_array_inputs)


def _where(setup: Setup, i: int, case: Case, variant: str = "") -> str:
    shape = first_shape(case)
    return f"{setup.label} case {i}" + (f" (shape {shape})" if shape else "") + (f", {variant}" if variant else "")


def _tolerances(setup: Setup, case: Case, expected: list) -> list[Tolerance]:
    inputs = case.values()
    return [resolve(expected_dtype(e.declared, inputs), setup.spec, setup.atol, setup.rtol, _rms(e.value)) for e in expected]


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


def check_case(setup: Setup, i: int, case: Case, seed_inputs: list[Case], from_task: list[bool], warnings: list, notes: list) -> CaseResult:
    """All checks of case `i`; `seed_inputs` are its extra-seed inputs (`from_task`: made by the task's own
    cases(seed=...)). Emulator warnings and harness notes are appended to `warnings` and `notes`."""
    expected = reference.call(setup.reference, case, _where(setup, i, case))
    tols = _tolerances(setup, case, expected)
    result = CaseResult(i, first_shape(case) or tuple(expected[0].value.shape), tols[0], None)
    if case.kwargs:
        result.kwargs = {k: describe(v) for k, v in case.kwargs.items()}
    primary = _run(setup, i, case, result, "")
    if primary is None:
        return result
    warnings.extend(primary.warnings)
    if primary.printed:
        text = primary.printed if len(primary.printed) <= 2000 else primary.printed[:2000] + "..."
        notes.append(f"{_where(setup, i, case)}: the kernel printed:\n{text.rstrip()}")
    bad_shape = structure(primary.outputs, expected)
    if bad_shape is not None:
        result.findings.append(replace(bad_shape, case=i))
        return result
    result.primary = measure("case", primary.outputs, expected, tols)
    _add(result, metric_finding(result.primary))
    _add(result, _inputs_written(primary))
    _add(result, _precision(primary, tols))
    _fill_and_rerun(setup, i, case, primary, expected, result)
    for k, (seed_case, task_made) in enumerate(zip(seed_inputs, from_task), start=1):
        _check_variant(setup, i, seed_case, f"seed {k}", None, primary, expected, tols, result, task_made, notes)
    _check_each_input(setup, i, case, seed_inputs, from_task, primary, expected, tols, result, notes)
    if any(f.verdict in UNWRITTEN for f in result.findings):  # the NaNs are the unwritten memory
        result.findings[:] = [f for f in result.findings if f.verdict != "fail_nonfinite"]
    return result


def _check_each_input(
    setup: Setup,
    i: int,
    case: Case,
    seed_inputs: list[Case],
    from_task: list[bool],
    primary: runner.Run,
    expected: list,
    tols: list[Tolerance],
    result: CaseResult,
    notes: list,
) -> None:
    """With several array inputs (positional or keyword), change one at a time: a kernel that ignores one of them
    is caught even when the case's values hide it (a weight of all ones). Each input is changed in the first case
    that passes it as an array only: a kernel that ignores an input ignores it in every case, and these runs are
    the costliest part of a validation; an array that only later cases pass is changed in the first of them."""
    slots = array_slots(case)
    if len(slots) < 2:
        return  # one array input: the seeds already changed it
    names = case.slot_names(runner.param_names(setup.kernel))
    values = case.values()
    seed_values = seed_inputs[0].values() if seed_inputs else None
    for p in (p for p in slots if names[p] in setup.new_arrays[i]):
        changed = (
            case.with_values([seed_values[p] if j == p else x for j, x in enumerate(values)])
            if seed_values is not None
            else vary_case(case, 7919 + p, only=p)
        )
        name = names[p]
        _check_variant(
            setup, i, changed, f"input '{name}' changed", name, primary, expected, tols, result, bool(seed_inputs and from_task[0]), notes
        )


def _add(result: CaseResult, finding: Finding | None) -> None:
    if finding is not None and not any(f.verdict == finding.verdict and f.message == finding.message for f in result.findings):
        result.findings.append(replace(finding, case=result.index))


def _run(setup: Setup, i: int, case: Case, result: CaseResult, variant: str, alternative_fill: bool = False):
    """One run; a kernel error that is a verdict is added to `result` (returns None), others are raised."""
    try:
        return runner.run(setup.kernel, case, setup.target, setup.guarded, alternative_fill)
    except runner.KernelFailed as failed:
        _add(result, _failure_finding(setup, failed, _where(setup, i, case, variant)))
        return None


def _failure_finding(setup: Setup, failed: runner.KernelFailed, where: str) -> Finding:
    if failed.reference_calls:
        name, location = failed.reference_calls[0]
        return Finding("cheat_calls_reference", f"the kernel called {name}() while running", location)
    verdict = ERROR_VERDICTS.get(failed.name or "")
    if verdict is not None:
        return Finding(verdict, f"{failed.error.message}", failed.location)
    raise _kernel_error(failed, where) from None


def _kernel_error(failed: runner.KernelFailed, where: str) -> NkiError:
    e = failed.error
    if isinstance(e, NkiError):  # keep the class: NkiUsageError and KernelRuleError map to different exit codes
        return type(e)(e.name, f"{where}: {e.message}", e.fix, e.location)
    at = f" at {short(failed.location)}" if failed.location else ""
    if isinstance(e, MemoryError):
        return NkiError(
            "err_memory_limit",
            f"{where}: the kernel ran out of memory{at} (under the --memory limit of its isolated process): {e}",
            None,
            failed.location,
        )
    if raised_in_nkidev(e):  # nkidev's own code failed on what the kernel passed: our bug, not the kernel's
        return internal_error(where, e, failed.location)
    return NkiError(
        "err_kernel_raised", f"{where}: the kernel raised {type(e).__name__}{at}: {e}", None, failed.location
    ).with_traceback_of(e)


# ---------------------------------------------------------------- checks on one run


def _inputs_written(run: runner.Run) -> Finding | None:
    if not run.written_inputs:
        return None
    name, location = run.written_inputs[0]
    more = f" (and {len(run.written_inputs) - 1} more)" if len(run.written_inputs) > 1 else ""
    at = f" at {short(location)}" if location else ""
    return Finding("cheat_input_modified", f"the kernel wrote input '{name}'{at}{more}", location)


def _precision(run: runner.Run, tols: list[Tolerance]) -> Finding | None:
    wanted = [t.precision for t in tols if t.precision]
    if not wanted:
        return None
    task = max(wanted, key=mantissa_bits)
    hit = precision.find(run.trace, task)
    if hit is None:
        return None
    return Finding(
        "cheat_precision_downgrade",
        f"{hit.opcode} at {short(hit.location)} {hit.what} {hit.dtype} but the task's precision is {task} "
        f"({hit.count} instruction(s) below it)",
        hit.location,
    )


def _fill_and_rerun(setup: Setup, i: int, case: Case, primary: runner.Run, expected: list, result: CaseResult) -> None:
    """Run again with another fill for fresh memory. If the outputs change, a third run with that same fill
    tells the two causes apart: it differs from the second (nondeterministic: randomness or state kept between
    calls, even if it alternates), or it repeats it (the outputs read memory the kernel never wrote)."""
    alt = fill.supported()
    second = _run(setup, i, case, result, "second run", alternative_fill=alt)
    if second is None:
        return
    changed = _changed_output(primary.outputs, second.outputs)
    if changed is None:
        if not alt:
            _add(result, _nan_fallback(primary, expected))
        return
    if alt:
        third = _run(setup, i, case, result, "third run", alternative_fill=True)
        if third is None:
            return
        rerun = _changed_output(second.outputs, third.outputs)
        if rerun is None:
            _add(result, _unwritten(primary, *changed, "they change with the uninitialized-memory fill"))
            return
        changed = rerun
    j, count, index = changed
    _add(result, Finding("cheat_nondeterministic", f"two identical runs differ in {count} elements of output {j} (first at index {index})"))


def _unwritten(run: runner.Run, j: int, count: int, index: tuple, why: str) -> Finding:
    """Unwritten output elements: a likely bug when the kernel computed the rest of the output (fail_), the cheat
    pattern when it computed none of it (cheat_). Names the first element and the line that allocated the output."""
    size = run.outputs[j].size
    verdict = "cheat_output_not_written" if count >= size else "fail_output_not_written"
    outputs = [t for t in run.trace.tensors.values() if t.kind == "output"] if run.trace is not None else []
    record = outputs[j] if j < len(outputs) else (outputs[0] if outputs else None)
    where = record.location if record is not None else None
    allocated = f"; output {record.name!r} was allocated at {short(where)}" if where else ""
    message = f"{count} of {size} elements of output {j} depend on memory the kernel never wrote (first at index {index}); {why}{allocated}"
    return Finding(verdict, message, where)


def _changed_output(a: list, b: list) -> tuple[int, int, tuple] | None:
    for j, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and not same_bits(x, y):
            if x.shape != y.shape or x.dtype != y.dtype:
                return j, x.size, ()
            count, index = first_difference(x, y)
            return j, count, index
    return None


def _nan_fallback(run: runner.Run, expected: list) -> Finding | None:
    """Without an alternative fill: NaN where the reference is finite is the emulator's fill (or NaN math)."""
    for j, (o, e) in enumerate(zip(run.outputs, expected)):
        if o.dtype.kind in "biu":
            continue
        nan = np.isnan(np.asarray(o, np.float64)) & np.isfinite(np.asarray(e.value, np.float64)).reshape(o.shape)
        if nan.any():
            first = tuple(int(k) for k in np.argwhere(nan)[0])
            return _unwritten(run, j, int(nan.sum()), first, "they are NaN, the emulator's fill for never-written memory")
    return None


def _check_variant(
    setup: Setup,
    i: int,
    case: Case,
    variant: str,
    changed_input: str | None,
    primary: runner.Run,
    expected: list,
    tols: list[Tolerance],
    result: CaseResult,
    task_made: bool,
    notes: list,
) -> None:
    where = _where(setup, i, case, variant)
    try:
        expected_v = reference.call(setup.reference, case, where)
    except NkiError as e:
        if task_made or e.name != "err_reference_failed":
            raise
        notes.append(f"{where}: skipped, the reference is not finite on these resampled inputs")
        return
    run = _run(setup, i, case, result, variant)
    if run is None:
        return
    bad_shape = structure(run.outputs, expected_v)
    if bad_shape is not None:
        _add(result, replace(bad_shape, message=f"{variant}: {bad_shape.message}"))
        return
    metrics = measure(variant, run.outputs, expected_v, tols)
    if changed_input is None:
        result.seeds.append(metrics)
    _add(result, metric_finding(metrics))
    _add(result, _inputs_written(run))
    for j, (a, b) in enumerate(zip(primary.outputs, run.outputs)):
        if unresponsive(a, b, expected[j].value, expected_v[j].value, tols[j]):
            what = f"input '{changed_input}'" if changed_input else f"all inputs ({variant})"
            _add(
                result,
                Finding("cheat_input_independent", f"output {j} did not change when {what} changed, while the reference's output did"),
            )
            break
    moved = program_difference(primary.trace, run.trace)
    if moved is not None:
        index, location = moved
        _add(
            result,
            Finding(
                "cheat_data_dependent_program",
                f"with {variant} the kernel issues a different instruction #{index} at {short(location)}",
                location,
            ),
        )
