"""Legacy block dimensions (`nl.ndarray((nb, nl.par_dim(128), 512))`) folded into the free dims: `(128, nb, 512)`.

The legacy API allowed dims in front of the partition dim, "block dims": a tensor of nb (P, F) tiles. They are gone
from the current API, and the block dimension migration guide gives two rewrites
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/nki_block_dimension_migration_guide.html):
move the block dims into the free dims (`(nb, par_dim(P), F)` -> `(P, nb, F)`, every access `t[b, p, f]` ->
`t[p, b, f]`), which keeps every block alive at once and so gives the same values whatever the kernel does with
them; or allocate one (P, F) tile inside the loop over blocks, which is cheaper on SBUF but exact only when each
block lives within one iteration. This module does the first, always-exact one, and only when every use of the
tensor is an access whose leading subscripts are plain block numbers (ints, loop variables): a tensor passed
whole to a call, returned, or indexed on its block dims by a slice or an index expression stays a manual step.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from nkidev.migrate.common import code


@dataclass(frozen=True)
class BlockTensor:
    """A block tensor: `blocks` block dims in front of the partition dim."""

    blocks: int
    line: int


@dataclass(frozen=True)
class Blocked:
    """What a scan of one function found: the tensors to fold (by name), their allocation calls (by id), and the
    tensors that must stay manual with the line and reason of the first use that prevents the fold."""

    fold: dict[str, BlockTensor]
    calls: set[int]
    manual: dict[int, tuple[int, str]]  # id(allocation call) -> (line of the use, why)


def par_position(call: cst.Call, is_par_dim) -> int | None:
    """Where nl.par_dim sits in an allocation's shape tuple (None: no par_dim, or a shape that is not a tuple)."""
    if not call.args:
        return None
    shape = call.args[0].value
    if not isinstance(shape, cst.Tuple | cst.List):
        return None
    places = [i for i, e in enumerate(shape.elements) if isinstance(e.value, cst.Call) and is_par_dim(e.value)]
    return places[0] if len(places) == 1 else None


def folded_shape(call: cst.Call, blocks: int) -> cst.Call:
    """`(nb, P, F...)` (par_dim already unwrapped) -> `(P, nb, F...)`."""
    shape = call.args[0].value
    elems = list(shape.elements)
    last = elems[-1].comma
    order = [elems[blocks], *elems[:blocks], *elems[blocks + 1 :]]
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    order = [e.with_changes(comma=comma) for e in order[:-1]] + [order[-1].with_changes(comma=last)]
    args = list(call.args)
    args[0] = args[0].with_changes(value=shape.with_changes(elements=order))
    return call.with_changes(args=args)


