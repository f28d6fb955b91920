"""nisa.get_nc_version() >= nisa.nc_version.gen3 raises TypeError.
Official docs: nisa.nc_version is an IntEnum-like ordered enum ("gen2 < gen3 < gen4") and nki-library
compares versions with >= (e.g. core/utils/kernel_helpers.py `get_nc_version() >= nc_version.gen3`)."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    if nisa.get_nc_version() >= nisa.nc_version.gen3:  # trn2 is gen3: True
        nisa.activation(dst=t, op=nl.copy, data=t, scale=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out


a = np.ones((4, 8), np.float32)
expect("nc_version_ordering", lambda: nki.simulate(kernel)(a), lambda r: None if np.allclose(r, 2) else f"got {r[0, 0]}")
