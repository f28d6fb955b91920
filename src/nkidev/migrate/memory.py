"""Which tiles of a legacy kernel are PSUM tiles under the current API, as far as the function's own bindings tell.

The legacy nl.store took a PSUM tile and copied it to SBUF itself ("If the tile is in PSUM, an extra copy will be
performed to move the tile to SBUF first", the neuronxcc nki.language.store page); the current store and
nisa.dma_copy move data between SBUF and HBM only ("value - an SBUF tile",
https://awsdocs-neuron.readthedocs-hosted.com/general/nki/api/generated/nki.language.store.html; "between memory
locations (SBUF or HBM)", https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.dma_copy.html).
So a migrated store of a PSUM value needs that copy written out, and the migration needs to know which values are
PSUM tiles: `Program(module, hooks).memories(fn).of(expr)` answers that for an expression in a function.

A name is PSUM when every binding of it in the function is (an allocation with buffer=nl.psum, a TensorE result:
nisa.nc_matmul, nisa.nc_transpose off the Vector Engine, nl.matmul; a view or alias of a PSUM tile); OTHER when none
is; MIXED when some are; UNKNOWN when a binding is one this reading cannot follow (a helper's result, a helper's
parameter no call in the file passes, a loop or unpacking target), with the reason. A helper of the file is followed: its result is what its
return values are with its parameters bound to the call's arguments, and a parameter of it is what every call of it in
the file passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from nkidev.migrate.common import code, kwarg

PSUM, OTHER, MIXED, UNKNOWN = "psum", "other", "mixed", "unknown"

# tile methods whose result is a view of the same memory
_VIEWS = ("ap", "reshape", "view", "bitcast", "expand_dims")
_ALLOCATIONS = ("ndarray", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like")
_TENSOR_ENGINE = ("matmul",)  # nl ops whose current result is a PSUM tile (nl.transpose is migrated to an SBUF copy)


@dataclass(frozen=True)
class Where:
    kind: str  # PSUM | OTHER | MIXED | UNKNOWN
    why: str = ""  # for MIXED / UNKNOWN: the binding that makes it so


def combine(wheres: list[Where]) -> Where:
    """One answer for several bindings (or the two arms of an `a if c else b`, or the calls of a helper)."""
    for w in wheres:
        if w.kind == UNKNOWN:
            return w
    kinds = {w.kind for w in wheres}
    if kinds <= {OTHER}:
        return Where(OTHER)
    if kinds == {PSUM}:
        return Where(PSUM)
    return next((w for w in wheres if w.kind == MIXED), None) or Where(MIXED, "a PSUM tile on some paths, not on others")


@dataclass
class Hooks:
    """What the reading needs from the migration rules: which NKI function a call is, whether a legacy ISA call
    returns PSUM, whether a buffer= value names PSUM, whether a function is a kernel (its parameters are HBM
    tensors), and a node's source line."""

    target_of: Callable[[cst.BaseExpression], tuple[str | None, str | None]]  # the func of a call -> ("isa", "nc_matmul")
    isa_in_psum: Callable[[cst.Call, str], bool]
    psum_buffer: Callable[[cst.BaseExpression], bool]
    is_kernel: Callable[[cst.FunctionDef], bool]
    line: Callable[[cst.CSTNode], int]


@dataclass(frozen=True)
class _Param:
    """A helper's parameter: what the file's calls of the helper pass."""

    fn: cst.FunctionDef
    index: int
    name: str


