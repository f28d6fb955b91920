"""A kernel that takes keyword arguments, as nki-library's do: x positionally, eps= and scale= constants, weight=
an array by keyword, and rows_per_tile= a performance knob (TUNABLE). Case 0 is a plain tuple (the defaults),
cases 1 and 2 are nkidev.Case values; case 2 pins rows_per_tile itself (a tune timed on it is refused). The other
kernels, references and cases are the wrong or malformed variants the tests ask for (tests/validate/test_keywords.py,
tests/profile/test_profile.py, tests/loops/test_tune.py, ...)."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev import Case


@nki.jit
def scaled_rmsnorm(x, eps=1e-6, scale=1.0, weight=None, rows_per_tile=128):
    tokens, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = rows_per_tile
    w_tile = None
    if weight is not None:  # the weight row on every partition, loaded once
        w_tile = nl.ndarray((P, hidden), dtype=weight.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w_tile, src=weight.reshape((1, hidden)).broadcast(0, P))
    for t in nl.affine_range((tokens + P - 1) // P):
        rows = min(P, tokens - t * P)
        xt = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        squares = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=squares[:rows],
            op=nl.square,
            data=xt[:rows],
            reduce_op=nl.add,
            reduce_res=sum_sq[:rows],
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        inv_rms = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv_rms[:rows], data=sum_sq[:rows], op0=nl.multiply, operand0=1.0 / hidden, op1=nl.add, operand1=eps)
        nisa.activation(dst=inv_rms[:rows], op=nl.rsqrt, data=inv_rms[:rows])
        y = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[:rows], data=xt[:rows], op0=nl.multiply, operand0=inv_rms[:rows], op1=nl.multiply, operand1=scale)
        if w_tile is not None:
            nisa.tensor_tensor(dst=y[:rows], data1=y[:rows], data2=w_tile[:rows], op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=y[:rows])
    return out


@nki.jit
def ignores_weight(x, eps=1e-6, scale=1.0, weight=None, rows_per_tile=128):
    """scaled_rmsnorm without the weight: right only where the weight is all ones."""
    return scaled_rmsnorm(x, eps=eps, scale=scale, weight=None, rows_per_tile=rows_per_tile)


@nki.jit
def writes_weight(x, eps=1e-6, scale=1.0, weight=None, rows_per_tile=128):
    """scaled_rmsnorm that also stores into its keyword input `weight` (the same values: still a cheat)."""
    out = scaled_rmsnorm(x, eps=eps, scale=scale, weight=weight, rows_per_tile=rows_per_tile)
    if weight is not None:
        row = nl.ndarray((1, weight.shape[0]), dtype=weight.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=row, src=weight.reshape((1, weight.shape[0])))
        nisa.dma_copy(dst=weight.reshape((1, weight.shape[0])), src=row)  # marker: writes weight
    return out


TUNABLE = {"rows_per_tile": [64, 128]}
TOLERANCE = dict(atol=1e-4, rtol=1e-4)


def reference(x, eps=1e-6, scale=1.0, weight=None, rows_per_tile=128):
    x = np.asarray(x, dtype=np.float64)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * scale
    return y if weight is None else y * weight


def reference_ignores_eps(x, eps=1e-6, scale=1.0, weight=None, rows_per_tile=128):
    return reference(x, scale=scale, weight=weight)


def cases(seed=0):
    rng = np.random.default_rng(seed)

    def x(rows, cols):
        return rng.standard_normal((rows, cols)).astype(np.float32)

    return [
        (x(128, 64),),
        Case(x(200, 96), eps=0.5, scale=2.0, weight=rng.uniform(0.5, 1.5, 96).astype(np.float32)),
        Case(x(7, 32), weight=rng.uniform(0.5, 1.5, 32).astype(np.float32), scale=0.5, rows_per_tile=64),
    ]


def ones_weight_cases():
    """A weight of ones hides a kernel that ignores it, except from the run that changes the weight alone."""
    return [Case(np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32), weight=np.ones(32, np.float32))]


def ones_weight_in_a_later_case():
    """As ones_weight_cases, but the weight only in the second case: the first passes x alone."""
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((64, 32)).astype(np.float32),), ones_weight_cases()[0]]


def unknown_keyword_cases():
    return [Case(np.ones((8, 8), np.float32), epsilon=0.1)]


def dict_cases():
    return [{"x": np.ones((8, 8), np.float32), "eps": 0.1}]


def object_keyword_cases():
    return [Case(np.ones((8, 8), np.float32), eps=object())]


def non_str_keyword_cases():
    case = Case(np.ones((8, 8), np.float32))
    object.__setattr__(case, "kwargs", {1: 0.5})  # what no Case(...) call can build, but a hand-made value can
    return [case]
