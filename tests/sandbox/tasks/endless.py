"""A kernel that never returns: --timeout must stop it."""

import nki
import nki.language as nl
from base import copy_reference as reference  # noqa: F401
from base import one_case as cases  # noqa: F401


@nki.jit
def endless_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    while True:  # <- endless
        pass
    return out
