"""softmax(A[b] @ B[b]) over the last dim for every batch b, with A given transposed (a_t[B, K, M]; bf16).

The attention-score pattern: a batched matmul whose rows are normalized before they leave the chip.
Baseline: per 128-row block, the full score row is built in SBUF (fp32, 512 columns per PSUM bank), then
max, exp with an fp32 sum on the Scalar Engine and a multiply by the reciprocal.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "fused"
ENTRY = "bmm_softmax"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=1e-2, rtol=2e-2)


@nki.jit
def bmm_softmax(a_t, b):
    B, K, M = a_t.shape
    N = b.shape[2]
    P, TN = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    assert K % P == 0 and M % P == 0 and N % TN == 0, "K and M multiples of 128, N a multiple of 512"
    out = nl.ndarray((B, M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(B):
        for m in nl.affine_range(M // P):
            scores = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.sbuf)
            for n in nl.affine_range(N // TN):
                acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // P):
                    lhs = nl.ndarray((P, P), dtype=a_t.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=lhs, src=a_t[i, k * P : (k + 1) * P, m * P : (m + 1) * P])
                    rhs = nl.ndarray((P, TN), dtype=b.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=rhs, src=b[i, k * P : (k + 1) * P, n * TN : (n + 1) * TN])
                    nisa.nc_matmul(dst=acc, stationary=lhs, moving=rhs, accumulate=(k > 0))
                nisa.tensor_copy(dst=scores[:, n * TN : (n + 1) * TN], src=acc)
            neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=scores, axis=1, negate=True)
            exps = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.sbuf)
            sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(
                dst=exps, op=nl.exp, data=scores, bias=neg_max, reduce_op=nl.add, reduce_res=sums, reduce_cmd=nisa.reduce_cmd.reset_reduce
            )
            inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(dst=inv, data=sums)
            res = nl.ndarray((P, N), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=res, data=exps, op0=nl.multiply, operand0=inv)
            nisa.dma_copy(dst=out[i, m * P : (m + 1) * P, :], src=res)
    return out


def reference(a_t, b):
    s = np.swapaxes(np.asarray(a_t, dtype=np.float64), 1, 2) @ np.asarray(b, dtype=np.float64)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [
        (
            sample(rng, (bs, k, m), bf16, distribution(seed, i)),
            sample(rng, (bs, k, n), bf16, distribution(seed, i), scale=1 / np.sqrt(k)),
        )
        for i, (bs, m, k, n) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(2, 128, 128, 512), (1, 256, 256, 1024)], seed)


def full_cases(seed=0):
    return _cases([(16, 1024, 128, 1024)], seed)


cases = quick_cases


def FLOPS(a_t, b):
    B, K, M = a_t.shape
    N = b.shape[2]
    return {"tensor": 2 * B * K * M * N, "elementwise": 4 * B * M * N}


def MIN_BYTES(a_t, b):
    return nbytes(a_t, b) + a_t.shape[0] * a_t.shape[2] * b.shape[2] * a_t.itemsize
