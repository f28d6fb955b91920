"""Cheat (cheat_emulator_internals): reads the emulator's backing array of its input, computes the answer with
NumPy on the host and ships it in as a constant. The numbers are right; nothing ran on the device."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def gelu_kernel(x):
    host = np.asarray(x._data, dtype=np.float64)
    answer = 0.5 * host * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (host + 0.044715 * host**3)))
    const = nl.shared_constant(answer.astype(np.float32))
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=const)
    return out


def reference(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def cases():
    rng = np.random.default_rng(11)
    return [(rng.standard_normal((128, 64)).astype(np.float32),)]
