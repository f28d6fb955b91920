"""A kernel and a reference that print: --json output must stay one JSON object."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def print_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nl.device_print("tile", t[0:1, 0:4])
    nisa.dma_copy(dst=out, src=t)
    return out


def reference(x):
    print("ref here")
    return x


def cases():
    return [(np.arange(8, dtype=np.float32).reshape(2, 4),)]
