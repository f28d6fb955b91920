"""nki.isa.sendrecv_compute (NKI 0.7): the cores of an LNC=2 launch exchange tiles and each writes reduce_op(own src,
peer src) to its dst, checked against NumPy; new in 0.7 (a named error under 0.6); each documented restriction is a
named error at the kernel line; its cost is a core-to-core transfer like sendrecv's.
Docs: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.sendrecv_compute.html"""

from __future__ import annotations

import inspect

import duckdb
import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError

from .fuzzing import ops_under_test

ROWS, COLS = 128, 16


def halves(dtype=np.float32, seed: int = 0) -> np.ndarray:
    """Core c's input is rows [c*128, (c+1)*128): values with ties, signs and both orders between the halves."""
    x = np.random.default_rng(seed).integers(-8, 9, (2 * ROWS, COLS)).astype(np.float32) / 4
    return x.astype(dtype)


def marked_lines(kernel) -> list[int]:
    lines, start = inspect.getsourcelines(kernel.fn)
    return [start + i for i, text in enumerate(lines) if "# <-" in text]


def expect(name: str, kernel, *args, grid=2, nki_version: str = "0.7") -> NkiError:
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel[grid] if grid else kernel, nki_version=nki_version)(*args)
    assert info.value.name == name, str(info.value)
    assert info.value.lineno in marked_lines(kernel), str(info.value)
    return info.value


def make_reduce_halves(reduce_op):
    @jit
    def reduce_halves(a):
        """Each core reduces its half with the other core's: both halves of out are reduce_op(a[:128], a[128:])."""
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        c = nl.program_id(0)
        mine = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
        got = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine, src=a[c * ROWS : (c + 1) * ROWS, :])
        nisa.sendrecv_compute(src=mine, dst=got, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=reduce_op)  # <-
        nisa.dma_copy(dst=out[c * ROWS : (c + 1) * ROWS, :], src=got)
        return out

    return reduce_halves


@pytest.mark.parametrize(("op", "numpy_op"), [("add", np.add), ("maximum", np.maximum), ("minimum", np.minimum)])
def test_each_core_gets_the_reduction_of_both_tiles(op, numpy_op):
    a = halves()
    kernel = make_reduce_halves(getattr(nl, op))
    want = numpy_op(a[:ROWS], a[ROWS:])
    assert not np.array_equal(want, a[:ROWS]) and not np.array_equal(want, a[ROWS:])  # the peer's tile matters
    np.testing.assert_array_equal(nkidev.simulate(kernel[2])(a), np.concatenate([want, want]))
    np.testing.assert_array_equal(nkidev.simulate(kernel)[2](a), np.concatenate([want, want]))


@jit
def bf16_sum_into(a, out_dtype):
    out = nl.ndarray(a.shape, dtype=out_dtype, buffer=nl.shared_hbm)
    c = nl.program_id(0)
    mine = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    got = nl.ndarray((ROWS, COLS), dtype=out_dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=mine, dst=got, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)
    nisa.dma_copy(dst=out[c * ROWS : (c + 1) * ROWS, :], src=got)
    return out


@pytest.mark.parametrize("out_dtype", [np.float32, ml_dtypes.bfloat16])
def test_the_reduction_is_fp32_cast_to_the_dst_dtype(out_dtype):
    a = (np.random.default_rng(1).standard_normal((2 * ROWS, COLS)) * 100).astype(ml_dtypes.bfloat16)
    exact = a[:ROWS].astype(np.float32) + a[ROWS:].astype(np.float32)
    want = exact.astype(out_dtype)
    got = nkidev.simulate(bf16_sum_into[2])(a, out_dtype)
    assert got.dtype == np.dtype(out_dtype)
    np.testing.assert_array_equal(got, np.concatenate([want, want]))
    if out_dtype is np.float32:  # fp32 keeps digits a bf16 sum would round away
        assert not np.array_equal(want, exact.astype(ml_dtypes.bfloat16).astype(np.float32))


