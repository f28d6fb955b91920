"""cases() whose tuples do not fit the kernel's signature."""

import nki
import nki.language as nl
import numpy as np


@nki.jit
def two_inputs(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    return out


def reference(a, b):
    return a + b


def cases():
    x = np.zeros((128, 4), np.float32)
    return [(x, x, x)]  # <- three inputs


def object_cases():
    x = np.zeros((128, 4), np.float32)
    return [(x, object())]
