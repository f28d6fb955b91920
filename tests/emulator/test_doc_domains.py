"""Arguments outside the domain the NKI ISA pages document are named errors at the kernel line (not silently
ignored or reinterpreted), and the documented domain still runs with the documented values."""

from __future__ import annotations

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError

from .helpers import marked_line, sbuf_load, to_hbm

PAGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/"


def _raises(kernel, code, *args, target="trn2", mark="# <-"):
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, target=target)(*args)
    assert info.value.name == code
    assert info.value.lineno == marked_line(kernel, mark)
    return info.value


def _affine_kernel(cmp_op):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        pat = [[1, x.shape[1]]]
        nisa.affine_select(dst=d, pattern=pat, channel_multiplier=-1, on_true_tile=t, on_false_value=-9.0, cmp_op=cmp_op)  # <-
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "subtract"])
def test_affine_select_cmp_op_must_be_a_comparison(op):
    # affine_select.html: cmp_op is the comparison of the affine value with 0; nl.add selected on add(v, 0) != 0
    _raises(_affine_kernel(getattr(nl, op)), "err_invalid_op", np.ones((4, 6), np.float32))


@pytest.mark.parametrize(
    "op, pred",
    [
        ("equal", np.equal),
        ("not_equal", np.not_equal),
        ("greater", np.greater),
        ("greater_equal", np.greater_equal),
        ("less", np.less),
        ("less_equal", np.less_equal),
    ],
)
def test_affine_select_every_comparison_selects_on_value_vs_zero(op, pred):
    x = np.arange(24, dtype=np.float32).reshape(4, 6) + 1
    got = nkidev.simulate(_affine_kernel(getattr(nl, op)), target="trn2")(x)
    value = np.arange(6)[None, :] - np.arange(4)[:, None]  # x - p (channel_multiplier=-1)
    np.testing.assert_array_equal(got, np.where(pred(value, 0), x, -9.0))


def _dropout_kernel(prob):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dropout(dst=d, data=t, prob=prob)  # <-
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize("prob", [1.5, -0.25, float("nan"), 2])
def test_dropout_constant_prob_outside_zero_one_is_refused(prob):
    # dropout.html: prob is the drop probability (1.0 zeroes every element, 0.0 keeps every one)
    err = _raises(_dropout_kernel(prob), "err_invalid_argument", np.ones((4, 8), np.float32))
    assert "[0, 1]" in str(err)


def test_dropout_documented_end_points():
    x = np.arange(1, 33, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(nkidev.simulate(_dropout_kernel(1.0), target="trn2")(x), np.zeros_like(x))
    np.testing.assert_array_equal(nkidev.simulate(_dropout_kernel(0.0), target="trn2")(x), x)
    np.testing.assert_array_equal(nkidev.simulate(_dropout_kernel(1), target="trn2")(x), np.zeros_like(x))


def _reduce_kernel(op, negate):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=d, op=op, data=t, axis=1, negate=negate)  # <-
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize("op", ["bitwise_or", "bitwise_and", "bitwise_xor"])
def test_tensor_reduce_negate_with_a_bitvec_op_is_refused(op):
    # tensor_reduce.html: negate is only applicable when op is an arithmetic operator; it was silently dropped
    x = np.array([[1, 2, 12, 7], [3, 5, 6, 9]], np.int32)
    _raises(_reduce_kernel(getattr(nl, op), True), "err_invalid_argument", x)
    got = nkidev.simulate(_reduce_kernel(getattr(nl, op), False), target="trn2")(x)
    ufunc = {"bitwise_or": np.bitwise_or, "bitwise_and": np.bitwise_and, "bitwise_xor": np.bitwise_xor}[op]
    np.testing.assert_array_equal(got, ufunc.reduce(x, axis=1, keepdims=True))


def test_tensor_reduce_negate_with_an_arithmetic_op_negates():
    x = np.array([[1, 2, 12, 7], [3, 5, 6, 9]], np.float32)
    got = nkidev.simulate(_reduce_kernel(nl.add, True), target="trn2")(x)
    np.testing.assert_array_equal(got, -x.sum(axis=1, keepdims=True))


