"""One AdamW optimizer step on a parameter tensor (fp32), with bias correction at step `step`:
m' = b1 m + (1 - b1) g,  v' = b2 v + (1 - b2) g^2,
p' = p - lr * (m' / (1 - b1^step) / (sqrt(v' / (1 - b2^step)) + eps) + wd * p).  Returns (p', m', v').

Baseline: rows on partitions, 128 per tile, 512 columns at a time; one Vector or Scalar Engine op per term.
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
    CT = min(C, 512)  # columns per tile: ten fp32 tiles of 2 KiB per partition stay far below SBUF
    c1 = 1.0 / (1.0 - BETA1**step)
    c2 = 1.0 / (1.0 - BETA2**step)
    p_out = nl.ndarray((R, C), dtype=p.dtype, buffer=nl.shared_hbm)
    m_out = nl.ndarray((R, C), dtype=m.dtype, buffer=nl.shared_hbm)
    v_out = nl.ndarray((R, C), dtype=v.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((R + P - 1) // P):
        rows = min(P, R - t * P)
        for c in nl.affine_range((C + CT - 1) // CT):
            cols = min(CT, C - c * CT)
            r0, c0 = t * P, c * CT
            tiles = []
            for src in (p, g, m, v):
                tile = nl.ndarray((P, CT), dtype=src.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=tile[:rows, :cols], src=src[r0 : r0 + rows, c0 : c0 + cols])
                tiles.append(tile[:rows, :cols])
            pt, gt, mt, vt = tiles
            tmp = nl.ndarray((P, CT), dtype=nl.float32, buffer=nl.sbuf)[:rows, :cols]
            # m' = b1 m + (1 - b1) g
            m_new = nl.ndarray((P, CT), dtype=m.dtype, buffer=nl.sbuf)[:rows, :cols]
            nisa.tensor_scalar(dst=tmp, data=gt, op0=nl.multiply, operand0=1.0 - BETA1)
            nisa.scalar_tensor_tensor(dst=m_new, data=mt, op0=nl.multiply, operand0=BETA1, op1=nl.add, operand1=tmp)
            # v' = b2 v + (1 - b2) g^2
            v_new = nl.ndarray((P, CT), dtype=v.dtype, buffer=nl.sbuf)[:rows, :cols]
            nisa.tensor_tensor(dst=tmp, data1=gt, data2=gt, op=nl.multiply)
            nisa.tensor_scalar(dst=tmp, data=tmp, op0=nl.multiply, operand0=1.0 - BETA2)
            nisa.scalar_tensor_tensor(dst=v_new, data=vt, op0=nl.multiply, operand0=BETA2, op1=nl.add, operand1=tmp)
            # 1 / (sqrt(v' c2) + eps)
            denom = nl.ndarray((P, CT), dtype=nl.float32, buffer=nl.sbuf)[:rows, :cols]
            nisa.activation(dst=denom, op=nl.sqrt, data=v_new, scale=c2)
            nisa.tensor_scalar(dst=denom, data=denom, op0=nl.add, operand0=EPS)
            nisa.reciprocal(dst=denom, data=denom)
            # update = m' c1 / denom + wd p;  p' = p - lr update
            upd = nl.ndarray((P, CT), dtype=nl.float32, buffer=nl.sbuf)[:rows, :cols]
            nisa.scalar_tensor_tensor(dst=upd, data=m_new, op0=nl.multiply, operand0=c1, op1=nl.multiply, operand1=denom)
            nisa.scalar_tensor_tensor(dst=upd, data=pt, op0=nl.multiply, operand0=WD, op1=nl.add, operand1=upd)
            p_new = nl.ndarray((P, CT), dtype=p.dtype, buffer=nl.sbuf)[:rows, :cols]
            nisa.scalar_tensor_tensor(dst=p_new, data=upd, op0=nl.multiply, operand0=-LR, op1=nl.add, operand1=pt)
            nisa.dma_copy(dst=p_out[r0 : r0 + rows, c0 : c0 + cols], src=p_new)
            nisa.dma_copy(dst=m_out[r0 : r0 + rows, c0 : c0 + cols], src=m_new)
            nisa.dma_copy(dst=v_out[r0 : r0 + rows, c0 : c0 + cols], src=v_new)
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
    return _cases([(128, 256, 10), (200, 640, 1)], seed)


def full_cases(seed=0):
    return _cases([(8192, 4096, 100)], seed)


cases = quick_cases


def FLOPS(p, g, m, v, step):
    return {"elementwise": 12 * p.size}


def MIN_BYTES(p, g, m, v, step):
    return nbytes(p, g, m, v) + 3 * p.nbytes
