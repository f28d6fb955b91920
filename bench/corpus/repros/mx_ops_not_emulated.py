"""nisa.nc_matmul_mx and nisa.quantize_mx (NeuronCore-v4 MX instructions) raise err_not_supported_yet.
They are documented current-API instructions (aws-neuron-sdk nki/api/nki/isa/__init__.py) used by the
mxfp-matmul tutorial (nki-samples, aws-neuron-sdk deep-dives) and by nki-library's MX kernels.
Correct: quantize_mx produces x4-packed data + e8m0 scales; nc_matmul_mx multiplies them (trn3)."""

import os

os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn3"
import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(x):
    P, F = x.shape
    out = nl.ndarray((P, F // 4), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    q = nl.ndarray((P, F // 4), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    s = nl.ndarray((P // 8 if P >= 32 else P, F // 4), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=t, dst_scale=s)
    nisa.dma_copy(dst=out.ap(pattern=[[F // 4, P], [1, F // 4]], offset=0, dtype=nl.float8_e5m2_x4), src=q)
    return out


import ml_dtypes  # noqa: E402

x = np.random.rand(32, 64).astype(ml_dtypes.bfloat16)
expect("mx_ops_not_emulated", lambda: nki.simulate(kernel, target="trn3")(x))
