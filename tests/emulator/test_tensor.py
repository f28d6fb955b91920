"""Tensor views: indexing, reshape, access patterns, dtypes and casts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.dtypes import DTYPES, from_f32
from nkidev.emulator.tensor import MemoryRegion, from_array
from nkidev.errors import KernelRuleError

from .helpers import read, tile


def test_integer_index_keeps_the_partition_dim_on_chip_but_drops_it_in_hbm():
    sb = nl.ndarray((128, 4, 8), nl.float32, buffer=nl.sbuf)
    assert sb[3].shape == (1, 4, 8) and sb[:, 2].shape == (128, 8) and sb[..., 0].shape == (128, 4)
    hbm = from_array(np.zeros((4, 128, 8), np.float32), "x")
    assert hbm[1].shape == (128, 8) and hbm[1, :, 3].shape == (128,)
    assert sb[nl.ds(32, 16), 1:3].shape == (16, 2, 8)


@pytest.mark.parametrize("key", [(slice(0, 129),), (slice(None), slice(2, 9)), (130,), (slice(5, 5),)])
def test_out_of_bounds_slices_are_errors_not_clipped(key):
    sb = nl.ndarray((128, 8), nl.float32, buffer=nl.sbuf)
    view = sb[key]  # views are bounds-checked when an instruction accesses them
    with pytest.raises(KernelRuleError, match="err_tensor_access_out_of_bound"):
        nisa.memset(dst=view, value=0.0)


def test_reshape_views_share_storage():
    t = tile(np.arange(128 * 24, dtype=np.float32).reshape(128, 24))
    v = t.reshape((128, 4, 6))
    nisa.memset(dst=v[:, 1, :], value=-1.0)
    assert (read(t)[:, 6:12] == -1).all() and (read(t)[:, :6] >= 0).all()
    with pytest.raises(KernelRuleError, match="err_reshape_incompatible"):
        t.reshape((64, 48))
    assert t.reshape((128, 4, 6)).permute((0, 2, 1)).shape == (128, 6, 4)


def test_ap_patterns_address_the_storage():
    t = tile(np.arange(4 * 16, dtype=np.float32).reshape(4, 16))
    v = t.ap([[16, 4], [2, 8]], offset=1)  # odd columns
    np.testing.assert_array_equal(read(v), np.arange(64).reshape(4, 16)[:, 1::2])
    with pytest.raises(KernelRuleError, match="err_partition_stride_not_supported"):
        t.ap([[32, 2], [1, 16]])
    with pytest.raises(KernelRuleError, match="err_tensor_access_out_of_bound"):
        nisa.memset(dst=t.ap([[16, 4], [1, 17]]), value=0.0)
    hbm = from_array(np.arange(64, dtype=np.float32).reshape(8, 8), "h")
    np.testing.assert_array_equal(np.array(hbm.ap([[1, 8], [8, 8]])._data), np.arange(64).reshape(8, 8).T)


def test_dma_gather_with_vector_offset_and_oob_skip():
    data = from_array(np.arange(10 * 4, dtype=np.float32).reshape(10, 4), "data")
    idx = tile(np.array([[7], [2], [9], [42]], np.uint32))
    dst = tile(np.full((4, 4), -1.0, np.float32))
    with pytest.raises(KernelRuleError, match="err_tensor_access_out_of_bound"):
        nisa.dma_copy(dst=dst, src=data.ap([[4, 4], [1, 4]], vector_offset=idx, indirect_dim=0))
    nisa.dma_copy(dst=dst, src=data.ap([[4, 4], [1, 4]], vector_offset=idx, indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    expected = np.arange(40).reshape(10, 4)[[7, 2, 9]]
    np.testing.assert_array_equal(read(dst)[:3], expected)


def test_every_nl_dtype_exists_with_its_storage():
    names = [
        "bool_",
        "int8",
        "int16",
        "int32",
        "uint8",
        "uint16",
        "uint32",
        "float16",
        "float32",
        "bfloat16",
        "tfloat32",
        "float8_e4m3",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e8m0fnu",
        "float8_e5m2_x4",
        "float8_e4m3fn_x4",
        "float4_e2m1fn_x4",
    ]
    for n in names:
        assert getattr(nl, n) is DTYPES[n]
    assert nl.bfloat16.storage == ml_dtypes.bfloat16 and nl.float8_e4m3.storage == ml_dtypes.float8_e4m3


def test_casts_round_to_nearest_even_and_tf32_keeps_ten_mantissa_bits():
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-11 + 2**-20], np.float32)
    np.testing.assert_array_equal(from_f32(x, DTYPES["bfloat16"]).astype(np.float32), [1.0, 1 + 2**-6, 1.0])
    np.testing.assert_array_equal(from_f32(x, DTYPES["tfloat32"]), [1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-10])
    np.testing.assert_array_equal(from_f32(np.array([2.5, 3.5, -2.5, 1e10], np.float32), DTYPES["int32"]), [2, 4, -2, 2**31 - 1])
    np.testing.assert_array_equal(from_f32(np.array([-3.0, 300.0], np.float32), DTYPES["uint8"]), [0, 255])


def test_memory_regions():
    assert nl.hbm is MemoryRegion.private_hbm and nl.is_hbm(nl.shared_hbm) and nl.is_on_chip(nl.psum)
    with pytest.raises(KernelRuleError, match="err_invalid_argument"):
        nl.ndarray((2, 2), nl.float32, buffer="sbuf")
