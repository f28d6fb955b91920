"""Legacy block dimensions (`nl.ndarray((nb, nl.par_dim(128), 512))`) folded into the free dims: `(128, nb, 512)`.

The legacy API allowed dims in front of the partition dim, "block dims": a tensor of nb (P, F) tiles. They are gone
from the current API, and the block dimension migration guide gives two rewrites
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/nki_block_dimension_migration_guide.html):
move the block dims into the free dims (`(nb, par_dim(P), F)` -> `(P, nb, F)`, every access `t[b, p, f]` ->
`t[p, b, f]`), which keeps every block alive at once and so gives the same values whatever the kernel does with
them; or allocate one (P, F) tile inside the loop over blocks, which is cheaper on SBUF but exact only when each
block lives within one iteration. This module does the first, always-exact one, and only when every use of the
tensor is an access whose leading subscripts are plain block numbers (ints, loop variables): a tensor returned, or
indexed on its block dims by a slice or an index expression stays a manual step. Its shape read by a literal dim
(`t.shape[1]`) or unpacked into one name per dim (`nb, p, f = t.shape`) follows the dims. A nested function that
reads the tensor (a closure, with no parameter of that name) accesses it folded too. A tensor a legacy direct
allocator placed (`buffer=nki.compiler.psum.mod_alloc(...)`) folds the same way: the legacy front end gives each
block storage of its own, as the folded tensor does (the allocator goes; its placement, blocks sharing memory, is
not kept).

A tensor passed whole to a helper function of the same file folds with the helper's parameter (scan_module): the
parameter is folded in the helper's body too, which is exact when every call of the helper passes, at that
parameter, a block tensor of the same block dims and rank that folds, and the helper only accesses it by plain
block numbers (or passes it on to another such helper). The helper must be a module-level function (plain, or a
sub-kernel: @nki.jit(mode='trace')) that the file only ever calls by name (not passed around or rebound), so every
call in the file is seen. A call from another file that imports the helper is not: that file's block tensor passed
to it is a manual step there, which now has to fold too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from nkidev.migrate.common import code, literal_int


@dataclass(frozen=True)
class BlockTensor:
    """A block tensor: `blocks` block dims in front of the partition dim."""

    blocks: int
    line: int
    rank: int = 0  # the number of dims of the allocation's shape


@dataclass(frozen=True)
class Blocked:
    """What a scan of one function found: the tensors to fold (by name), their allocation calls (by id), and the
    tensors that must stay manual with the line and reason of the first use that prevents the fold."""

    fold: dict[str, BlockTensor]
    calls: set[int]
    manual: dict[int, tuple[int, str]]  # id(allocation call) -> (line of the use, why)
    params: dict[str, BlockTensor] = field(default_factory=dict)  # the folded parameters (a subset of fold)
    calls_to_helpers: list[CallSite] = field(default_factory=list)
    problems: dict[str, tuple[int, str]] = field(default_factory=dict)  # every candidate not folded -> (line, why)


@dataclass(frozen=True)
class CallSite:
    """A call of a helper function: what each of the helper's parameters receives there -- a block tensor of the
    caller (its name and BlockTensor), a parameter of the caller that is not one (yet: its name and None), or None
    for anything else (a parameter left out is absent)."""

    helper: str
    line: int
    bound: dict[str, tuple[str, BlockTensor | None] | None]


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


def _new_dim(old: int, tensor: BlockTensor) -> int | None:
    """Where dim `old` of a block tensor is once folded ((b..., P, F...) -> (P, b..., F...)); None: unknown."""
    if old < 0:
        if tensor.rank <= 0 or -old > tensor.rank:
            return None
        if tensor.rank + old > tensor.blocks:
            return old  # a free dim counted from the end stays where it is
        old += tensor.rank
    if tensor.rank and old >= tensor.rank:
        return None
    return old + 1 if old < tensor.blocks else 0 if old == tensor.blocks else old


def shape_of(node: cst.BaseExpression, fold: dict[str, BlockTensor]) -> tuple[str, BlockTensor] | None:
    """(name, tensor) when node is `t.shape` of a block tensor t."""
    if isinstance(node, cst.Attribute) and node.attr.value == "shape" and isinstance(node.value, cst.Name) and node.value.value in fold:
        return node.value.value, fold[node.value.value]
    return None


def folded_shape_index(node: cst.Subscript, fold: dict[str, BlockTensor]) -> cst.Subscript | None:
    """`t.shape[k]` (k a literal) of a block tensor with k where that dim is once folded; None: not that form."""
    found = shape_of(node.value, fold)
    if found is None or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    old = literal_int(node.slice[0].slice.value)
    new = _new_dim(old, found[1]) if old is not None else None
    if new is None:
        return None
    return node.with_changes(slice=[node.slice[0].with_changes(slice=cst.Index(value=cst.parse_expression(str(new))))])


def folded_shape_unpack(node: cst.Assign, fold: dict[str, BlockTensor]) -> cst.Assign | None:
    """`nb, p, f = t.shape` of a block tensor (one name per dim) with its names in the folded order:
    `p, nb, f = t.shape`; None: not that form."""
    found = shape_of(node.value, fold)
    if found is None or len(node.targets) != 1:
        return None
    target, tensor = node.targets[0].target, found[1]
    if not isinstance(target, cst.Tuple | cst.List) or len(target.elements) != tensor.rank:
        return None
    elems = list(target.elements)
    if any(isinstance(e, cst.StarredElement) or not isinstance(e.value, cst.Name) for e in elems):
        return None
    values = [e.value for e in elems]
    order = [values[tensor.blocks], *values[: tensor.blocks], *values[tensor.blocks + 1 :]]
    new_elems = [e.with_changes(value=v) for e, v in zip(elems, order)]
    return node.with_changes(targets=[node.targets[0].with_changes(target=target.with_changes(elements=new_elems))])


def scan(
    fn: cst.FunctionDef,
    is_allocation,
    is_par_dim,
    is_index_call,
    line_of,
    helpers: dict[str, cst.FunctionDef] | None = None,
    param_blocks: dict[str, BlockTensor] | None = None,
    refused: dict[tuple[str, str], str] | None = None,
) -> Blocked:
    """The block tensors of a function and whether each can be folded (see the module doc). `param_blocks` are the
    parameters that receive block tensors (scan_module decides), `helpers` the functions a tensor may be passed
    to whole, and `refused` the (helper, parameter)s that cannot take a folded tensor, with why."""
    helpers, param_blocks, refused = helpers or {}, param_blocks or {}, refused or {}
    allocations: dict[str, list[tuple[cst.Call, int, int, int]]] = {}  # name -> (allocation call, blocks, line, rank) each
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
                    rank = len(value.args[0].value.elements)
                    allocations.setdefault(target.value, []).append((value, place, line_of(n), rank))

    fn.body.visit(Allocations())
    if not allocations and not param_blocks and not helpers:
        return Blocked({}, set(), {})
    # with helpers, even a function without block tensors is scanned: its calls of the helpers count (a plain tile
    # passed to a helper keeps the helper's parameter from folding)
    # name -> BlockTensor (blocks, line of the first allocation, rank)
    candidates = {name: BlockTensor(found[0][1], found[0][2], found[0][3]) for name, found in allocations.items()}
    params = {p.name.value for p in [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]}
    index_names = _index_names(fn, is_index_call)
    problems: dict[str, tuple[int, str]] = {}
    for name, found in allocations.items():
        # allocated again (in each branch of an if, in each iteration) is fine while every assignment is such an
        # allocation with the same block dims: the accesses are the same whichever one ran
        if assigned[name] > len(found) or len({(blocks, rank) for _, blocks, _, rank in found}) > 1:
            problems[name] = (found[0][2], f"{name} is also assigned something else than one block allocation")
        if name in params:
            problems.setdefault(name, (candidates[name].line, f"{name} is also a parameter"))
    for name, tensor in param_blocks.items():
        if name in candidates:
            continue  # a parameter also allocated here: the problem above
        candidates[name] = tensor
        if assigned.get(name):
            problems[name] = (tensor.line, f"the parameter {name} is assigned in {fn.name.value}")

    ok: set[int] = set()
    sites: list[CallSite] = []

    class Uses(cst.CSTVisitor):
        def __init__(self_):  # noqa: N805
            super().__init__()
            self_.depth = 0  # inside a nested function or lambda
            self_.shadowed: list[set[str]] = []  # the parameters of each enclosing nested function

        def visit_FunctionDef(self_, n) -> None:  # noqa: N805
            self_.depth += 1
            self_.shadowed.append(param_names(n.params))

        def leave_FunctionDef(self_, n) -> None:  # noqa: N805
            self_.depth -= 1
            self_.shadowed.pop()

        def visit_Lambda(self_, n) -> None:  # noqa: N805
            self_.depth += 1
            self_.shadowed.append(param_names(n.params))

        def leave_Lambda(self_, n) -> None:  # noqa: N805
            self_.depth -= 1
            self_.shadowed.pop()

        def closure(self_, name: str) -> bool:  # noqa: N805
            """A nested function reads the enclosing function's tensor (no parameter of its own by that name; one
            assigned in it is a problem already, as a second assignment): the fold applies in its body too."""
            return not any(name in names for names in self_.shadowed)

        def visit_AssignTarget(self_, n: cst.AssignTarget) -> None:  # noqa: N805
            if isinstance(n.target, cst.Name):
                ok.add(id(n.target))  # the allocation itself (a second assignment is a problem already)

        def visit_Arg(self_, n: cst.Arg) -> None:  # noqa: N805
            if n.keyword is not None:
                ok.add(id(n.keyword))  # `f(tiles=...)`: the keyword is the callee's name, not the tensor

        def visit_Call(self_, n: cst.Call) -> None:  # noqa: N805
            if not (isinstance(n.func, cst.Name) and n.func.value in helpers):
                return
            helper = n.func.value
            bound: dict[str, tuple[str, BlockTensor | None] | None] = {}
            by_param, unbound = _bind(helpers[helper], n)
            for value in unbound:  # no named parameter takes it (a *args, or too many arguments)
                if isinstance(value, cst.Name) and value.value in candidates:
                    problems.setdefault(value.value, (line_of(n), f"{helper} takes {value.value} by no named parameter"))
            for param, value in by_param.items():
                if isinstance(value, cst.Name) and value.value in candidates and self_.depth == 0:
                    bound[param] = (value.value, candidates[value.value])
                    why = refused.get((helper, param))
                    if why is None:
                        ok.add(id(value))  # folds with the helper's parameter
                    else:
                        problems.setdefault(value.value, (line_of(n), f"{value.value} is passed whole to {helper}, whose {why}"))
                elif isinstance(value, cst.Name) and value.value in params and self_.depth == 0 and not assigned.get(value.value):
                    bound[param] = (value.value, None)  # this function's own parameter: it may fold in a later round
                else:
                    bound[param] = None
            sites.append(CallSite(helper, line_of(n), bound))

        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            if folded_shape_unpack(n, candidates) is not None:
                ok.add(id(n.value.value))  # `nb, p, f = t.shape`: its names reordered with the dims

        def visit_Subscript(self_, n: cst.Subscript) -> None:  # noqa: N805
            if folded_shape_index(n, candidates) is not None:
                ok.add(id(n.value.value))  # `t.shape[1]`: the index moved with the dims
            if isinstance(n.value, cst.Name) and n.value.value in candidates and self_.closure(n.value.value):
                why = _block_access_problem(n, candidates[n.value.value].blocks, index_names, is_index_call)
                if why is None:
                    ok.add(id(n.value))
                elif n.value.value not in problems:
                    problems[n.value.value] = (line_of(n), why)

        def visit_Attribute(self_, n: cst.Attribute) -> None:  # noqa: N805
            if isinstance(n.value, cst.Name) and n.value.value in candidates and n.attr.value == "dtype":
                ok.add(id(n.value))  # the dtype is the same folded

        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            if n.value in candidates and id(n) not in ok and n.value not in problems and self_.closure(n.value):
                problems[n.value] = (line_of(n), f"{n.value} is used whole here (not as one block)")

    fn.body.visit(Uses())
    fold = {name: tensor for name, tensor in candidates.items() if name not in problems}
    calls = {id(call) for name in fold if name in allocations for call, *_ in allocations[name]}
    manual = {id(call): problems[name] for name in problems if name in allocations for call, *_ in allocations[name]}
    folded_params = {name: tensor for name, tensor in fold.items() if name in param_blocks and name not in allocations}
    return Blocked(fold, calls, manual, folded_params, sites, problems)


def scan_module(module: cst.Module, is_allocation, is_par_dim, is_index_call, line_of, is_subkernel=lambda d: False) -> dict[int, Blocked]:
    """scan() of every function of a file (by id of its FunctionDef), with block tensors passed whole to the file's
    helper functions folded together with the helpers' parameters (see the module doc).

    Starting from no folded parameters, each round folds a helper's parameter when some call passes it a block
    tensor, and refuses it for good when a call passes anything else, a tensor of other block dims, a tensor that
    does not fold, or when the helper's own body does not allow it; a tensor passed to a refused parameter is a
    problem of its caller's. The rounds stop when nothing changes; the result is then checked once more to be
    consistent (every folded parameter receives only folded tensors, every tensor passed whole goes to a folded
    parameter), else no helper parameter folds at all (a manual step is better than an inexact fold)."""
    functions: list[cst.FunctionDef] = []

    class Functions(cst.CSTVisitor):
        def visit_FunctionDef(self_, n: cst.FunctionDef) -> None:  # noqa: N805
            functions.append(n)

    module.visit(Functions())
    helpers = _helpers(module, is_subkernel)

    memo: dict[tuple, Blocked] = {}
    callees: dict[int, set[str]] = {}  # id(fn) -> the helpers it calls (the same whatever the round)

    def scan_one(fn, params, refused, helpers) -> Blocked:
        own = params.get(fn.name.value, {}) if helpers.get(fn.name.value) is fn else {}
        relevant = {k: v for k, v in refused.items() if k[0] in callees.get(id(fn), ())}
        key = (id(fn), bool(helpers), tuple(sorted(own.items())), tuple(sorted(relevant.items())))
        if key not in memo:  # a round rescans only what its changes can affect
            memo[key] = scan(fn, is_allocation, is_par_dim, is_index_call, line_of, helpers, own, relevant)
            callees[id(fn)] = {site.helper for site in memo[key].calls_to_helpers}
        return memo[key]

    def scan_all(params, refused, helpers) -> dict[int, Blocked]:
        return {id(fn): scan_one(fn, params, refused, helpers) for fn in functions}

    params: dict[str, dict[str, BlockTensor]] = {}
    refused: dict[tuple[str, str], str] = {}
    final = False
    for _ in range(4 * len(functions) + 4):
        results = scan_all(params, refused, helpers)
        new_params, new_refused = _decide(helpers, results, refused, line_of, final)
        if new_params == params and new_refused == refused:
            if not final:
                final = True  # what still waits on a parameter that did not fold is refused next
                continue
            if _consistent(helpers, results):
                return results
            break
        params, refused, final = new_params, new_refused, False
    return scan_all({}, {}, {})


def _decide(helpers, results: dict[int, Blocked], refused: dict[tuple[str, str], str], line_of, final: bool):
    """The helper parameters to fold next round, and the refused ones (a superset of `refused`). A parameter passed
    its caller's parameter waits for that one to fold; once nothing else changes (`final`), it is refused."""
    refused = dict(refused)
    incoming: dict[tuple[str, str], list[tuple[int, tuple[str, BlockTensor] | None, Blocked]]] = {}
    sites_of: dict[str, list[tuple[CallSite, Blocked]]] = {}
    for caller in results.values():
        for site in caller.calls_to_helpers:
            sites_of.setdefault(site.helper, []).append((site, caller))
    for helper, sites in sites_of.items():
        for site, caller in sites:
            for param, value in site.bound.items():
                incoming.setdefault((helper, param), []).append((site.line, value, caller))
    params: dict[str, dict[str, BlockTensor]] = {}
    for (helper, param), values in incoming.items():
        if (helper, param) in refused or all(value is None for _, value, _ in values):
            continue
        why = None
        shapes = set()
        waiting = False
        for line, value, caller in values:
            if value is None:
                why = f"parameter {param} is passed something else than a block tensor at line {line}"
                break
            name, tensor = value
            if tensor is None:  # the caller's own parameter, not folded (yet)
                waiting = True
                if final:
                    why = f"parameter {param} is passed {name} at line {line}, which does not fold"
                    break
                continue
            if name in caller.problems:
                where, because = caller.problems[name]
                why = f"parameter {param} is also passed {name}, which does not fold (line {where}: {because})"
                break
            shapes.add((tensor.blocks, tensor.rank))
        n_calls = len(sites_of[helper])
        if why is None and len(values) < n_calls:
            why = f"parameter {param} is left out of a call"
        if why is None and len(shapes) > 1:
            why = f"parameter {param} is passed block tensors of different block dims or ranks"
        if why is None:
            own = results[id(helpers[helper])].problems.get(param)
            if own is not None:
                why = f"parameter {param} does not fold in {helper} (line {own[0]}: {own[1]})"
        if why is not None:
            refused[(helper, param)] = why
            continue
        if waiting:
            continue
        blocks, rank = shapes.pop()
        params.setdefault(helper, {})[param] = BlockTensor(blocks, line_of(helpers[helper]), rank)
    return params, refused


