"""Shape-only (compute=False) fast paths of the emulator's allocation: every instruction is recorded, tiles read
as zeros; nl.ndarray shapes remembered as valid still reject a float or bool dimension that compares equal to a
valid one."""

from __future__ import annotations

import numpy as np
import pytest

from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit, run
from nkidev.errors import NkiError

SHAPE_ONLY = EmulatorOptions(compute=False)


@jit
def tiles_in_a_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for _ in nl.affine_range(4):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
    return out


def test_shape_only_run_records_every_instruction():
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
