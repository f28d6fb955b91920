"""nl.ndarray(address=...) is ignored: two PSUM tiles at the same explicit address are separate storage.
nl.ndarray(..., address=(partition_offset, free_offset)) places a tensor at a fixed address (docs:
"optional memory address"); nki-library's conv1d (experimental/conv/conv1d.py:914) rotates PSUM tiles over
banks this way, so a new tile at an address is the same storage as the old one.
Correct: the second matmul (a fresh accumulation group into p1) overwrites the bank, so reading p0 gives B.
Wrong: A+B (the emulator accumulated into the bank) or A (separate storage)."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a, b, eye):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    e = nl.ndarray(eye.shape, dtype=eye.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=b)
    nisa.dma_copy(dst=e, src=eye)
    p0 = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
    nisa.nc_matmul(dst=p0, stationary=e, moving=x)
    p1 = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, address=(0, 0))  # same bank and offset
    nisa.nc_matmul(dst=p1, stationary=e, moving=y)
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p0)
    nisa.dma_copy(dst=out, src=o)
    return out


a = np.random.rand(128, 128).astype(np.float32)
b = np.random.rand(128, 128).astype(np.float32)


def check(r):
    if np.allclose(r, b, rtol=1e-3):
        return None
    if np.allclose(r, a + b, rtol=1e-3):
        return "p0 reads A+B: the second matmul accumulated into the aliased bank instead of starting a new group"
    if np.allclose(r, a, rtol=1e-3):
        return "p0 reads A: tiles at the same address= are not aliased"
    return "p0 reads something else"


expect("psum_address_alias", lambda: nki.simulate(kernel)(a, b, np.eye(128, dtype=np.float32)), check)
