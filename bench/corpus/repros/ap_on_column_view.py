"""`.ap()` on a column view of an SBUF tile (t[:, j:j+1]) is refused.
The docs' NkiTensor.ap(pattern, offset) builds an access pattern relative to the tensor (view) it is called
on; nki-library calls it on sliced SBUF tiles (e.g. core/utils/tensor_view.py, rotational_topk_utils).
Correct: t[:, 2:3].ap([[F, P], [1, 1]]) addresses column 2 of every partition."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    P, F = a.shape
    out = nl.ndarray((P, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    col = x[:, 2:3]
    y = nl.ndarray((P, 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=y, src=col.ap(pattern=[[F, P], [1, 1]], offset=0))
    nisa.dma_copy(dst=out, src=y)
    return out


a = np.random.rand(16, 8).astype(np.float32)
expect(
    "ap_on_column_view",
    lambda: nki.simulate(kernel)(a),
    lambda r: None if np.array_equal(r, a[:, 2:3]) else f"got {r[:3, 0]} want {a[:3, 2]}",
)
