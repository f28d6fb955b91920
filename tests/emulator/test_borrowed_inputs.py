"""Kernel arguments laid out as emulated HBM are used in place, not copied in (tensor.from_array(borrow=)), and a
caller sees what copy-in / copy-out gives: written inputs updated after a run, untouched after a failed one (also
when the write ran on the deferred worker thread), aliased arguments independent, a returned input a copy."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError

SEEN: list = []


@jit
def keeps_its_input(x):
    SEEN.append(x.storage.array)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_an_input_in_hbm_layout_is_used_in_place_and_others_are_copied():
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    SEEN.clear()
    out = nkidev.simulate(keeps_its_input)(x)
    np.testing.assert_array_equal(out, x)
    assert np.shares_memory(SEEN[-1], x)
    read_only = x.copy()
    read_only.flags.writeable = False
    for other in (np.asfortranarray(x), read_only, np.repeat(x, 2, axis=1)[:, ::2]):  # Fortran order, read-only, strided
        np.testing.assert_array_equal(nkidev.simulate(keeps_its_input)(other), x)
        assert not np.shares_memory(SEEN[-1], other)


@jit
def doubles_then_fails(x, fail):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=x, src=t)
    if fail:
        nisa.tensor_tensor(dst=t, data1=t, data2=t[:, 0:8], op=nl.add)  # free sizes differ
    return x


def _line(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_written_input_is_updated_by_a_run_and_restored_by_a_failed_one():
    x = np.full((128, 256), 3.0, np.float32)
    out = nkidev.simulate(doubles_then_fails)(x, False)
    np.testing.assert_array_equal(x, np.full((128, 256), 6.0))
    np.testing.assert_array_equal(out, x)
    assert not np.shares_memory(out, x)  # a returned input is a copy, as after copy-out
    with pytest.raises(NkiError) as info:
        nkidev.simulate(doubles_then_fails)(x, True)
    assert info.value.name == "err_free_size_mismatch"
    assert info.value.lineno == _line(doubles_then_fails, "free sizes differ")
    np.testing.assert_array_equal(x, np.full((128, 256), 6.0))


@jit
def gemm_into_input_then_fails(a, b):
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    s = nl.ndarray((128, 2, 128), dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray((128, 2, 512), dtype=b.dtype, buffer=nl.sbuf)
    for k in range(2):
        nisa.dma_copy(dst=s[:, k, :], src=a[k * 128 : (k + 1) * 128, :])
        nisa.dma_copy(dst=m[:, k, :], src=b[k * 128 : (k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=s[:, k, :], moving=m[:, k, :], accumulate=k > 0)
    res = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)  # a 256x128x512 group: queued on the worker thread with the next DMA
    nisa.dma_copy(dst=b[0:128, :], src=res)
    nisa.tensor_copy(dst=res[:, 0:8], src=acc)  # free sizes differ
    return b


def test_an_input_written_on_the_deferred_worker_is_restored_when_the_run_fails():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
    before = b.copy()
    with pytest.raises(NkiError) as info:
        nkidev.simulate(gemm_into_input_then_fails)(a, b)
    assert info.value.name == "err_free_size_mismatch"
    assert info.value.lineno == _line(gemm_into_input_then_fails, "free sizes differ")
    np.testing.assert_array_equal(b.view(np.uint16), before.view(np.uint16))


@jit
def writes_one_reads_other(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=x, src=t)
    nisa.dma_copy(dst=t, src=y)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_one_array_passed_twice_is_two_independent_inputs():
    x = np.zeros((128, 64), np.float32)
    out = nkidev.simulate(writes_one_reads_other)(x, x)
    np.testing.assert_array_equal(out, np.zeros((128, 64)))  # y is a copy taken before x was written
    np.testing.assert_array_equal(x, np.ones((128, 64)))  # x's copy-back; y was not written
