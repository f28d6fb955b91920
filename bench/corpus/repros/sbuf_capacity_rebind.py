"""False err_sbuf_capacity_exceeded: a tile allocated inside a loop body still counts while the next
iteration allocates its replacement (live bytes follow Python object lifetime: `t` is only rebound after
the new nl.ndarray returns), and tiles kept in a Python list after their last use count forever.
Correct: a tile is dead after its last use, so the compiler's allocator can place the next iteration's
tile in the same space (the peak here is one 120000-byte tile of the 212984 usable per partition); the
official simulator does no capacity accounting at all, and this kernel compiles for trn2."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    P, F = a.shape  # 128 x 30000 fp32 = 120000 bytes per partition: fits once, not twice
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for _i in range(2):
        t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
    return out


a = np.random.rand(128, 30000).astype(np.float32)
expect("sbuf_capacity_rebind", lambda: nki.simulate(kernel)(a), lambda r: None if np.array_equal(r, a) else "wrong")
