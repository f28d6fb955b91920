"""Case inputs: copies for the kernel, and new inputs of the same shapes and dtypes for extra seeds.

New inputs come from the task's own generator when `cases` takes a `seed` argument (the author knows
the distribution). Otherwise each array is resampled from its own values: a random permutation (same
multiset of values, so the same range, sign and distribution) with 10% multiplicative jitter for
floats, clipped to the original range; a constant array (ones, zeros) gets additive jitter instead,
so a kernel that ignores a weight of ones is still caught. Arrays passed by keyword (`Case(x, w=w)`) are
inputs like positional ones; scalars and other constants, positional or keyword, never change.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from nkidev.case import Case
from nkidev.validate.tolerance import is_float


def is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def as_numpy(x):
    """torch tensors (also bf16) as NumPy arrays; anything else unchanged."""
    if not is_torch(x):
        return x
    import ml_dtypes

    t = x.detach().cpu()
    if str(t.dtype) == "torch.bfloat16":
        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.numpy()


def numpy_case(case) -> Case:
    """A case as a Case with torch tensors converted to NumPy: a tuple or list is its positional inputs, a bare
    value one positional input, a Case keeps its keyword inputs."""
    if isinstance(case, Case):
        return Case(*(as_numpy(x) for x in case.args), **{k: as_numpy(v) for k, v in case.kwargs.items()})
    case = case if isinstance(case, list | tuple) else (case,)
    return Case(*(as_numpy(x) for x in case))


def is_array(x) -> bool:
    return isinstance(x, np.ndarray)


def array_slots(case: Case) -> list[int]:
    """The slots (positional inputs, then keyword ones) that hold arrays."""
    return [i for i, x in enumerate(case.values()) if is_array(x)]


def new_array_inputs(cases: list[Case], params: list[str]) -> tuple[frozenset[str], ...]:
    """Per case, the names of its array inputs that no earlier case passes as an array (a keyword array that
    only later cases pass, a positional input the first case leaves at its default). From the whole case list,
    so every shard of a parallel validation (`shard=`) agrees."""
    seen: set[str] = set()
    out = []
    for case in cases:
        names = case.slot_names(params)
        arrays = {names[p] for p in array_slots(case)}
        out.append(frozenset(arrays - seen))
        seen |= arrays
    return tuple(out)


def first_shape(case: Case) -> tuple[int, ...] | None:
    return next((tuple(x.shape) for x in case.values() if is_array(x)), None)


def copy_case(case: Case) -> Case:
    return case.with_values([np.array(x, copy=True) if is_array(x) else x for x in case.values()])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (NaN equals the same NaN), dtype and shape included."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    view = f"u{a.dtype.itemsize}"
    return bool(np.array_equal(np.ascontiguousarray(a).view(view), np.ascontiguousarray(b).view(view)))


def vary(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A new array like x (shape, dtype, value distribution) but with different values."""
    if x.size == 0:
        return x.copy()
    flat = x.reshape(-1)
    if not is_float(x.dtype):
        return rng.permutation(flat).reshape(x.shape)
    values = flat.astype(np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return x.copy()
    lo, hi = float(finite.min()), float(finite.max())
    if lo == hi:
        new = lo + 0.25 * max(abs(lo), 1.0) * rng.standard_normal(values.size)
    else:
        new = np.clip(rng.permutation(values) * (1.0 + 0.1 * rng.standard_normal(values.size)), lo, hi)
    return new.astype(x.dtype).reshape(x.shape)


def vary_case(case: Case, seed: int, only: int | None = None) -> Case:
    """`case` with new array values (all arrays, or only slot `only`), drawn slot by slot in order."""
    rng = np.random.default_rng(seed)
    return case.with_values([vary(x, rng) if is_array(x) and (only is None or i == only) else x for i, x in enumerate(case.values())])


def takes_seed(cases_fn) -> bool:
    try:
        return "seed" in inspect.signature(cases_fn).parameters
    except (TypeError, ValueError):
        return False


def _compatible(orig: Case, new: Case) -> bool:
    """The same call with arrays of the same shapes and dtypes in the same slots (keywords in any order)."""
    if len(new.args) != len(orig.args) or new.kwargs.keys() != orig.kwargs.keys():
        return False
    for a, b in zip(orig.values(), _in_order(new, orig)):
        if is_array(a) != is_array(b) or (is_array(a) and (a.shape != b.shape or a.dtype != b.dtype)):
            return False
    return True


def _in_order(new: Case, orig: Case) -> list:
    """`new`'s values in `orig`'s slot order."""
    return [*new.args, *(new.kwargs[k] for k in orig.kwargs)]


def _reseeded(orig: Case, new: Case) -> Case:
    """`orig` with the arrays of `new` (the constants stay the original's)."""
    return orig.with_values([n if is_array(o) else o for o, n in zip(orig.values(), _in_order(new, orig))])


def seed_cases(cases_fn: Callable | None, cases: list[Case], seed: int) -> tuple[list[Case], bool]:
    """Inputs for extra seed `seed` (1, 2, ...) and whether the task made them: the task's cases(seed=seed)
    when it has that form and keeps every shape and dtype (scalars and other constants, keyword ones included, are
    taken from the original cases), else resampled ones."""
    if cases_fn is not None and takes_seed(cases_fn):
        try:
            new = [numpy_case(c) for c in cases_fn(seed=seed)]
        except (Exception, SystemExit):  # noqa: BLE001 - a generator that cannot reseed falls back to resampling
            new = None
        if new is not None and len(new) == len(cases) and all(_compatible(o, n) for o, n in zip(cases, new)):
            return [_reseeded(o, n) for o, n in zip(cases, new)], True
    return [vary_case(c, 1000 * seed + i) for i, c in enumerate(cases)], False