def _unary_kernel(op, operand0, reduce=False):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        if reduce:
            r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar_reduce(dst=d, data=t, op0=op, operand0=operand0, reduce_op=nl.add, reduce_res=r)  # <- reduce
            return to_hbm(r)
        nisa.tensor_scalar(dst=d, data=t, op0=op, operand0=operand0)  # <-
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize("reduce", [False, True])
@pytest.mark.parametrize("operand0", [5.0, -1, 0.5])
def test_unary_op0_refuses_an_operand0_it_would_ignore(operand0, reduce):
    # tensor_scalar.html / tensor_scalar_reduce.html: operand0 must be None or 0 when op0 is unary (nl.abs);
    # abs with operand0=5.0 computed abs(x) and dropped the 5.0
    x = np.array([[-1.5, 2.0, -3.0, 4.0]], np.float32)
    mark = "# <- reduce" if reduce else "# <-"
    err = _raises(_unary_kernel(nl.abs, operand0, reduce), "err_invalid_argument", x, mark=mark)
    assert "unary" in str(err)


@pytest.mark.parametrize("reduce", [False, True])
@pytest.mark.parametrize("operand0", [None, 0, 0.0])
def test_unary_op0_with_no_operand_runs(operand0, reduce):
    x = np.array([[-1.5, 2.0, -3.0, 4.0]], np.float32)
    got = nkidev.simulate(_unary_kernel(nl.abs, operand0, reduce), target="trn2")(x)
    expect = np.abs(x).sum(axis=1, keepdims=True) if reduce else np.abs(x)
    np.testing.assert_array_equal(got, expect)


def test_unary_bitvec_op0_refuses_an_operand0():
    x = np.array([[1, 2, 12, 7]], np.int32)
    _raises(_unary_kernel(nl.invert, 5), "err_invalid_argument", x)
    np.testing.assert_array_equal(nkidev.simulate(_unary_kernel(nl.invert, None), target="trn2")(x), ~x)


def _bitvec_engine_kernel(which, engine):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
        if which == "tensor_scalar":
            nisa.tensor_scalar(dst=d, data=t, op0=nl.bitwise_and, operand0=6, op1=nl.left_shift, operand1=1, engine=engine)
        else:
            nisa.tensor_tensor(dst=d, data1=t, data2=t, op=nl.bitwise_xor, engine=engine)
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize("which, engine", [("tensor_scalar", "scalar"), ("tensor_scalar", "gpsimd"), ("tensor_tensor", "gpsimd")])
def test_bitvec_op_on_a_non_vector_engine_warns_and_computes(which, engine):
    # the pages say bitvec operators run on the Vector Engine, but the NKI 0.8 announcement says a release
    # after 0.8 is the one that rejects engine=scalar/gpsimd with a bitvec op, so NKI 0.7 accepts it
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-intent-eos-nki-virtualregister-lnc-apis.html):
    # a warning, not the err_invalid_op it was for tensor_scalar
    from nkidev.errors import NkiWarning

    x = np.array([[1, 2, 12, 7], [3, 5, 6, 9]], np.int32)
    with pytest.warns(NkiWarning, match="warn_bitvec_engine"):
        got = nkidev.simulate(_bitvec_engine_kernel(which, getattr(nisa.engine, engine)), target="trn2")(x)
    expect = (x & 6) << 1 if which == "tensor_scalar" else x ^ x
    np.testing.assert_array_equal(got, expect)


