"""Per-row cross-entropy of logits[N, V] (fp32) against integer labels[N] (int32):
loss[n] = logsumexp(logits[n]) - logits[n, labels[n]].  Returns loss[N, 1] (fp32).

Baseline: rows on partitions, 128 per tile; max, exp with an fp32 sum and log for the logsumexp; the label's
logit is picked with a one-hot mask built from iota (column index == label) and a multiply-sum.
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
    out = nl.ndarray((N, 1), dtype=logits.dtype, buffer=nl.shared_hbm)
    cols = nl.ndarray((P, V), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(dst=cols, pattern=[[1, V]], offset=0, channel_multiplier=0)
    for t in nl.affine_range((N + P - 1) // P):
        rows = min(P, N - t * P)
        xt = nl.ndarray((P, V), dtype=logits.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=logits[t * P : t * P + rows, :])
        lab_i = nl.ndarray((P, 1), dtype=labels.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=lab_i[:rows], src=labels.reshape((N, 1))[t * P : t * P + rows, :])
        lab = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=lab[:rows], src=lab_i[:rows])
        # logsumexp = max + log(sum(exp(x - max)))
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[:rows], op=nl.maximum, data=xt[:rows], axis=1, negate=True)
        exps = nl.ndarray((P, V), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=exps[:rows],
            op=nl.exp,
            data=xt[:rows],
            bias=neg_max[:rows],
            reduce_op=nl.add,
            reduce_res=sums[:rows],
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        lse = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=lse[:rows], op=nl.log, data=sums[:rows])
        # the label's logit: sum(x * (col == label))
        onehot = nl.ndarray((P, V), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=onehot[:rows], data=cols[:rows], op0=nl.equal, operand0=lab[:rows])
        nisa.tensor_tensor(dst=onehot[:rows], data1=onehot[:rows], data2=xt[:rows], op=nl.multiply)
        picked = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=picked[:rows], op=nl.add, data=onehot[:rows], axis=1)
        # loss = log(sum) + max - picked
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
    return _cases([(128, 512), (200, 1000)], seed)


def full_cases(seed=0):
    return _cases([(4096, 32000)], seed)


cases = quick_cases


def FLOPS(logits, labels):
    return {"elementwise": 4 * logits.size}


def MIN_BYTES(logits, labels):
    return nbytes(logits, labels) + logits.shape[0] * logits.itemsize
