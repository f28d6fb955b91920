"""An integer index on the only free dim of an SBUF tile: NKI keeps on-chip views at least 2-D (the last free dim
stays at size 1: t[:, 2] of a (128, 8) tile is (128, 1)), so the view can be sliced again as t[:, 2][:64, :1]
(NKI language guide, "Tensor indexing"). nki-library core/attention/attention_cte.py passes such a column as a
range_select bound (12 attention_cte tests). Correct: the column's values."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    col = t[:, 2]
    c = nl.ndarray((64, 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=c, src=col[:64, :1])
    out = nl.ndarray((64, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=c)
    return out


a = np.random.rand(128, 8).astype(np.float32)
expect("onchip_integer_index_keeps_2d", lambda: nki.simulate(kernel)(a), lambda r: None if np.array_equal(r, a[:64, 2:3]) else "wrong")
