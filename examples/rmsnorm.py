"""RMSNorm over the hidden dim of x[tokens, hidden] (bf16), weight w[hidden]:
y = x / sqrt(mean(x^2) + eps) * w. Tokens go on partitions (128 per tile); the weight row is
broadcast to all partitions once, with a stride-0 DMA.
A task file: `nkidev validate examples/rmsnorm.py::rmsnorm_kernel`.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_kernel(x, w, eps=1e-6):
    tokens, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    # the weight row on every partition, loaded once
    w_tile = nl.ndarray((P, hidden), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_tile, src=w.reshape((1, hidden)).broadcast(0, P))

    for t in nl.affine_range((tokens + P - 1) // P):
        rows = min(P, tokens - t * P)
        xt = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])

        squares = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=squares[:rows],
            op=nl.square,
            data=xt[:rows],
            reduce_op=nl.add,
            reduce_res=sum_sq[:rows],
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        # 1 / sqrt(mean + eps)
        inv_rms = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv_rms[:rows], data=sum_sq[:rows], op0=nl.multiply, operand0=1.0 / hidden, op1=nl.add, operand1=eps)
        nisa.activation(dst=inv_rms[:rows], op=nl.rsqrt, data=inv_rms[:rows])

        normed = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed[:rows], data=xt[:rows], op0=nl.multiply, operand0=inv_rms[:rows])
        y = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y[:rows], data1=normed[:rows], data2=w_tile[:rows], op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=y[:rows])
    return out


def reference(x, w, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * np.asarray(w, dtype=np.float64)


def cases(seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal((t, h)).astype(ml_dtypes.bfloat16), rng.uniform(0.5, 1.5, h).astype(ml_dtypes.bfloat16))
        for t, h in [(128, 512), (300, 1024), (1, 64)]
    ]


TOLERANCE = dict(atol=2e-2, rtol=2e-2)
