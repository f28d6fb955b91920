"""LayerNorm over the hidden dim of x[tokens, hidden] (fp32) with gamma/beta, using the Vector
Engine's bn_stats (per 512-element chunk) and bn_aggr for mean and variance.
A task file: `nkidev validate examples/layernorm.py::layernorm_kernel`.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def layernorm_kernel(x, gamma, beta, eps=1e-5):
    tokens, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    CHUNK = nl.tile_size.bn_stats_fmax
    n_chunks = (hidden + CHUNK - 1) // CHUNK

    g = nl.ndarray((P, hidden), dtype=gamma.dtype, buffer=nl.sbuf)
    b = nl.ndarray((P, hidden), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma.reshape((1, hidden)).broadcast(0, P))
    nisa.dma_copy(dst=b, src=beta.reshape((1, hidden)).broadcast(0, P))

    for t in nl.affine_range((tokens + P - 1) // P):
        rows = min(P, tokens - t * P)
        xt = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])

        stats = nl.ndarray((P, 6 * n_chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(n_chunks):
            width = min(CHUNK, hidden - c * CHUNK)
            nisa.bn_stats(dst=stats[:rows, 6 * c : 6 * c + 6], data=xt[:rows, c * CHUNK : c * CHUNK + width])
        mean_var = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mean_var[:rows], data=stats[:rows])

        # (x - mean) * 1/sqrt(var + eps)
        inv_std = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv_std[:rows], data=mean_var[:rows, 1:2], op0=nl.add, operand0=eps)
        nisa.activation(dst=inv_std[:rows], op=nl.rsqrt, data=inv_std[:rows])
        y = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(
            dst=y[:rows], data=xt[:rows], op0=nl.subtract, operand0=mean_var[:rows, 0:1], op1=nl.multiply, operand1=inv_std[:rows]
        )
        nisa.tensor_tensor(dst=y[:rows], data1=y[:rows], data2=g[:rows], op=nl.multiply)
        res = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res[:rows], data1=y[:rows], data2=b[:rows], op=nl.add)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def cases(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for t, h in [(128, 512), (200, 1000), (7, 64)]:
        out.append(
            (
                rng.standard_normal((t, h)).astype(np.float32) * 3 + 1,
                rng.uniform(0.5, 1.5, h).astype(np.float32),
                rng.standard_normal(h).astype(np.float32),
            )
        )
    return out


TOLERANCE = dict(atol=1e-4, rtol=1e-4)
