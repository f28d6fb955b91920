"""A wrong kernel (it doubles its input) with a NaN tolerance that would make every comparison pass."""

import nki
import nki.isa as nisa
import nki.language as nl
from base import copy_reference as reference  # noqa: F401
from base import one_case as cases  # noqa: F401

TOLERANCE = dict(atol=1e-5, rtol=float("nan"))


@nki.jit
def double_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out
