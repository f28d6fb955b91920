"""nisa.range_select(on_false_value=-3.4028235e38) is refused: nkidev compares the Python float with FP32_MIN
in float64 (-3.4028234663852886e38) instead of as the fp32 immediate the instruction takes.
-3.4028235e38 is the usual literal for FP32_MIN (nki-library core/attention/attention_cte.py:135
`_FLOAT32_MIN = -3.4028235e38`, passed by attention_bwd.py:927); np.float32(-3.4028235e38) == finfo(float32).min.
The nki.isa.range_select docstring itself says: "this must be ``FP32_MIN`` (``-3.4028235e+38``)".
Correct: accepted, same result as the default on_false_value."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a, lo, hi):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    b0 = nl.ndarray(lo.shape, dtype=lo.dtype, buffer=nl.sbuf)
    b1 = nl.ndarray(hi.shape, dtype=hi.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=b0, src=lo)
    nisa.dma_copy(dst=b1, src=hi)
    y = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(
        dst=y, on_true_tile=x, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=b0, bound1=b1, on_false_value=-3.4028235e38
    )
    nisa.dma_copy(dst=out, src=y)
    return out


a = np.random.rand(8, 16).astype(np.float32)
lo = np.full((8, 1), 2.0, np.float32)
hi = np.full((8, 1), 10.0, np.float32)
want = np.where((np.arange(16) >= 2) & (np.arange(16) < 10), a, np.finfo(np.float32).min)
expect(
    "range_select_fp32_min_literal", lambda: nki.simulate(kernel)(a, lo, hi), lambda r: None if np.array_equal(r, want) else "wrong values"
)
