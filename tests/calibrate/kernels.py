"""Small kernels for the calibration round trip: each is bound by a different free constant of the model.

dma_stream: large contiguous loads and stores (DMA bandwidth, `dma.hbm_efficiency`);
dma_chain: a chain of small dependent load -> copy -> store rounds (DMA latency, `dma.fixed_cost_ns`);
vector_chain: many dependent VectorE ops on one tile (`vector_engine.clock_ghz`).
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def dma_stream(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    cols = x.shape[1] // 4
    for i in nl.affine_range(4):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, i * cols : (i + 1) * cols])
        nisa.dma_copy(dst=out[:, i * cols : (i + 1) * cols], src=t)
    return out


@nki.jit
def dma_chain(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(x.shape[1] // 64):
        nisa.dma_copy(dst=t, src=x[:, i * 64 : (i + 1) * 64])
        nisa.tensor_copy(dst=u, src=t)
        nisa.dma_copy(dst=out[:, i * 64 : (i + 1) * 64], src=u)
    return out


@nki.jit
def vector_chain(x, steps=32):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    for _ in nl.sequential_range(steps):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


def reference(x, *_):
    return x


def cases():
    return [
        (np.zeros((128, 4096), np.float32),),
        (np.zeros((128, 16384), np.float32),),
        (np.zeros((128, 512), np.float32),),
        (np.zeros((128, 2048), np.float32),),
    ]
