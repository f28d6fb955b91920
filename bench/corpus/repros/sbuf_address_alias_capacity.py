"""nl.ndarray(..., address=(partition, byte_offset)) is ignored, so tiles that share an SBUF address by design
(nki-library's ModularAllocator, core/utils/modular_allocator.py:241: logical tiles i and i+k map to the same
physical slot) are counted as separate live storage -> false err_sbuf_capacity_exceeded.
Docs (nki.language.ndarray): "address: optional memory address (partition_offset, free_offset)".
Correct: two 120000-byte tiles at the same address occupy 120000 bytes per partition (and alias)."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    P, F = a.shape  # 128 x 30000 fp32 = 120000 bytes per partition
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    slots = [nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(0, 0)) for _ in range(2)]  # one slot
    nisa.dma_copy(dst=slots[0], src=a)
    nisa.dma_copy(dst=out, src=slots[1])  # same storage as slots[0]
    return out


a = np.random.rand(128, 30000).astype(np.float32)
expect(
    "sbuf_address_alias_capacity",
    lambda: nki.simulate(kernel)(a),
    lambda r: None if np.array_equal(r, a) else "slots at the same address are not aliased",
)
