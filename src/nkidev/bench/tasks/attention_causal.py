"""Causal single-head attention softmax(Q K^T / sqrt(d)) V, with q_t, k_t[d, S] (head dim on partitions) and
v[S, d] (bf16 in and out, fp32 scores and sums).

Baseline: per 128-query tile, every key's score is computed (no skipping past the diagonal) and masked with
affine_select; the probabilities are transposed block by block on the Tensor Engine before P @ V.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "attention"
ENTRY = "attention_causal"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=2e-2, rtol=2e-2)


@nki.jit
def attention_causal(q_t, k_t, v):
    d, S = q_t.shape
    P, KB = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    assert S % P == 0 and d <= P, "S a multiple of 128 and d <= 128"
    out = nl.ndarray((S, d), dtype=v.dtype, buffer=nl.shared_hbm)
    scale = 1.0 / float(np.sqrt(d))
    for i in nl.affine_range(S // P):
        q_tile = nl.ndarray((d, P), dtype=q_t.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=q_tile, src=q_t[:, i * P : (i + 1) * P])
        scores = nl.ndarray((P, S), dtype=nl.float32, buffer=nl.sbuf)
        for kb in nl.affine_range((S + KB - 1) // KB):
            width = min(KB, S - kb * KB)
            k_tile = nl.ndarray((d, KB), dtype=k_t.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=k_tile[:, :width], src=k_t[:, kb * KB : kb * KB + width])
            s_ps = nl.ndarray((P, KB), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_ps[:, :width], stationary=q_tile, moving=k_tile[:, :width])
            nisa.tensor_copy(dst=scores[:, kb * KB : kb * KB + width], src=s_ps[:, :width])
        # keep key j for query row i*P + p when i*P + p - j >= 0
        nisa.affine_select(
            dst=scores,
            pattern=[[-1, S]],
            channel_multiplier=1,
            on_true_tile=scores,
            on_false_value=-1e30,
            cmp_op=nl.greater_equal,
            offset=i * P,
        )
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=scores, axis=1, negate=True)
        nisa.tensor_scalar(dst=neg_max, data=neg_max, op0=nl.multiply, operand0=scale)
        probs = nl.ndarray((P, S), dtype=nl.bfloat16, buffer=nl.sbuf)
        sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=probs,
            op=nl.exp,
            data=scores,
            bias=neg_max,
            scale=scale,
            reduce_op=nl.add,
            reduce_res=sums,
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        o_ps = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(S // P):
            pt_ps = nl.ndarray((P, P), dtype=nl.bfloat16, buffer=nl.psum)
            nisa.nc_transpose(dst=pt_ps, data=probs[:, j * P : (j + 1) * P], engine=nisa.engine.tensor)
            p_t = nl.ndarray((P, P), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=p_t, src=pt_ps)
            v_tile = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=v_tile, src=v[j * P : (j + 1) * P, :])
            nisa.nc_matmul(dst=o_ps, stationary=p_t, moving=v_tile, accumulate=(j > 0))
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=sums)
        o_tile = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o_tile, data=o_ps, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[i * P : (i + 1) * P, :], src=o_tile)
    return out


def causal_attention(q, k, v):
    """float64 causal attention of q, k [S, d] and v [S, d]."""
    s = q @ k.T / np.sqrt(q.shape[1])
    s = np.where(np.tril(np.ones_like(s)) > 0, s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def reference(q_t, k_t, v):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q_t.T, k_t.T, v))
    return causal_attention(q, k, v)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [tuple(sample(rng, s, bf16, distribution(seed, i)) for s in ((d, S), (d, S), (S, d))) for i, (S, d) in enumerate(shapes)]


def quick_cases(seed=0):
    return _cases([(128, 64), (256, 128)], seed)


def full_cases(seed=0):
    return _cases([(4096, 128)], seed)


cases = quick_cases


def FLOPS(q_t, k_t, v):
    d, S = q_t.shape
    # causal: half of the S x S scores and half of P @ V are needed
    return {"tensor": 2 * d * S * S, "elementwise": 2 * S * S}


def MIN_BYTES(q_t, k_t, v):
    return nbytes(q_t, k_t, v) + v.nbytes
