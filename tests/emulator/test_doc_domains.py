"""Arguments outside the domain the NKI ISA pages document are named errors at the kernel line (not silently
ignored or reinterpreted), and the documented domain still runs with the documented values."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError

PAGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/"


def _marked_line(kernel) -> int:
    lines, start = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    (hit,) = [start + i for i, text in enumerate(lines) if "# <-" in text]
    return hit


def _raises(kernel, code, *args, target="trn2"):
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, target=target)(*args)
    assert info.value.name == code
    assert info.value.lineno == _marked_line(kernel)
    return info.value


def _load(x, dtype=None):
    t = nl.ndarray(x.shape, dtype=dtype or x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def _affine_kernel(cmp_op):
    @jit
    def kernel(x):
        t = _load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        pat = [[1, x.shape[1]]]
        nisa.affine_select(dst=d, pattern=pat, channel_multiplier=-1, on_true_tile=t, on_false_value=-9.0, cmp_op=cmp_op)  # <-
        return _out(d)

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
        t = _load(x)
        d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dropout(dst=d, data=t, prob=prob)  # <-
        return _out(d)

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
        t = _load(x)
        d = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=d, op=op, data=t, axis=1, negate=negate)  # <-
        return _out(d)

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
