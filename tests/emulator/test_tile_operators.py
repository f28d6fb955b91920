"""Python operators on tile values that NKI has no instruction for are named errors at the kernel line."""

from __future__ import annotations

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError


def _kernel(expr):
    @jit
    def k(x):
        t = nl.ndarray((1, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        expr(t)
        return x

    return k


CASES = {
    "t[0, 0] > 0": lambda t: t[0, 0] > 0,
    "0 < t": lambda t: 0 < t,
    "t <= 1": lambda t: t <= 1,
    "t % 2": lambda t: t % 2,
    "t // 2": lambda t: t // 2,
    "t ** 2": lambda t: t**2,
    "2 ** t": lambda t: 2**t,
    "t & 1": lambda t: t & 1,
    "t << 1": lambda t: t << 1,
    "~t": lambda t: ~t,
    "abs(t)": lambda t: abs(t),
    "int(t)": lambda t: int(t),
    "float(t)": lambda t: float(t),
    "range(t)": lambda t: range(t),
}


@pytest.mark.parametrize("what", list(CASES))
def test_operator_on_a_tile_is_a_named_error_at_its_line(what):
    kernel = _kernel(CASES[what])
    with pytest.raises(NkiError) as info:
        nkidev.simulate(kernel)(np.ones((1, 1), np.float32))
    err = info.value
    assert err.name == "err_python_operator_on_tile", str(err)
    assert err.lineno == CASES[what].__code__.co_firstlineno, err.location  # the user's line that applied the operator
    assert "on the device" in err.message and ("nl." in err.fix or "nisa." in err.fix)


def test_supported_operators_still_work():
    @jit
    def k(x):
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        u = (t + 1.0) * 2.0 - t / 2.0
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=-u)
        return out

    x = np.full((4, 4), 3.0, np.float32)
    np.testing.assert_allclose(nkidev.simulate(k)(x), -((x + 1) * 2 - x / 2))
