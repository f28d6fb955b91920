"""Every emulated ISA op against a plain-NumPy oracle, over dtypes and shapes (partial tiles included).

One table of op records drives one parametrized test (the JAX `lax_reference` / OpRecord habit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl

from .helpers import empty, read, tile

BF16 = ml_dtypes.bfloat16
FP8 = ml_dtypes.float8_e4m3
SHAPES = [(128, 512), (64, 100), (1, 7)]
FLOATS = [np.float32, BF16, np.float16]
TOL = {np.float32: 1e-5, BF16: 1e-2, np.float16: 2e-3, FP8: 1.5e-1}


def rand(shape, dtype, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def f64(x):
    return np.asarray(x).astype(np.float64)


@dataclass
class OpRecord:
    name: str
    run: Callable  # (inputs, dtype) -> output tile
    oracle: Callable  # (inputs as float64) -> expected float64
    inputs: Callable  # (shape, dtype) -> list of arrays
    dtypes: tuple = tuple(FLOATS)
    shapes: tuple = tuple(SHAPES)


def one(shape, dtype):
    return [rand(shape, dtype)]


def two(shape, dtype):
    return [rand(shape, dtype, seed=1), rand(shape, dtype, seed=2)]


def positive(shape, dtype):
    return [rand(shape, dtype, 0.25, 4.0)]


def col(shape, seed=3):
    return rand((shape[0], 1), np.float32, seed=seed)


def _tt(op):
    def run(x, dt):
        out = empty(x[0].shape, dt)
        nisa.tensor_tensor(dst=out, data1=tile(x[0]), data2=tile(x[1]), op=op)
        return out

    return run


def _ts(op0, operand0, op1=None, operand1=None, reverse0=False, reverse1=False):
    def run(x, dt):
        out = empty(x[0].shape, dt)
        o0 = tile(operand0(x[0].shape)) if callable(operand0) else operand0
        o1 = tile(operand1(x[0].shape)) if callable(operand1) else operand1
        nisa.tensor_scalar(dst=out, data=tile(x[0]), op0=op0, operand0=o0, reverse0=reverse0, op1=op1, operand1=o1, reverse1=reverse1)
        return out

    return run


def _act(op, **kw):
    def run(x, dt):
        out = empty(x[0].shape, dt)
        nisa.activation(dst=out, op=op, data=tile(x[0]), **kw)
        return out

    return run


def _reduce(op, negate=False):
    def run(x, dt):
        out = empty((x[0].shape[0], 1), dt)
        nisa.tensor_reduce(dst=out, op=op, data=tile(x[0]), axis=1, negate=negate)
        return out

    return run


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    import math

    return np.vectorize(math.erf)(x)


RECORDS = [
    OpRecord("tensor_tensor add", _tt(nl.add), lambda a, b: a + b, two),
    OpRecord("tensor_tensor multiply", _tt(nl.multiply), lambda a, b: a * b, two),
    OpRecord("tensor_tensor subtract", _tt(nl.subtract), lambda a, b: a - b, two),
    OpRecord("tensor_tensor maximum", _tt(nl.maximum), np.maximum, two),
    OpRecord("tensor_tensor greater", _tt(nl.greater), lambda a, b: (a > b).astype(float), two),
    OpRecord("tensor_scalar mul+add", _ts(nl.multiply, 3.0, nl.add, -1.5), lambda a: a * 3.0 - 1.5, one),
    OpRecord("tensor_scalar reverse subtract", _ts(nl.subtract, 1.0, reverse0=True), lambda a: 1.0 - a, one),
    OpRecord("tensor_scalar vector operand", _ts(nl.multiply, col), lambda a: a * f64(col(a.shape)), one),
    OpRecord("tensor_scalar two ops reverse1", _ts(nl.add, 2.0, nl.subtract, 10.0, reverse1=True), lambda a: 10.0 - (a + 2.0), one),
    OpRecord("tensor_scalar unary rsqrt", _ts(nl.rsqrt, None), lambda a: 1 / np.sqrt(a), positive),
    OpRecord("activation exp", _act(nl.exp), np.exp, one),
    OpRecord("activation exp scale bias", _act(nl.exp, scale=0.5, bias=None), lambda a: np.exp(0.5 * a), one),
    OpRecord("activation tanh", _act(nl.tanh), np.tanh, one),
    OpRecord("activation sigmoid", _act(nl.sigmoid), _sigmoid, one),
    OpRecord("activation silu", _act(nl.silu), lambda a: a * _sigmoid(a), one),
    OpRecord("activation gelu", _act(nl.gelu), lambda a: 0.5 * a * (1 + _erf(a / np.sqrt(2))), one),
    OpRecord(
        "activation gelu_apprx_tanh",
        _act(nl.gelu_apprx_tanh),
        lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3))),
        one,
    ),
    OpRecord("activation relu", _act(nl.relu), lambda a: np.maximum(a, 0), one),
    OpRecord("activation square", _act(nl.square), np.square, one),
    OpRecord("activation copy", _act(nl.copy), lambda a: a, one),
    OpRecord("activation log", _act(nl.log), np.log, positive),
    OpRecord("activation sqrt", _act(nl.sqrt), np.sqrt, positive),
    OpRecord("activation reciprocal", _act(nl.reciprocal), lambda a: 1 / a, positive),
    OpRecord("activation softplus", _act(nl.softplus), lambda a: np.log1p(np.exp(a)), one),
    OpRecord("activation erf", _act(nl.erf), _erf, one),
    OpRecord("activation sign", _act(nl.sign), np.sign, one),
    OpRecord("activation abs", _act(nl.abs), np.abs, one),
    OpRecord("activation arctan", _act(nl.arctan), np.arctan, one),
    OpRecord("activation mish", _act(nl.mish), lambda a: a * np.tanh(np.log1p(np.exp(a))), one),
    OpRecord("tensor_reduce add", _reduce(nl.add), lambda a: a.sum(axis=1, keepdims=True), one),
    OpRecord("tensor_reduce max negate", _reduce(nl.maximum, negate=True), lambda a: -a.max(axis=1, keepdims=True), one),
    OpRecord("tensor_reduce min", _reduce(nl.minimum), lambda a: a.min(axis=1, keepdims=True), one),
    OpRecord("reciprocal", lambda x, dt: _unary(nisa.reciprocal, x, dt), lambda a: 1 / a, positive),
    OpRecord("tensor_copy", lambda x, dt: _unary(nisa.tensor_copy, x, dt, "src", "dst"), lambda a: a, one),
]


def _unary(fn, x, dt, src="data", dst="dst"):
    out = empty(x[0].shape, dt)
    fn(**{dst: out, src: tile(x[0])})
    return out


def _expected_rounding(expected, dt):
    return f64(np.asarray(expected, dtype=np.float64).astype(np.float32).astype(dt))


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_op_matches_numpy(record, dtype, shape):
    inputs = record.inputs(shape, dtype)
    out = record.run(inputs, dtype)
    expected = record.oracle(*[f64(x) for x in inputs])
    tol = TOL[dtype]
    np.testing.assert_allclose(read(out), _expected_rounding(expected, dtype), rtol=tol, atol=tol * 1e-2)


# --- ops with their own shapes or semantics -------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, BF16, FP8])
@pytest.mark.parametrize("k,m,n", [(128, 128, 512), (64, 32, 100), (3, 5, 7)])
def test_nc_matmul_is_stationary_transposed_times_moving(dtype, k, m, n):
    s, mv = rand((k, m), dtype, seed=4), rand((k, n), dtype, seed=5)
    dst = empty((m, n), np.float32, buffer=nl.psum)
    st, mt = tile(s), tile(mv)
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt)
    np.testing.assert_allclose(read(dst), f64(s).T @ f64(mv), rtol=1e-5, atol=1e-4)


def test_nc_matmul_accumulate_modes():
    s, mv = rand((128, 64), BF16, seed=6), rand((128, 256), BF16, seed=7)
    ref = f64(s).T @ f64(mv)
    dst = empty((64, 256), np.float32, buffer=nl.psum)
    st, mt = tile(s), tile(mv)
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt)  # None: first write overwrites the NaN fill
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt)  # None: the group is open, so it accumulates
    np.testing.assert_allclose(read(dst), 2 * ref, rtol=1e-5, atol=1e-4)
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt, accumulate=False)  # False: overwrite
    np.testing.assert_allclose(read(dst), ref, rtol=1e-5, atol=1e-4)
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt, accumulate=True)
    np.testing.assert_allclose(read(dst), 2 * ref, rtol=1e-5, atol=1e-4)
    out = empty((64, 256), np.float32)
    nisa.tensor_copy(dst=out, src=dst)  # reading PSUM closes the accumulation group
    nisa.nc_matmul(dst=dst, stationary=st, moving=mt)  # so None overwrites again
    np.testing.assert_allclose(read(dst), ref, rtol=1e-5, atol=1e-4)


def test_nc_matmul_accumulate_true_into_uninitialized_psum_warns_and_stays_nan():
    from nkidev.errors import NkiWarning

    dst = empty((4, 8), np.float32, buffer=nl.psum)
    with pytest.warns(NkiWarning, match="uninitialized"):
        nisa.nc_matmul(dst=dst, stationary=tile(np.ones((2, 4), np.float32)), moving=tile(np.ones((2, 8), np.float32)), accumulate=True)
    assert np.isnan(read(dst)).all()


def test_nc_matmul_double_row_contracts_partition_and_pair_dims():
    from .helpers import use_target

    use_target("trn2")
    s, mv = rand((128, 2, 16), FP8, seed=8), rand((128, 2, 64), FP8, seed=9)
    dst = empty((16, 64), np.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=dst, stationary=tile(s), moving=tile(mv), perf_mode=nisa.matmul_perf_mode.double_row)
    ref = f64(s).reshape(256, 16).T @ f64(mv).reshape(256, 64)
    np.testing.assert_allclose(read(dst), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("engine,p,f", [(nisa.engine.tensor, 128, 96), (nisa.engine.vector, 32, 20), (nisa.engine.tensor, 5, 3)])
def test_nc_transpose(engine, p, f):
    x = rand((p, f), BF16)
    buf = nl.psum if engine == nisa.engine.tensor else nl.sbuf
    dst = empty((f, p), BF16, buffer=buf)
    nisa.nc_transpose(dst=dst, data=tile(x), engine=engine)
    np.testing.assert_array_equal(read(dst), f64(x).T)


def test_dma_copy_casts_through_fp32_with_round_to_nearest_even():
    from nkidev.emulator.tensor import from_array

    src = from_array(np.array([[1.0, 1.00390625, 1.01171875, -2.5]], np.float32), "x")
    dst = empty((1, 4), BF16)
    nisa.dma_copy(dst=dst, src=src)
    # 1.00390625 is halfway between bf16 1.0 and 1.0078125: ties go to even (1.0)
    np.testing.assert_array_equal(read(dst), [[1.0, 1.0, 1.015625, -2.5]])


def test_dma_transpose_2d():
    from .helpers import use_target

    use_target("trn2")
    x = rand((16, 64), BF16)
    dst = empty((64, 16), BF16)
    nisa.dma_transpose(dst=dst, src=tile(x))
    np.testing.assert_array_equal(read(dst), f64(x).T)


def test_tensor_copy_predicated_keeps_dst_where_predicate_false():
    dst = tile(np.zeros((4, 6), np.float32))
    pred = tile((np.arange(24).reshape(4, 6) % 2).astype(np.uint8))
    src = tile(np.full((4, 6), 7.0, np.float32))
    nisa.tensor_copy_predicated(dst=dst, src=src, predicate=pred)
    np.testing.assert_array_equal(read(dst), np.where(np.arange(24).reshape(4, 6) % 2, 7.0, 0.0))
    nisa.tensor_copy_predicated(dst=dst, src=-1.0, predicate=pred, reverse_pred=True)
    np.testing.assert_array_equal(read(dst), np.where(np.arange(24).reshape(4, 6) % 2, 7.0, -1.0))


@pytest.mark.parametrize("dtype,value", [(np.float32, 3.5), (BF16, -1.25), (np.int32, 7), (np.uint8, 255)])
def test_memset(dtype, value):
    dst = empty((32, 10), dtype)
    nisa.memset(dst=dst, value=value)
    assert (read(dst) == value).all()


def test_iota_pattern_and_channel_multiplier():
    dst = empty((4, 2, 3), np.int32)
    nisa.iota(dst=dst, pattern=[[10, 2], [1, 3]], offset=5, channel_multiplier=100)
    expected = 5 + 100 * np.arange(4)[:, None, None] + 10 * np.arange(2)[None, :, None] + np.arange(3)[None, None, :]
    np.testing.assert_array_equal(read(dst), expected)


def test_affine_select_builds_a_causal_mask():
    x = np.ones((8, 8), np.float32)
    dst = empty((8, 8), np.float32)
    # keep column j <= row p: p - j >= 0
    nisa.affine_select(dst=dst, pattern=[[-1, 8]], channel_multiplier=1, on_true_tile=tile(x), on_false_value=-9.0, cmp_op=nl.greater_equal)
    np.testing.assert_array_equal(read(dst), np.where(np.tril(np.ones((8, 8))) > 0, 1.0, -9.0))


def test_activation_bias_vector_and_accumulated_reduction():
    x = rand((16, 40), np.float32)
    bias = rand((16, 1), np.float32, seed=3)
    out, res = empty((16, 40)), empty((16, 1))
    nisa.activation(
        dst=out,
        op=nl.exp,
        data=tile(x),
        bias=tile(bias),
        scale=2.0,
        reduce_op=nl.add,
        reduce_res=tile(np.zeros((16, 1), np.float32)),
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
    )
    nisa.activation(
        dst=out, op=nl.exp, data=tile(x), bias=tile(bias), scale=2.0, reduce_op=nl.add, reduce_res=res, reduce_cmd=nisa.reduce_cmd.reduce
    )
    y = np.exp(2.0 * f64(x) + f64(bias))
    np.testing.assert_allclose(read(out), y, rtol=1e-5)
    np.testing.assert_allclose(read(res), 2 * y.sum(axis=1, keepdims=True), rtol=1e-5)


def test_activation_reduce_resets_then_sums():
    x = rand((8, 32), np.float32)
    out, res = empty((8, 32)), empty((8, 1))
    nisa.activation_reduce(dst=out, op=nl.square, data=tile(x), reduce_op=nl.add, reduce_res=res)
    np.testing.assert_allclose(read(res), (f64(x) ** 2).sum(axis=1, keepdims=True), rtol=1e-5)


def test_activation_sin_has_no_range_reduction():
    out = empty((1, 3))
    nisa.activation(dst=out, op=nl.sin, data=tile(np.array([[9.0, 1.0, -9.0]], np.float32)))
    got = read(out)[0]
    assert abs(got[0] - 27.65) < 0.01 and abs(got[2] + 27.65) < 0.01  # documented hardware behaviour
    assert abs(got[1] - np.sin(1.0)) < 1e-6


def test_nl_sin_reduces_the_range_first():
    out = nl.sin(tile(np.array([[9.0, -9.0]], np.float32)))
    np.testing.assert_allclose(read(out)[0], np.sin([9.0, -9.0]), atol=1e-5)


def test_tensor_partition_reduce():
    x = rand((64, 12), np.float32)
    dst = empty((1, 12))
    nisa.tensor_partition_reduce(dst=dst, op=nl.add, data=tile(x))
    np.testing.assert_allclose(read(dst), f64(x).sum(axis=0, keepdims=True), rtol=1e-5)


def _marked_line(kernel) -> int:
    import inspect

    lines, start = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    (hit,) = [start + i for i, text in enumerate(lines) if "# <-" in text]
    return hit


def _partition_reduce_kernel(op, dtype):
    from nkidev.emulator.jit import jit

    @jit
    def kernel(x):
        t = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray((1, x.shape[1]), dtype=dtype, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=r, op=op, data=t)  # <-
        out = nl.ndarray(r.shape, dtype=dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out

    return kernel


@pytest.mark.parametrize("version", ["0.6", "0.7"])
def test_tensor_partition_reduce_takes_bitwise_xor_and_nl_mean(version):
    """The NKI 0.7 page lists bitwise_xor and mean among the ops
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.tensor_partition_reduce.html);
    both were refused with err_invalid_op. nl.mean is the average (the 0.6 page's name for it)."""
    import nkidev

    xi = np.random.default_rng(5).integers(0, 1 << 20, (16, 6)).astype(np.int32)
    got = nkidev.simulate(_partition_reduce_kernel(nl.bitwise_xor, nl.int32), nki_version=version)(xi)
    np.testing.assert_array_equal(got, np.bitwise_xor.reduce(xi, axis=0, keepdims=True))
    x = rand((16, 6), np.float32)
    got = nkidev.simulate(_partition_reduce_kernel(nl.mean, nl.float32), nki_version=version)(x)
    np.testing.assert_allclose(got, f64(x).mean(axis=0, keepdims=True), rtol=1e-5, atol=1e-6)


def test_tensor_partition_reduce_refuses_an_unlisted_op_at_its_line():
    import nkidev
    from nkidev.errors import NkiError

    kernel = _partition_reduce_kernel(nl.multiply, nl.float32)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel)(rand((16, 6), np.float32))
    assert info.value.name == "err_invalid_op"
    assert info.value.lineno == _marked_line(kernel)
    assert "bitwise_xor" in info.value.fix