class Program:
    """A file's functions: who encloses whom, who calls whom, and each one's bindings (computed once)."""

    def __init__(self, module: cst.Module, hooks: Hooks):
        self.hooks = hooks
        self.parent: dict[int, cst.FunctionDef | None] = {}
        self.by_name: dict[str, list[cst.FunctionDef]] = {}
        self.sites: dict[str, list[tuple[cst.FunctionDef | None, cst.Call]]] = {}  # helper name -> (caller, call)
        self.cache: dict[int, Memories] = {}
        self.following: set[tuple] = set()  # the helper calls / parameters being followed (recursion stops there)
        stack: list[cst.FunctionDef | None] = [None]
        program = self

        class Index(cst.CSTVisitor):
            def visit_FunctionDef(self_, n: cst.FunctionDef) -> None:  # noqa: N805
                program.parent[id(n)] = stack[-1]
                program.by_name.setdefault(n.name.value, []).append(n)
                stack.append(n)

            def leave_FunctionDef(self_, n: cst.FunctionDef) -> None:  # noqa: N805
                stack.pop()

            def visit_Call(self_, n: cst.Call) -> None:  # noqa: N805
                if isinstance(n.func, cst.Name):
                    program.sites.setdefault(n.func.value, []).append((stack[-1], n))

        module.visit(Index())

    def helper(self, name: str) -> cst.FunctionDef | None:
        """The file's one function of that name (a name defined twice: which one runs is not known here)."""
        defs = self.by_name.get(name, [])
        return defs[0] if len(defs) == 1 else None

    def memories(self, fn: cst.FunctionDef) -> Memories:
        if id(fn) not in self.cache:
            parent = self.parent.get(id(fn))
            self.cache[id(fn)] = _scan(fn, self, None if parent is None else self.memories(parent))
        return self.cache[id(fn)]

    def parameter(self, p: _Param) -> Where:
        """What every call of the helper in the file passes for the parameter (its default where a call does not)."""
        key = ("param", id(p.fn), p.index)
        sites = [] if self.helper(p.fn.name.value) is not p.fn else self.sites.get(p.fn.name.value, [])
        why = f"{p.name} is a parameter of {p.fn.name.value}, which no call in this file shows"
        if not sites or key in self.following:
            return Where(UNKNOWN, why)
        self.following.add(key)
        try:
            found = []
            for caller, call in sites:
                arg = _argument(p.fn, call, p.index)
                if arg is None:
                    found.append(Where(UNKNOWN, why))
                elif caller is None:
                    found.append(Where(OTHER))  # a module-level call: no tile is alive there
                else:
                    found.append(self.memories(caller).of(arg))
            where = combine(found)
            if where.kind == MIXED:
                where = Where(MIXED, f"the calls of {p.fn.name.value} pass {p.name} a PSUM tile and other tiles")
            return where
        finally:
            self.following.discard(key)

    def returned(self, helper: cst.FunctionDef, call: cst.Call, caller: Memories) -> Where:
        """What a call of a helper of the file returns: its return values read with its parameters bound to the
        call's arguments (`shadow(res[i])` returning `res[0:128, 0:128]` is res's memory)."""
        key = ("call", id(helper))
        why = f"{code(call.func)}(...) at line {self.hooks.line(call)} may return one"
        if key in self.following:
            return Where(UNKNOWN, why)
        self.following.add(key)
        try:
            inner = _scan(helper, self, self.memories(helper).outer)
            for i, p in enumerate(_params(helper)):
                arg = _argument(helper, call, i)
                inner.bindings[p.name.value] = [caller.of(arg) if arg is not None else Where(UNKNOWN, why)]
            return combine([inner.of(r.value) for r in _returns(helper) if r.value is not None])
        finally:
            self.following.discard(key)


@dataclass
class Memories:
    program: Program
    bindings: dict[str, list] = field(default_factory=dict)  # name -> each value bound to it (an expression, a Where, a _Param)
    outer: Memories | None = None  # the enclosing function's (a nested function reads its tiles)
    resolving: set[str] = field(default_factory=set)

    def name(self, name: str) -> Where:
        if name not in self.bindings:
            # not bound here: the enclosing function's tile, or a module-level value (tiles live in kernels)
            return self.outer.name(name) if self.outer is not None else Where(OTHER)
        if name in self.resolving:
            return Where(OTHER)  # `t = t[...]`: the other bindings decide
        self.resolving.add(name)
        try:
            return combine([self._binding(value) for value in self.bindings[name]])
        finally:
            self.resolving.discard(name)

    def _binding(self, value) -> Where:
        if isinstance(value, Where):
            return value
        if isinstance(value, _Param):
            return self.program.parameter(value)
        return self.of(value)

    def of(self, value: cst.BaseExpression) -> Where:
        """Where the value of an expression lives under the current API."""
        if isinstance(value, cst.Name):
            return self.name(value.value)
        if isinstance(value, cst.Subscript):
            return self.of(value.value)
        if isinstance(value, cst.IfExp):
            return combine([self.of(value.body), self.of(value.orelse)])
        if not isinstance(value, cst.Call):
            return Where(OTHER)  # a number, an arithmetic result (an SBUF tile), a shape, ...
        hooks = self.program.hooks
        kind, fn = hooks.target_of(value.func)
        if kind is None and isinstance(value.func, cst.Attribute) and value.func.attr.value in _VIEWS:
            return self.of(value.func.value)  # t.ap(...), t.reshape(...): a view of t's memory
        if kind == "language" and fn in _ALLOCATIONS:
            buffer = kwarg(value, "buffer")
            return Where(PSUM if buffer is not None and hooks.psum_buffer(buffer.value) else OTHER)
        if kind == "language":
            return Where(PSUM if fn in _TENSOR_ENGINE else OTHER)
        if kind == "isa":
            return Where(PSUM if hooks.isa_in_psum(value, fn) else OTHER)
        if kind is not None:
            return Where(OTHER)
        helper = self.program.helper(value.func.value) if isinstance(value.func, cst.Name) else None
        if helper is not None:
            return self.program.returned(helper, value, self)
        return Where(UNKNOWN, f"{code(value.func)}(...) at line {hooks.line(value)} may return one")


