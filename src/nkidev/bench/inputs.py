"""Benchmark inputs: fixed seeds and several distributions, so a kernel tuned to one kind of data (or a constant
output) fails on another. Task files build their cases with `sample`; case i of seed s draws from
`distribution(s, i)`, so every case is normal, uniform or heavy-tailed across the seeds `validate` runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

DISTRIBUTIONS = ("normal", "uniform", "outliers")
OUTLIER_SHARE = 0.01  # share of elements replaced by large values in the "outliers" distribution
OUTLIER_SCALE = 8.0  # their magnitude, in standard deviations


# Inside `shapes_only()`, samplers return zero-strided arrays: the shapes and dtypes of large cases without
# drawing their values (bench list, and timing runs whose numerics are skipped).
_SHAPES_ONLY: ContextVar[bool] = ContextVar("nkidev_bench_shapes_only", default=False)


@contextmanager
def shapes_only() -> Iterator[None]:
    token = _SHAPES_ONLY.set(True)
    try:
        yield
    finally:
        _SHAPES_ONLY.reset(token)


def _placeholder(shape, dtype) -> np.ndarray:
    return np.broadcast_to(np.zeros((), dtype=dtype), shape)


def distribution(seed: int, index: int) -> str:
    """The distribution case `index` of seed `seed` draws from (cycles through DISTRIBUTIONS)."""
    return DISTRIBUTIONS[(seed + index) % len(DISTRIBUTIONS)]


def sample(rng: np.random.Generator, shape, dtype, dist: str = "normal", scale: float = 1.0, shift: float = 0.0) -> np.ndarray:
    """An array of `shape` cast to `dtype`: standard normal, uniform on [-sqrt(3), sqrt(3)] (unit variance), or
    normal with OUTLIER_SHARE of the elements at +-OUTLIER_SCALE; then times `scale` plus `shift`."""
    if _SHAPES_ONLY.get():
        return _placeholder(shape, dtype)
    if dist == "normal":
        x = rng.standard_normal(shape)
    elif dist == "uniform":
        x = rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), shape)
    elif dist == "outliers":
        x = rng.standard_normal(shape)
        mask = rng.random(shape) < OUTLIER_SHARE
        x = np.where(mask, OUTLIER_SCALE * np.sign(rng.standard_normal(shape)), x)
    else:
        raise ValueError(f"unknown distribution {dist!r}: use one of {DISTRIBUTIONS}")
    return (x * scale + shift).astype(dtype)


def positive(rng: np.random.Generator, shape, dtype, low: float = 0.5, high: float = 1.5) -> np.ndarray:
    """Uniform values in [low, high) (norm weights, step sizes): never near zero."""
    if _SHAPES_ONLY.get():
        return _placeholder(shape, dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def nbytes(*arrays) -> int:
    """Bytes of the arrays among the arguments (scalars count nothing): the usual floor on HBM traffic."""
    return int(sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)))
