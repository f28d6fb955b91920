"""Honest: RMSNorm of bf16 rows with a bf16 weight, statistics in fp32 on the Scalar/Vector engines."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_kernel(x, weight, eps):
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    w = nl.ndarray((P, hidden), dtype=weight.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=weight.reshape((1, hidden)).broadcast(0, P))
    for t in nl.affine_range((rows + P - 1) // P):
        start = t * P
        n = min(P, rows - start)
        tile = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[:n], src=x[start : start + n, :])
        squares = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        sumsq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=squares[:n], op=nl.square, data=tile[:n], reduce_op=nl.add, reduce_res=sumsq[:n], reduce_cmd=nisa.reduce_cmd.reset_reduce
        )
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[:n], data=sumsq[:n], op0=nl.multiply, operand0=1.0 / hidden, op1=nl.add, operand1=eps)
        nisa.activation(dst=rstd[:n], op=nl.rsqrt, data=rstd[:n])
        normed = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed[:n], data=tile[:n], op0=nl.multiply, operand0=rstd[:n])
        result = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=result[:n], data1=normed[:n], data2=w[:n], op=nl.multiply)
        nisa.dma_copy(dst=out[start : start + n, :], src=result[:n])
    return out


def reference(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def cases(seed=0):
    rng = np.random.default_rng(seed)
    return [
        (
            rng.standard_normal((rows, hidden)).astype(ml_dtypes.bfloat16),
            (1.0 + 0.1 * rng.standard_normal(hidden)).astype(ml_dtypes.bfloat16),
            1e-6,
        )
        for rows, hidden in [(128, 512), (260, 768)]
    ]
