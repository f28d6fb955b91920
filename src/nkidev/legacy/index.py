"""Legacy index expressions (`nl.arange`, `nl.mgrid`) and masks, kept in affine form.

An index expression is `const + sum(coef[j] * i_j)` over the axes j of its broadcast shape (counted from the
right, NumPy-style), so `p * 128 + nl.arange(128)[:, None]` is {const: 128p, axis -2: 1} of shape (128, 1).
Indexing a tensor with such expressions is an access pattern (`.ap`), not a gather; a mask is a conjunction of
comparisons `expr OP 0`, and a comparison that involves one axis is a bounded range of that axis, so a mask
shrinks an instruction to a box of its iteration space (the legacy compiler's "no runtime cost" masking).

Sources: Neuron SDK 2.26 docs, general/nki/programming_model.rst ("Advanced Tensor Indexing"),
general/nki/api/nki.api.shared.rst ("NKI API Masking"), api/nki/language/__init__.py (arange, mgrid) at
https://github.com/aws-neuron/aws-neuron-sdk/tree/49ee15c58418d5f19b2407bc7057a7beb77ab24a/general/nki.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from nkidev.emulator.context import warn
from nkidev.emulator.location import rule_error


def _index_error(message: str, fix: str = ""):
    return rule_error("err_legacy_index", message, fix or None)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise _index_error(
            f"index expressions of shapes {a} and {b} do not broadcast", "give aranges on one axis the same length"
        ) from None


def _is_int(x) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


class IndexExpr:
    """An affine index expression: `const + sum(coef * arange)` with a broadcast shape (axes counted from the right)."""

    __slots__ = ("shape", "const", "coef", "_values")
    __array_priority__ = 200  # `ndarray + IndexExpr` defers to us

    def __init__(self, shape: tuple[int, ...], const: int, coef: dict[int, int], values: np.ndarray | None = None):
        self.shape = shape
        self.const = const
        self.coef = coef  # negative axis -> coefficient (zero coefficients dropped)
        self._values = values  # set only for non-affine expressions (evaluated numerically)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def affine(self) -> bool:
        return self._values is None

    def __repr__(self) -> str:
        terms = " + ".join(f"{c}*i{self.ndim + a}" for a, c in sorted(self.coef.items()))
        return f"IndexExpr({self.const}{' + ' + terms if terms else ''}, shape={self.shape})"

    def values(self) -> np.ndarray:
        """The index values, shaped to broadcast against `shape` (size 1 on axes the expression does not use)."""
        if self._values is not None:
            return self._values
        out = np.full((1,) * self.ndim, self.const, dtype=np.int64)
        for axis, c in self.coef.items():
            shape = [1] * self.ndim
            shape[axis] = self.shape[axis]
            out = out + (np.arange(self.shape[axis], dtype=np.int64) * c).reshape(shape)
        return out

    def lohi(self, box: tuple[tuple[int, int], ...] | None = None) -> tuple[int, int]:
        """The smallest and largest value over the shape (or a box of it: per axis (start, length))."""
        if not self.affine:
            v = self.values()
            return int(v.min()), int(v.max())
        lo = hi = self.const
        for axis, c in self.coef.items():
            start, n = box[axis] if box is not None else (0, self.shape[axis])
            lo += c * start + min(0, c * (n - 1))
            hi += c * start + max(0, c * (n - 1))
        return lo, hi

    # ---------------------------------------------------------------- reshaping: arange(n)[:, None]
    def __getitem__(self, key) -> IndexExpr:
        key = key if isinstance(key, tuple) else (key,)
        if not self.affine:
            return _numeric(np.asarray(self.values()[key]))
        shape, mapping, const = [], {}, self.const
        src = 0
        for k in key:
            if k is None:
                shape.append(1)
                continue
            if src >= self.ndim:
                raise _index_error(f"too many indices for an index expression of shape {self.shape}")
            axis = src - self.ndim
            c = self.coef.get(axis, 0)
            n = self.shape[src]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                const += c * start
                mapping[len(shape)] = c * step
                shape.append(len(range(start, stop, step)))
            elif _is_int(k):
                const += c * int(k)
            else:
                raise _index_error(f"index {k!r} of an index expression", "use None and slices, e.g. nl.arange(n)[:, None]")
            src += 1
        for s in range(src, self.ndim):
            mapping[len(shape)] = self.coef.get(s - self.ndim, 0)
            shape.append(self.shape[s])
        rank = len(shape)
        return IndexExpr(tuple(shape), const, {pos - rank: c for pos, c in mapping.items() if c})

    # ---------------------------------------------------------------- affine arithmetic
    def _combine(self, other, sign: int) -> IndexExpr:
        if _is_int(other):
            if not self.affine:
                return _numeric(self.values() + sign * int(other))
            return IndexExpr(self.shape, self.const + sign * int(other), dict(self.coef))
        if isinstance(other, IndexExpr):
            shape = _broadcast(self.shape, other.shape)
            if not (self.affine and other.affine):
                return _numeric(np.broadcast_to(self.values(), shape) + sign * np.broadcast_to(other.values(), shape))
            coef = dict(self.coef)
            for axis, c in other.coef.items():
                coef[axis] = coef.get(axis, 0) + sign * c
            return IndexExpr(shape, self.const + sign * other.const, {a: c for a, c in coef.items() if c})
        return NotImplemented

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        out = (-self)._combine(other, 1)
        return out

    def __neg__(self) -> IndexExpr:
        return self * -1

    def __pos__(self) -> IndexExpr:
        return self

    def __mul__(self, other):
        if _is_int(other):
            k = int(other)
            if not self.affine:
                return _numeric(self.values() * k)
            return IndexExpr(self.shape, self.const * k, {a: c * k for a, c in self.coef.items() if c * k})
        if isinstance(other, IndexExpr):
            shape = _broadcast(self.shape, other.shape)
            return _numeric(np.broadcast_to(self.values(), shape) * np.broadcast_to(other.values(), shape))
        return NotImplemented

    __rmul__ = __mul__

    def _nonaffine(self, other, fn):
        if isinstance(other, IndexExpr):
            return _numeric(fn(self.values(), other.values()))
        if _is_int(other):
            return _numeric(fn(self.values(), int(other)))
        return NotImplemented

    def __floordiv__(self, other):
        return self._nonaffine(other, operator.floordiv)

    def __mod__(self, other):
        return self._nonaffine(other, operator.mod)

    # ---------------------------------------------------------------- comparisons make masks
    def _compare(self, other, op: str):
        if isinstance(other, IndexExpr) or _is_int(other):
            return Mask.compare(self - other, op)
        if isinstance(other, float | np.floating) and float(other).is_integer():
            return Mask.compare(self - int(other), op)
        return NotImplemented

    def __lt__(self, other):
        return self._compare(other, "<")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __eq__(self, other):
        return self._compare(other, "==")

    def __ne__(self, other):
        return self._compare(other, "!=")

    __hash__ = object.__hash__

    def __bool__(self):
        raise rule_error(
            "err_control_flow_condition_depending_on_arange",
            "a Python condition (if/while/and/or) depends on an nl.arange index expression",
            "pass the comparison as mask= instead, and join conditions with &",
        )

    def __index__(self):
        raise _index_error("an index expression is used as a Python int", "use it to index a tensor or build a mask")


def _numeric(values: np.ndarray) -> IndexExpr:
    values = np.asarray(values, dtype=np.int64)
    return IndexExpr(tuple(values.shape), 0, {}, values)


def arange(*args) -> IndexExpr:
    """nl.arange(stop) / nl.arange(start, stop): a 1-d index expression; place it on an axis with [:, None] / [None, :]."""
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) in (2, 3):
        start, stop, step = args[0], args[1], args[2] if len(args) == 3 else 1
    else:
        raise _index_error(f"nl.arange{args}", "pass stop, or start and stop")
    start, stop, step = int(start), int(stop), int(step)
    n = len(range(start, stop, step))
    if n <= 0:
        raise _index_error(f"nl.arange({start}, {stop}) is empty", "pass start < stop")
    return IndexExpr((n,), start, {-1: step})


class MGrid:
    """The components of nl.mgrid[...] (unpack them, or use .p, .x, .y, .z)."""

    def __init__(self, parts: tuple[IndexExpr, ...]):
        self._parts = parts

    def __iter__(self):
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def __getitem__(self, i) -> IndexExpr:
        return self._parts[i]

    def _part(self, i: int) -> IndexExpr:
        if i >= len(self._parts):
            raise _index_error(f"this mgrid has {len(self._parts)} components", "index with fewer components")
        return self._parts[i]

    p = property(lambda self: self._part(0))
    x = property(lambda self: self._part(1))
    y = property(lambda self: self._part(2))
    z = property(lambda self: self._part(3))


class _MGridFactory:
    """nl.mgrid[0:128, 0:512]: like numpy.mgrid (integer steps only), as affine index expressions."""

    def __getitem__(self, key) -> MGrid:
        key = key if isinstance(key, tuple) else (key,)
        ranges = []
        for k in key:
            if not isinstance(k, slice) or isinstance(k.step, complex):
                raise _index_error(f"nl.mgrid[{k!r}]", "use integer slices, e.g. nl.mgrid[0:128, 0:512]")
            start = 0 if k.start is None else int(k.start)
            step = 1 if k.step is None else int(k.step)
            ranges.append((start, step, len(range(start, int(k.stop), step))))
        shape = tuple(n for _, _, n in ranges)
        rank = len(shape)
        return MGrid(tuple(IndexExpr(shape, start, {i - rank: step}) for i, (start, step, _) in enumerate(ranges)))


mgrid = _MGridFactory()

# ---------------------------------------------------------------- masks

_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

Box = tuple[tuple[int, int], ...]  # per axis of an iteration space: (start, length)


class Mask:
    """A conjunction of comparisons `expr OP 0` (built with <, <=, ..., joined with &)."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[IndexExpr, str], ...]):
        self.terms = terms

    @staticmethod
    def compare(expr: IndexExpr, op: str) -> Mask:
        return Mask(((expr, op),))

    @property
    def shape(self) -> tuple[int, ...]:
        out: tuple[int, ...] = ()
        for e, _ in self.terms:
            out = _broadcast(out, e.shape)
        return out

    def __and__(self, other):
        if isinstance(other, Mask):
            return Mask(self.terms + other.terms)
        if isinstance(other, bool | np.bool_):
            return self if other else Mask(((IndexExpr((), -1, {}), ">="),))
        return NotImplemented

    __rand__ = __and__

    def __bool__(self):
        # Python's `m1 and m2` asks for bool(m1) and yields m2: the legacy tracer did the same, so kernels that join
        # masks with `and` keep only the last comparison (the docs forbid it: nki_known_issues.rst "Masks conjunction").
        warn(
            "warn_mask_python_bool",
            "a mask is used as a Python bool (`and`/`or`/`if`): `m1 and m2` keeps only m2's comparison; join masks with &",
        )
        return True

    def values(self, shape: tuple[int, ...]) -> np.ndarray:
        out = np.ones(shape, dtype=bool)
        for e, op in self.terms:
            out &= np.broadcast_to(_OPS[op](e.values(), 0), shape)
        return out

    def box(self, shape: tuple[int, ...]) -> Box | None:
        """The box of `shape` the mask selects, or None when it is not a box (e.g. a triangle)."""
        rank = len(shape)
        if len(self.shape) > rank:
            raise _index_error(
                f"a mask of shape {self.shape} on an instruction over {shape}", "build the mask from aranges of the tile's axes"
            )
        ranges = [[0, n] for n in shape]
        for e, op in self.terms:
            axes = [a for a in e.coef if shape[a] > 1 or e.shape[a] > 1] if e.affine else None
            if axes is None or len(axes) > 1:
                return None
            if not axes:
                if not _OPS[op](e.const, 0):
                    return tuple((0, 0) for _ in shape)
                continue
            axis = axes[0]
            lo, hi = _solve(e.const, e.coef[axis], op, shape[axis])
            if lo is None:
                return None
            r = ranges[rank + axis]
            r[0], r[1] = max(r[0], lo), min(r[1], hi)
        return tuple((lo, max(0, hi - lo)) for lo, hi in ranges)