def unblock(node: cst.Subscript, blocks: int) -> cst.Subscript:
    """`t[b, p, f]` -> `t[p, b, f]`; `t[b]` -> `t[:, b]` and `t[b, ...]` -> `t[:, b, ...]` (the whole partition
    dim, as the legacy tile had)."""
    elems = list(node.slice)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    rest = elems[blocks:]
    if not rest or (isinstance(rest[0].slice, cst.Index) and isinstance(rest[0].slice.value, cst.Ellipsis)):
        partition = cst.SubscriptElement(slice=cst.Slice(lower=None, upper=None))
        order = [partition, *elems]  # `t[b, ...]`: the ellipsis still stands for the free dims
    else:
        order = [elems[blocks], *elems[:blocks], *elems[blocks + 1 :]]
    order = [e.with_changes(comma=comma) for e in order[:-1]] + [order[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
    return node.with_changes(slice=order)


def scan(fn: cst.FunctionDef, is_allocation, is_par_dim, is_index_call, line_of) -> Blocked:
    """The block tensors of a function and whether each can be folded (see the module doc)."""
    allocations: dict[str, list[tuple[cst.Call, int, int]]] = {}  # name -> (allocation call, blocks, line) each
    assigned: dict[str, int] = {}

    class Allocations(cst.CSTVisitor):
        def visit_AssignTarget(self_, n: cst.AssignTarget) -> None:  # noqa: N805
            for name in _names(n.target):
                assigned[name] = assigned.get(name, 0) + 1

        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            target, value = n.targets[0].target, n.value
            if len(n.targets) == 1 and isinstance(target, cst.Name) and isinstance(value, cst.Call) and is_allocation(value):
                place = par_position(value, is_par_dim)
                if place:
                    allocations.setdefault(target.value, []).append((value, place, line_of(n)))

    fn.body.visit(Allocations())
    if not allocations:
        return Blocked({}, set(), {})
    candidates = {name: found[0][1:] for name, found in allocations.items()}  # name -> (blocks, line of the first)
    index_names = _index_names(fn, is_index_call)
    problems: dict[str, tuple[int, str]] = {}
    for name, found in allocations.items():
        # allocated again (in each branch of an if, in each iteration) is fine while every assignment is such an
        # allocation with the same block dims: the accesses are the same whichever one ran
        if assigned[name] > len(found) or len({blocks for _, blocks, _ in found}) > 1:
            problems[name] = (found[0][2], f"{name} is also assigned something else than one block allocation")
    for p in fn.params.params:
        if p.name.value in candidates:
            problems.setdefault(p.name.value, (candidates[p.name.value][1], f"{p.name.value} is also a parameter"))

    ok: set[int] = set()

    class Uses(cst.CSTVisitor):
        def __init__(self_):  # noqa: N805
            super().__init__()
            self_.depth = 0  # inside a nested function or lambda

        def visit_FunctionDef(self_, n) -> None:  # noqa: N805
            self_.depth += 1

        def leave_FunctionDef(self_, n) -> None:  # noqa: N805
            self_.depth -= 1

        def visit_Lambda(self_, n) -> None:  # noqa: N805
            self_.depth += 1

        def leave_Lambda(self_, n) -> None:  # noqa: N805
            self_.depth -= 1

        def visit_AssignTarget(self_, n: cst.AssignTarget) -> None:  # noqa: N805
            if isinstance(n.target, cst.Name):
                ok.add(id(n.target))  # the allocation itself (a second assignment is a problem already)

        def visit_Subscript(self_, n: cst.Subscript) -> None:  # noqa: N805
            if isinstance(n.value, cst.Name) and n.value.value in candidates:
                why = _block_access_problem(n, candidates[n.value.value][0], index_names, is_index_call)
                if why is None and self_.depth == 0:
                    ok.add(id(n.value))
                elif n.value.value not in problems:
                    problems[n.value.value] = (line_of(n), why or "it is used inside a nested function")

        def visit_Attribute(self_, n: cst.Attribute) -> None:  # noqa: N805
            if isinstance(n.value, cst.Name) and n.value.value in candidates and n.attr.value == "dtype":
                ok.add(id(n.value))  # the dtype is the same folded

        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            if n.value in candidates and id(n) not in ok and n.value not in problems:
                problems[n.value] = (line_of(n), f"{n.value} is used whole here (not as one block)")

    fn.body.visit(Uses())
    fold = {name: BlockTensor(blocks, line) for name, (blocks, line) in candidates.items() if name not in problems}
    calls = {id(call) for name in fold for call, _, _ in allocations[name]}
    manual = {id(call): problems[name] for name in problems if name in allocations for call, _, _ in allocations[name]}
    return Blocked(fold, calls, manual)


def _block_access_problem(node: cst.Subscript, blocks: int, index_names: set[str], is_index_call) -> str | None:
    """Why `t[...]` is not an access of one block by plain block numbers (None: it is)."""
    elems = node.slice
    if len(elems) < blocks:
        return f"{code(node)} selects several blocks at once"
    for e in elems[:blocks]:
        s = e.slice
        if not isinstance(s, cst.Index) or isinstance(s.value, cst.Ellipsis) or s.star is not None:
            return f"{code(node)} slices the block dims"
        if _mentions_index(s.value, index_names, is_index_call):
            return f"{code(node)} indexes the block dims with an index expression"
    return None


def _mentions_index(node: cst.CSTNode, index_names: set[str], is_index_call) -> bool:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            if n.value in index_names:
                found.append(n)

        def visit_Call(self_, n: cst.Call) -> None:  # noqa: N805
            if is_index_call(n):
                found.append(n)

        def visit_Subscript(self_, n: cst.Subscript) -> None:  # noqa: N805
            if is_index_call(n.value):
                found.append(n)

    node.visit(Finder())
    return bool(found)


def _index_names(fn: cst.FunctionDef, is_index_call) -> set[str]:
    """Names assigned (anywhere in the function) from nl.arange / nl.mgrid or from such names: a fixpoint."""
    pairs: list[tuple[list[str], cst.BaseExpression]] = []

    class Collect(cst.CSTVisitor):
        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            for t in n.targets:
                pairs.append((_names(t.target), n.value))

    fn.body.visit(Collect())
    names: set[str] = set()
    while True:
        grown = {name for targets, value in pairs if _mentions_index(value, names, is_index_call) for name in targets}
        if grown <= names:
            return names
        names |= grown


def _names(t) -> list[str]:
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, cst.Tuple | cst.List):
        return [n for e in t.elements for n in _names(e.value)]
    return []
