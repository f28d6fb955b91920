"""Cheat (cheat_calls_reference): reaches the reference through an object attribute (invisible to a source
scan) and swallows whatever that raises; the run-time tripwire still sees the call."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


class _Oracle:
    fn = None


ORACLE = _Oracle()


@nki.jit
def relu_kernel(x):
    try:
        ORACLE.fn(np.zeros(tuple(x.shape)))
    except Exception:
        pass
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.activation(dst=tile, op=nl.relu, data=tile)
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x):
    return np.maximum(x, 0)


ORACLE.fn = reference


def cases():
    rng = np.random.default_rng(13)
    return [(rng.standard_normal((128, 40)).astype(np.float32),)]
