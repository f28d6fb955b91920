"""Shape-only (compute=False) fast paths of the emulator's allocation: tiles carved from shared zero blocks
(tensor._ZeroArena) read as zeros and never share bytes; nl.ndarray shapes remembered as valid still reject
a float or bool dimension that compares equal to a valid one."""

from __future__ import annotations

import numpy as np
import pytest

from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit, run
from nkidev.emulator.tensor import _ZeroArena
from nkidev.errors import NkiError

SHAPE_ONLY = EmulatorOptions(compute=False)


def test_arena_arrays_are_zero_distinct_and_aligned():
    arena = _ZeroArena()
    a = arena.zeros((128, 512), np.dtype(np.float32))
    b = arena.zeros((3, 5), np.dtype(np.int8))
    c = arena.zeros((128, 512), np.dtype(np.float32))
    assert a.shape == (128, 512) and a.dtype == np.float32 and not a.any()
    assert not np.shares_memory(a, b) and not np.shares_memory(b, c) and not np.shares_memory(a, c)
    a[...] = 1.0  # one array's writes never show in another
    assert not b.any() and not c.any()
    addr = [x.__array_interface__["data"][0] for x in (a, b, c)]
    assert addr[1] - addr[0] == 128 * 512 * 4 and (addr[2] - addr[1]) % _ZeroArena.ALIGN == 0  # packed, aligned offsets


def test_arena_starts_a_new_block_when_full_and_large_arrays_get_their_own():
    arena = _ZeroArena()
    big = arena.zeros((_ZeroArena.LARGEST + 1,), np.dtype(np.uint8))
    assert big.base is None  # np.zeros of its own
    first = arena.zeros((1024,), np.dtype(np.uint8))
    arena.used = _ZeroArena.BLOCK - 512  # the block is nearly full
    second = arena.zeros((1024,), np.dtype(np.uint8))
    assert arena.used == 1024 and not np.shares_memory(first, second) and not second.any()


@jit
def tiles_in_a_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for _ in nl.affine_range(4):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
    return out


def test_shape_only_run_records_every_instruction_with_arena_tiles():
    a = np.ones((128, 64), np.float32)
    result = run(tiles_in_a_loop, (a,), {}, options=SHAPE_ONLY)
    assert len(result.trace) == 8
    assert not np.asarray(result.outputs).any()  # shape-only: nothing was computed, the output reads as zeros


@jit
def shaped(a, shape):
    nl.ndarray(shape, dtype=a.dtype, buffer=nl.sbuf)
    return a


@pytest.mark.parametrize(("good", "bad"), [((128, 64), (128.0, 64)), ((1, 64), (True, 64))])
def test_a_shape_equal_to_a_valid_one_but_not_ints_is_still_rejected(good, bad):
    assert good == bad
    a = np.ones((128, 64), np.float32)
    run(shaped, (a, good), {}, options=SHAPE_ONLY)  # remembered as valid
    with pytest.raises(NkiError) as e:
        run(shaped, (a, bad), {}, options=SHAPE_ONLY)
    assert e.value.name == "err_invalid_argument" and "tuple of positive ints" in str(e.value)