def _consistent(helpers, results: dict[int, Blocked]) -> bool:
    """Every folded helper parameter receives only folded block tensors of its shape; every block tensor passed
    whole to a helper folds only into a folded parameter."""
    for caller in results.values():
        for site in caller.calls_to_helpers:
            folded = results[id(helpers[site.helper])].params
            for param, value in site.bound.items():
                passed = value is not None and value[1] is not None and value[0] in caller.fold
                if param in folded:
                    if not passed or (value[1].blocks, value[1].rank) != (folded[param].blocks, folded[param].rank):
                        return False
                elif passed:
                    return False
    for helper, fn in helpers.items():
        folded = results[id(fn)].params
        for param in folded:
            for caller in results.values():
                for site in caller.calls_to_helpers:
                    if site.helper == helper and param not in site.bound:
                        return False
    return True


def _helpers(module: cst.Module, is_subkernel) -> dict[str, cst.FunctionDef]:
    """The module-level functions, undecorated or sub-kernels (`is_subkernel` of each decorator: @nki.jit(mode=
    'trace'), plain functions once migrated), that the file only ever calls by name with plain arguments: all
    their calls are in this file and each argument's parameter is known."""
    defined: dict[str, list] = {}
    for st in module.body:
        if isinstance(st, cst.FunctionDef):
            defined.setdefault(st.name.value, []).append(st)
    helpers = {name: fns[0] for name, fns in defined.items() if len(fns) == 1 and all(is_subkernel(d) for d in fns[0].decorators)}
    disqualified: set[str] = set()

    class References(cst.CSTVisitor):
        def __init__(self_):  # noqa: N805
            super().__init__()
            self_.callees: set[int] = set()
            self_.defs: set[int] = {id(fn.name) for fn in helpers.values()}

        def visit_Call(self_, n: cst.Call) -> None:  # noqa: N805
            if isinstance(n.func, cst.Name) and n.func.value in helpers:
                if any(a.star for a in n.args):
                    disqualified.add(n.func.value)
                self_.callees.add(id(n.func))

        def visit_FunctionDef(self_, n: cst.FunctionDef) -> None:  # noqa: N805
            if n.name.value in helpers and id(n.name) not in self_.defs:
                disqualified.add(n.name.value)  # another function of that name (nested): which one is called?

        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            if n.value in helpers and id(n) not in self_.callees and id(n) not in self_.defs:
                disqualified.add(n.value)  # passed around, rebound, imported, exported, a parameter's name...

    module.visit(References())
    return {name: fn for name, fn in helpers.items() if name not in disqualified}


def _bind(fn: cst.FunctionDef, call: cst.Call) -> tuple[dict[str, cst.BaseExpression], list[cst.BaseExpression]]:
    """The argument each named parameter of `fn` receives in a call, and the arguments no named parameter takes."""
    positional = [p.name.value for p in [*fn.params.posonly_params, *fn.params.params]]
    by_keyword = {p.name.value for p in [*fn.params.params, *fn.params.kwonly_params]}
    bound: dict[str, cst.BaseExpression] = {}
    unbound: list[cst.BaseExpression] = []
    args = [a for a in call.args if a.keyword is None]
    for i, a in enumerate(args):
        if i < len(positional):
            bound[positional[i]] = a.value
        else:
            unbound.append(a.value)
    for a in call.args:
        if a.keyword is not None:
            if a.keyword.value in by_keyword:
                bound[a.keyword.value] = a.value
            else:
                unbound.append(a.value)
    return bound, unbound


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


def param_names(params: cst.Parameters) -> set[str]:
    found = {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            found.add(star.name.value)
    return found


def _names(t) -> list[str]:
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, cst.Tuple | cst.List):
        return [n for e in t.elements for n in _names(e.value)]
    return []
