"""Large fresh allocations are filled lazily (tensor.py, "Lazily filled allocations"): every value a kernel, its
outputs or validate can see is the one an eager NaN / 4 / EmulatorOptions.fill would have left, and a tile that
instructions overwrite in full is never filled.

The memory of a lazily filled storage is poisoned here (a byte pattern no fill writes), so a path that reached it
without filling first would show the poison instead of the sentinel."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from nkidev.case import Case
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator import tensor
from nkidev.emulator.jit import jit
from nkidev.errors import NkiWarning
from nkidev.taskfile import load_task
from nkidev.validate import fill, runner, validate

POISON = 0x41  # fp32 0x41414141 = 12.08, bf16 0x4141 = 12.06, int32 1094795585: never a fill


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    new = tensor._fresh_array

    def fresh(shape, dtype):  # new or recycled memory, poisoned
        array = new(shape, dtype)
        array.reshape(-1).view(np.uint8).fill(POISON)
        return array

    monkeypatch.setattr(tensor, "_fresh_array", fresh)


def fills() -> int:
    return tensor.FILLS[0]


@jit
def half_tile(x):
    """Rows :64 of a large SBUF tile written, then all of it read (by an engine) and stored."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    copy = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile[:64], src=x[:64])
    nisa.tensor_copy(dst=copy, src=tile)
    nisa.dma_copy(dst=out, src=copy)
    return out


@pytest.mark.parametrize("dtype,sentinel", [(np.float32, np.nan), (np.int32, 4)])
def test_a_tile_written_in_part_reads_the_sentinel_in_the_rest(dtype, sentinel):
    x = np.arange(128 * 1024).reshape(128, 1024).astype(dtype)
    assert x.nbytes >= tensor.LAZY_BYTES
    out = half_tile(x)
    assert np.array_equal(out[:64], x[:64])
    assert np.all(np.isnan(out[64:])) if dtype is np.float32 else np.all(out[64:] == sentinel)
    other = runner.run(half_tile, Case(x), None, alternative_fill=True).outputs[0]
    alternative = fill.FLOAT_FILL if dtype is np.float32 else fill.INT_FILL
    assert np.array_equal(out[:64], x[:64]) and np.all(other[64:] == alternative)


def test_validate_still_reports_the_unwritten_read():
    x = np.arange(128 * 1024, dtype=np.int32).reshape(128, 1024)
    result = validate(half_tile, lambda a: a, [(x,)], seeds=0)
    found = [f for c in result.cases for f in c.findings if f.verdict == "fail_output_not_written"]
    assert found and found[0].message.startswith("65536 of 131072 elements of output 0 depend on memory")


@jit
def overwritten(x):
    """Every large tile, and the output, overwritten in full by instructions (the output in two row halves)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    half = x.shape[0] // 2
    for h in nl.affine_range(2):
        a = nl.ndarray((half, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray((half, x.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x[h * half : (h + 1) * half])
        nisa.tensor_scalar(dst=b, data=a, op0=nl.multiply, operand0=2.0)
        nisa.activation(dst=a, op=nl.exp, data=b)
        nisa.dma_copy(dst=out[h * half : (h + 1) * half], src=a)
    return out


def test_tiles_overwritten_in_full_are_never_filled():
    x = np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32)
    before = fills()
    out = overwritten(x)
    assert fills() == before  # no lazy fill: every fresh storage (tiles and output) was claimed by full writes
    np.testing.assert_allclose(out, np.exp(2 * x), rtol=1e-6)
    before = fills()
    half_tile(x[:128])
    assert fills() == before + 1  # the half-written tile, filled once when read


@jit
def rows_out(x, order):
    """Writes the listed 64-row blocks of a kernel-allocated HBM output (in that order) and nothing else."""
    out = nl.ndarray((x.shape[0], x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    for block in order:
        nisa.dma_copy(dst=out[block * 64 : (block + 1) * 64], src=x[block * 64 : (block + 1) * 64])
    return out


@pytest.mark.parametrize("order", [(0,), (2, 0), (3, 1, 2), (0, 1, 2, 3)])
def test_a_kernel_output_never_returns_uninitialized_memory(order):
    x = np.random.default_rng(1).standard_normal((256, 512)).astype(np.float32)
    out = rows_out(x, order)
    for block in range(4):
        rows = slice(block * 64, (block + 1) * 64)
        if block in order:
            assert np.array_equal(out[rows], x[rows])
        else:
            assert np.all(np.isnan(out[rows]))


@jit
def accumulate_fresh_psum(a, b):
    """accumulate=True into a PSUM tile no matmul initialized: adds to the sentinel (NaN), as on an eager fill."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m, accumulate=True)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_accumulating_into_a_fresh_psum_tile_sees_the_sentinel():
    import ml_dtypes

    a = np.ones((128, 128), ml_dtypes.bfloat16)
    b = np.ones((128, 512), ml_dtypes.bfloat16)
    with pytest.warns(NkiWarning, match="warn_accumulate_uninitialized_psum"):  # and it is told, as before
        out = accumulate_fresh_psum(a, b)
    assert np.all(np.isnan(out))


EXAMPLES = Path(__file__).parents[2] / "examples"
KERNELS = [
    ("softmax.py", "softmax_kernel"),
    ("layernorm.py", "layernorm_kernel"),
    ("rmsnorm.py", "rmsnorm_kernel"),
    ("matmul.py", "matmul_kernel"),
    ("attention.py", "attention_kernel"),
    ("swiglu.py", "swiglu"),
    ("swiglu_naive.py", "swiglu_naive"),
    ("tiled_add.py", "tiled_add"),
]


@pytest.mark.parametrize("path,name", KERNELS)
def test_lazy_fill_gives_the_bits_of_an_eager_fill(path, name, monkeypatch):
    """Every bundled example on its validation cases (overlapped GEMMs included): the same output bits, NaNs
    included, whether large tiles are filled lazily (their memory poisoned) or when allocated."""
    task = load_task(EXAMPLES / path)
    kernel = task.kernel(name)
    for case in task.calls()[:2]:
        lazy = runner.run(kernel, case, None).outputs
        with monkeypatch.context() as m:
            m.setattr(tensor, "LAZY_BYTES", sys.maxsize)
            eager = runner.run(kernel, case, None).outputs
        lazy, eager = (x if isinstance(x, tuple | list) else (x,) for x in (lazy, eager))
        for got, want in zip(lazy, eager, strict=True):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_recycled_memory_is_taken_only_when_nothing_views_it():
    from nkidev.emulator import dtypes

    shape = (128, 1024)
    with tensor.recycling():
        a = dtypes.scratch_f32(shape)
        address = a.__array_interface__["data"][0]
        view = a[64:]
        del a
        b = dtypes.scratch_f32(shape)
        assert not np.shares_memory(b, view)  # a's buffer is still viewed
        del view, b
        c = dtypes.scratch_f32(shape)
        assert c.__array_interface__["data"][0] == address  # free again: reused, no fresh pages
        array = tensor._fresh_array(shape, np.dtype(np.float32))
        kept = array[:1]
        tensor._recycle(array)
        assert tensor._take(array.nbytes) is None  # something views it: not recycled
        del kept
    assert not tensor._pool and not dtypes._scratch  # released when no run is in progress
