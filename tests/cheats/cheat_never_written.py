"""Cheat (cheat_output_not_written): returns its output without writing it."""

import nki
import nki.language as nl
import numpy as np


@nki.jit
def lazy_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    return out


def reference(x):
    return np.tanh(x)


def cases():
    return [(np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64),)]
