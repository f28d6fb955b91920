"""A property-based fuzzer over the op layer: every `nki.isa` instruction and `nki.language` function is called
with well- and badly-typed arguments drawn by hypothesis, and every outcome must be a value or a *named* nkidev
error (an `NkiError`). Anything else (a raw IndexError, a NumPy AxisError, a ZeroDivisionError, ...) is an
nkidev bug: the op boundary let through an argument it should have refused by name.

Used by tests/emulator/test_fuzz_ops.py (a few hundred examples) and bench/fuzz_ops.py (thousands).
"""

from __future__ import annotations

import inspect
import math
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from nkidev.emulator import context
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import Context, EmulatorOptions
from nkidev.emulator.opdef import OPS
from nkidev.emulator.tensor import NkiTensor
from nkidev.errors import NkiError
from nkidev.hardware import get_target, target_names

# nl functions that are not ops on tiles (loops, SPMD queries, constants, creation of host objects)
NOT_OPS = {
    "affine_range",
    "sequential_range",
    "static_range",
    "dynamic_range",
    "fori_loop",
    "while_loop",
    "no_reorder",
    "program_id",
    "num_programs",
    "program_ndim",
    "device_print",
    "shared_constant",
    "ds",
    "par_dim",
    "arange",
    "is_hbm",
    "is_sbuf",
    "is_psum",
    "is_on_chip",
    "static_cast",
    "NKIObject",
    "random_seed",
}
DTYPES = [nl.float32, nl.bfloat16, nl.float16, nl.int32, nl.int8, nl.uint8, nl.float8_e4m3, nl.uint16, nl.int16]
BUFFERS = [nl.sbuf, nl.sbuf, nl.psum, nl.shared_hbm, nl.private_hbm]
ALU_OPS = [
    nl.add,
    nl.subtract,
    nl.multiply,
    nl.maximum,
    nl.minimum,
    nl.divide,
    nl.exp,
    nl.tanh,
    nl.bitwise_and,
    nl.left_shift,
    nl.equal,
    nl.greater,
    nl.power,
    nl.abs,
    nl.logical_not,
    nl.negative,
    nl.rsqrt,
    nl.bypass,
    nl.copy,
    np.add,
]
JUNK = [None, "x", b"y", object(), [], (), {}, [1, 2], 3.5, -1, 0, 1 << 40, math.nan, math.inf, -math.inf, True]


def ops_under_test() -> dict[str, object]:
    """name -> the public callable: every emulated nki.isa op and every tile-level nl function."""
    out = {f"nisa.{name}": getattr(nisa, name) for name, op in OPS.items() if op.emulated and op.namespace == "isa"}
    for name in sorted(getattr(nl, "__all__", dir(nl))):
        fn = getattr(nl, name, None)
        if name.startswith("_") or name in NOT_OPS or not inspect.isfunction(fn):
            continue
        out[f"nl.{name}"] = fn
    return out


@st.composite
def shapes(draw) -> tuple[int, ...]:
    rank = draw(st.integers(1, 3))
    p = draw(st.sampled_from([1, 2, 4, 8, 32, 64, 128, 129, 3, 16]))
    rest = [draw(st.sampled_from([1, 2, 3, 4, 8, 16, 32])) for _ in range(rank - 1)]
    return (p, *rest)