def test_bitvec_op_with_the_default_engine_does_not_warn():
    import warnings

    x = np.array([[1, 2, 12, 7], [3, 5, 6, 9]], np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for which in ("tensor_scalar", "tensor_tensor"):
            got = nkidev.simulate(_bitvec_engine_kernel(which, nisa.engine.unknown), target="trn2")(x)
            np.testing.assert_array_equal(got, (x & 6) << 1 if which == "tensor_scalar" else 0 * x)


def _ts_engine_kernel(op0, operand_dtype, engine):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        operand = None if op0 is nl.rsqrt else 2.0
        if operand_dtype is not None:
            operand = nl.ndarray((x.shape[0], 1), dtype=operand_dtype, buffer=nl.sbuf)
            nisa.memset(dst=operand, value=2)
        nisa.tensor_scalar(dst=d, data=t, op0=op0, operand0=operand, engine=engine)  # <-
        return to_hbm(d)

    return kernel


def test_tensor_scalar_documented_restrictions_stay_errors():
    # tensor_scalar.html (v2.32.0): engine=gpsimd is only allowed for rsqrt; arithmetic operands must be float32
    x = np.full((4, 8), 4.0, np.float32)
    _raises(_ts_engine_kernel(nl.add, None, nisa.engine.gpsimd), "err_invalid_op", x)
    _raises(_ts_engine_kernel(nl.multiply, nl.bfloat16, nisa.engine.vector), "err_invalid_op", x)
    _raises(_ts_engine_kernel(nl.multiply, nl.int32, nisa.engine.unknown), "err_invalid_op", x)
    got = nkidev.simulate(_ts_engine_kernel(nl.rsqrt, None, nisa.engine.gpsimd), target="trn2")(x)
    np.testing.assert_array_equal(got, np.full_like(x, 0.5))
    got = nkidev.simulate(_ts_engine_kernel(nl.multiply, nl.float32, nisa.engine.vector), target="trn2")(x)
    np.testing.assert_array_equal(got, np.full_like(x, 8.0))


def _hwdge_kernel(dtype, mode):
    @jit
    def kernel(x):
        t = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dge_mode=mode)  # <-
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=d, src=t)
        return to_hbm(d)

    return kernel


def test_hwdge_refuses_a_cast_and_swdge_casts():
    # migration guide (v2.32.0, NKI 0.3.0 section): with dge_mode=hwdge the element types must match (no cast);
    # dge_mode.swdge / none cast
    x = np.array([[1.0, 1.00390625, 2.5, -3.0]], np.float32)
    _raises(_hwdge_kernel(nl.bfloat16, nisa.dge_mode.hwdge), "err_invalid_argument", x)
    np.testing.assert_array_equal(nkidev.simulate(_hwdge_kernel(nl.float32, nisa.dge_mode.hwdge), target="trn2")(x), x)
    got = nkidev.simulate(_hwdge_kernel(nl.bfloat16, nisa.dge_mode.swdge), target="trn2")(x)
    np.testing.assert_array_equal(got, [[1.0, 1.0, 2.5, -3.0]])


@pytest.mark.parametrize("version", ["0.6", "0.7"])
def test_range_select_defaults_follow_the_newest_page(version):
    # range_select.html (v2.32.0, the newest page stored for it): reduce_cmd defaults to reset_reduce, range_start
    # to 0, on_false_value to FP32_MIN. The "latest" page in the docs corpus shows reduce_cmd.idle,
    # range_start=0.0 and on_false_value=0.0, but that is the Neuron 2.27 docstring (older than 0.6), not 0.7's.
    fp32_min = np.finfo(np.float32).min

    @jit
    def kernel(x, lo, hi):
        t = sbuf_load(x)
        b0, b1 = sbuf_load(lo), sbuf_load(hi)
        t2 = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t2, data=t, op0=nl.subtract, operand0=100.0)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        sel = {"comp_op0": nl.greater_equal, "comp_op1": nl.less, "bound0": b0, "bound1": b1, "reduce_res": r}
        nisa.range_select(dst=d, on_true_tile=t, **sel)
        nisa.range_select(dst=d, on_true_tile=t2, **sel)
        return to_hbm(d), to_hbm(r)

    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 20
    lo = np.array([[2.0], [0.0]], np.float32)
    hi = np.array([[5.0], [3.0]], np.float32)
    d, r = nkidev.simulate(kernel, target="trn2", nki_version=version)(x, lo, hi)
    idx = np.arange(8)[None, :]
    keep = (idx >= lo) & (idx < hi)
    second = np.where(keep, x - 100, fp32_min)
    np.testing.assert_array_equal(d, second)
    # reset_reduce: the second call's max is its own (reduce would have kept the first call's larger max)
    np.testing.assert_array_equal(r, second.max(axis=1, keepdims=True))


