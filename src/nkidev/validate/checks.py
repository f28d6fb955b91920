"""The checks that compare runs: output structure and metrics, response to changed inputs, identical
reruns, fill dependence, and whether the instruction stream depends on data. Each returns Findings."""

from __future__ import annotations

import math
import os

import numpy as np

from nkidev.emulator.trace import Trace
from nkidev.validate.inputs import same_bits
from nkidev.validate.metrics import compare, failures, l2
from nkidev.validate.reference import Expected
from nkidev.validate.result import Finding, OutputResult, RunMetrics
from nkidev.validate.tolerance import Tolerance, dtype_name, is_float

RESPONSE_FRACTION = 0.1  # an output that moves less than this share of the reference's move "did not respond"
RESPONSE_MARGIN = 4.0  # ...when the reference moved by at least this many times the allowed rel_l2 error


def short(location: str | None) -> str:
    if not location:
        return "?"
    path, _, line = location.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def structure(outs: list, expected: list[Expected]) -> Finding | None:
    """fail_shape / fail_dtype when outputs cannot be compared element by element."""
    if len(outs) != len(expected):
        return Finding("fail_shape", f"the kernel returns {len(outs)} output(s), the reference {len(expected)}")
    for i, (o, e) in enumerate(zip(outs, expected)):
        if not isinstance(o, np.ndarray):
            return Finding("fail_shape", f"output {i} is {type(o).__name__}, not an HBM tensor")
        if o.shape != e.value.shape and (o.size != e.value.size or np.squeeze(o).shape != np.squeeze(e.value).shape):
            return Finding("fail_shape", f"output {i} has shape {o.shape}, the reference's has {e.value.shape}")
        if is_float(o.dtype) != is_float(e.value.dtype):
            return Finding(
                "fail_dtype", f"output {i} is {dtype_name(o.dtype)} but the reference returns {dtype_name(e.value.dtype)} values"
            )
    return None


def measure(label: str, outs: list, expected: list[Expected], tols: list[Tolerance]) -> RunMetrics:
    """Metrics of every output against its reference (each with its own tolerance), and the worst of them."""
    results = []
    for i, (o, e, tol) in enumerate(zip(outs, expected, tols)):
        m = compare(o, e.value, tol)
        results.append(OutputResult(i, tuple(o.shape), dtype_name(o.dtype), m.max_abs_diff, m.rel_l2, m.cosine, failures(m, e.value, tol)))
    worst = lambda key, pick: pick(getattr(r, key) for r in results)  # noqa: E731
    nan = any(math.isnan(r.max_abs_diff) for r in results)
    return RunMetrics(
        label,
        math.nan if nan else worst("max_abs_diff", max),
        math.nan if nan else worst("rel_l2", max),
        math.nan if nan else worst("cosine", min),
        results,
    )


def metric_finding(run: RunMetrics) -> Finding | None:
    bad = [o for o in run.outputs if o.failures]
    if not bad:
        return None
    nonfinite = all("NaN/Inf" in f for o in bad for f in o.failures)
    where = "" if run.label == "case" else f"{run.label}: "
    text = "; ".join(f"output {o.index}: " * (len(run.outputs) > 1) + ", ".join(o.failures) for o in bad)
    return Finding("fail_nonfinite" if nonfinite else "fail_tolerance", where + text)


def unresponsive(out_a, out_b, ref_a, ref_b, tol: Tolerance) -> bool:
    """True when the reference's output moved between two inputs while the kernel's did not.

    Either the kernel's outputs are bit-identical although the reference outputs, rounded to the kernel's
    output dtype, differ in more than 1% of the elements (no tolerance involved: a kernel that reads its
    input cannot do that); or the kernel's output moved by less than 10% of the reference's move while
    that move is several times the allowed rel_l2 error (catches a constant plus noise)."""
    if not isinstance(out_a, np.ndarray) or not isinstance(out_b, np.ndarray) or out_a.shape != out_b.shape:
        return False
    if same_bits(out_a, out_b):
        ra = np.asarray(ref_a, np.float64).astype(out_a.dtype)
        rb = np.asarray(ref_b, np.float64).reshape(np.shape(ref_a)).astype(out_a.dtype)
        return bool(np.mean(~_equal(ra, rb)) > 0.01)
    ref_b = np.asarray(ref_b, np.float64).reshape(np.shape(ref_a))
    scale = max(l2(ref_a), l2(ref_b))  # the larger norm: the margin below then holds for both runs' errors
    if scale == 0:
        return False
    moved_ref = l2(np.asarray(ref_a, np.float64) - ref_b) / scale
    moved_out = l2(np.asarray(out_a, np.float64) - np.asarray(out_b, np.float64)) / scale
    bound = tol.rel_l2 if math.isfinite(tol.rel_l2) else 0.0
    if not (math.isfinite(moved_ref) and math.isfinite(moved_out)) or moved_ref <= RESPONSE_MARGIN * bound:
        return False
    return moved_out <= RESPONSE_FRACTION * moved_ref


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64) == np.asarray(b, np.float64)


def first_difference(a: np.ndarray, b: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """(number of differing elements, index of the first) of two same-shape arrays, bitwise."""
    if a.dtype.kind in "biu":
        diff = a != b
    else:
        view = f"u{a.dtype.itemsize}"
        diff = np.ascontiguousarray(a).view(view) != np.ascontiguousarray(b).view(view)
    first = np.argwhere(diff)
    return int(diff.sum()), tuple(int(i) for i in first[0]) if len(first) else ()


def skeleton(trace: Trace | None) -> list[tuple]:
    """The instruction stream without data: what a compiled program would contain for these shapes."""
    if trace is None:
        return []
    return [
        (
            ins.opcode,
            ins.engine,
            ins.location,
            tuple((a.role, a.buffer, tuple(a.shape), a.dtype, a.byte_start, a.byte_stop) for a in ins.reads),
            tuple((a.role, a.buffer, tuple(a.shape), a.dtype, a.byte_start, a.byte_stop) for a in ins.writes),
            repr(sorted(ins.attrs.items(), key=lambda kv: kv[0])),
        )
        for ins in trace.instructions
    ]


def program_difference(a: Trace | None, b: Trace | None) -> tuple[int, str | None] | None:
    """(instruction index, location) of the first difference between two runs' programs, None if identical."""
    sa, sb = skeleton(a), skeleton(b)
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x != y:
            return i, x[2]
    if len(sa) != len(sb):
        i = min(len(sa), len(sb))
        longer = sa if len(sa) > len(sb) else sb
        return i, longer[i][2]
    return None
