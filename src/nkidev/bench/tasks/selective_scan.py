"""Mamba selective scan over channels c and time t with N states per channel (fp32):
h[c, n, t] = exp(delta[c, t] * A[c, n]) * h[c, n, t-1] + delta[c, t] * B[n, t] * u[c, t],   h[., ., -1] = 0
y[c, t] = sum_n C[n, t] * h[c, n, t]

Baseline: channels on partitions (128 per tile); per state n, the decay and input terms are built for the
whole sequence, scanned with tensor_tensor_scan, and weighted into y; B[n] and C[n] rows are broadcast to all
partitions for every channel tile and state.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, positive, sample

FAMILY = "scan"
ENTRY = "selective_scan"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-4, rtol=1e-4)


@nki.jit
def selective_scan(u, delta, A, B, C):
    Ch, L = u.shape
    N = A.shape[1]
    P = nl.tile_size.pmax
    out = nl.ndarray((Ch, L), dtype=u.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range((Ch + P - 1) // P):
        rows = min(P, Ch - c * P)
        ut = nl.ndarray((P, L), dtype=u.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ut[:rows], src=u[c * P : c * P + rows, :])
        dt = nl.ndarray((P, L), dtype=delta.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=dt[:rows], src=delta[c * P : c * P + rows, :])
        at = nl.ndarray((P, N), dtype=A.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=at[:rows], src=A[c * P : c * P + rows, :])
        du = nl.ndarray((P, L), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=du[:rows], data1=dt[:rows], data2=ut[:rows], op=nl.multiply)
        y = nl.ndarray((P, L), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=y[:rows], value=0.0)
        for n in nl.sequential_range(N):
            decay = nl.ndarray((P, L), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=decay[:rows], op=nl.exp, data=dt[:rows], scale=at[:rows, n : n + 1])
            b_row = nl.ndarray((P, L), dtype=B.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=b_row[:rows], src=B[n : n + 1, :].broadcast(0, rows))
            inp = nl.ndarray((P, L), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=inp[:rows], data1=du[:rows], data2=b_row[:rows], op=nl.multiply)
            h = nl.ndarray((P, L), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(dst=h[:rows], data0=decay[:rows], data1=inp[:rows], initial=0.0, op0=nl.multiply, op1=nl.add)
            c_row = nl.ndarray((P, L), dtype=C.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=c_row[:rows], src=C[n : n + 1, :].broadcast(0, rows))
            nisa.tensor_tensor(dst=h[:rows], data1=h[:rows], data2=c_row[:rows], op=nl.multiply)
            nisa.tensor_tensor(dst=y[:rows], data1=y[:rows], data2=h[:rows], op=nl.add)
        res = nl.ndarray((P, L), dtype=u.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res[:rows], src=y[:rows])
        nisa.dma_copy(dst=out[c * P : c * P + rows, :], src=res[:rows])
    return out


def reference(u, delta, A, B, C):
    u, delta, A, B, C = (np.asarray(a, dtype=np.float64) for a in (u, delta, A, B, C))
    Ch, L = u.shape
    h = np.zeros((Ch, A.shape[1]))
    y = np.empty((Ch, L))
    for t in range(L):
        h = np.exp(delta[:, t : t + 1] * A) * h + (delta[:, t] * u[:, t])[:, None] * B[None, :, t]
        y[:, t] = h @ C[:, t]
    return y


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    out = []
    for i, (ch, L, N) in enumerate(shapes):
        dist = distribution(seed, i)
        u = sample(rng, (ch, L), f32, dist)
        delta = positive(rng, (ch, L), f32, 0.01, 0.2)  # softplus(dt) in Mamba: small and positive
        A = -positive(rng, (ch, N), f32, 0.5, 4.0)  # negative real decay rates
        out.append((u, delta, A, sample(rng, (N, L), f32, dist), sample(rng, (N, L), f32, dist)))
    return out


def quick_cases(seed=0):
    return _cases([(128, 64, 4), (160, 128, 8)], seed)


def full_cases(seed=0):
    return _cases([(1024, 2048, 16)], seed)


cases = quick_cases


def FLOPS(u, delta, A, B, C):
    Ch, L = u.shape
    return {"elementwise": 6 * Ch * L * A.shape[1]}


def MIN_BYTES(u, delta, A, B, C):
    return nbytes(u, delta, A, B, C) + u.nbytes