def _tsc_kernel(dtype, imm1=None, cmd=None):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
        kw = {} if cmd is None else {"reduce_cmd": cmd}
        nisa.tensor_scalar_cumulative(dst=d, src=t, op0=nl.multiply, op1=nl.add, imm0=2.0, imm1=imm1, **kw)  # <-
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_tensor_scalar_cumulative_has_no_32_bit_integer_io(dtype):
    # tensor_scalar_cumulative.html (v2.32.0): INT32/UINT32 are not supported as input/output dtypes
    x = np.arange(8, dtype=dtype).reshape(1, 8)
    _raises(_tsc_kernel(dtype), "err_unsupported_dtype", x)
    y = np.arange(8, dtype=np.int16).reshape(1, 8)
    np.testing.assert_array_equal(nkidev.simulate(_tsc_kernel(np.int16), target="trn2")(y), np.cumsum(2 * y, axis=1))


def test_tensor_scalar_cumulative_imm1_loads_only_with_load_reduce():
    from nkidev.errors import NkiWarning

    x = np.arange(8, dtype=np.float32).reshape(1, 8) - 3
    got = nkidev.simulate(_tsc_kernel(np.float32, 100.0, nisa.reduce_cmd.load_reduce), target="trn2")(x)
    np.testing.assert_array_equal(got, 100 + np.cumsum(2 * x, axis=1))
    with pytest.warns(NkiWarning, match="warn_unused_argument"):
        got = nkidev.simulate(_tsc_kernel(np.float32, 100.0), target="trn2")(x)
    np.testing.assert_array_equal(got, np.cumsum(2 * x, axis=1))


def _select_reduce_kernel(res_dtype):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        pr = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=pr, data=t, op0=nl.greater, operand0=0.0)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=res_dtype, buffer=nl.sbuf)
        cmd = nisa.reduce_cmd.reset_reduce
        nisa.select_reduce(dst=d, predicate=pr, on_true=t, on_false=-3.0, reduce_res=r, reduce_cmd=cmd, reverse_pred=True)  # <-
        return to_hbm(r)

    return kernel


def test_select_reduce_reduce_res_must_be_float():
    # select_reduce.html (v2.32.0): reduce_res dtype must be a float type
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 5
    _raises(_select_reduce_kernel(nl.int16), "err_invalid_argument", x)
    got = nkidev.simulate(_select_reduce_kernel(nl.float32), target="trn2")(x)
    np.testing.assert_array_equal(got, np.where(x > 0, -3.0, x).max(axis=1, keepdims=True))


def _tsr_kernel(cmd, reduce_init):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        kw = {"reduce_op": nl.add, "reduce_res": r, "reduce_cmd": cmd, "reduce_init": reduce_init}
        nisa.tensor_scalar_reduce(dst=d, data=t, op0=nl.multiply, operand0=2.0, **kw)  # <-
        return to_hbm(r)

    return kernel


@pytest.mark.parametrize(
    "cmd, reduce_init",
    [("load_reduce", None), ("reset_reduce", 10.0), ("reduce", 10.0), ("reset_reduce", 0.0)],
)
def test_tensor_scalar_reduce_reduce_init_only_and_always_with_load_reduce(cmd, reduce_init):
    # tensor_scalar_reduce.html (v2.32.0): reduce_init should only be set when reduce_cmd is load_reduce, and must
    # be provided when it is; a stray one was ignored and a missing one loaded 0
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 5
    _raises(_tsr_kernel(getattr(nisa.reduce_cmd, cmd), reduce_init), "err_invalid_argument", x)


def test_tensor_scalar_reduce_load_reduce_seeds_the_sum():
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 5
    got = nkidev.simulate(_tsr_kernel(nisa.reduce_cmd.load_reduce, 10.0), target="trn2")(x)
    np.testing.assert_array_equal(got, 10 + (2 * x).sum(axis=1, keepdims=True))
    got = nkidev.simulate(_tsr_kernel(nisa.reduce_cmd.reset_reduce, None), target="trn2")(x)
    np.testing.assert_array_equal(got, (2 * x).sum(axis=1, keepdims=True))


