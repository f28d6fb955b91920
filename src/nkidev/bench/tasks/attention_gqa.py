"""Grouped-query causal attention: Hq query heads share Hkv key/value heads (Hq = G * Hkv; query head h reads
kv head h // G). q_t[Hq, d, S], k_t[Hkv, d, S], v[Hkv, S, d] -> out[Hq, S, d] (bf16, fp32 scores).

Baseline: each query head runs causal attention on its own, reloading its group's K and V from HBM every time
(G times per kv head) and computing every key past the diagonal before masking it.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample
from nkidev.bench.tasks.attention_causal import causal_attention

FAMILY = "attention"
ENTRY = "attention_gqa"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=2e-2, rtol=2e-2)


@nki.jit
def attention_gqa(q_t, k_t, v):
    Hq, d, S = q_t.shape
    Hkv = k_t.shape[0]
    G = Hq // Hkv
    P, KB = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    assert S % P == 0 and d <= P and Hq % Hkv == 0, "S a multiple of 128, d <= 128, Hq a multiple of Hkv"
    out = nl.ndarray((Hq, S, d), dtype=v.dtype, buffer=nl.shared_hbm)
    scale = 1.0 / float(np.sqrt(d))
    for h in nl.affine_range(Hq):
        kv = h // G
        k_all = nl.ndarray((d, S), dtype=k_t.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=k_all, src=k_t[kv, :, :])
        v_all = nl.ndarray((P, S // P, d), dtype=v.dtype, buffer=nl.sbuf)
        for j in nl.affine_range(S // P):
            nisa.dma_copy(dst=v_all[:, j, :], src=v[kv, j * P : (j + 1) * P, :])
        for i in nl.affine_range(S // P):
            q_tile = nl.ndarray((d, P), dtype=q_t.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=q_tile, src=q_t[h, :, i * P : (i + 1) * P])
            scores = nl.ndarray((P, S), dtype=nl.float32, buffer=nl.sbuf)
            for kb in nl.affine_range((S + KB - 1) // KB):
                width = min(KB, S - kb * KB)
                s_ps = nl.ndarray((P, KB), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_matmul(dst=s_ps[:, :width], stationary=q_tile, moving=k_all[:, kb * KB : kb * KB + width])
                nisa.tensor_copy(dst=scores[:, kb * KB : kb * KB + width], src=s_ps[:, :width])
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
                nisa.nc_matmul(dst=o_ps, stationary=p_t, moving=v_all[:, j, :], accumulate=(j > 0))
            inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(dst=inv, data=sums)
            o_tile = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=o_tile, data=o_ps, op0=nl.multiply, operand0=inv)
            nisa.dma_copy(dst=out[h, i * P : (i + 1) * P, :], src=o_tile)
    return out


def reference(q_t, k_t, v):
    q_t, k_t, v = (np.asarray(a, dtype=np.float64) for a in (q_t, k_t, v))
    G = q_t.shape[0] // k_t.shape[0]
    return np.stack([causal_attention(q_t[h].T, k_t[h // G].T, v[h // G]) for h in range(q_t.shape[0])])


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    out = []
    for i, (hq, hkv, S, d) in enumerate(shapes):
        dist = distribution(seed, i)
        out.append((sample(rng, (hq, d, S), bf16, dist), sample(rng, (hkv, d, S), bf16, dist), sample(rng, (hkv, S, d), bf16, dist)))
    return out


def quick_cases(seed=0):
    return _cases([(4, 2, 128, 64), (4, 1, 256, 64)], seed)


def full_cases(seed=0):
    return _cases([(32, 8, 2048, 128)], seed)


cases = quick_cases


def FLOPS(q_t, k_t, v):
    Hq, d, S = q_t.shape
    return {"tensor": Hq * 2 * d * S * S, "elementwise": Hq * 2 * S * S}


def MIN_BYTES(q_t, k_t, v):
    return nbytes(q_t, k_t, v) + q_t.nbytes
