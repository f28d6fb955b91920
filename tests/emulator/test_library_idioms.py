"""Idioms public NKI kernels rely on (each reduced to a minimal kernel of our own): values, or the named error
and the kernel line it points at (marked `# <-`)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit, run
from nkidev.errors import NkiError


def marked_line(kernel) -> int:
    lines, start = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    hits = [start + i for i, text in enumerate(lines) if "# <-" in text]
    assert len(hits) == 1
    return hits[0]


def expect(name: str, kernel, *args, grid=None, **kwargs) -> NkiError:
    sim = nkidev.simulate(kernel, **kwargs)
    with pytest.raises(NkiError) as info:
        (sim[grid] if grid else sim)(*args)
    err = info.value
    assert err.name == name, str(err)
    assert err.lineno == marked_line(kernel), f"reported {err.location}: {err}"
    return err


# ---------------------------------------------------------------- dtypes are plain values


@dataclasses.dataclass
class _Params:
    dtype: object = nl.bfloat16
    n: int = 4


def test_dtypes_survive_asdict_copy_and_pickle():
    d = dataclasses.asdict(_Params())["dtype"]
    assert d is nl.bfloat16 and np.dtype(d) == np.dtype(ml_dtypes.bfloat16) and not np.issubdtype(d, np.integer)
    assert copy.deepcopy(nl.float8_e4m3) is nl.float8_e4m3 and pickle.loads(pickle.dumps(nl.int32)) is nl.int32
    with pytest.raises(AttributeError):
        nl.float32.itemsize = 2


def test_packed_mx_types_have_their_documented_widths():
    # fp8 x4 packs four bytes in 32 bits; fp4 x4 four nibbles in 16 bits (nki.language dtype docs)
    assert (nl.float8_e5m2_x4.itemsize, nl.float8_e4m3fn_x4.itemsize, nl.float4_e2m1fn_x4.itemsize) == (4, 4, 2)


@jit
def _roundtrip_fp4_bits(raw):
    p, f = raw.shape
    out = nl.ndarray((p, f), dtype=nl.uint16, buffer=nl.shared_hbm)
    t = nl.ndarray((p, f), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=raw.ap(pattern=[[f, p], [1, f]], offset=0, dtype=nl.float4_e2m1fn_x4))
    nisa.dma_copy(dst=out.ap(pattern=[[f, p], [1, f]], offset=0, dtype=nl.float4_e2m1fn_x4), src=t)
    return out


def test_uint16_tensor_reinterpreted_as_fp4_x4_keeps_every_element():
    raw = np.arange(8 * 16, dtype=np.uint16).reshape(8, 16)
    np.testing.assert_array_equal(nkidev.simulate(_roundtrip_fp4_bits)(raw), raw)


@jit
def _dtype_parameter(a, dt):
    assert dt == nl.bfloat16 and dt.itemsize == 2
    out = nl.ndarray(a.shape, dtype=dt, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out


def test_numpy_and_ml_dtypes_arguments_reach_the_kernel_as_nl_dtypes():
    a = np.linspace(0, 1, 32, dtype=np.float32).reshape(4, 8)
    for dt in (ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16)):
        out = nkidev.simulate(_dtype_parameter)(a, dt)
        np.testing.assert_array_equal(out, a.astype(ml_dtypes.bfloat16))


# ---------------------------------------------------------------- compile-time Python on NKI objects


@jit
def _version_branch(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    scale = 2.0 if nisa.get_nc_version() >= nisa.nc_version.gen3 else 3.0
    nisa.activation(dst=t, op=nl.copy, data=t, scale=scale)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_nc_versions_are_ordered():
    assert nisa.nc_version.gen2 < nisa.nc_version.gen3 <= nisa.nc_version.gen4 and nisa.nc_version.gen4 > nisa.nc_version.gen2
    a = np.ones((4, 8), np.float32)
    assert (nkidev.simulate(_version_branch, target="trn2")(a) == 2).all()
    assert (nkidev.simulate(_version_branch, target="trn1")(a) == 3).all()


@jit
def _optional_bias(a, bias=None):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    if bias:  # an is-given check on a tensor handle, not a read of its values
        b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=bias)
        nisa.tensor_tensor(dst=x, data1=x, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=x)
    return out


def test_tensor_handle_truthiness_is_an_is_given_check():
    a = np.random.default_rng(0).random((16, 8), dtype=np.float32)
    zeros = np.zeros_like(a)  # all zeros: a read of the values would skip the branch
    np.testing.assert_array_equal(nkidev.simulate(_optional_bias)(a, zeros + 1.0), a + 1.0)
    np.testing.assert_array_equal(nkidev.simulate(_optional_bias)(a, zeros), a)
    np.testing.assert_array_equal(nkidev.simulate(_optional_bias)(a), a)


@dataclasses.dataclass
class _Section(nl.NKIObject):
    index = None
    offset = 0
    label: str = "x"

    def rows(self):
        return slice(self.offset, self.offset + 4)


@jit
def _dataclass_config(a):
    p = _Section(index=1, offset=4)
    assert p.label == "x" and p.index == 1
    out = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[p.rows(), :])
    nisa.dma_copy(dst=out, src=t)
    return out


def test_dataclass_nkiobject_with_unannotated_fields():
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(nkidev.simulate(_dataclass_config)(a), a[4:8])
    assert _Section().offset == 0 and [f.name for f in dataclasses.fields(_Section)] == ["label", "index", "offset"]


@dataclasses.dataclass
class _Dims(nl.NKIObject):
    rows: int
    spare: int  # declared, never passed: the NKI compiler's default initializer makes it None
    cols: int = 8


@jit
def _dataclass_missing_field(a):
    d = _Dims(rows=4)
    assert d.spare is None and d.cols == 8
    out = nl.ndarray((d.rows, d.cols), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((d.rows, d.cols), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[0 : d.rows, :])
    nisa.dma_copy(dst=out, src=t)
    return out


def test_dataclass_nkiobject_field_left_out_defaults_to_none():
    # NKI language guide, "Class Support": a field without a default gets None in the generated __init__.
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(nkidev.simulate(_dataclass_missing_field)(a), a[:4])
    assert _Dims(1, 2).spare == 2 and _Dims(1).cols == 8 and _Dims().rows is None


@jit
def _column_by_integer_index(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    col = t[:, 2]  # an on-chip view stays 2-D: (P, 1), so it can be sliced again like the tile it is
    out = nl.ndarray((64, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    c = nl.ndarray((64, 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=c, src=col[:64, :1])
    nisa.dma_copy(dst=out, src=c)
    return out


def test_integer_index_on_the_last_free_dim_of_an_sbuf_tile_keeps_it_at_size_1():
    # NKI language guide, "Tensor indexing": on-chip tensors stay >= 2-D; HBM tensors drop the indexed dim.
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    np.testing.assert_array_equal(nkidev.simulate(_column_by_integer_index)(a), a[:64, 2:3])


# ---------------------------------------------------------------- immediates and access patterns


@jit
def _range_select_literal(a, lo, hi):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    b0 = nl.ndarray(lo.shape, dtype=lo.dtype, buffer=nl.sbuf)
    b1 = nl.ndarray(hi.shape, dtype=hi.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=b0, src=lo)
    nisa.dma_copy(dst=b1, src=hi)
    y = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(
        dst=y, on_true_tile=x, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0, bound1=b1, on_false_value=-3.4028235e38
    )
    nisa.dma_copy(dst=out, src=y)
    return out


def test_range_select_takes_the_fp32_min_literal():
    a = np.random.default_rng(1).random((8, 16), dtype=np.float32)
    lo, hi = np.full((8, 1), 2.0, np.float32), np.full((8, 1), 10.0, np.float32)
    want = np.where((np.arange(16) >= 2) & (np.arange(16) < 10), a, np.finfo(np.float32).min)
    np.testing.assert_array_equal(nkidev.simulate(_range_select_literal)(a, lo, hi), want)


@jit
def _gather_row_of_reshaped(a, idx):
    out = nl.ndarray((1, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.ndarray((1, 1), dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    base = a.reshape((2, 16))
    t = nl.ndarray((1, 16), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=base.ap(pattern=[[16, 1], [1, 16]], offset=0, scalar_offset=i, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out


@jit
def _gather_rows_of_strided(a, idx):
    out = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.ndarray((4, 1), dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    every_other = a[0:16:2, :]  # rows 0, 2, 4, ...: dim 0's stride is two rows
    t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=every_other.ap(pattern=[[16, 4], [1, 8]], offset=0, vector_offset=i, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out


def test_indirect_offsets_scale_by_the_views_stride():
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(nkidev.simulate(_gather_row_of_reshaped)(a, np.array([[1]], np.int32))[0], a.reshape(-1)[16:32])
    b = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    idx = np.array([[3], [0], [7], [1]], np.int32)
    np.testing.assert_array_equal(nkidev.simulate(_gather_rows_of_strided)(b, idx), b[0:16:2][[3, 0, 7, 1]])


# ---------------------------------------------------------------- views are checked when accessed


@jit
def _unused_views(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    beyond = a.ap(pattern=[[a.shape[1], 8], [1, a.shape[1]]], offset=a.shape[0] * a.shape[1])  # the next tile: none
    rest = x[:, 8:8]  # no remainder columns
    none = a[nl.ds(16, 0), :]
    assert rest.shape == (16, 0) and none.shape == (0, 8) and beyond.shape == (8, 8)
    nisa.dma_copy(dst=out, src=x)
    return out


def test_out_of_bounds_and_empty_views_are_fine_until_accessed():
    a = np.random.default_rng(2).random((16, 8), dtype=np.float32)
    np.testing.assert_array_equal(nkidev.simulate(_unused_views)(a), a)


@jit
def _access_beyond(a):
    x = nl.ndarray((8, 8), dtype=a.dtype, buffer=nl.sbuf)
    beyond = a.ap(pattern=[[8, 8], [1, 8]], offset=a.shape[0] * 8)
    nisa.dma_copy(dst=x, src=beyond)  # <-
    return a


@jit
def _access_empty(a):
    x = nl.ndarray((16, 8), dtype=a.dtype, buffer=nl.sbuf)
    rest = x[:, 8:8]
    nisa.memset(dst=rest, value=0.0)  # <-
    return a


def test_accessing_an_out_of_bounds_or_empty_view_names_the_access_line():
    err = expect("err_tensor_access_out_of_bound", _access_beyond, np.zeros((16, 8), np.float32))
    assert "reaches element" in err.message and "view made at test_library_idioms.py:" in err.message
    err = expect("err_tensor_access_out_of_bound", _access_empty, np.zeros((16, 8), np.float32))
    assert "empty" in err.message


# ---------------------------------------------------------------- nl wrappers, loop helpers, matmul modes


@jit
def _column_broadcast(a, c):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    col = nl.ndarray(c.shape, dtype=c.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=col, src=c)
    y = nl.subtract(x, col)  # [P, F] - [P, 1]
    z = nl.divide(col, nl.add(y, 2.0))  # [P, 1] / [P, F]
    nisa.dma_copy(dst=out, src=z)
    return out


def test_nl_ops_broadcast_a_column_operand():
    a = np.random.default_rng(3).random((128, 64), dtype=np.float32)
    c = np.random.default_rng(4).random((128, 1), dtype=np.float32)
    np.testing.assert_allclose(nkidev.simulate(_column_broadcast)(a, c), c / (a - c + 2.0), rtol=1e-6)
    trace = nkidev.run(_column_broadcast, (a, c)).trace
    assert [i.opcode for i in trace.instructions if i.engine != "dma"] == ["tensor_scalar"] * 3


@jit
def _nl_range_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.range(a.shape[0] // 4):
        t = nl.ndarray((4, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 4 : (i + 1) * 4, :])
        nisa.dma_copy(dst=out[i * 4 : (i + 1) * 4, :], src=t)
    return out


def test_nl_range_is_a_loop_range():
    a = np.random.default_rng(5).random((8, 16), dtype=np.float32)
    np.testing.assert_array_equal(nkidev.simulate(_nl_range_loop)(a), a)


def _double_row(mode):
    @jit
    def kernel(a, b):
        out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        nisa.dma_copy(dst=y, src=b)
        ps = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=x, moving=y, perf_mode=mode)  # <-
        o = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=ps)
        nisa.dma_copy(dst=out, src=o)
        return out

    return kernel


def test_perf_mode_string_is_the_enum_member():
    rng = np.random.default_rng(6)
    a = rng.random((128, 2, 64)).astype(ml_dtypes.float8_e4m3)
    b = rng.random((128, 2, 128)).astype(ml_dtypes.float8_e4m3)
    want = np.einsum("kim,kin->mn", a.astype(np.float32), b.astype(np.float32))
    by_member = nkidev.simulate(_double_row(nisa.matmul_perf_mode.double_row))(a, b)
    np.testing.assert_allclose(by_member, want, rtol=1e-5)
    np.testing.assert_array_equal(nkidev.simulate(_double_row("double_row"))(a, b), by_member)
    run = nkidev.run(_double_row("double_row"), (a, b)).trace
    assert [i.attrs["perf_mode"] for i in run.instructions if i.opcode == "nc_matmul"] == ["double_row"]
    expect("err_invalid_argument", _double_row("quad_row"), a, b)


# ---------------------------------------------------------------- placed tensors, find_index8 duplicates


@jit
def _psum_rotation(a, b, eye):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    e = nl.ndarray(eye.shape, dtype=eye.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=b)
    nisa.dma_copy(dst=e, src=eye)
    p0 = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
    nisa.nc_matmul(dst=p0, stationary=e, moving=x)
    p1 = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, address=(0, 0))  # same bank: same memory
    nisa.nc_matmul(dst=p1, stationary=e, moving=y)  # a new tensor: a new accumulation group
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p0)
    nisa.dma_copy(dst=out, src=o)
    return out


def test_tiles_at_the_same_address_alias():
    rng = np.random.default_rng(7)
    a, b = rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)
    np.testing.assert_allclose(nkidev.simulate(_psum_rotation)(a, b, np.eye(128, dtype=np.float32)), b, rtol=1e-6)


@jit
def _find8(data, vals):
    out = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    d = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    v = nl.ndarray(vals.shape, dtype=vals.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=d, src=data)
    nisa.dma_copy(dst=v, src=vals)
    idx = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=d, vals=v)
    nisa.dma_copy(dst=out, src=idx)
    return out


def test_find_index8_pairs_duplicates_with_successive_positions():
    data = np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0]], np.float32)
    vals = np.array([[3, 8, 8, 8, 8, 8, 8, 8]], np.float32)  # the nc_match_replace8 docstring's example
    assert nkidev.simulate(_find8)(data, vals)[0].tolist() == [2, 4, 5, 6, 7, 8, 9, 10]
    vals = np.array([[8, 8, 8, 8, 8, 8, 8, 8]], np.float32)  # an eighth 8 has no unused match
    assert nkidev.simulate(_find8)(data, vals)[0].tolist() == [4, 5, 6, 7, 8, 9, 10, 0xFFFFFFFF]


@jit
def _ap_on_column_views(a):
    p, f = a.shape
    out = nl.ndarray((p, 2), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    y = nl.ndarray((p, 2), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=y[:, 0:1], src=x[:, 2:3].ap(pattern=[[f, p], [1, 1]], offset=0))  # relative to the view
    half = x[32:64, 5:6].ap(pattern=[[f, 32], [1, 1]], offset=1)  # a partition range, one column further
    nisa.tensor_copy(dst=y[32:64, 1:2], src=half)
    nisa.memset(dst=y[0:32, 1:2], value=0.0)
    nisa.memset(dst=y[64:, 1:2], value=0.0)
    nisa.dma_copy(dst=out, src=y)
    return out


def test_ap_on_column_views_of_sbuf_tiles():
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    out = nkidev.simulate(_ap_on_column_views)(a)
    np.testing.assert_array_equal(out[:, 0], a[:, 2])
    np.testing.assert_array_equal(out[32:64, 1], a[32:64, 6])
    assert (out[:32, 1] == 0).all() and (out[64:, 1] == 0).all()


@jit
def _broadcast_row(row):
    t = nl.ndarray(row.shape, dtype=row.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=row)
    wide = nl.broadcast_to(t, (128, row.shape[1]))
    out = nl.ndarray(wide.shape, dtype=row.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=wide)
    return out


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_partition_broadcast_to_is_a_matmul_against_ones(dtype):
    """[sources: arch-v2 "Alternative Use Case"]: NKI runs broadcast_to of a one-partition tile as
    nc_matmul(ones, x, is_stationary_onezero=True) on the Tensor Engine, here in 512-column PSUM banks."""
    row = np.random.default_rng(0).standard_normal((1, 1000)).astype(dtype)
    r = run(_broadcast_row, (row,), {}, options=EmulatorOptions(target="trn1"))
    ops = [(i.engine, i.opcode) for i in r.trace.instructions]
    matmul, copy = ("tensor", "nc_matmul"), ("vector", "tensor_copy")
    assert [op for op in ops if op[1] != "dma_copy"][1:] == [matmul, copy, matmul, copy]
    assert [i.opcode for i in r.trace.instructions].count("dma_copy") == 2  # the load and the store: no DMA broadcast
    mm = [i for i in r.trace.instructions if i.opcode == "nc_matmul"]
    assert [i.free_elems for i in mm] == [512, 488] and all(i.attrs.get("onezero") for i in mm)
    np.testing.assert_array_equal(np.asarray(r.outputs, np.float32), np.broadcast_to(row.astype(np.float32), (128, 1000)))


def test_an_integer_partition_broadcast_stays_a_dma():
    row = np.arange(600, dtype=np.int32).reshape(1, 600)
    r = run(_broadcast_row, (row,), {}, options=EmulatorOptions(target="trn1"))
    assert [i.opcode for i in r.trace.instructions] == ["dma_copy"] * 3
    np.testing.assert_array_equal(np.asarray(r.outputs), np.broadcast_to(row, (128, 600)))
