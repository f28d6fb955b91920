"""A kernel whose host code allocates memory until it runs out: --memory must stop it."""

import nki
import nki.language as nl
import numpy as np
from base import copy_reference as reference  # noqa: F401
from base import one_case as cases  # noqa: F401


@nki.jit
def hog_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    hoard = []
    while True:
        hoard.append(np.ones(32 << 20, np.uint8))  # 32 MiB at a time, touched
    return out
