"""A task file for nkidev: the kernel, a CPU reference, test cases and a tolerance.

Copy it, rename the kernel, keep the four parts. Check it with:
    nkidev validate kernel_template.py::scaled_add_relu_kernel
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def scaled_add_relu_kernel(x, y, scale=0.5):
    """out = relu(x * scale + y) for 2-D [rows, cols] inputs of the same shape and dtype."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)  # outputs live in shared HBM
    P = nl.tile_size.pmax  # 128 partitions
    for t in nl.affine_range((rows + P - 1) // P):
        start = t * P
        n = min(P, rows - start)  # the last tile may be partial

        x_tile = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        y_tile = nl.ndarray((P, cols), dtype=y.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile[:n], src=x[start : start + n, :])
        nisa.dma_copy(dst=y_tile[:n], src=y[start : start + n, :])

        acc = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=acc[:n], data=x_tile[:n], op0=nl.multiply, operand0=scale)
        nisa.tensor_tensor(dst=acc[:n], data1=acc[:n], data2=y_tile[:n], op=nl.add)

        result = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=result[:n], op=nl.relu, data=acc[:n])
        nisa.dma_copy(dst=out[start : start + n, :], src=result[:n])
    return out


def reference(x, y, scale=0.5):
    """The same computation in float64 NumPy: the ground truth."""
    return np.maximum(np.asarray(x, dtype=np.float64) * scale + np.asarray(y, dtype=np.float64), 0.0)


def cases(seed=0):
    """Inputs to test: a full tile, several tiles with a partial last one, a tiny edge case."""
    rng = np.random.default_rng(seed)
    shapes = [(128, 512), (300, 1024), (1, 64)]
    return [(rng.standard_normal(s).astype(np.float32), rng.standard_normal(s).astype(np.float32)) for s in shapes]


TOLERANCE = dict(atol=1e-5, rtol=1e-5)
