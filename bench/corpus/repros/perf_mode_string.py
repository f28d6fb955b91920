"""nisa.nc_matmul(perf_mode='double_row') (the string) is not treated as matmul_perf_mode.double_row.
nki-library passes the string (core/qkv/qkv_cte.py:1382; core/mlp/mlp_cte/mlp_cte_projection.py:426:
perf_mode=('double_row' if ... else 'none')); nisa.matmul_perf_mode is an Enum whose values are exactly
those strings, and the official frontend accepts either. Correct: the string and the enum member give
the same result. nkidev compares with `is matmul_perf_mode.double_row`, so the string silently falls
back to a normal matmul (or a shape error on the [P, 2, F] operands)."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


def make(mode):
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        nisa.dma_copy(dst=y, src=b)
        ps = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=x, moving=y, perf_mode=mode)
        o = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=ps)
        nisa.dma_copy(dst=out, src=o)
        return out

    return kernel


a = np.random.rand(128, 2, 64).astype(ml_dtypes.float8_e4m3)
b = np.random.rand(128, 2, 128).astype(ml_dtypes.float8_e4m3)
ref = nki.simulate(make(nisa.matmul_perf_mode.double_row))(a, b)
expect(
    "perf_mode_string",
    lambda: nki.simulate(make("double_row"))(a, b),
    lambda r: None if np.allclose(r, ref) else "string 'double_row' result differs from matmul_perf_mode.double_row",
)