@st.composite
def tiles(draw) -> NkiTensor:
    shape = draw(shapes())
    dtype = draw(st.sampled_from(DTYPES))
    buffer = draw(st.sampled_from(BUFFERS))
    if buffer in (nl.sbuf, nl.psum) and shape[0] > 128:
        shape = (128, *shape[1:])
    t = nl.ndarray(shape, dtype, buffer=buffer)
    values = draw(st.sampled_from(["normal", "small_int", "nan", "zero"]))
    rng = np.random.default_rng(draw(st.integers(0, 3)))
    data = {
        "normal": rng.standard_normal(shape) * 4,
        "small_int": rng.integers(-3, 8, shape),
        "nan": np.full(shape, np.nan),
        "zero": np.zeros(shape),
    }[values]
    with np.errstate(all="ignore"):
        t._data[...] = data.astype(t.dtype.storage) if t.dtype.is_float else np.nan_to_num(data).astype(t.dtype.storage)
    t.storage.written = True
    view = draw(st.sampled_from(["whole", "whole", "slice", "index"]))
    if view == "slice" and shape[0] > 1:
        return t[: shape[0] // 2]
    if view == "index" and len(shape) > 2:
        return t[:, 0]
    return t


def scalars():
    return st.one_of(
        st.integers(-5, 10),
        st.floats(allow_nan=True, allow_infinity=True, width=32),
        st.sampled_from([0, 0.0, -1, 1e30, 1 << 40]),
    )


def axes():
    return st.one_of(
        st.integers(-4, 6),
        st.tuples(st.integers(-3, 5)),
        st.tuples(st.integers(0, 4), st.integers(0, 4)),
        st.sampled_from([None, "1", 1.5]),
    )


def value_for(name: str, op_tiles: tuple[str, ...]):
    """A strategy for one parameter, chosen by its name (tiles, axes, ops, dtypes, numbers), always mixed with junk."""
    junk = st.sampled_from(JUNK)
    if name in op_tiles or name in ("x", "y", "data", "src", "dst", "condition", "w", "value", "tensor", "indices", "mask"):
        strategy = st.one_of(tiles(), tiles(), tiles(), scalars())
    elif name in ("axis", "axes", "dim", "dims"):
        strategy = axes()
    elif name.startswith("op") or name.endswith("_op") or name in ("cmp_op", "reduce_op"):
        strategy = st.sampled_from(ALU_OPS)
    elif "dtype" in name:
        strategy = st.sampled_from([*DTYPES, None, None])
    elif name in ("shape",):
        strategy = st.one_of(shapes(), st.sampled_from([(0, 4), (-1,), (128, 1 << 20)]))
    elif name in ("buffer",):
        strategy = st.sampled_from(BUFFERS)
    elif name in ("engine",):
        strategy = st.sampled_from(list(nisa.engine))
    elif name in ("pattern",):
        strategy = st.one_of(
            st.lists(st.lists(st.integers(-2, 64), min_size=2, max_size=2), min_size=0, max_size=3), st.sampled_from([[[1]], [1, 2]])
        )
    else:
        strategy = st.one_of(scalars(), tiles(), st.booleans())
    return st.one_of(strategy, strategy, strategy, junk)


@st.composite
def calls(draw, ops: dict[str, object]):
    """(op name, keyword arguments) of one call."""
    name = draw(st.sampled_from(sorted(ops)))
    fn = ops[name]
    opdef = getattr(fn, "__nki_opdef__", None)
    op_tiles = opdef.tiles if opdef is not None else ()
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    kwargs = {}
    for p in params:
        if p.name == "name":
            continue
        if p.default is not inspect.Parameter.empty and draw(st.integers(0, 2)) == 0:
            continue  # keep the default
        kwargs[p.name] = draw(value_for(p.name, op_tiles))
    return name, kwargs


@dataclass
class Tally:
    calls: int = 0
    ok: int = 0
    named: int = 0
    internal: int = 0
    kinds: Counter = field(default_factory=Counter)  # "op: ExcType: first line" -> count
    examples: dict = field(default_factory=dict)

    def summary(self) -> str:
        return f"calls={self.calls} ok={self.ok} named={self.named} internal={self.internal}"


def fresh_context(target: str = "trn2") -> None:
    context.set_current(Context(get_target(target), EmulatorOptions(target=target)))


def call_once(name: str, fn, kwargs: dict, tally: Tally) -> BaseException | None:
    """One call, classified: OK, a named error, or an internal crash (returned)."""
    tally.calls += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(**kwargs)
    except NkiError:
        tally.named += 1
        return None
    except Exception as e:  # noqa: BLE001 - the fuzzer's whole point: anything else is a bug
        tally.internal += 1
        key = f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
        tally.kinds[key] += 1
        tally.examples.setdefault(key, (kwargs, "".join(traceback.format_exception(e)[-3:])))
        return e
    tally.ok += 1
    return None


TARGETS = tuple(target_names())
