"""Dynamic (scalar_offset / vector_offset) access on a reshaped tensor is scaled by the ORIGINAL tensor's
stride instead of the reshaped one's.
Official docstring of NkiTensor.ap(): "indirect_dim: dimension in ``self.shape`` whose stride scales the
indirect scalar/vector offset". Here self = a.reshape((2, 16)) (from a (4, 8) tensor), so dim 0's stride is
16 and scalar_offset = 1 must address row 1 of the reshaped tensor = elements a.flat[16:32].
nki-library's TensorView (core/utils/tensor_view.py, _find_or_create_base_dim_for_stride) relies on this for
select_dynamic / vector_select after reshape or strided slices (test_tensor_view.py test_dynamic_select)."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a, idx):
    out = nl.ndarray((1, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.ndarray((1, 1), dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    base = a.reshape((2, 16))
    t = nl.ndarray((1, 16), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=base.ap(pattern=[[16, 1], [1, 16]], offset=0, scalar_offset=i, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out


a = np.arange(32, dtype=np.float32).reshape(4, 8)
want = a.reshape(-1)[16:32]


def check(r):
    if np.array_equal(r[0], want):
        return None
    if np.array_equal(r[0], a.reshape(-1)[8:24]):
        return "read a.flat[8:24]: offset scaled by the original stride 8, not the reshaped stride 16"
    return f"read {r[0][:4]}..."


expect("indirect_offset_reshaped", lambda: nki.simulate(kernel)(a, np.array([[1]], np.int32)), check)