def _act2_kernel(op0=nl.multiply, op1=nl.add, reverse0=False, reduce_op=None, imm_dtypes=None):
    @jit
    def kernel(x):
        t = sbuf_load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        imm0, imm1 = 2.0, 1.0
        if imm_dtypes is not None:
            imm0 = nl.ndarray((x.shape[0], 1), dtype=imm_dtypes[0], buffer=nl.sbuf)
            nisa.memset(dst=imm0, value=2)
            imm1 = nl.ndarray((x.shape[0], 1), dtype=imm_dtypes[1], buffer=nl.sbuf)
            nisa.memset(dst=imm1, value=1)
        cmd = nisa.reduce_cmd.reset_reduce if reduce_op is not None else nisa.reduce_cmd.idle
        kw = {"reduce_op": reduce_op, "reduce_res": r if reduce_op is not None else None, "reduce_cmd": cmd}
        nisa.activate2(dst=d, op=nl.copy, data=t, imm0=imm0, imm1=imm1, op0=op0, op1=op1, reverse0=reverse0, **kw)  # <-
        return to_hbm(r) if reduce_op is not None else to_hbm(d)

    return kernel


X2 = np.array([[-3.0, 1.0, 0.25, -0.5, 1.75, -2.5], [0.5, -4.0, 2.75, 1.5, -1.0, 2.0]], np.float32)  # no magnitude ties


@pytest.mark.parametrize("op, pick", [("abs_max", np.argmax), ("abs_min", np.argmin)])
def test_activate2_reduces_with_abs_max_and_abs_min(op, pick):
    # activate2.html (v2.32.0) lists add, maximum, minimum, abs_max, abs_min as reduce ops; abs_max/abs_min were
    # reduced as add
    y = 2 * X2 + 1
    expect = np.take_along_axis(y, pick(np.abs(y), axis=1)[:, None], axis=1)
    got = nkidev.simulate(_act2_kernel(reduce_op=getattr(nl, op)), target="trn3")(X2)
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("op, ufunc", [("add", np.sum), ("maximum", np.max), ("minimum", np.min)])
def test_activate2_reduces_with_the_other_documented_ops(op, ufunc):
    got = nkidev.simulate(_act2_kernel(reduce_op=getattr(nl, op)), target="trn3")(X2)
    np.testing.assert_allclose(got, ufunc(2 * X2 + 1, axis=1, keepdims=True), rtol=1e-6)


def test_activate2_refuses_an_undocumented_reduce_op():
    _raises(_act2_kernel(reduce_op=nl.multiply), "err_invalid_op", X2, target="trn3")


def test_activate2_reverse_of_a_bypassed_op_is_refused_not_a_crash():
    # activate2.html: reverse0 requires op0 to be set (nl.bypass is no operation); this was err_internal
    _raises(_act2_kernel(op0=nl.bypass, op1=nl.bypass, reverse0=True), "err_invalid_argument", X2, target="trn3")
    got = nkidev.simulate(_act2_kernel(op0=nl.subtract, op1=nl.bypass, reverse0=True), target="trn3")(X2)
    np.testing.assert_array_equal(got, 2 - X2)


def test_activate2_tensor_immediates_share_a_dtype():
    # activate2.html: all immediates must have the same dtype when both are tensors
    _raises(_act2_kernel(imm_dtypes=(nl.float32, nl.bfloat16)), "err_invalid_argument", X2, target="trn3")
    got = nkidev.simulate(_act2_kernel(imm_dtypes=(nl.float32, nl.float32)), target="trn3")(X2)
    np.testing.assert_array_equal(got, 2 * X2 + 1)


def _transpose_kernel(moving_cols, identity=True):
    @jit
    def kernel(x):
        s = sbuf_load(x)
        k = x.shape[0]
        mv = nl.ndarray((k, moving_cols), dtype=nl.float32, buffer=nl.sbuf)
        if identity:
            nisa.iota(dst=mv, pattern=[[1, moving_cols]], channel_multiplier=-1)  # value = col - row
            nisa.tensor_scalar(dst=mv, data=mv, op0=nl.equal, operand0=0.0)  # 1.0 on the diagonal
        else:
            nisa.memset(dst=mv, value=1.0)
        p = nl.ndarray((x.shape[1], moving_cols), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=s, moving=mv, is_transpose=True)  # <-
        o = nl.ndarray(p.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=p)
        return to_hbm(o)

    return kernel