def _solve(const: int, coef: int, op: str, n: int) -> tuple[int | None, int]:
    """The range [lo, hi) of i in [0, n) where `const + coef * i OP 0`, or (None, 0) when it is not one range."""
    if op == "!=":
        return None, 0
    if coef < 0:
        const, coef, op = -const, -coef, _FLIP[op]
    # const + coef*i OP 0  <=>  i OP' -const/coef
    bound = -const / coef
    if op == "<":
        lo, hi = 0, math.ceil(bound)
    elif op == "<=":
        lo, hi = 0, math.floor(bound) + 1
    elif op == ">":
        lo, hi = math.floor(bound) + 1, n
    elif op == ">=":
        lo, hi = math.ceil(bound), n
    else:  # ==
        if not float(bound).is_integer():
            return 0, 0
        lo, hi = int(bound), int(bound) + 1
    return max(0, lo), min(n, max(0, hi))


def mask_box(mask, shape: tuple[int, ...]) -> Box | None:
    """The part of an instruction's iteration space a mask= selects: None for no mask (all of it), an empty box
    for a false mask; a mask that is not a box raises err_legacy_index."""
    if mask is None or mask is True or (isinstance(mask, np.bool_) and bool(mask)):
        return None
    if mask is False or (isinstance(mask, np.bool_) and not bool(mask)):
        return tuple((0, 0) for _ in shape)
    if not isinstance(mask, Mask):
        raise _index_error(f"mask={mask!r} is not a comparison of index expressions", "build masks like (i_p < n) & (i_f < m)")
    box = mask.box(shape)
    if box is None:
        raise rule_error(
            "err_legacy_index",
            "this mask does not select a box of the instruction's tile (it relates two axes, or uses !=)",
            "split the work so each mask bounds one axis, or use nisa.affine_select for triangular masks",
        )
    return box


def is_full(box: Box | None, shape: tuple[int, ...]) -> bool:
    return box is None or all(s == 0 and n == dim for (s, n), dim in zip(box, shape))


def is_empty(box: Box | None) -> bool:
    return box is not None and any(n == 0 for _, n in box)
