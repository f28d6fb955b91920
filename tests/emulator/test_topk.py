"""nisa.topk: each group of 16 partitions is one snake of n elements (element i at partition i % 16, column i // 16);
its k largest (k = val_dst's free size) are written back in the same layout, with their snake indices.

Pages: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.topk.html (NKI 0.7: groups,
result layout, `sorted=`, only the first ceil(k/16) positions written) and
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.topk.html (dtypes, limits,
ascending results, the n=42 / k=8 example). nkidev used to read n as k per partition, so the pages' own example
was a false err_shape_mismatch."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError

from .helpers import marked_line

SENTINEL = -7.0


def _topk_kernel(n: int, k: int, sorted_: bool | None = None, src_dtype=nl.bfloat16, idx_dtype=nl.uint32):
    @jit
    def kernel(x):
        p, src_x = x.shape
        src = nl.ndarray((p, src_x), dtype=src_dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=x)
        val = nl.ndarray((p, k), dtype=nl.bfloat16, buffer=nl.sbuf)
        idx = nl.ndarray((p, k), dtype=idx_dtype, buffer=nl.sbuf)
        nisa.memset(dst=val, value=SENTINEL)  # the slots topk does not write keep this
        nisa.memset(dst=idx, value=99999)
        if sorted_ is None:
            nisa.topk(val_dst=val, idx_dst=idx, src=src, n=n)  # <- topk
        else:
            nisa.topk(val_dst=val, idx_dst=idx, src=src, n=n, sorted=sorted_)  # <- topk sorted
        v = nl.ndarray((p, k), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        i = nl.ndarray((p, k), dtype=idx_dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=v, src=val)
        nisa.dma_copy(dst=i, src=idx)
        return v, i

    return kernel


def _expected(x: np.ndarray, n: int, k: int, descending: bool):
    """The pages' definition written out with plain loops: values and snake indices per output slot."""
    p, src_x = x.shape
    val = np.full((p, k), SENTINEL, np.float32)
    idx = np.full((p, k), 99999, np.int64)
    for g in range(p // 16):
        snake = [float(x[16 * g + i % 16, i // 16]) for i in range(n)]
        ranked = sorted(range(n), key=lambda i: (-snake[i], i))[:k]  # largest first; equal values: lower index first
        if not descending:
            ranked = ranked[::-1]
        for j, i in enumerate(ranked):
            val[16 * g + j % 16, j // 16] = snake[i]
            idx[16 * g + j % 16, j // 16] = i
    return val, idx


def _inputs(p: int, src_x: int, seed: int = 0) -> np.ndarray:
    # distinct bf16 values (consecutive bit patterns from 1.0 up), so the ranking has no ties
    bits = 0x3F80 + np.random.default_rng(seed).permutation(p * src_x).reshape(p, src_x)
    return bits.astype(np.uint16).view(ml_dtypes.bfloat16)


@pytest.mark.parametrize(("p", "n", "k"), [(16, 42, 8), (128, 42, 8), (32, 48, 20), (16, 300, 37)])
def test_each_16_partition_group_is_one_snake_and_results_keep_its_layout(p, n, k):
    x = _inputs(p, -(-n // 16))
    v, i = nkidev.simulate(_topk_kernel(n, k), target="trn2")(x)
    want_v, want_i = _expected(x, n, k, descending=False)
    np.testing.assert_array_equal(v.astype(np.float32), want_v)
    np.testing.assert_array_equal(i.astype(np.int64), want_i)


def test_the_pages_example_n42_k8_ranks_the_8_largest_of_each_group_ascending():
    x = _inputs(128, 3, seed=3)
    v, i = nkidev.simulate(_topk_kernel(42, 8), target="trn2")(x)
    for g in range(8):
        snake = x[16 * g : 16 * g + 16].astype(np.float32).T.reshape(-1)[:42]  # slots past n=42 are ignored
        np.testing.assert_array_equal(v[16 * g : 16 * g + 8, 0].astype(np.float32), np.sort(snake)[-8:])
        np.testing.assert_array_equal(i[16 * g : 16 * g + 8, 0], np.argsort(snake)[-8:])
    # k=8 fills partitions 0..7 of column 0; everything else is left as it was
    assert (v[:, 1:].astype(np.float32) == SENTINEL).all()
    assert (v.reshape(8, 16, 8)[:, 8:, 0].astype(np.float32) == SENTINEL).all()


def test_sorted_true_gives_descending_order_under_nki_07():
    x = _inputs(32, 4, seed=5)
    v, i = nkidev.simulate(_topk_kernel(64, 20, sorted_=True), target="trn2", nki_version="0.7")(x)
    want_v, want_i = _expected(x, 64, 20, descending=True)
    np.testing.assert_array_equal(v.astype(np.float32), want_v)
    np.testing.assert_array_equal(i.astype(np.int64), want_i)
    assert float(v[0, 0]) == float(x[:16].astype(np.float32).max())


def test_sorted_is_new_in_nki_07():
    kernel = _topk_kernel(42, 8, sorted_=True)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, target="trn2", nki_version="0.6")(_inputs(16, 3))
    assert info.value.name == "err_requires_nki_version"
    assert info.value.lineno == marked_line(kernel, "# <- topk sorted")


@pytest.mark.parametrize(
    ("p", "src_x", "n", "k", "code", "kw"),
    [
        (8, 3, 42, 8, "err_invalid_argument", {}),  # not a multiple of 16 partitions
        (16, 3, 7, 4, "err_invalid_argument", {}),  # n < 8
        (16, 2, 42, 8, "err_invalid_argument", {}),  # 42 elements do not fit 16 x 2
        (16, 3, 42, 43, "err_invalid_argument", {}),  # k > n
        (16, 3, 42, 8, "err_unsupported_dtype", {"src_dtype": nl.float32}),
        (16, 3, 42, 8, "err_unsupported_dtype", {"idx_dtype": nl.int32}),
    ],
)
def test_outside_the_pages_limits_is_a_named_error_at_the_call(p, src_x, n, k, code, kw):
    kernel = _topk_kernel(n, k, **kw)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel, target="trn2")(_inputs(p, src_x))
    assert info.value.name == code
    assert info.value.lineno == marked_line(kernel, "# <- topk")


def test_cost_is_the_pages_estimate_4n_plus_k():
    from nkidev.emulator.opdef import OPS
    from nkidev.hardware import get_target

    res = nkidev.run(_topk_kernel(300, 37), (_inputs(128, 19),), options=nkidev.EmulatorOptions(target="trn2"))
    (ins,) = [r for r in res.trace.instructions if r.opcode == "topk"]
    assert (ins.engine, ins.attrs["n"], ins.attrs["k"]) == ("gpsimd", 300, 37)
    assert OPS["topk"].cycles(ins, get_target("trn2")) == 4 * 300 + 37