def test_nc_matmul_transpose_mode_needs_a_square_moving_tile():
    # nc_matmul.html (v2.32.0): transpose mode uses an identity matrix as the moving tile; another moving shape
    # was err_internal (a reshape of stationary.T into [M, N])
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    _raises(_transpose_kernel(16), "err_shape_mismatch", x)
    np.testing.assert_array_equal(nkidev.simulate(_transpose_kernel(64), target="trn2")(x), x.T)


def test_nc_matmul_transpose_mode_warns_when_moving_is_not_an_identity():
    from nkidev.errors import NkiWarning

    x = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    with pytest.warns(NkiWarning, match="warn_transpose_moving_not_identity"):
        got = nkidev.simulate(_transpose_kernel(8, identity=False), target="trn2")(x)
    np.testing.assert_array_equal(got, x.T)  # NC-v3+ moves bits: stationary.T, whatever moving holds


def _dma_kernel(**kw):
    @jit
    def kernel(x):
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, **kw)  # <-
        return to_hbm(t)

    return kernel


@pytest.mark.parametrize("engine", ["sync", "scalar"])
def test_dma_copy_takes_the_documented_hwdge_engines(engine):
    # dma_copy.html (v2.32.0): engine is nki.isa.engine.sync or .scalar for HWDGE descriptor generation; both were
    # err_invalid_argument ("dma_copy cannot run on the scalar engine")
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    kernel = _dma_kernel(engine=getattr(nisa.engine, engine), dge_mode=nisa.dge_mode.hwdge)
    np.testing.assert_array_equal(nkidev.simulate(kernel, target="trn2")(x), x)


@pytest.mark.parametrize(
    "kw",
    [
        {"engine": "vector", "dge_mode": "hwdge"},
        {"engine": "gpsimd", "dge_mode": "hwdge"},
        {"engine": "sync", "dge_mode": "swdge"},
        {"engine": "scalar", "dge_mode": "none"},
        {"priority": 4},
        {"priority": -1},
    ],
)
def test_dma_copy_refuses_engines_and_priorities_outside_the_page(kw):
    # dma_copy.html: engine only with dge_mode=hwdge, and only sync/scalar; priority is a level 0-3
    args = {}
    if "engine" in kw:
        args = {"engine": getattr(nisa.engine, kw["engine"]), "dge_mode": getattr(nisa.dge_mode, kw["dge_mode"])}
    else:
        args = {"priority": kw["priority"]}
    _raises(_dma_kernel(**args), "err_invalid_argument", np.ones((2, 8), np.float32), target="trn3")


def test_dma_copy_priority_levels_run():
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    for level in range(4):
        np.testing.assert_array_equal(nkidev.simulate(_dma_kernel(priority=level), target="trn3")(x), x)


def _dma_transpose_kernel(**kw):
    @jit
    def kernel(x):
        d = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=d, src=x, **kw)  # <-
        return to_hbm(d)

    return kernel


@pytest.mark.parametrize(
    "kw",
    [
        {"dge_mode": "none"},
        {"dge_mode": "swdge"},
        {"oob_mode": "skip"},
        {"priority": 7},
    ],
)
def test_dma_transpose_refuses_modes_a_direct_transpose_does_not_take(kw):
    # dma_transpose.html (v2.32.0): a direct transpose takes dge_mode unknown or hwdge (swdge is the indirect
    # transpose's), oob_mode=skip only with an indirect src, priority 0-3
    args = {}
    for key, value in kw.items():
        args[key] = value if key == "priority" else getattr(getattr(nisa, key), value)
    x = np.arange(16 * 8, dtype=np.float16).reshape(16, 8)
    _raises(_dma_transpose_kernel(**args), "err_invalid_argument", x, target="trn3")


@pytest.mark.parametrize("mode", ["unknown", "hwdge"])
def test_dma_transpose_direct_modes_transpose(mode):
    x = np.arange(16 * 8, dtype=np.float16).reshape(16, 8)
    got = nkidev.simulate(_dma_transpose_kernel(dge_mode=getattr(nisa.dge_mode, mode), priority=1), target="trn3")(x)
    np.testing.assert_array_equal(got, x.T)
