"""nl.range(n) is missing (AttributeError).
nki-library uses it in experimental/mxfp_subkernels/mxfp_load_utils.py:123,130 (`for k in nl.range(n)`).
It is not in the aws-neuron-sdk API stub (nki/api/nki/language/__init__.py lists affine_range,
sequential_range, static_range), so this is a compatibility alias, not a documented API:
the official NKI frontend accepts it as a plain loop range."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.range(a.shape[0] // 4):
        t = nl.ndarray((4, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 4 : (i + 1) * 4, :])
        nisa.dma_copy(dst=out[i * 4 : (i + 1) * 4, :], src=t)
    return out


a = np.random.rand(8, 16).astype(np.float32)
expect("nl_range_missing", lambda: nki.simulate(kernel)(a), lambda r: None if np.array_equal(r, a) else "wrong")
