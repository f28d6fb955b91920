"""A whole-tile DMA from HBM into a fresh SBUF tile copies lazily (tensor.py, "Lazy copies"): every reader sees the
values the eager copy would have left, even after the source is written, and a matmul whose converted operand
is cached never takes the copy.

The memory of lazily filled storages is poisoned here (as in test_lazy_fill.py), so a read that reached a tile
before its copy was taken would show the poison."""

from __future__ import annotations

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator import tensor
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit

POISON = 0x41


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    new = tensor._fresh_array

    def fresh(shape, dtype):
        array = new(shape, dtype)
        array.reshape(-1).view(np.uint8).fill(POISON)
        return array

    monkeypatch.setattr(tensor, "_fresh_array", fresh)


def copies() -> int:
    return tensor.COPIES[0]


@jit
def load_then_overwrite_source(x, y):
    """x loaded into a tile, then x overwritten with y in HBM, then the tile stored: the old x comes out."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    other = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.dma_copy(dst=other, src=y)
    nisa.dma_copy(dst=x, src=other)  # HBM source written while the tile's copy is not taken
    nisa.dma_copy(dst=out, src=tile)
    return out


def test_a_write_to_the_source_takes_the_copy_first():
    x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    y = -x
    before = copies()
    out = load_then_overwrite_source(x.copy(), y)
    assert np.array_equal(out, x)
    assert copies() > before  # the copy was lazy, and taken before the write


@jit
def load_then_write_half(x):
    """x loaded into a tile, rows :64 of it overwritten by an engine, then all of it stored."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x[:, 0:512])
    nisa.memset(dst=tile[:64], value=7.0)
    copy = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=copy, src=tile)
    nisa.dma_copy(dst=out, src=copy)
    return out


def test_a_tile_written_in_part_copies_the_rest():
    x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    out = load_then_write_half(x)
    assert np.all(out[:64] == 7.0)
    assert np.array_equal(out[64:], x[64:])


@jit
def reloaded_matmul(lhsT, rhs):
    """Two output row blocks, each loading every moving tile again: the second block's loads are never copied."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        lhs = nl.ndarray((128, K // 128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // 128):
            nisa.dma_copy(dst=lhs[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128])
        acc = nl.ndarray((128, N), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // 128):
            mv = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=mv, src=rhs[k * 128 : (k + 1) * 128, :])
            nisa.nc_matmul(dst=acc, stationary=lhs[:, k, :], moving=mv, accumulate=(k > 0))
        res = nl.ndarray((128, N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, :], src=res)
    return out


@pytest.mark.parametrize("overlap", [True, False])
def test_cached_matmul_operands_are_never_copied(overlap):
    import ml_dtypes

    rng = np.random.default_rng(0)
    # small integers: every product and sum is exact in fp32, whatever the order
    lhsT = rng.integers(-4, 5, (256, 256)).astype(ml_dtypes.bfloat16)
    rhs = rng.integers(-4, 5, (256, 512)).astype(ml_dtypes.bfloat16)
    before = copies()
    run = nkidev.run(reloaded_matmul, (lhsT, rhs), options=EmulatorOptions(overlap=overlap))
    taken = copies() - before
    expect = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    assert np.array_equal(run.outputs, expect)
    # 2 moving tiles of 128 x 512 bf16 per row block: the first block converts (takes) them, the second
    # follows the cached stack
    assert taken == 2


def test_a_k_loop_matmul_takes_the_slots_path(monkeypatch):
    """accumulate=(k > 0) is an operand slot of nc_matmul (OpDef.extra_slots): no call needs the general
    signature, and the two accumulate values still record different forms."""
    import ml_dtypes

    from nkidev.emulator import opdef

    general = []
    real = opdef._general_signature
    monkeypatch.setattr(opdef, "_general_signature", lambda *a: general.append(a[0].name) or real(*a))
    lhsT = np.ones((256, 128), ml_dtypes.bfloat16)
    rhs = np.ones((256, 512), ml_dtypes.bfloat16)
    run = nkidev.run(reloaded_matmul, (lhsT, rhs))
    assert "nc_matmul" not in general
    assert np.all(run.outputs == 256.0)
    forms = {ins.attrs.get("accumulate") for ins in run.trace.instructions if ins.opcode == "nc_matmul"}
    assert len(forms) == 2
