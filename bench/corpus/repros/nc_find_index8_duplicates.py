"""nisa.nc_find_index8 with duplicate values in `vals`.
Official docstring (nki.isa.nc_match_replace8): "This duplicate-vals tie-break is the opposite of
nc_find_index8, which pairs duplicate vals with their matching positions in ascending order across
dst_idx columns." So data=[5,9,9,9,...], vals=[9,9,9,5,...] -> the three 9s get positions 1,2,3.
CAVEAT: nc_find_index8's own docstring says it outputs "the indices of the first occurrence of each value",
which reads as nkidev's behaviour; the two official docstrings disagree -- settle on hardware/official simulator."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(data, vals):
    out = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    d = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    v = nl.ndarray(vals.shape, dtype=vals.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=d, src=data)
    nisa.dma_copy(dst=v, src=vals)
    idx = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=d, vals=v)
    nisa.dma_copy(dst=out, src=idx)
    return out


data = np.array([[5, 9, 9, 9, 1, 2, 3, 4, 6, 7, 8, 0, 10, 11, 12, 13]], np.float32)
vals = np.array([[9, 9, 9, 5, 1, 2, 3, 4]], np.float32)
want = [1, 2, 3, 0, 4, 5, 6, 7]
expect(
    "nc_find_index8_duplicates",
    lambda: nki.simulate(kernel)(data, vals),
    lambda r: None if list(r[0]) == want else f"got {list(r[0])}, docs imply {want}",
)