def _scan(fn: cst.FunctionDef, program: Program, outer: Memories | None) -> Memories:
    """The bindings of a function's names (nested functions have their own). A kernel's parameters are HBM tensors;
    a helper's are what its calls pass."""
    hooks = program.hooks
    found = Memories(program, outer=outer)
    kernel = hooks.is_kernel(fn)
    for i, p in enumerate(_params(fn)):
        found.bindings[p.name.value] = [Where(OTHER) if kernel else _Param(fn, i, p.name.value)]

    def bind(name: str, value) -> None:
        found.bindings.setdefault(name, []).append(value)

    def unknown(target: cst.BaseExpression, what: str, node: cst.CSTNode) -> None:
        for n in _names(target):
            bind(n, Where(UNKNOWN, f"{n} is {what} at line {hooks.line(node)}"))

    class Bindings(cst.CSTVisitor):
        def visit_FunctionDef(self_, n: cst.FunctionDef) -> bool:  # noqa: N805
            bind(n.name.value, Where(OTHER))
            return False  # its own scan

        def visit_Lambda(self_, n: cst.Lambda) -> bool:  # noqa: N805
            return False

        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    bind(t.target.value, n.value)
                else:
                    unknown(t.target, "an unpacking target", n)

        def visit_AnnAssign(self_, n: cst.AnnAssign) -> None:  # noqa: N805
            if isinstance(n.target, cst.Name) and n.value is not None:
                bind(n.target.value, n.value)

        def visit_For(self_, n: cst.For) -> None:  # noqa: N805
            unknown(n.target, "a loop target", n)

        def visit_NamedExpr(self_, n: cst.NamedExpr) -> None:  # noqa: N805
            if isinstance(n.target, cst.Name):
                bind(n.target.value, n.value)

        def visit_WithItem(self_, n: cst.WithItem) -> None:  # noqa: N805
            if n.asname is not None:
                unknown(n.asname.name, "bound by a with statement", n)

        def visit_CompFor(self_, n: cst.CompFor) -> None:  # noqa: N805
            unknown(n.target, "a comprehension target", n)

    fn.body.visit(Bindings())
    return found


def _params(fn: cst.FunctionDef) -> list[cst.Param]:
    return [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]


def _argument(fn: cst.FunctionDef, call: cst.Call, index: int) -> cst.BaseExpression | None:
    """The value a call passes for fn's index-th parameter: by keyword, by position (keyword-only ones by keyword
    only), else the parameter's default; None when the call unpacks (*args, **kw) or passes nothing for it."""
    if any(a.star for a in call.args):
        return None
    p = _params(fn)[index]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if p.name.value in keywords:
        return keywords[p.name.value]
    positional = [a.value for a in call.args if a.keyword is None]
    by_position = index < len(fn.params.posonly_params) + len(fn.params.params)
    if by_position and index < len(positional):
        return positional[index]
    return p.default


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        return [n for e in target.elements for n in _names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _names(target.value)
    return []  # t[...] = ..., t.attr = ...: writes into a tile, binds no name


def _returns(fn: cst.FunctionDef) -> list[cst.Return]:
    """The return statements of a function (not of the functions nested in it)."""
    found: list[cst.Return] = []

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self_, n: cst.FunctionDef) -> bool:  # noqa: N805
            return False

        def visit_Return(self_, n: cst.Return) -> None:  # noqa: N805
            found.append(n)

    fn.body.visit(Returns())
    return found
