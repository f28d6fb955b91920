"""RMSNorm over the last dim: out = x / sqrt(mean(x^2) + eps) * w, with x [rows, hidden] and w [1, hidden].

Shows a per-row statistic accumulated for free by the Scalar Engine, a [P, 1] per-row operand, and a
per-column weight loaded into every partition with one DMA from a broadcast view of the HBM row.
    nkidev validate rmsnorm.py::rmsnorm_kernel
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_kernel(x, w, eps=1e-6):
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    # w [1, hidden] -> every partition of a [P, hidden] tile, loaded once outside the loop. broadcast(0, P) is a
    # view of the HBM row repeated P times (no copy); on-chip tensors cannot broadcast their partition dim.
    w_tile = nl.ndarray((P, hidden), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_tile, src=w.broadcast(0, P))

    for t in nl.affine_range((rows + P - 1) // P):
        start = t * P
        n = min(P, rows - start)
        tile = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[:n], src=x[start : start + n, :])

        # sum of squares per row, accumulated in fp32 by the activation instruction
        squares = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=squares[:n], op=nl.square, data=tile[:n], reduce_op=nl.add, reduce_res=sum_sq[:n], reduce_cmd=nisa.reduce_cmd.reset_reduce
        )

        # rstd = 1 / sqrt(sum_sq / hidden + eps)
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[:n], data=sum_sq[:n], op0=nl.multiply, operand0=1.0 / hidden, op1=nl.add, operand1=eps)
        nisa.activation(dst=rstd[:n], op=nl.rsqrt, data=rstd[:n])

        normed = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed[:n], data=tile[:n], op0=nl.multiply, operand0=rstd[:n])
        result = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=result[:n], data1=normed[:n], data2=w_tile[:n], op=nl.multiply)
        nisa.dma_copy(dst=out[start : start + n, :], src=result[:n])
    return out


def reference(x, w, eps=1e-6):
    x64 = np.asarray(x, dtype=np.float64)
    return x64 / np.sqrt((x64**2).mean(axis=-1, keepdims=True) + eps) * np.asarray(w, dtype=np.float64)


def cases(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(128, 512), (300, 1024), (5, 2048)]
    return [(rng.standard_normal(s).astype(np.float32), rng.standard_normal((1, s[1])).astype(np.float32)) for s in shapes]


TOLERANCE = dict(atol=1e-4, rtol=1e-4)