def test_tensor_tensor_scan_linear_recurrence():
    a, b = rand((8, 50), np.float32, 0, 1, seed=1), rand((8, 50), np.float32, 0, 1, seed=2)
    dst = empty((8, 50))
    nisa.tensor_tensor_scan(dst=dst, data0=tile(a), data1=tile(b), initial=0.0, op0=nl.multiply, op1=nl.add)
    ref = np.zeros((8, 50))
    prev = np.zeros(8)
    for i in range(50):
        prev = f64(a)[:, i] * prev + f64(b)[:, i]
        ref[:, i] = prev
    np.testing.assert_allclose(read(dst), ref, rtol=1e-5)


def test_scalar_tensor_tensor():
    x, y = rand((16, 30), np.float32, seed=1), rand((16, 30), np.float32, seed=2)
    dst = empty((16, 30))
    nisa.scalar_tensor_tensor(dst=dst, data=tile(x), op0=nl.subtract, operand0=1.0, op1=nl.multiply, operand1=tile(y))
    np.testing.assert_allclose(read(dst), (f64(x) - 1.0) * f64(y), rtol=1e-5, atol=1e-6)
    nisa.scalar_tensor_tensor(
        dst=dst, data=tile(x), op0=nl.subtract, operand0=1.0, op1=nl.subtract, operand1=tile(y), reverse0=True, reverse1=True
    )
    np.testing.assert_allclose(read(dst), f64(y) - (1.0 - f64(x)), rtol=1e-5, atol=1e-6)


