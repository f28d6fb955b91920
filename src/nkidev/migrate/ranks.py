"""The rank of each tile of a legacy function where its source shows it: an allocation's literal shape, a load or
copy of a slice (slices and nl.ds keep a dim, an integer drops one, an arange / mgrid grid gives its own rank), the
unpacking of a tensor's shape (`h, w = x.shape`), and results that keep their operand's rank (element-wise ops,
casts) or have a fixed one (matmuls, transposes: 2). A name bound to tiles of different ranks, or to anything this
does not follow, has no rank here. The migration needs a tile's rank to move reduced axes last (the current
reductions take only the last free axes)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from nkidev.legacy import isa as L
from nkidev.legacy import language as LN
from nkidev.migrate.common import arg_value, code, literal_int

Target = Callable[[cst.BaseExpression], tuple[str | None, str | None]]

_ALLOCATIONS = {"ndarray", "zeros", "ones", "full", "empty"}
_LIKE = {"zeros_like", "ones_like", "empty_like", "full_like"}
_SAME_RANK_LANGUAGE = {
    "load", "copy", "exp", "log", "tanh", "sigmoid", "relu", "gelu", "silu", "sqrt", "rsqrt", "abs", "negative",
    "square", LN.reciprocal.__name__, "sin", "cos", "sign", "erf", "softplus", "mish", "floor", "ceil", "trunc",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "fmod", "mod", "where",
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
}  # fmt: skip
# legacy ISA names by their functions: op names live in the op tables (tests/emulator/test_optable.py)
_SAME_RANK_ISA = {f.__name__ for f in (L.tensor_copy, L.activation, L.tensor_scalar, L.tensor_tensor, L.reciprocal, L.iota)}
_RANK_TWO = {
    ("language", "matmul"),
    ("language", "transpose"),
    ("language", "load_transpose2d"),
    ("isa", L.nc_matmul.__name__),
    ("isa", L.nc_transpose.__name__),
}
_REDUCTIONS = {"sum", "prod", "mean", "max", "min", "all"}
_RANGES = {"range", "affine_range", "sequential_range", "static_range"}
_OPERANDS = ("x", "y", "src", "data", "data1", "data2", "value")


class _Bindings(cst.CSTVisitor):
    """Every assignment of a function body, in source order: (targets, value)."""

    def __init__(self) -> None:
        self.found: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = []

    def visit_Assign(self, n: cst.Assign) -> None:
        for t in n.targets:
            self.found.append((t.target, n.value))

    def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
        # `qk: nt.tensor[m, n] = nl.matmul(...)`: the annotation's dims are the tile's
        # (the value's own rank first; a one-element annotation may name a shape tuple, not one dim)
        annotation = n.annotation.annotation
        if n.value is None:
            return
        if isinstance(annotation, cst.Subscript) and code(annotation.value).endswith("tensor") and len(annotation.slice) > 1:
            dims = cst.Arg(cst.Integer(str(len(annotation.slice))))
            self.found.append((n.target, cst.Call(func=cst.Name("_rank"), args=[dims, cst.Arg(n.value)])))
        else:
            self.found.append((n.target, n.value))

    def visit_AugAssign(self, n: cst.AugAssign) -> None:
        self.found.append((n.target, None))

    def visit_For(self, n: cst.For) -> None:
        loop = isinstance(n.iter, cst.Call) and code(n.iter.func).split(".")[-1] in _RANGES
        self.found.append((n.target, cst.Integer("0") if loop else None))  # a loop over a range: a number each time

    def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
        self.found.append((n.target, None))

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False  # a nested function's names are its own


class TileRanks:
    """The tiles of a function whose every binding shows the same rank (`get(name)`), and the rank of an expression
    over them (`of(node)`). `target_of(call.func)` is ("language", "load") for nl.load."""

    def __init__(self, fn: cst.FunctionDef | None = None, target_of: Target = lambda node: (None, None)):
        self.target_of = target_of
        params = [] if fn is None else [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
        self.params = {p.name.value for p in params}
        self.tiles: dict[str, int] = {}
        self.grids: dict[str, int] = {}  # index variables (nl.arange / nl.mgrid and sums of them) -> grid rank
        self.plain: set[str] = set()  # names bound to something this does not follow
        self.scalars: set[str] = set()  # names every binding of which is a number (loop variables, sizes)
        self.not_scalar: set[str] = set()
        self.conflict: set[str] = set()
        if fn is None:
            return
        collect = _Bindings()
        fn.body.visit(collect)
        for target, value in collect.found:
            self._bind(target, value)
        for name in self.conflict:
            self.tiles.pop(name, None)
            self.grids.pop(name, None)

    def get(self, name: str) -> int | None:
        return self._known(name)

    def of(self, node: cst.BaseExpression) -> int | None:
        return self._rank(node)

    def add(self, name: str, rank: int) -> None:
        """A name the migration binds itself (a hoisted operand)."""
        self.tiles[name] = rank

    # ------------------------------------------------------------ bindings
    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Tuple | cst.List):
            names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
            if value is not None and self._is(value, "mgrid", subscript=True):
                rank = len(value.slice)
                for name in names:
                    if name is not None:
                        self._record(self.grids, name, rank)
                return
            if isinstance(value, cst.Attribute) and value.attr.value == "shape" and isinstance(value.value, cst.Name):
                if value.value.value in self.params and len(names) > 0:
                    self._record(self.tiles, value.value.value, len(names))  # `h, w = x.shape`: x is 2-d
            shape = isinstance(value, cst.Attribute) and value.attr.value == "shape"
            for name in names:
                if name is not None:
                    self._forget(name, scalar=shape)
            return
        if not isinstance(target, cst.Name):
            return  # t[...] = ...: not a binding of t
        name = target.value
        grid = None if value is None else self._grid_rank(value)
        if grid is not None:
            self._record(self.grids, name, grid)
            return
        rank = None if value is None else self._rank(value)
        if rank is None:
            self._forget(name, scalar=value is not None and self._is_scalar(value))
        else:
            self._record(self.tiles, name, rank)

    def _record(self, table: dict[str, int], name: str, rank: int) -> None:
        other = self.grids if table is self.tiles else self.tiles
        if name in self.plain or name in other or table.get(name, rank) != rank:
            self.conflict.add(name)
        table[name] = rank

    def _forget(self, name: str, scalar: bool = False) -> None:
        if name in self.tiles or name in self.grids:
            self.conflict.add(name)
        self.plain.add(name)
        (self.scalars if scalar else self.not_scalar).add(name)

    def _scalar(self, name: str) -> bool:
        return name in self.scalars and name not in self.not_scalar

    def _is_scalar(self, value: cst.BaseExpression) -> bool:
        """A number: a literal, a size (`nl.tile_size.pmax`, `x.shape[0]`), a loop variable, arithmetic of them."""
        if _is_number(value):
            return True
        if isinstance(value, cst.Name):
            return self._scalar(value.value)
        if isinstance(value, cst.BinaryOperation):
            return self._is_scalar(value.left) and self._is_scalar(value.right)
        if isinstance(value, cst.UnaryOperation):
            return self._is_scalar(value.expression)
        if isinstance(value, cst.Attribute):
            return "tile_size" in code(value)
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute):
            return value.value.attr.value == "shape"
        return False

    # ------------------------------------------------------------ index variables
    def _is(self, node: cst.BaseExpression, name: str, subscript: bool = False) -> bool:
        if subscript:
            return isinstance(node, cst.Subscript) and self.target_of(node.value) == ("language", name)
        return isinstance(node, cst.Call) and self.target_of(node.func) == ("language", name)

    def _grid_rank(self, value: cst.BaseExpression) -> int | None:
        """The grid rank of an index expression: `nl.arange(n)[None, :]` (2), a sum / product of index variables and
        integers, else None."""
        if isinstance(value, cst.Subscript) and self._is(value.value, "arange"):
            return len(value.slice)
        if isinstance(value, cst.Call) and self._is(value, "arange"):
            return 1
        ranks = {self.grids[n] for n in _names(value) if n in self.grids and n not in self.conflict}
        if len(ranks) == 1 and isinstance(value, cst.BinaryOperation | cst.Name | cst.UnaryOperation):
            return ranks.pop()
        return None

    # ------------------------------------------------------------ tiles
    def _rank(self, value: cst.BaseExpression) -> int | None:
        if isinstance(value, cst.Name):
            return self._known(value.value)
        if isinstance(value, cst.Subscript):
            return self._subscript_rank(value)
        if not isinstance(value, cst.Call):
            return None
        func = value.func
        if isinstance(func, cst.Name) and func.value == "_rank":  # an annotated binding (_Bindings)
            own = self._rank(value.args[1].value)
            return own if own is not None else int(value.args[0].value.value)
        if isinstance(func, cst.Attribute) and func.attr.value == "reshape" and value.args:
            shape = value.args[0].value if len(value.args) == 1 else None
            return len(shape.elements) if isinstance(shape, cst.Tuple | cst.List) else None
        kind, name = self.target_of(func)
        if (kind, name) in _RANK_TWO:
            return 2
        if kind == "language" and name in _ALLOCATIONS:
            return self._shape_rank(arg_value(value, 0, "shape"))
        if kind == "language" and name == "broadcast_to":
            return self._shape_rank(arg_value(value, 1, "shape"))
        if kind == "language" and name in _LIKE:
            return self._rank(arg_value(value, 0, "a") or cst.Name("_"))
        if kind == "language" and name in _REDUCTIONS:
            return self._reduced_rank(value)
        if (kind == "language" and name in _SAME_RANK_LANGUAGE) or (kind == "isa" and name in _SAME_RANK_ISA):
            return self._operand_rank(value)
        return None

    def _known(self, name: str) -> int | None:
        return None if name in self.conflict else self.tiles.get(name)

    def _shape_rank(self, shape: cst.BaseExpression | None) -> int | None:
        if isinstance(shape, cst.Tuple | cst.List):
            par = [i for i, e in enumerate(shape.elements) if "par_dim" in code(e.value)]
            return len(shape.elements) if par in ([], [0]) else None  # block dims fold (the accesses change)
        if isinstance(shape, cst.Attribute) and shape.attr.value == "shape" and isinstance(shape.value, cst.Name):
            return self._known(shape.value.value)
        return None

    def _operand_rank(self, call: cst.Call) -> int | None:
        """The one rank of a call's tile operands (numbers are scalars; an operand of unknown rank: None)."""
        ranks = set()
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword is not None and keyword not in _OPERANDS:
                continue
            if self._is_scalar(arg.value):
                continue  # a scalar operand
            rank = self._rank(arg.value)
            if rank is None:
                return None
            ranks.add(rank)
        return ranks.pop() if len(ranks) == 1 else None

    def _reduced_rank(self, call: cst.Call) -> int | None:
        rank = self._rank(arg_value(call, 0, "x") or cst.Name("_"))
        axis = arg_value(call, 1, "axis")
        if rank is None or axis is None:
            return None
        keep = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "keepdims"), None)
        if keep is not None:
            return rank if code(keep) == "True" else (None if code(keep) != "False" else max(rank - _count(axis), 2))
        n = _count(axis)
        return None if n is None else max(rank - n, 2)

    def _subscript_rank(self, sub: cst.Subscript) -> int | None:
        base = self._rank(sub.value) if isinstance(sub.value, cst.Name) else None
        if isinstance(sub.value, cst.Name) and sub.value.value in self.params and base is None:
            base = None
        elif not isinstance(sub.value, cst.Name):
            return None
        elements = list(sub.slice)
        grid_ranks, kept, ellipsis = set(), 0, False
        for e in elements:
            part = e.slice
            if isinstance(part, cst.Slice):
                kept += 1
                continue
            value = part.value
            if isinstance(value, cst.Ellipsis):
                ellipsis = True
                continue
            if isinstance(value, cst.Call) and self._is(value, "ds"):
                kept += 1
                continue
            names = _names(value)
            if any(n in self.conflict or n in self.params or n in self.tiles for n in names):
                return None  # an index this cannot place (a parameter may be an index variable)
            grid = {self.grids[n] for n in names if n in self.grids}
            if grid:
                grid_ranks |= grid
            elif not self._is_scalar(value):
                return None  # not known to be an integer (a global, a helper's result, a tile)
        if grid_ranks:
            return grid_ranks.pop() if len(grid_ranks) == 1 and kept == 0 and not ellipsis else None
        missing = None if base is None else base - (len(elements) - (1 if ellipsis else 0))
        if missing is None or missing < 0:
            return None
        rank = kept + missing
        return rank if rank >= 2 else None  # a 1-d result: its shape differs between the legacy API and this


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        return _is_number(node.expression)
    return isinstance(node, cst.Integer | cst.Float)


def _count(axis: cst.BaseExpression) -> int | None:
    if isinstance(axis, cst.Tuple | cst.List):
        return len(axis.elements)
    return 1 if literal_int(axis) is not None else None


def _names(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            found.add(n.value)

        def visit_Attribute(self_, n: cst.Attribute) -> bool:  # noqa: N805
            found.add(code(n))  # `a.b` is one name (never an index variable here)
            return False

    node.visit(Collect())
    return found
