"""A task whose references use PyTorch (imported only by the torch test, which skips without torch)."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np
import torch
import torch.nn.functional as F


@nki.jit
def silu_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.activation(dst=tile, op=nl.silu, data=tile)
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x):
    assert x.dtype == torch.float64
    return F.silu(x.float())  # float32 from the x.float() idiom declares nothing


def reference_methods(x):
    return x * x.sigmoid()  # names no torch object: found by the retry


def cases():
    rng = np.random.default_rng(0)
    y = torch.randn(64, 32, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    return [(rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16),), (y,)]