@jit
def private_hbm_in_place(a):
    """src and dst in private HBM, and one tile: dst = src + peer's src, accumulated in place."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    c = nl.program_id(0)
    acc = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=acc, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=acc, dst=acc, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)
    nisa.dma_copy(dst=out[c * ROWS : (c + 1) * ROWS, :], src=acc)
    return out


def test_private_hbm_tiles_reduce_in_place():
    a = halves(seed=2)
    want = a[:ROWS] + a[ROWS:]
    np.testing.assert_array_equal(nkidev.simulate(private_hbm_in_place[2])(a), np.concatenate([want, want]))


def test_new_in_nki_07():
    err = expect("err_requires_nki_version", make_reduce_halves(nl.add), halves(), nki_version="0.6")
    assert "nisa.sendrecv_compute is new in NKI 0.7" in err.message and "--nki-version 0.7" in err.fix
    with nkidev.emulate(nki_version="0.6"):
        import nki.isa as shim_isa

        assert hasattr(shim_isa, "sendrecv_compute")  # present, as every gated function: only calling it fails


# ---------------------------------------------------------------- the documented restrictions, each a named error


@jit
def sbuf_to_hbm(a):
    c = nl.program_id(0)
    src = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    dst = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=src, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=src, dst=dst, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@jit
def from_a_kernel_argument(a):
    c = nl.program_id(0)
    dst = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.private_hbm)
    nisa.sendrecv_compute(src=a[c * ROWS : (c + 1) * ROWS, :], dst=dst, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@jit
def shared_after_private(a):
    """The second call's operands look like the first's in all but shared vs private HBM: still refused."""
    c = nl.program_id(0)
    private = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=private, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=private, dst=private, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)
    shared = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.sendrecv_compute(src=shared, dst=shared, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@jit
def psum_tiles(a):
    c = nl.program_id(0)
    t = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.psum)
    nisa.sendrecv_compute(src=t, dst=t, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@pytest.mark.parametrize("kernel", [sbuf_to_hbm, from_a_kernel_argument, shared_after_private, psum_tiles], ids=lambda k: k.fn.__name__)
def test_src_and_dst_must_both_be_sbuf_or_both_private_hbm(kernel):
    err = expect("err_unsupported_memory", kernel, halves())
    assert "both must be in SBUF or both in private HBM" in err.message


@jit
def multiply_is_no_reduction(a):
    c = nl.program_id(0)
    t = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=t, dst=t, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.multiply)  # <-
    return a


@jit
def rank_outside_the_lnc(a):
    c = nl.program_id(0)
    t = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=t, dst=t, send_to_rank=2, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@jit
def dst_of_another_shape(a):
    c = nl.program_id(0)
    t = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    half = nl.ndarray((ROWS, COLS // 2), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv_compute(src=t, dst=half, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@jit
def peers_of_different_shapes(a):
    c = nl.program_id(0)
    t = nl.ndarray((ROWS, COLS - 4 * c), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[c * ROWS : (c + 1) * ROWS, : COLS - 4 * c])
    nisa.sendrecv_compute(src=t, dst=t, send_to_rank=1 - c, recv_from_rank=1 - c, reduce_op=nl.add)  # <-
    return a


@pytest.mark.parametrize(
    ("kernel", "name", "words"),
    [
        (multiply_is_no_reduction, "err_invalid_op", "reduce_op="),
        (rank_outside_the_lnc, "err_invalid_argument", "send_to_rank=2 is not a rank of the LNC"),
        (dst_of_another_shape, "err_shape_mismatch", "must have the same shape"),
        (peers_of_different_shapes, "err_shape_mismatch", "received from rank"),
    ],
    ids=lambda v: v.fn.__name__ if hasattr(v, "fn") else None,
)
def test_documented_restrictions_are_named_errors_at_the_line(kernel, name, words):
    err = expect(name, kernel, halves())
    assert words in err.message


def test_trn1_does_not_have_it():
    """The 0.7 page allows it only at an LNC degree above 1, and trn1 runs LNC=1 only (NCC_EARG001:
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/error-codes/EARG001.html)."""
    with pytest.raises(NkiError) as info:
        nkidev.simulate(make_reduce_halves(nl.add)[2], target="trn1", nki_version="0.7")(halves())
    err = info.value
    assert err.name == "err_unsupported_on_target" and err.lineno in marked_lines(make_reduce_halves(nl.add)), str(err)
    assert "not available on trn1; it exists on trn2, trn3" in err.message
    a = halves()
    for target in ("trn2", "trn3"):
        got = nkidev.simulate(make_reduce_halves(nl.add)[2], target=target, nki_version="0.7")(a)
        np.testing.assert_array_equal(got, np.concatenate([a[:ROWS] + a[ROWS:]] * 2))


def test_a_single_core_launch_is_refused_at_the_line():
    err = expect("err_invalid_argument", make_reduce_halves(nl.add), halves(), grid=None)
    assert "LNC=2" in err.message


@jit
def paired_with_a_sendrecv(a):
    c = nl.program_id(0)
    t = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    r = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[c * ROWS : (c + 1) * ROWS, :])
    if c == 0:
        nisa.sendrecv_compute(src=t, dst=r, send_to_rank=1, recv_from_rank=1, reduce_op=nl.add)  # <-
    else:
        nisa.sendrecv(src=t, dst=r, send_to_rank=0, recv_from_rank=0, pipe_id=0)  # <-
    return a


def test_it_pairs_with_the_peers_sendrecv_compute_only():
    err = expect("err_invalid_argument", paired_with_a_sendrecv, halves())
    assert "waits forever" in err.message


# ---------------------------------------------------------------- cost model and fuzzer


@jit
def exchange_only(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    c = nl.program_id(0)
    mine = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    got = nl.ndarray((ROWS, COLS), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[c * ROWS : (c + 1) * ROWS, :])
    nisa.sendrecv(src=mine, dst=got, send_to_rank=1 - c, recv_from_rank=1 - c, pipe_id=0)
    nisa.dma_copy(dst=out[c * ROWS : (c + 1) * ROWS, :], src=got)
    return out


def test_its_cost_is_a_core_to_core_transfer_like_sendrecv(tmp_path):
    from nkidev.profile.api import profile

    a = halves()
    fused = profile(make_reduce_halves(nl.add)[2], a, target="trn2", out=tmp_path / "fused")
    plain = profile(exchange_only[2], a, target="trn2", out=tmp_path / "plain")
    assert fused.total_time_ns == plain.total_time_ns > 0  # the reduction rides on the transfer (no separate instruction)
    rows = duckdb.sql(
        f"SELECT pcore_idx, start_ts FROM '{fused.profile_dir}/Instruction.parquet' WHERE compiler_opcode = 'sendrecv_compute'"
    ).fetchall()
    assert sorted(p for p, _ in rows) == [0, 1] and len({s for _, s in rows}) == 1  # both cores start it together


def test_the_op_fuzzer_calls_it():
    assert "nisa.sendrecv_compute" in ops_under_test()
