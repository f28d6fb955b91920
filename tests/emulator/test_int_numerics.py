"""Integer numerics as the NKI ISA pages state them: arithmetic goes through fp32 (so an int32 past 2**24 lands
on fp32's spacing), except tensor_tensor's default GpSimd path for all-int32/uint32 tiles, which is native integer
arithmetic. The pages do not state a rounding mode for the fp32 -> integer step; nkidev rounds half to even and
saturates (NaN -> 0), and these tests pin that choice so a change is deliberate."""

from __future__ import annotations

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit

from .helpers import sbuf_load, to_hbm

BIG = np.array([[2**24 + 1, 2**30 + 3, -5, 7]], np.int32)


def _sim(kernel, *args):
    return np.asarray(nkidev.simulate(kernel, target="trn2")(*args))


def test_tensor_tensor_int32_default_engine_is_exact_and_vector_goes_through_fp32():
    # tensor_tensor.html (v2.32.0): all-int32/uint32 tiles default to GpSimd's native integer arithmetic (exact for
    # every 32-bit value); engine=vector overrides it and computes in fp32
    def make(engine):
        @jit
        def kernel(x):
            t = sbuf_load(x)
            d = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=d, data1=t, data2=t, op=nl.add, engine=engine)
            return to_hbm(d)

        return kernel

    x = np.array([[2**24 + 1, 2**29 + 3, -5, 7]], np.int32)
    np.testing.assert_array_equal(_sim(make(nisa.engine.unknown), x), (x.astype(np.int64) * 2).astype(np.int32))
    via_fp32 = (x.astype(np.float32) + x.astype(np.float32)).astype(np.int64)
    np.testing.assert_array_equal(_sim(make(nisa.engine.vector), x), via_fp32)
    assert _sim(make(nisa.engine.vector), x)[0, 0] == 2**25  # 2 * (2**24 + 1) is not an fp32


def test_tensor_scalar_int32_computes_in_fp32():
    # tensor_scalar.html (v2.32.0): arithmetic operators cast data to float32 and compute in float32 math;
    # the results are cast to dst.dtype
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=d, data=t, op0=nl.add, operand0=1.0)
        return to_hbm(d)

    expect = (BIG.astype(np.float32) + np.float32(1)).astype(np.float64)
    np.testing.assert_array_equal(_sim(kernel, BIG), expect)
    assert _sim(kernel, BIG)[0, 0] == 2**24  # 2**24 + 2 would be exact integer math


@pytest.mark.parametrize("how", ["dma", "tensor_copy"])
def test_int32_to_uint32_conversion_goes_through_fp32(how):
    # dma_copy.html: a dtype conversion casts src to float32, then float32 to dst; tensor_copy.html: Vector and
    # GpSimd copy bit-exactly when the dtypes match, else through an FP32 cast
    @jit
    def kernel(x):
        d = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.sbuf)
        if how == "dma":
            nisa.dma_copy(dst=d, src=x)
        else:
            nisa.tensor_copy(dst=d, src=sbuf_load(x))
        return to_hbm(d)

    x = np.array([[2**24 + 1, 2**31 - 1, -5, 7, 2**24 + 3]], np.int32)
    np.testing.assert_array_equal(_sim(kernel, x), [[2**24, 2**31, 0, 7, 2**24 + 4]])


def test_fp32_to_int_rounds_half_to_even_and_saturates():
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d32 = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=d32, src=t)
        d8 = nl.ndarray(x.shape, dtype=nl.int8, buffer=nl.sbuf)
        nisa.activation(dst=d8, op=nl.copy, data=t)
        return to_hbm(d32), to_hbm(d8)

    x = np.array([[2.5, 3.5, -2.5, 0.5, 1e10, -1e10, np.nan, 127.5, -128.5, 300.0]], np.float32)
    got32, got8 = nkidev.simulate(kernel, target="trn2")(x)
    np.testing.assert_array_equal(got32, [[2, 4, -2, 0, 2**31 - 1, -(2**31), 0, 128, -128, 300]])
    np.testing.assert_array_equal(got8, [[2, 4, -2, 0, 127, -128, 0, 127, -128, 127]])
