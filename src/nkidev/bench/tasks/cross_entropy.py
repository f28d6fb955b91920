"""Per-row cross-entropy of logits[N, V] (fp32) against integer labels[N] (int32):
loss[n] = logsumexp(logits[n]) - logits[n, labels[n]].  Returns loss[N, 1] (fp32).

Baseline: rows on partitions, 128 per tile, the vocabulary in chunks of 4096 read twice: once for the row max,
once for exp(x - max) with an fp32 sum (then log) and the label's logit, picked with a one-hot mask from iota
(column index == label) and a multiply-sum.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "loss"
ENTRY = "cross_entropy"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-4, rtol=1e-4)


@nki.jit
def cross_entropy(logits, labels):
    N, V = logits.shape
    P = nl.tile_size.pmax
    VT = min(V, 4096)  # vocabulary columns per chunk (a 32k vocabulary does not fit SBUF three times over)
    chunks = (V + VT - 1) // VT
    out = nl.ndarray((N, 1), dtype=logits.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((N + P - 1) // P):
        rows = min(P, N - t * P)
        lab_i = nl.ndarray((P, 1), dtype=labels.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=lab_i[:rows], src=labels.reshape((N, 1))[t * P : t * P + rows, :])
        lab = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=lab[:rows], src=lab_i[:rows])
        # pass 1: the row max over every chunk
        row_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        part = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=row_max[:rows], value=-3.0e38)
        for c in nl.sequential_range(chunks):
            width = min(VT, V - c * VT)
            xt = nl.ndarray((P, VT), dtype=logits.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=xt[:rows, :width], src=logits[t * P : t * P + rows, c * VT : c * VT + width])
            nisa.tensor_reduce(dst=part[:rows], op=nl.maximum, data=xt[:rows, :width], axis=1)
            nisa.tensor_tensor(dst=row_max[:rows], data1=row_max[:rows], data2=part[:rows], op=nl.maximum)
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=neg_max[:rows], data=row_max[:rows], op0=nl.multiply, operand0=-1.0)
        # pass 2: sum of exp(x - max) and the label's logit, sum(x * (column == label)), chunk by chunk
        sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        picked = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=sums[:rows], value=0.0)
        nisa.memset(dst=picked[:rows], value=0.0)
        for c in nl.sequential_range(chunks):
            width = min(VT, V - c * VT)
            xt = nl.ndarray((P, VT), dtype=logits.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=xt[:rows, :width], src=logits[t * P : t * P + rows, c * VT : c * VT + width])
            exps = nl.ndarray((P, VT), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(
                dst=exps[:rows, :width],
                op=nl.exp,
                data=xt[:rows, :width],
                bias=neg_max[:rows],
                reduce_op=nl.add,
                reduce_res=part[:rows],
                reduce_cmd=nisa.reduce_cmd.reset_reduce,
            )
            nisa.tensor_tensor(dst=sums[:rows], data1=sums[:rows], data2=part[:rows], op=nl.add)
            cols = nl.ndarray((P, VT), dtype=nl.float32, buffer=nl.sbuf)
            nisa.iota(dst=cols[:, :width], pattern=[[1, width]], offset=c * VT, channel_multiplier=0)
            onehot = nl.ndarray((P, VT), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=onehot[:rows, :width], data=cols[:rows, :width], op0=nl.equal, operand0=lab[:rows])
            nisa.tensor_tensor(dst=onehot[:rows, :width], data1=onehot[:rows, :width], data2=xt[:rows, :width], op=nl.multiply)
            nisa.tensor_reduce(dst=part[:rows], op=nl.add, data=onehot[:rows, :width], axis=1)
            nisa.tensor_tensor(dst=picked[:rows], data1=picked[:rows], data2=part[:rows], op=nl.add)
        # loss = log(sum) + max - picked
        lse = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=lse[:rows], op=nl.log, data=sums[:rows])
        loss = nl.ndarray((P, 1), dtype=logits.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(
            dst=loss[:rows], data=lse[:rows], op0=nl.subtract, operand0=neg_max[:rows], op1=nl.subtract, operand1=picked[:rows]
        )
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=loss[:rows])
    return out


def reference(logits, labels):
    x = np.asarray(logits, dtype=np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(x - m).sum(axis=1))
    return (lse - x[np.arange(x.shape[0]), np.asarray(labels)])[:, None]


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    return [
        (sample(rng, (n, v), np.float32, distribution(seed, i), scale=3.0), rng.integers(0, v, n).astype(np.int32))
        for i, (n, v) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(128, 512), (200, 5000)], seed)


def full_cases(seed=0):
    return _cases([(4096, 32000)], seed)


cases = quick_cases


def FLOPS(logits, labels):
    return {"elementwise": 4 * logits.size}


def MIN_BYTES(logits, labels):
    return nbytes(logits, labels) + logits.shape[0] * logits.itemsize
