"""Rotary position embedding (half-split form) of x[T, D] with cos, sin[T, D/2] (fp32):
out[:, :D/2] = x1 * cos - x2 * sin,   out[:, D/2:] = x2 * cos + x1 * sin,   x1, x2 = x[:, :D/2], x[:, D/2:].

Baseline: tokens on partitions, 128 per tile; four products and two sums per tile on the Vector Engine.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "elementwise"
ENTRY = "rope"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-5, rtol=1e-5)


@nki.jit
def rope(x, cos, sin):
    T, D = x.shape
    H = D // 2
    P = nl.tile_size.pmax
    out = nl.ndarray((T, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((T + P - 1) // P):
        rows = min(P, T - t * P)
        xt = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        ct = nl.ndarray((P, H), dtype=cos.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ct[:rows], src=cos[t * P : t * P + rows, :])
        st = nl.ndarray((P, H), dtype=sin.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=st[:rows], src=sin[t * P : t * P + rows, :])
        a = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        res = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=a[:rows], data1=xt[:rows, :H], data2=ct[:rows], op=nl.multiply)
        nisa.tensor_tensor(dst=b[:rows], data1=xt[:rows, H:], data2=st[:rows], op=nl.multiply)
        nisa.tensor_tensor(dst=res[:rows, :H], data1=a[:rows], data2=b[:rows], op=nl.subtract)
        nisa.tensor_tensor(dst=a[:rows], data1=xt[:rows, H:], data2=ct[:rows], op=nl.multiply)
        nisa.tensor_tensor(dst=b[:rows], data1=xt[:rows, :H], data2=st[:rows], op=nl.multiply)
        nisa.tensor_tensor(dst=res[:rows, H:], data1=a[:rows], data2=b[:rows], op=nl.add)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x, cos, sin):
    x, cos, sin = (np.asarray(a, dtype=np.float64) for a in (x, cos, sin))
    H = x.shape[1] // 2
    x1, x2 = x[:, :H], x[:, H:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)


def _angles(T, H):
    freqs = 10000.0 ** (-np.arange(H) / H)
    return np.outer(np.arange(T), freqs)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i, (t, d) in enumerate(shapes):
        theta = _angles(t, d // 2) + rng.uniform(0, 0.1)  # a random phase so no two seeds share the tables
        out.append(
            (sample(rng, (t, d), np.float32, distribution(seed, i)), np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32))
        )
    return out


def quick_cases(seed=0):
    return _cases([(128, 64), (300, 128)], seed)


def full_cases(seed=0):
    return _cases([(32768, 128)], seed)


cases = quick_cases


def FLOPS(x, cos, sin):
    return {"elementwise": 3 * x.size}


def MIN_BYTES(x, cos, sin):
    return 2 * nbytes(x) + nbytes(cos, sin)
