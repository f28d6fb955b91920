"""Comparing one kernel output with its float64 reference: max |diff|, relative L2 error, cosine."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nkidev.validate.tolerance import Tolerance


@dataclass(frozen=True)
class Metrics:
    max_abs_diff: float  # nan when the output has NaN/Inf where the reference is finite
    rel_l2: float  # ||out - ref|| / ||ref|| (0 when both are zero, inf when only ref is)
    cosine: float  # <out, ref> / (||out|| ||ref||) (1 when both are zero, 0 when one is)
    outside: int  # elements with |out - ref| > atol + rtol * |ref|
    worst_index: tuple[int, ...] | None  # where the elementwise check is missed by the most
    nonfinite: int  # NaN/Inf outputs where the reference is finite


def as_f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def compare(out: np.ndarray, ref: np.ndarray, tol: Tolerance) -> Metrics:
    o, r = as_f64(out).reshape(ref.shape), as_f64(ref)
    excess = o - r
    np.abs(excess, out=excess)  # |d|, d = out - ref
    max_abs = float(excess.max()) if excess.size else 0.0
    if not math.isfinite(max_abs):  # a NaN/Inf in the output makes max |d| NaN/Inf; so may a non-finite ref
        bad = ~np.isfinite(o)
        nonfinite = int(bad.sum())
        if nonfinite:
            d = np.where(bad, 0.0, o - r)
            excess = np.where(bad, np.inf, np.abs(d) - (tol.atol + tol.rtol * np.abs(r)))
            return Metrics(math.nan, math.nan, math.nan, int((excess > 0).sum()), _worst(excess), nonfinite)
    # All outputs finite (the common case, found from max |d| without a pass of its own): the same values as
    # above, without the masks, with the temporaries of million-element outputs reused in place, and each norm
    # computed once (a validation compares every output of every case and seed).
    norm_d = l2(excess)  # = l2(d): the same squares, summed in the same order
    limit = np.abs(r)
    limit *= tol.rtol
    limit += tol.atol
    excess -= limit  # |d| - (atol + rtol * |r|)
    outside = int(np.count_nonzero(excess > 0))
    norm_o, norm_r = l2(o), l2(r)
    return Metrics(max_abs, _rel_l2(norm_d, norm_r), _cosine(o, r, norm_o, norm_r), outside, _worst(excess) if outside else None, 0)


def _worst(excess: np.ndarray) -> tuple[int, ...] | None:
    """Where the elementwise check is missed by the most (None: nowhere)."""
    if not (excess > 0).any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))


def l2(x) -> float:
    """The Euclidean norm in float64 by NumPy's own loop: np.linalg.norm calls BLAS's ddot, which wakes BLAS's
    threads (10x slower with two threads on a busy 2-core machine) for a sum the loop does as fast."""
    v = np.asarray(x, dtype=np.float64).ravel()
    return math.sqrt(float(np.einsum("i,i->", v, v)))


def rel_l2(out: np.ndarray, ref: np.ndarray) -> float:
    return _rel_l2(l2(out - ref), l2(ref))


def _rel_l2(diff: float, norm: float) -> float:
    if diff == 0.0:
        return 0.0
    return diff / norm if norm > 0 else math.inf


def cosine(out: np.ndarray, ref: np.ndarray) -> float:
    return _cosine(out, ref, l2(out), l2(ref))


def _cosine(out: np.ndarray, ref: np.ndarray, na: float, nb: float) -> float:
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.einsum("i,i->", out.ravel(), ref.ravel()) / (na * nb))  # einsum, not np.dot: no BLAS (see l2)


def failures(m: Metrics, ref: np.ndarray, tol: Tolerance) -> list[str]:
    """Which tolerance each metric misses, as short phrases ("" list = within tolerance)."""
    if m.nonfinite:
        return [f"{m.nonfinite} NaN/Inf values where the reference is finite"]
    out = []
    if m.outside:
        r = float(ref[m.worst_index]) if m.worst_index is not None else 0.0
        out.append(
            f"{m.outside} of {ref.size} elements outside atol={tol.atol:g} + rtol={tol.rtol:g}*|ref| "
            f"(worst at index {m.worst_index}, ref={r:.6g})"
        )
    if m.rel_l2 > tol.rel_l2 and l2(ref) > 0:
        out.append(f"rel_l2={m.rel_l2:.3g} > {tol.rel_l2:g}")
    if tol.cosine is not None and m.cosine < tol.cosine:
        out.append(f"cosine={m.cosine:.6f} < {tol.cosine:g}")
    return out
