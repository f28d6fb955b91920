"""Large fp32 element-wise results computed straight into their destination (memory.result_into) are the bits
a fresh NumPy result stored there gives, whatever the destination shares with the inputs: itself in place, a
disjoint tile, a partly overlapping view, an operand column of the destination."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.ops import vector

from .helpers import empty, tile

P, F = 128, 512  # 64 Ki elements: past the size below which results are copied


@pytest.fixture(autouse=True)
def _quiet():
    with np.errstate(all="ignore"):  # as on a kernel's thread: NaN and Inf are data
        yield


def _values(seed: int, shape=(P, F)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    bits = x.view(np.uint32)
    bits.flat[::97] = 0x7FC00000 | rng.integers(1, 1 << 22, bits.flat[::97].size, dtype=np.uint32)  # NaNs with payloads
    x.flat[::89] = np.inf
    return x


def _bits(t) -> np.ndarray:
    return np.array(t._data).view(np.uint32)


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32)


def test_tensor_tensor_in_place_disjoint_and_overlapping_give_fresh_result_bits():
    a, b = _values(0), _values(1)
    expected = np.add(a, b)

    x, y, out = tile(a), tile(b), empty((P, F))
    nisa.tensor_tensor(dst=out, data1=x, data2=y, op=nl.add)  # disjoint
    np.testing.assert_array_equal(_bits(out), expected.view(np.uint32))

    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)  # in place
    np.testing.assert_array_equal(_bits(x), expected.view(np.uint32))

    wide = np.concatenate([a, b], axis=1)
    w = tile(wide)
    shifted = np.multiply(wide[:, 256 : 256 + F], wide[:, 0:F])
    nisa.tensor_tensor(dst=w[:, 0:F], data1=w[:, 256 : 256 + F], data2=w[:, 0:F], op=nl.multiply)  # partly overlapping
    np.testing.assert_array_equal(_bits(w)[:, 0:F], shifted.view(np.uint32))
    np.testing.assert_array_equal(_bits(w)[:, F:], wide[:, F:].view(np.uint32))


def test_tensor_scalar_second_op_reads_an_operand_column_of_its_destination_before_it_is_written():
    rng = np.random.default_rng(3)
    a, before = _values(2), rng.uniform(0.5, 2, (P, F)).astype(np.float32)
    shift = rng.standard_normal((P, 1)).astype(np.float32)
    t = tile(before)  # the destination; its column 1 is operand1
    expected = np.multiply(np.subtract(a, shift), before[:, 1:2])
    nisa.tensor_scalar(dst=t, data=tile(a), op0=nl.subtract, operand0=tile(shift), op1=nl.multiply, operand1=t[:, 1:2])
    np.testing.assert_array_equal(_bits(t), expected.view(np.uint32))


def test_tensor_scalar_into_a_strided_destination_gives_fresh_result_bits():
    a = _values(4)
    out = empty((P, 2 * F))
    nisa.tensor_scalar(dst=out[:, 0::2], data=tile(a), op0=nl.multiply, operand0=0.375)
    np.testing.assert_array_equal(_bits(out)[:, 0::2], np.multiply(a, np.float32(0.375)).view(np.uint32))


@pytest.mark.parametrize("func", ["exp", "tanh", "sqrt"])
def test_activation_of_a_widened_input_straight_into_fp32_gives_fresh_result_bits(func):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((P, F)).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal((P, 1)).astype(np.float32)
    widened = x.astype(np.float32)
    expected = getattr(np, func)(np.add(np.multiply(widened, np.float32(0.5)), bias))
    dst, sums = empty((P, F)), empty((P, 1))
    nisa.activation(
        dst=dst,
        op=getattr(nl, func),
        data=tile(x),
        bias=tile(bias),
        scale=0.5,
        reduce_op=nl.add,
        reduce_res=sums,
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
    )
    np.testing.assert_array_equal(_bits(dst), expected.view(np.uint32))
    np.testing.assert_array_equal(_bits(sums), np.add.reduce(expected, axis=1).reshape(P, 1).view(np.uint32))


def test_a_result_goes_straight_into_its_destination_unless_an_input_partly_overlaps_it(monkeypatch):
    scratch = []
    real = vector.scratch_f32
    monkeypatch.setattr(vector, "scratch_f32", lambda shape: scratch.append(shape) or real(shape))
    a, b = tile(_values(6)), tile(_values(7))
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.subtract)
    nisa.tensor_scalar(dst=b, data=a, op0=nl.maximum, operand0=0.0)
    assert scratch == []
    w = tile(np.zeros((P, 2 * F), np.float32))
    nisa.tensor_tensor(dst=w[:, 0:F], data1=w[:, 1 : F + 1], data2=a, op=nl.add)
    assert scratch == [(P, F)]


def test_scalar_tensor_tensor_into_its_own_operand1_gives_fresh_result_bits():
    a, b = _values(8), _values(9)
    expected = np.add(np.multiply(a, np.float32(1.5)), b)
    t = tile(b)
    nisa.scalar_tensor_tensor(dst=t, data=tile(a), op0=nl.multiply, operand0=1.5, op1=nl.add, operand1=t)
    np.testing.assert_array_equal(_bits(t), expected.view(np.uint32))
