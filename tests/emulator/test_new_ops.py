"""The remaining documented instructions: quantize_mx, nc_matmul_mx, local_gather, sequence_bounds,
rand_get_state/rand_set_state and NkiTensor.indirect(). References are written here from the docstrings."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.emulator.ops.mx import pack, scale_partition, unpack
from nkidev.errors import NkiError

RNG = np.random.default_rng(0)


def line_of(kernel, text: str) -> int:
    """The kernel source line (1-based, in this file) of the first line containing `text`."""
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def raised(run) -> NkiError:
    with pytest.raises(NkiError) as info:
        run()
    return info.value


def _fp32_exponent(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.float32).view(np.uint32) >> 23) & 0xFF).astype(np.int64) - 127


def quantize_reference(x: np.ndarray, emax: int, element) -> tuple[np.ndarray, np.ndarray]:
    """quantize_mx docstring: X = 2^(floor(log2 amax) - (Emax - 1)) per 8x4 group; data = cast(x / X)."""
    p, f = x.shape
    groups = x.astype(np.float32).reshape(p // 8, 8, f // 4, 4)
    amax = np.abs(groups).max(axis=(1, 3))
    exp = np.where(amax > 0, _fp32_exponent(amax) - (emax - 1), -127)
    q = groups / np.exp2(exp.astype(np.float32))[:, None, :, None]
    return q.reshape(p, f).astype(element), (exp + 127).astype(np.uint8)


@jit
def quantize_then_matmul(stat, mov):
    """Both operands quantized on device; scales packed into one tile (moving's at offset 4 in each quadrant)."""
    ks, m4 = stat.shape
    _, n4 = mov.shape
    out = nl.ndarray((m4 // 4, n4 // 4), dtype=nl.float32, buffer=nl.shared_hbm)
    q_data = nl.ndarray((ks, m4 // 4), dtype=nl.uint32, buffer=nl.shared_hbm)
    q_scale = nl.ndarray((ks, n4 // 4), dtype=nl.uint8, buffer=nl.shared_hbm)
    s = nl.ndarray(stat.shape, dtype=stat.dtype, buffer=nl.sbuf)
    v = nl.ndarray(mov.shape, dtype=mov.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=stat)
    nisa.dma_copy(dst=v, src=mov)
    s_q = nl.ndarray((ks, m4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    v_q = nl.ndarray((ks, n4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    scales = nl.ndarray((ks, n4 // 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.memset(dst=scales, value=1.0)
    nisa.quantize_mx(dst=s_q, src=s, dst_scale=scales[0:, : m4 // 4])
    nisa.quantize_mx(dst=v_q, src=v, dst_scale=scales[4:, :])
    acc = nl.ndarray((m4 // 4, n4 // 4), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=s_q, moving=v_q, stationary_scale=scales[0:, : m4 // 4], moving_scale=scales[4:, :])
    o = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    nisa.dma_copy(dst=q_data, src=s_q.view(nl.uint32))
    raw_scales = nl.ndarray(scales.shape, dtype=nl.uint8, buffer=nl.sbuf)
    nisa.tensor_copy(dst=raw_scales, src=scales.view(nl.uint8))
    nisa.dma_copy(dst=q_scale, src=raw_scales)
    return out, q_data, q_scale


def test_quantize_mx_and_matmul_mx_follow_the_docstrings():
    k, m, n = 64, 32, 48  # x4 units: contraction 64 partitions x 4
    stat = (RNG.standard_normal((k, 4 * m)) * 3).astype(ml_dtypes.bfloat16)
    mov = (RNG.standard_normal((k, 4 * n)) * 0.01).astype(ml_dtypes.bfloat16)
    stat[8:16, 0:4] = 0  # an all-zero group: scale 2^-127, byte 0
    out, q_data, q_scale = nkidev.simulate(quantize_then_matmul, target="trn3")(stat, mov)
    sq, ss = quantize_reference(stat, 8, ml_dtypes.float8_e4m3fn)
    vq, vs = quantize_reference(mov, 8, ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(q_data, sq.view(np.uint32))  # value k of an x4 element in byte k
    rows = [scale_partition(g) for g in range(k // 8)]
    assert rows == [0, 1, 2, 3, 32, 33, 34, 35]
    np.testing.assert_array_equal(q_scale[rows, :m], ss)
    np.testing.assert_array_equal(q_scale[[r + 4 for r in rows]], vs)
    assert ss[1, 0] == 0 and (q_scale[8:32] == 127).all() and (q_scale[40:] == 127).all()  # untouched partitions
    deq = lambda q, sc: q.astype(np.float32).reshape(k, -1, 4) * np.repeat(np.exp2(sc.astype(np.float32) - 127), 8, 0)[:, :, None]  # noqa: E731
    want = np.einsum("kiq,kjq->ij", deq(sq, ss), deq(vq, vs))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    exact = np.einsum("kiq,kjq->ij", stat.astype(np.float32).reshape(k, m, 4), mov.astype(np.float32).reshape(k, n, 4))
    np.testing.assert_allclose(out, exact, rtol=0.1, atol=0.05)  # fp8 quantization error only


def test_fp4_and_fp8_packing_orders():
    vals = np.array([[[0.5, 1.0, -1.5, 6.0]]], np.float32)
    fp4 = pack(vals, nl.float4_e2m1fn_x4)
    assert fp4.dtype == np.uint16 and fp4[0, 0] == 0x7B21  # nibbles 1, 2, 0xB (-1.5), 7 (6.0), low first
    np.testing.assert_array_equal(unpack(fp4, nl.float4_e2m1fn_x4), vals)
    fp8 = pack(vals, nl.float8_e5m2_x4)
    assert fp8.dtype == np.uint32 and (fp8.view(np.uint8) == vals.astype(ml_dtypes.float8_e5m2).view(np.uint8).reshape(-1)).all()


@jit
def fp4_matmul(stat_raw, mov_raw, s_scale, m_scale):
    k, m = stat_raw.shape
    _, n = mov_raw.shape
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((k, m), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    v = nl.ndarray((k, n), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)  # fp4 and fp8 may be mixed
    nisa.dma_copy(dst=s, src=stat_raw.view(nl.float4_e2m1fn_x4))
    nisa.dma_copy(dst=v, src=mov_raw.view(nl.float8_e5m2_x4))
    ss = nl.ndarray(s_scale.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    ms = nl.ndarray(m_scale.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.dma_copy(dst=ss, src=s_scale)
    nisa.dma_copy(dst=ms, src=m_scale)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=s, moving=v, stationary_scale=ss, moving_scale=ms)
    nisa.nc_matmul_mx(dst=acc, stationary=s, moving=v, stationary_scale=ss, moving_scale=ms)  # accumulates
    o = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out


def test_matmul_mx_with_fp4_stationary_and_scales_in_one_quadrant():
    k, m, n = 32, 16, 8
    s_vals = RNG.choice([0.0, 0.5, 1.0, 1.5, 2.0, -3.0, 4.0, -6.0], size=(k, m, 4)).astype(np.float32)
    m_vals = RNG.choice([0.25, -1.0, 2.0, 8.0], size=(k, n, 4)).astype(np.float32)
    s_scale = RNG.integers(120, 134, size=(k // 8, m), dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)  # 2^-7 .. 2^6
    m_scale = RNG.integers(120, 134, size=(k // 8, n), dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)
    stat_raw = pack(s_vals, nl.float4_e2m1fn_x4)
    mov_raw = pack(m_vals, nl.float8_e5m2_x4)
    out = nkidev.simulate(fp4_matmul, target="trn3")(stat_raw, mov_raw, s_scale, m_scale)
    fs = np.repeat(np.exp2(s_scale.view(np.uint8).astype(np.float32) - 127), 8, 0)[:, :, None]
    fm = np.repeat(np.exp2(m_scale.view(np.uint8).astype(np.float32) - 127), 8, 0)[:, :, None]
    want = 2 * np.einsum("kiq,kjq->ij", s_vals * fs, m_vals * fm)
    np.testing.assert_allclose(out, want, rtol=1e-4)  # fp32 summation order only


@jit
def mx_on_trn2(x):
    q = nl.ndarray((32, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    s = nl.ndarray((32, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
    sc = nl.ndarray((4, 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=s, dst_scale=sc)  # <-
    return x


def test_mx_instructions_exist_only_on_neuroncore_v4():
    err = raised(lambda: nkidev.simulate(mx_on_trn2, target="trn2")(np.zeros((1, 1), np.float32)))
    assert (err.name, err.lineno) == ("err_unsupported_on_target", line_of(mx_on_trn2, "# <-"))
    assert "quantize_mx" in err.message and "trn3" in err.message


# ---------------------------------------------------------------- local_gather, sequence_bounds


@jit
def gather_local(src, index, num_elem_per_idx, num_valid_indices, out_shape):
    out = nl.ndarray(out_shape, dtype=src.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.sbuf)
    i = nl.ndarray(index.shape, dtype=index.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=src)
    nisa.dma_copy(dst=i, src=index)
    d = nl.ndarray(out_shape, dtype=src.dtype, buffer=nl.sbuf)
    nisa.local_gather(dst=d, src_buffer=s, index=i, num_elem_per_idx=num_elem_per_idx, num_valid_indices=num_valid_indices)
    nisa.dma_copy(dst=out, src=d)
    return out


def test_local_gather_reads_each_cores_indices_partition_first():
    src = RNG.random((32, 64, 4), dtype=np.float32)
    per_core = [RNG.integers(0, 64, size=(16, 2)).astype(np.uint16) for _ in range(2)]  # cores may differ
    index = np.concatenate(per_core) * 4  # hardware indices count elements of the flattened partition
    out = nkidev.simulate(gather_local)(src, index, 4, 24, (32, 24, 4))
    for c, idx in enumerate(per_core):
        order = idx.flatten(order="F")[:24]  # partition dimension first, first num_valid_indices
        np.testing.assert_array_equal(out[16 * c : 16 * (c + 1)], src[16 * c : 16 * (c + 1)][:, order, :])


def test_local_gather_errors_name_the_kernel_line():
    src = RNG.random((16, 8), dtype=np.float32)
    index = np.full((16, 1), 7, np.uint16)  # 7 + 2 elements pass the 8 of a partition
    err = raised(lambda: nkidev.simulate(gather_local)(src, index, 2, 16, (16, 16, 2)))
    assert (err.name, err.lineno) == ("err_tensor_access_out_of_bound", line_of(gather_local, "nisa.local_gather("))
    err = raised(lambda: nkidev.simulate(gather_local)(src, index, 3, 16, (16, 16, 3)))  # 3 is not a power of 2
    assert (err.name, err.lineno) == ("err_shape_mismatch", line_of(gather_local, "nisa.local_gather("))
    assert "num_elem_per_idx=3" in err.message


@jit
def bounds(ids):
    out = nl.ndarray((1, 2, ids.shape[1]), dtype=ids.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=ids)
    d = nl.ndarray((1, 2, ids.shape[1]), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=d, segment_ids=s)
    nisa.dma_copy(dst=out, src=d)
    return out


def test_sequence_bounds_docstring_example():
    for dt in (np.int32, np.float32):
        out = nkidev.simulate(bounds)(np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], dt))
        assert out[0, 0].tolist() == [9, 1, 1, 3, 3, 3, 9, 7, 7] and out[0, 1].tolist() == [-1, 3, 3, 6, 6, 6, -1, 9, 9]


@jit
def bounds_into_a_short_dst(ids):
    s = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=ids)
    d = nl.ndarray((1, ids.shape[1]), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=d, segment_ids=s)  # <-
    return ids


def test_sequence_bounds_needs_a_start_and_an_end_per_element():
    err = raised(lambda: nkidev.simulate(bounds_into_a_short_dst)(np.ones((1, 5), np.int32)))
    assert (err.name, err.lineno) == ("err_shape_mismatch", line_of(bounds_into_a_short_dst, "# <-"))
    assert "(1, 2, 5)" in err.message


# ---------------------------------------------------------------- PRNG state


@jit
def rng_state_roundtrip(seeds):
    out = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.shared_hbm)
    s = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=seeds)
    nisa.rand_set_state(src_seeds=s)
    got = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=got)
    nisa.dma_copy(dst=out, src=got)
    return out


@jit
def vector_state_on_trn2(x):
    got = nl.ndarray((128, 24), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=got, engine=nisa.engine.vector)  # <-
    return x


def test_rand_get_state_returns_the_state_set():
    seeds = RNG.integers(0, 2**32, size=(128, 6), dtype=np.uint64).astype(np.uint32)
    np.testing.assert_array_equal(nkidev.simulate(rng_state_roundtrip, target="trn2")(seeds), seeds)
    err = raised(lambda: nkidev.simulate(vector_state_on_trn2, target="trn2")(np.zeros((1, 1), np.float32)))
    assert (err.name, err.lineno) == ("err_invalid_argument", line_of(vector_state_on_trn2, "# <-"))  # VectorE: NC-v4


# ---------------------------------------------------------------- tensor indirection


@jit
def indirect_columns(a, offsets):
    p, f = a.shape
    n = 32
    out = nl.ndarray((p, n), dtype=a.dtype, buffer=nl.shared_hbm)
    scattered = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    idx = nl.ndarray(offsets.shape, dtype=offsets.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=idx, src=offsets)
    cols = nl.ndarray((p, n), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=cols, src=x.indirect(idx, num_elem=n))  # gather columns
    nisa.dma_copy(dst=out, src=cols)
    nisa.memset(dst=cols, value=-1.0)
    nisa.tensor_copy(dst=x.indirect(idx, num_elem=n), src=cols)  # scatter them back as -1
    nisa.dma_copy(dst=scattered, src=x)
    return out, scattered


def test_indirect_views_gather_and_scatter_columns_in_snake_order():
    a = RNG.random((32, 40), dtype=np.float32)
    offsets = np.zeros((32, 2), np.int32)
    offsets[:16, 0] = np.arange(16) * 2  # offsets 0..15 come from column 0, 16..31 from column 1 (G = 16)
    offsets[:16, 1] = np.arange(16) * 2 + 1
    gathered, scattered = nkidev.simulate(indirect_columns, target="trn3")(a, offsets)
    order = [offsets[i % 16, i // 16] for i in range(32)]
    np.testing.assert_array_equal(gathered, a[:, order])
    want = a.copy()
    want[:, order] = -1.0
    np.testing.assert_array_equal(scattered, want)
    err = raised(lambda: nkidev.simulate(indirect_columns, target="trn2")(a, offsets))
    assert (err.name, err.lineno) == ("err_unsupported_on_target", line_of(indirect_columns, ".indirect("))
