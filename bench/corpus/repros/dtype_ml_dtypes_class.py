"""nl.ndarray(..., dtype=ml_dtypes.bfloat16) (a NumPy/ml_dtypes scalar type as dtype) is refused.
nki-library's tests pass NumPy dtypes as kernel parameters that reach nl.ndarray (e.g. dtype=ml_dtypes.bfloat16
in test_cumsum/test_cross_entropy params); the official simulator accepts numpy dtypes where an nl dtype is expected."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a, dt):
    out = nl.ndarray(a.shape, dtype=dt, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=dt, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out


a = np.random.rand(4, 8).astype(np.float32)
expect(
    "dtype_ml_dtypes_class",
    lambda: nki.simulate(kernel)(a, ml_dtypes.bfloat16),
    lambda r: None if np.allclose(r.astype(np.float32), a, rtol=1e-2) else "wrong",
)
