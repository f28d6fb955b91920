"""Kernels that raise, for the error-path tests. The line numbers are asserted by tests/validate/test_cli.py."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def asserts_kernel(x):
    assert x.shape[0] == 64, "this kernel needs 64 rows"  # line 11
    return x


@nki.jit
def rule_kernel(x):
    big = nl.ndarray((256, 8), dtype=nl.float32, buffer=nl.sbuf)  # line 17: 256 partitions
    return big


@nki.jit
def transpose_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.dma_copy(dst=out, src=tile)
    return out


@nki.jit
def float_argmax(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=tile, value=0.0)
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x):
    return x.T  # transposed: a shape mismatch for transpose_kernel on non-square inputs


def argmax_reference(x):
    return np.argmax(x, axis=1).reshape(-1, 1)


def reference_raises(x):
    raise ValueError("reference is broken on purpose")  # line 50


def reference_nan(x):
    return np.log(x)  # x has negative values: NaN


def cases():
    return [(np.arange(128 * 32, dtype=np.float32).reshape(128, 32) - 100.0,)]


def bad_cases():
    return np.zeros((4, 4), np.float32)


def cases_raise():
    raise KeyError("no data")
