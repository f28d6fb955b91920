"""One AdamW optimizer step on a parameter tensor (fp32), with bias correction at step `step`:
m' = b1 m + (1 - b1) g,  v' = b2 v + (1 - b2) g^2,
p' = p - lr * (m' / (1 - b1^step) / (sqrt(v' / (1 - b2^step)) + eps) + wd * p).  Returns (p', m', v').

Baseline: rows on partitions, 128 per tile; one Vector or Scalar Engine op per term.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, positive, sample

FAMILY = "optimizer"
ENTRY = "adamw"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-5, rtol=1e-4)
LR, BETA1, BETA2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 0.01


@nki.jit
def adamw(p, g, m, v, step):
    R, C = p.shape
    P = nl.tile_size.pmax
    c1 = 1.0 / (1.0 - BETA1**step)
    c2 = 1.0 / (1.0 - BETA2**step)
    p_out = nl.ndarray((R, C), dtype=p.dtype, buffer=nl.shared_hbm)
    m_out = nl.ndarray((R, C), dtype=m.dtype, buffer=nl.shared_hbm)
    v_out = nl.ndarray((R, C), dtype=v.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((R + P - 1) // P):
        rows = min(P, R - t * P)
        tiles = []
        for src in (p, g, m, v):
            tile = nl.ndarray((P, C), dtype=src.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile[:rows], src=src[t * P : t * P + rows, :])
            tiles.append(tile)
        pt, gt, mt, vt = tiles
        tmp = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        # m' = b1 m + (1 - b1) g
        m_new = nl.ndarray((P, C), dtype=m.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=tmp[:rows], data=gt[:rows], op0=nl.multiply, operand0=1.0 - BETA1)
        nisa.scalar_tensor_tensor(dst=m_new[:rows], data=mt[:rows], op0=nl.multiply, operand0=BETA1, op1=nl.add, operand1=tmp[:rows])
        # v' = b2 v + (1 - b2) g^2
        v_new = nl.ndarray((P, C), dtype=v.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=tmp[:rows], data1=gt[:rows], data2=gt[:rows], op=nl.multiply)
        nisa.tensor_scalar(dst=tmp[:rows], data=tmp[:rows], op0=nl.multiply, operand0=1.0 - BETA2)
        nisa.scalar_tensor_tensor(dst=v_new[:rows], data=vt[:rows], op0=nl.multiply, operand0=BETA2, op1=nl.add, operand1=tmp[:rows])
        # 1 / (sqrt(v' c2) + eps)
        denom = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=denom[:rows], op=nl.sqrt, data=v_new[:rows], scale=c2)
        nisa.tensor_scalar(dst=denom[:rows], data=denom[:rows], op0=nl.add, operand0=EPS)
        nisa.reciprocal(dst=denom[:rows], data=denom[:rows])
        # update = m' c1 / denom + wd p;  p' = p - lr update
        upd = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=upd[:rows], data=m_new[:rows], op0=nl.multiply, operand0=c1, op1=nl.multiply, operand1=denom[:rows])
        nisa.scalar_tensor_tensor(dst=upd[:rows], data=pt[:rows], op0=nl.multiply, operand0=WD, op1=nl.add, operand1=upd[:rows])
        p_new = nl.ndarray((P, C), dtype=p.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=p_new[:rows], data=upd[:rows], op0=nl.multiply, operand0=-LR, op1=nl.add, operand1=pt[:rows])
        nisa.dma_copy(dst=p_out[t * P : t * P + rows, :], src=p_new[:rows])
        nisa.dma_copy(dst=m_out[t * P : t * P + rows, :], src=m_new[:rows])
        nisa.dma_copy(dst=v_out[t * P : t * P + rows, :], src=v_new[:rows])
    return p_out, m_out, v_out


def reference(p, g, m, v, step):
    p, g, m, v = (np.asarray(a, dtype=np.float64) for a in (p, g, m, v))
    m2 = BETA1 * m + (1 - BETA1) * g
    v2 = BETA2 * v + (1 - BETA2) * g * g
    update = (m2 / (1 - BETA1**step)) / (np.sqrt(v2 / (1 - BETA2**step)) + EPS) + WD * p
    return p - LR * update, m2, v2


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    out = []
    for i, (r, c, step) in enumerate(shapes):
        dist = distribution(seed, i)
        p, g, m = (sample(rng, (r, c), f32, dist, scale=s) for s in (1.0, 1e-2, 1e-3))
        out.append((p, g, m, positive(rng, (r, c), f32, 1e-6, 1e-4), step))
    return out


def quick_cases(seed=0):
    return _cases([(128, 256, 10), (200, 128, 1)], seed)


def full_cases(seed=0):
    return _cases([(8192, 4096, 100)], seed)


cases = quick_cases


def FLOPS(p, g, m, v, step):
    return {"elementwise": 12 * p.size}


def MIN_BYTES(p, g, m, v, step):
    return nbytes(p, g, m, v) + 3 * p.nbytes
