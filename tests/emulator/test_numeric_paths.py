"""The fast numeric paths give the same bits as the plain NumPy / ml_dtypes operations they replace."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nkidev.emulator import blas
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.dtypes import DTYPES, fill_uninitialized, to_f32, widen_into

from .helpers import empty, read, tile

WIDENED = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu, np.float16]


def _every_pattern(dtype) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    return np.arange(2 ** (8 * size), dtype=f"u{size}").view(dtype).reshape(2 ** (4 * size), -1)


@pytest.mark.parametrize("dtype", WIDENED, ids=lambda d: np.dtype(d).name)
def test_widening_gives_ml_dtypes_bits_for_every_pattern_and_layout(dtype):
    values = _every_pattern(dtype)  # NaN payloads, infinities, subnormals and signed zeros included
    for view in (values, values[:, ::3], values.T):
        expected = view.astype(np.float32).view(np.uint32)
        out = np.empty(view.shape, np.float32)
        widen_into(out, view)
        np.testing.assert_array_equal(out.view(np.uint32), expected)
        np.testing.assert_array_equal(to_f32(view, None).view(np.uint32), expected)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_uninitialized_fill_is_nan_for_floats_and_4_otherwise(name):
    dt = DTYPES[name]
    array = np.zeros((3, 5), dt.storage)
    fill_uninitialized(array, dt)
    if name == "float8_e8m0fnu":
        assert (array.view(np.uint8) == 0xFF).all()
    elif dt.kind == "float":
        assert np.isnan(array.astype(np.float32)).all()
    else:
        assert (array == 4).all()


def _k_tiled(k_tiles: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A K-tiled bf16 matmul into one PSUM tile; returns (emulated, the one-GEMM fp32 value it must equal)."""
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((128 * k_tiles, 64)).astype(ml_dtypes.bfloat16)
    mv = rng.standard_normal((128 * k_tiles, 256)).astype(ml_dtypes.bfloat16)
    dst = empty((64, 256), np.float32, buffer=nl.psum)
    with blas.single_thread():  # both GEMMs on one thread, as in a run (OpenBLAS's sums depend on its thread count)
        for k in range(k_tiles):
            rows = slice(128 * k, 128 * (k + 1))
            nisa.nc_matmul(dst=dst, stationary=tile(s[rows]), moving=tile(mv[rows]), accumulate=k > 0)
        got = read(dst)
        expected = s.astype(np.float32).T @ mv.astype(np.float32)
    return got, expected.astype(np.float64)


def test_pooled_psum_groups_of_any_depth_and_order_give_one_gemm_bits():
    # deep after shallow (the pool's buffers must grow), shallow after deep (must not reuse stale rows), repeats
    for k_tiles, seed in ((2, 0), (5, 1), (1, 2), (5, 3), (3, 4)):
        got, expected = _k_tiled(k_tiles, seed)
        np.testing.assert_array_equal(got, expected)


def test_continuing_a_group_then_reading_it_then_accumulating_true_warns_nothing_and_adds():
    rng = np.random.default_rng(9)
    s, mv = rng.standard_normal((128, 32)).astype(np.float32), rng.standard_normal((128, 64)).astype(np.float32)
    dst = empty((32, 64), np.float32, buffer=nl.psum)
    st, mt = tile(s), tile(mv)
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt, accumulate=False)
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt, accumulate=True)  # continues the open group
    first = read(dst)  # computes the group
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt, accumulate=True)  # a new group on top of the values
    np.testing.assert_array_equal(read(dst), (first.astype(np.float32) + s.T @ mv).astype(np.float64))


@pytest.mark.parametrize("width", [512, 511, 64, 7, 2, 1])
def test_bn_stats_gives_the_bits_of_numpy_mean_and_squared_deviations_of_even_and_odd_elements(width):
    rng = np.random.default_rng(width)
    x = (rng.standard_normal((128, width)) * 300 + 7).astype(np.float32)
    x.flat[::37] = np.nan
    expected = []
    with np.errstate(all="ignore"):
        for half in (x[:, 0::2], x[:, 1::2]):
            n = half.shape[1]
            mean = half.mean(axis=1, dtype=np.float64) if n else np.zeros(128)
            m2 = ((half - mean[:, None]) ** 2).sum(axis=1, dtype=np.float64) if n else np.zeros(128)
            expected += [np.full(128, n, np.float64), mean, m2]
        dst = empty((128, 6), np.float32)
        nisa.bn_stats(dst=dst, data=tile(x))
    np.testing.assert_array_equal(np.array(dst._data).view(np.uint32), np.stack(expected, axis=1).astype(np.float32).view(np.uint32))