def test_tensor_scalar_reduce():
    x = rand((16, 30), np.float32)
    dst, res = empty((16, 30)), empty((16, 1))
    nisa.tensor_scalar_reduce(dst=dst, data=tile(x), op0=nl.multiply, operand0=2.0, reduce_op=nl.maximum, reduce_res=res)
    np.testing.assert_allclose(read(res), 2 * f64(x).max(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_bn_stats_then_bn_aggr_give_mean_and_variance():
    x = rand((32, 1024), np.float32, 0, 100)
    stats = empty((32, 12))
    for i in range(2):
        nisa.bn_stats(dst=_slice(stats, 6 * i, 6 * i + 6), data=_slice(tile(x), 512 * i, 512 * i + 512))
    out = empty((32, 2))
    nisa.bn_aggr(dst=out, data=stats)
    np.testing.assert_allclose(read(out)[:, 0], f64(x).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(read(out)[:, 1], f64(x).var(axis=1), rtol=1e-4)


def _slice(t, a, b):
    return t[:, a:b]


def test_range_select_and_select_reduce():
    from .helpers import use_target

    use_target("trn2")
    x = rand((4, 16), np.float32)
    dst, red = empty((4, 16)), empty((4, 1))
    nisa.range_select(
        dst=dst,
        on_true_tile=tile(x),
        comp_op0=nl.greater_equal,
        comp_op1=nl.less,
        bound0=tile(np.full((4, 1), 2.0, np.float32)),
        bound1=tile(np.full((4, 1), 10.0, np.float32)),
        reduce_res=red,
        range_start=0,
    )
    idx = np.arange(16)
    fmin = np.finfo(np.float32).min
    exp = np.where((idx >= 2) & (idx < 10), f64(x), fmin)
    np.testing.assert_allclose(read(dst), exp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(read(red), exp.max(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    pred = (np.arange(64).reshape(4, 16) % 3 == 0).astype(np.uint8)
    nisa.select_reduce(
        dst=dst, predicate=tile(pred), on_true=tile(x), on_false=-5.0, reduce_res=red, reduce_cmd=nisa.reduce_cmd.reset_reduce
    )
    exp = np.where(pred, f64(x), -5.0)
    np.testing.assert_allclose(read(dst), exp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(read(red), exp.max(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_max8_and_find_index8():
    x = rand((8, 64), np.float32)
    top = empty((8, 8))
    nisa.max8(dst=top, src=tile(x))
    np.testing.assert_allclose(read(top), -np.sort(-f64(x), axis=1)[:, :8])
    idx = empty((8, 8), np.uint32)
    nisa.nc_find_index8(dst=idx, data=tile(x), vals=top)
    np.testing.assert_array_equal(read(idx), np.argsort(-f64(x), axis=1, kind="stable")[:, :8])
    missing = empty((8, 8), np.uint32)
    nisa.nc_find_index8(dst=missing, data=tile(x), vals=tile(np.full((8, 8), 99.0, np.float32)))
    assert (read(missing) == 0xFFFFFFFF).all()


def test_exponential_is_trn3_only_and_sums():
    from nkidev.errors import KernelRuleError

    from .helpers import use_target

    x = rand((4, 10), np.float32)
    with pytest.raises(KernelRuleError, match="err_unsupported_on_target"):
        nisa.exponential(dst=empty((4, 10)), src=tile(x))
    use_target("trn3")
    dst, res = empty((4, 10)), empty((4, 1))
    nisa.exponential(dst=dst, src=tile(x), max_value=1.0, reduce_res=res, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    np.testing.assert_allclose(read(dst), np.exp(f64(x) - 1.0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(read(res), np.exp(f64(x) - 1.0).sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_bitvec_ops_work_on_bit_patterns():
    a = tile(np.array([[0b1100, 0b1010]], np.int32))
    b = tile(np.array([[0b1010, 0b0110]], np.int32))
    out = empty((1, 2), np.int32)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.bitwise_xor)
    np.testing.assert_array_equal(read(out), [[0b0110, 0b1100]])
    nisa.tensor_scalar(dst=out, data=a, op0=nl.left_shift, operand0=2)
    np.testing.assert_array_equal(read(out), [[0b110000, 0b101000]])


def test_fp32_to_int_rounds_half_to_even_and_saturates():
    x = tile(np.array([[0.5, 1.5, 2.5, -0.5, 300.0, -300.0, np.nan]], np.float32))
    out = empty((1, 7), np.int8)
    nisa.tensor_copy(dst=out, src=x)
    np.testing.assert_array_equal(read(out), [[0, 2, 2, 0, 127, -128, 0]])


def test_int32_tensor_tensor_saturates_an_fp32_result_past_int32_max():
    """nl.divide of int32 tiles (GpSimd's int32 path, math in fp32) rounds 2**31 - 1 to fp32 2**31; the store
    saturates it to int32 max as every fp32 -> int cast does (test above), where it wrapped to -2**31."""
    a = tile(np.array([[2**31 - 1, -(2**31), 7, -9, 5, 0]], np.int32))
    b = tile(np.array([[1, -1, 2, 4, 0, 0]], np.int32))
    out = empty((1, 6), np.int32)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.divide)
    np.testing.assert_array_equal(read(out), [[2**31 - 1, 2**31 - 1, 4, -2, 2**31 - 1, 0]])


def _exponential_kernel(reduce_cmd):
    from nkidev.emulator.jit import jit

    @jit
    def kernel(x):
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.exponential(dst=d, src=t, reduce_res=r, reduce_cmd=reduce_cmd, reduce_init=2.0)  # <-
        out = nl.ndarray(r.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out

    return kernel


@pytest.mark.parametrize("cmd", ["idle", "reset_reduce", "reduce"])
def test_exponential_refuses_a_reduce_init_load_reduce_does_not_read(cmd):
    """The page's constraints: reduce_init should be unset or 0.0 when reduce_cmd is not load_reduce
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.exponential.html);
    it was silently ignored. With load_reduce it seeds the sum."""
    import nkidev
    from nkidev.errors import NkiError

    x = rand((4, 10), np.float32)
    kernel = _exponential_kernel(getattr(nisa.reduce_cmd, cmd))
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, target="trn3")(x)
    assert info.value.name == "err_invalid_argument"
    assert info.value.lineno == _marked_line(kernel)
    got = nkidev.simulate(_exponential_kernel(nisa.reduce_cmd.load_reduce), target="trn3")(x)
    np.testing.assert_allclose(got, 2.0 + np.exp(f64(x)).sum(axis=1, keepdims=True), rtol=1e-5)


def _activation_kernel(engine, reduce: bool):
    from nkidev.emulator.jit import jit

    @jit
    def kernel(x):
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf) if reduce else None
        cmd = nisa.reduce_cmd.reset_reduce if reduce else nisa.reduce_cmd.idle
        nisa.activation(dst=d, op=nl.exp, data=t, scale=2.0, bias=0.5, reduce_op=nl.add, reduce_res=r, reduce_cmd=cmd, engine=engine)  # <-
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=d)
        return out

    return kernel


def test_activation_takes_engine_and_runs_on_gpsimd_from_neuroncore_v4():
    """NKI 0.7's activation (and activate2) have engine=, default scalar; GpSimd runs them on NeuronCore-v4+ and the
    accumulator is the Scalar engine's only
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.activation.html).
    engine= was a TypeError."""
    import nkidev
    from nkidev.errors import NkiError

    x = rand((8, 12), np.float32)
    want = np.exp(2.0 * f64(x) + 0.5)
    for engine, target in ((nisa.engine.scalar, "trn2"), (nisa.engine.gpsimd, "trn3")):
        got = nkidev.simulate(_activation_kernel(engine, False), target=target, nki_version="0.7")(x)
        np.testing.assert_allclose(got, want, rtol=1e-5)
    for target, reduce, says in (("trn2", False, "NeuronCore-v4"), ("trn3", True, "only on the Scalar engine")):
        kernel = _activation_kernel(nisa.engine.gpsimd, reduce)
        with pytest.raises(NkiError) as info:
            nkidev.simulate(kernel, target=target, nki_version="0.7")(x)
        assert info.value.name == "err_invalid_argument" and says in info.value.message
        assert info.value.lineno == _marked_line(kernel)


def test_activate2_takes_engine_gpsimd():
    from .helpers import use_target

    use_target("trn3")
    x = rand((4, 10), np.float32)
    dst = empty((4, 10))
    nisa.activate2(dst=dst, op=nl.exp, data=tile(x), imm0=2.0, imm1=1.0, op0=nl.multiply, op1=nl.add, engine=nisa.engine.gpsimd)
    np.testing.assert_allclose(read(dst), np.exp(2.0 * f64(x) + 1.0), rtol=1e-5)
