"""Legacy index expressions in source form: which local names are `nl.arange`/`nl.mgrid` index variables, the
affine form of a subscript element (`k * 128 + i_p`), and the slices that replace them, bounded by a mask.

The rewrite follows the SDK's migration guide ("Update indexing syntax for mgrid and arange",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/index.html): an element
`offset + coef * i` with i ranging over an arange of length L becomes `offset:offset + L` (coef 1) or
`offset:offset + coef*(L-1) + 1:coef` (the stop right after the last element, so an access that ends at the tensor's
last element stays inside it), and a mask `offset + i < bound` shrinks it to `offset:min(offset + L, bound)`. A
coefficient may be a non-literal (`stride * i`): the slice's step is then that expression, and the current API rejects
a step that is not positive when the kernel runs, so such a rewrite is exact or fails loudly, never silently.
An element that adds index variables (`i_h + i_kh`, a sliding window; `2 * i_y + i_x`) has no slice form: the access
becomes `t.ap(pattern=[[step, num], ...], offset=...)` with one pair per axis of the index space (pattern_access).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from nkidev.migrate.common import code, literal_int


class Unsupported(Exception):
    """An index expression the rewrite cannot turn into slices (its message says what it is)."""


class NeedsPattern(Unsupported):
    """An element that sums index variables (`i_h + i_kh`): no slice, but an `.ap()` access pattern can express it."""


@dataclass(frozen=True)
class IndexVar:
    """An arange placed on `axis` of a `rank`-d index space: values start + step * i for i in [0, length)."""

    rank: int
    axis: int
    length: str
    start: str = "0"
    step: int | str = 1  # a str: a non-literal coefficient, as source


def add(a: str, b: str) -> str:
    """a + b as source, dropping zeros."""
    if a == "0":
        return b
    if b == "0":
        return a
    if b.startswith("-"):
        return f"{a} - {b[1:]}"
    return f"{a} + {b}"


def scale(k: int | str, a: str) -> str:
    if k == 1 or a == "0":
        return a
    return f"{_paren(str(k))} * {_paren(a)}"


def _times(a: int | str, b: int | str) -> int | str:
    """The product of two coefficients: an int when both are, else its source."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return scale(a, str(b)) if b != 1 else a


def _paren(a: str) -> str:
    return a if a.replace("_", "").replace(".", "").isalnum() else f"({a})"


def arange_var(node: cst.BaseExpression, is_arange) -> IndexVar | None:
    """`nl.arange(n)[:, None]` (or `[None, :]`, ...) -> IndexVar; `is_arange(call)` says whether a call is nl.arange."""
    if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call) and is_arange(node.value)):
        return None
    args = [a.value for a in node.value.args]
    if len(args) == 1:
        start, length = "0", code(args[0])
    elif len(args) == 2:
        start, length = code(args[0]), f"{code(args[1])} - {_paren(code(args[0]))}"
    else:
        return None
    elems = node.slice
    axis = None
    for i, e in enumerate(elems):
        s = e.slice
        if isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None:
            axis = i
        elif not (isinstance(s, cst.Index) and isinstance(s.value, cst.Name) and s.value.value == "None"):
            return None
    return IndexVar(len(elems), axis, length, start) if axis is not None else None


def mgrid_vars(node: cst.BaseExpression, is_mgrid) -> list[IndexVar] | None:
    """`nl.mgrid[0:128, 0:512]` -> one IndexVar per component."""
    if not (isinstance(node, cst.Subscript) and is_mgrid(node.value)):
        return None
    out = []
    rank = len(node.slice)
    for axis, e in enumerate(node.slice):
        s = e.slice
        if not isinstance(s, cst.Slice) or s.upper is None or (s.step is not None and literal_int(s.step) != 1):
            return None
        start = code(s.lower) if s.lower is not None else "0"
        length = code(s.upper) if start == "0" else f"{code(s.upper)} - {_paren(start)}"
        out.append(IndexVar(rank, axis, length, start))
    return out


@dataclass(frozen=True)
class Affine:
    """offset + coef * i, where i counts the values of `var` (0 .. var.length - 1)"""

    var: IndexVar
    coef: int | str  # a str: a non-literal coefficient, as source
    offset: str


@dataclass(frozen=True)
class Linear:
    """offset + sum of coef * i over index variables (`2 * i_y + i_x + 1`), each variable on its own axis."""

    terms: tuple[tuple[IndexVar, int | str], ...]
    offset: str


def _negate(k: int | str) -> int | str:
    return -k if isinstance(k, int) else f"-{_paren(k)}"


def _combine(a: Linear, b: Linear, node) -> Linear:
    terms = dict(a.terms)
    for var, coef in b.terms:
        if var in terms:
            both = terms[var]
            terms[var] = both + coef if isinstance(both, int) and isinstance(coef, int) else f"{_paren(str(both))} + {_paren(str(coef))}"
        elif any(v.axis == var.axis for v in terms):
            raise Unsupported(f"{code(node)} adds two index variables on the same axis")
        else:
            terms[var] = coef
    return Linear(tuple(terms.items()), add(a.offset, b.offset))


@dataclass
class State:
    """What is known at one point of a function body about its index names (one copy per path through an if)."""

    vars: dict[str, IndexVar] = field(default_factory=dict)  # "i_p" -> IndexVar
    masks: dict[str, cst.BaseExpression] = field(default_factory=dict)  # mask variables -> their expression
    grids: dict[str, list[IndexVar]] = field(default_factory=dict)  # g = nl.mgrid[...] -> components
    # names whose index range depends on the path taken (through an if, or the iterations of a loop) in a way
    # slices cannot follow (name -> why): an access through them stays a manual step, never one path's slices
    poisoned: dict[str, str] = field(default_factory=dict)
    defs: dict[str, str] = field(default_factory=dict)  # index name -> the source of the definition that made it
    flags: set[str] = field(default_factory=set)  # names bound to a comparison of loop variables (`ok = k < n`)
    sums: dict[str, Linear] = field(default_factory=dict)  # `i_hk = i_h + i_k` -> its Linear form (accessed through .ap())

    def copy(self) -> State:
        return State(
            dict(self.vars), dict(self.masks), dict(self.grids), dict(self.poisoned), dict(self.defs), set(self.flags), dict(self.sums)
        )

    def known(self) -> set[str]:
        return self.vars.keys() | self.masks.keys() | self.grids.keys() | self.sums.keys()


class Scope:
    """The index variables (and mask variables) of one function body."""

    def __init__(self, is_arange=None):
        self.is_arange = is_arange  # call -> bool: is it nl.arange? (inline `nl.arange(n)[:, None]` elements)
        self.state = State()
        # index variables assigned more than once: name -> (size name, start name), companions assigned right after
        # each definition so that wherever the definitions meet they still hold the range of the one that ran
        self.companions: dict[str, tuple[str, str]] = {}

    @property
    def vars(self) -> dict[str, IndexVar]:
        return self.state.vars

    @property
    def masks(self) -> dict[str, cst.BaseExpression]:
        return self.state.masks

    @property
    def grids(self) -> dict[str, list[IndexVar]]:
        return self.state.grids

    @property
    def poisoned(self) -> dict[str, str]:
        return self.state.poisoned

    def snapshot(self) -> State:
        return self.state.copy()

    def restore(self, state: State) -> None:
        self.state = state.copy()

    def forget(self, name: str) -> None:
        """`name` is rebound to something that is not an index (a loop variable, a plain value)."""
        for d in (self.vars, self.grids, self.masks, self.poisoned, self.state.defs, self.state.sums):
            d.pop(name, None)
        self.state.flags.discard(name)

    def merge(self, branches: list[State], where: str) -> list[str]:
        """The state where paths meet (after an if: the end of each branch, the untaken one included).

        A variable every path defines alike stays; one whose range differs only in start or length takes them from
        its companions (exact: they were assigned with each definition); anything else is poisoned. Returns the
        names joined through their companions."""
        merged = State(poisoned={k: v for b in branches for k, v in b.poisoned.items()})
        joins = []
        for attr in ("vars", "grids", "masks", "sums"):
            kept = {}
            for name in set().union(*(getattr(b, attr) for b in branches)):
                values = [getattr(b, attr).get(name) for b in branches]
                if any(v is None for v in values):
                    merged.poisoned[name] = f"{name} is an index only on some paths through {where}"
                elif all(_same(v, values[0]) for v in values):
                    kept[name] = values[0]
                elif attr == "vars" and (joined := self._join(name, values)) is not None:
                    kept[name] = joined
                    joins.append(name)
                else:
                    merged.poisoned[name] = f"{name} has a different index shape on the paths through {where}"
            setattr(merged, attr, kept)
        for name in merged.poisoned:
            for d in (merged.vars, merged.grids, merged.masks, merged.sums):
                d.pop(name, None)
        merged.defs = {k: v for k, v in branches[0].defs.items() if all(b.defs.get(k) == v for b in branches)}
        merged.flags = set.intersection(*(b.flags for b in branches))
        self.state = merged
        return sorted(joins)

    def _join(self, name: str, values: list[IndexVar]) -> IndexVar | None:
        first = values[0]
        if any((v.rank, v.axis, v.step) != (first.rank, first.axis, first.step) for v in values) or name not in self.companions:
            return None
        size, start = self.companions[name]
        length = first.length if all(v.length == first.length for v in values) else size
        begin = first.start if all(v.start == first.start for v in values) else start
        return IndexVar(first.rank, first.axis, length, begin, first.step)

    def lookup(self, node: cst.BaseExpression) -> IndexVar | None:
        if isinstance(node, cst.Name):
            if node.value in self.poisoned:
                raise Unsupported(self.poisoned[node.value])
            return self.vars.get(node.value)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value in self.poisoned:
            raise Unsupported(self.poisoned[node.value.value])
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value in self.grids:
            parts = self.grids[node.value.value]
            axis = {"p": 0, "x": 1, "y": 2, "z": 3}.get(node.attr.value)
            if axis is not None and axis < len(parts):
                return parts[axis]
        return None

    def uses_index(self, node: cst.CSTNode) -> bool:
        found = []

        class Finder(cst.CSTVisitor):
            def visit_Name(self_, n: cst.Name):  # noqa: N805
                if n.value in self.vars or n.value in self.grids or n.value in self.poisoned or n.value in self.state.sums:
                    found.append(n)

            def visit_Call(self_, n: cst.Call):  # noqa: N805
                if self.is_arange is not None and self.is_arange(n):
                    found.append(n)

        node.visit(Finder())
        return bool(found)

    def affine(self, node: cst.BaseExpression) -> Affine | None:
        """The affine form of an index element, None when it uses no index variable."""
        var = self.lookup(node)
        if var is None and self.is_arange is not None:
            var = arange_var(node, self.is_arange)
        if var is not None:
            return Affine(var, var.step, var.start)
        if isinstance(node, cst.Name) and node.value in self.state.sums:
            raise NeedsPattern(f"{node.value} sums index variables")
        if isinstance(node, cst.BinaryOperation):
            left, right = self.affine(node.left), self.affine(node.right)
            op = node.operator
            if isinstance(op, cst.Add):
                if left and right:
                    raise NeedsPattern(f"{code(node)} adds two index variables")
                if left:
                    return Affine(left.var, left.coef, add(left.offset, code(node.right)))
                if right:
                    return Affine(right.var, right.coef, add(code(node.left), right.offset))
                return None
            if isinstance(op, cst.Subtract):
                if right:
                    raise NeedsPattern(f"{code(node)} subtracts an index variable")
                if left:
                    return Affine(left.var, left.coef, add(left.offset, "-" + _paren(code(node.right))))
                return None
            if isinstance(op, cst.Multiply):
                if left and right:
                    raise Unsupported(f"{code(node)} multiplies two index variables")
                if left or right:
                    a, other = (left, node.right) if left else (right, node.left)
                    k = literal_int(other)
                    factor = k if k is not None else code(other)
                    return Affine(a.var, _times(a.coef, factor), scale(factor, a.offset))
                return None
        if self.uses_index(node):
            raise Unsupported(f"{code(node)} is not an affine index expression")
        return None

    def linear(self, node: cst.BaseExpression) -> Linear | None:
        """The Linear form of an index element (sums of index variables allowed), None when it uses no index variable."""
        var = self.lookup(node)
        if var is None and self.is_arange is not None:
            var = arange_var(node, self.is_arange)
        if var is not None:
            return Linear(((var, var.step),), var.start)
        if isinstance(node, cst.Name) and node.value in self.state.sums:
            return self.state.sums[node.value]
        if isinstance(node, cst.BinaryOperation):
            left, right = self.linear(node.left), self.linear(node.right)
            op = node.operator
            if isinstance(op, cst.Add | cst.Subtract):
                if isinstance(op, cst.Subtract):
                    if right is not None:
                        negated = "0" if right.offset == "0" else f"-{_paren(right.offset)}"
                        right = Linear(tuple((v, _negate(k)) for v, k in right.terms), negated)
                    else:
                        right = Linear((), "-" + _paren(code(node.right)))
                if left is None and right is None:
                    return None
                left = left if left is not None else Linear((), code(node.left))
                right = right if right is not None else Linear((), code(node.right))
                return _combine(left, right, node)
            if isinstance(op, cst.Multiply):
                if left is not None and right is not None:
                    raise Unsupported(f"{code(node)} multiplies two index variables")
                if left is not None or right is not None:
                    a, other = (left, node.right) if left is not None else (right, node.left)
                    k = literal_int(other)
                    factor = k if k is not None else code(other)
                    return Linear(tuple((v, _times(c, factor)) for v, c in a.terms), scale(factor, a.offset))
                return None
        if self.uses_index(node):
            raise Unsupported(f"{code(node)} is not an affine index expression")
        return None


def pattern_access(node: cst.Subscript, scope: Scope, valid: dict[int, str] | None = None, hbm: bool = False) -> cst.Call:
    """`t[i_p, i_h + i_kh, i_w]` -> `t.ap(pattern=[[step, num], ...], offset=...)`: one [step, num] pair per axis of
    the index space, the step being what one step along that axis moves in t's elements (t contiguous, indexed on
    every dim), as the legacy access does; `valid` (a mask's bounds) shortens an axis to the values it keeps.
    On chip the partition axis must be t's first dim alone, with coefficient 1; an HBM tensor (`hbm`: a load's
    source, a store's destination) has no partitions, so there any arrangement (`t[i_f, i_p]`, a transposed
    access) is its pattern, except one that writes an element twice (a step 0)."""
    if not isinstance(node.value, cst.Name):
        raise Unsupported(f"{code(node)}: an index sum into a view (not a named tensor)")
    t = node.value.value
    forms = []
    for e in node.slice:
        s = e.slice
        if not isinstance(s, cst.Index) or isinstance(s.value, cst.Ellipsis):
            raise Unsupported(f"{code(node)}: an index sum next to a slice or `...`")
        forms.append(scope.linear(s.value) or Linear((), code(s.value)))
    n = len(forms)
    used = [v for f in forms for v, _ in f.terms]
    if not used:
        raise Unsupported(f"{code(node)} has no index variable")
    rank = used[0].rank
    if any(v.rank != rank for v in used):
        raise Unsupported(f"{code(node)} mixes index spaces of different ranks")
    first = forms[0].terms
    own = len(first) == 1 and first[0][0].axis == 0 and first[0][1] == 1
    partition_ok = own and not any(v.axis == 0 for f in forms[1:] for v, _ in f.terms)
    if not (hbm or partition_ok):
        raise Unsupported(f"{code(node)}: the partition axis is not the first dim's own index (coefficient 1)")
    strides = [" * ".join(f"{t}.shape[{k}]" for k in range(d + 1, n)) or "1" for d in range(n)]
    steps: list[list[str]] = [[] for _ in range(rank)]
    coefs: list[list[int | str]] = [[] for _ in range(rank)]
    lengths: dict[int, str] = {}
    offset = "0"
    for d, f in enumerate(forms):
        for v, coef in f.terms:
            if v.axis in lengths and lengths[v.axis] != v.length:
                raise Unsupported(f"{code(node)} has index variables of different lengths on axis {v.axis}")
            lengths[v.axis] = v.length
            coefs[v.axis].append(coef)
            steps[v.axis].append(scale(coef, strides[d]) if strides[d] != "1" else str(coef))
        if f.offset != "0":
            offset = add(offset, scale(_paren(f.offset), strides[d]) if strides[d] != "1" else _paren(f.offset))
    pairs = []
    for axis in range(rank):
        step = " + ".join(steps[axis]).replace("+ -", "- ") or "0"
        num = (valid or {}).get(axis, lengths.get(axis, "1"))
        if hbm and not partition_ok and num != "1" and all(c == 0 for c in coefs[axis]):
            raise Unsupported(f"{code(node)} repeats elements along index axis {axis} (a step 0)")
        pairs.append(f"[{step}, {num}]")
    text = f"{t}.ap(pattern=[{', '.join(pairs)}], offset={offset})"
    return cst.parse_expression(text)


def element_slice(a: Affine, valid: str | None = None) -> cst.Slice:
    """The slice of an affine element; `valid` bounds how many of the var's values a mask keeps."""
    if isinstance(a.coef, int) and a.coef <= 0:
        raise Unsupported("a negative or zero step")
    start = a.offset
    count = a.var.length if valid is None else valid
    if a.coef == 1:
        return cst.Slice(lower=cst.parse_expression(start), upper=cst.parse_expression(add(start, count)))
    last = _int_or_none(count)
    span = str(a.coef * (last - 1) + 1) if isinstance(a.coef, int) and last is not None else f"{scale(a.coef, add(count, '-1'))} + 1"
    step = cst.parse_expression(str(a.coef))
    return cst.Slice(lower=cst.parse_expression(start), upper=cst.parse_expression(add(start, span)), step=step)


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def tile_slice(count: str) -> cst.Slice:
    return cst.Slice(lower=cst.Integer("0"), upper=cst.parse_expression(count))


def rewrite_subscript(
    node: cst.Subscript, scope: Scope, valid: dict[int, str] | None = None, patterns: bool = False, hbm: bool = False
) -> cst.BaseExpression | None:
    """`t[k * 128 + i_p, i_f]` -> `t[k * 128:k * 128 + 128, 0:512]`; None when no element uses an index variable.

    `valid` maps a var axis to the number of its values a mask keeps. The index space must list its axes in
    order (the legacy result shape is the broadcast of the index arrays, the current one follows the slices).
    With `patterns`, an access that sums index variables becomes `t.ap(...)` (pattern_access); else it is Unsupported.
    With `hbm` too (t is an HBM tensor), so does a transposed or repeated access."""
    forms = []
    try:
        for e in node.slice:
            s = e.slice
            forms.append(scope.affine(s.value) if isinstance(s, cst.Index) else None)
    except NeedsPattern:
        if not patterns or (valid and not hbm):
            raise
        return pattern_access(node, scope, valid, hbm)
    used = [f for f in forms if f is not None]
    if not used:
        return None
    axes = [f.var.axis for f in used]
    if axes != sorted(axes) or len(set(axes)) != len(axes):
        why = f"{code(node)} places index axes out of order (a transposed or repeated access)"
        if not patterns or (valid and not hbm):
            raise Unsupported(why)
        try:
            # on chip too, when the partition axis stays first (free axes in another order: a pattern lists any)
            return pattern_access(node, scope, valid, hbm)
        except Unsupported as e:
            raise Unsupported(f"{why}; {e}" if not hbm else str(e)) from None
    rank = used[0].var.rank
    missing = rank - len(used)
    new = []
    for e, f in zip(reversed(node.slice), reversed(forms)):
        s = e.slice
        if f is not None:
            new.append(e.with_changes(slice=element_slice(f, (valid or {}).get(f.var.axis))))
        elif missing > 0 and isinstance(s, cst.Index) and not isinstance(s.value, cst.Ellipsis):
            # an int among index arrays broadcasts (no dim of its own); keep a size-1 dim for the axis it stands for
            v = code(s.value)
            new.append(e.with_changes(slice=cst.Slice(lower=cst.parse_expression(v), upper=cst.parse_expression(add(v, "1")))))
            missing -= 1
        else:
            new.append(e)
    return node.with_changes(slice=list(reversed(new)))


def mask_bounds(mask: cst.BaseExpression, scope: Scope) -> tuple[dict[int, str], list[str]]:
    """The conjuncts of a mask as (per index axis: how many values it keeps, conditions on loop variables only).

    `off + i < bound` keeps min(L, bound - off) values of i (and `<=` one more); anything else is Unsupported."""
    valid: dict[int, str] = {}
    loop_only: list[str] = []
    for term in _conjuncts(mask, scope):
        if not scope.uses_index(term):
            if not (isinstance(term, cst.Comparison) or isinstance(term, cst.Name) and term.value in scope.state.flags):
                # a name the rewrite does not know as a mask (a parameter, a tile): as an `if` it would switch the
                # instruction off for mask=None and test a tile's truth value
                raise Unsupported(f"mask term {code(term)} is not a comparison of loop variables or a known mask")
            loop_only.append(code(term))
            continue
        if not (isinstance(term, cst.Comparison) and len(term.comparisons) == 1):
            raise Unsupported(f"mask term {code(term)} is not a single comparison")
        left, target = term.left, term.comparisons[0]
        op, right = target.operator, target.comparator
        if scope.uses_index(right) and not scope.uses_index(left):
            left, right = right, left
            op = {cst.GreaterThan: cst.LessThan(), cst.GreaterThanEqual: cst.LessThanEqual()}.get(type(op), op)
        if not isinstance(op, cst.LessThan | cst.LessThanEqual):
            raise Unsupported(f"mask term {code(term)} is not an upper bound (off + i < n)")
        a = scope.affine(left)
        if a is None or a.coef != 1 or scope.uses_index(right):
            raise Unsupported(f"mask term {code(term)} does not bound one index variable")
        bound = code(right) if isinstance(op, cst.LessThan) else add(code(right), "1")
        first = a.offset
        count = f"min({a.var.length}, {bound} - {_paren(first)})" if first != "0" else f"min({a.var.length}, {bound})"
        if a.var.axis in valid:
            count = f"min({valid[a.var.axis]}, {count})"
        valid[a.var.axis] = count
    return valid, loop_only


def _same(a, b) -> bool:
    if isinstance(a, cst.CSTNode):
        return isinstance(b, cst.CSTNode) and a.deep_equals(b)
    return a == b


def _conjuncts(node: cst.BaseExpression, scope: Scope) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Name) and node.value in scope.poisoned:
        raise Unsupported(scope.poisoned[node.value])
    if isinstance(node, cst.Name) and node.value in scope.masks:
        return _conjuncts(scope.masks[node.value], scope)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitAnd):
        return _conjuncts(node.left, scope) + _conjuncts(node.right, scope)
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return _conjuncts(node.left, scope) + _conjuncts(node.right, scope)
    return [node.with_changes(lpar=[], rpar=[]) if hasattr(node, "lpar") else node]


def space_shape(node: cst.Subscript, scope: Scope) -> str | None:
    """The legacy tile shape of an indexed access, as source: one length per axis of its index space."""
    lengths: dict[int, str] = {}
    rank = None
    for e in node.slice:
        s = e.slice
        f = scope.linear(s.value) if isinstance(s, cst.Index) else None  # an index sum spans each of its variables' axes
        for var, _ in f.terms if f is not None else ():
            lengths[var.axis] = var.length
            rank = var.rank
    if rank is None:
        return None
    dims = [lengths.get(a, "1") for a in range(rank)]
    return "(" + ", ".join(dims) + ("," if rank == 1 else "") + ")"


def derived_var(node: cst.BaseExpression, scope: Scope, is_arange) -> IndexVar | None:
    """An index variable defined as an affine expression of another (`ix = base + nl.arange(128)[:, None]`)."""
    direct = arange_var(node, is_arange)
    if direct is not None:
        return direct

    probe = Scope(scope.is_arange)
    probe.state = scope.snapshot()

    def swap(n):
        v = arange_var(n, is_arange)
        if v is not None:
            probe.vars[f"__arange_{id(n)}"] = v
            return cst.Name(f"__arange_{id(n)}")
        return n

    class Replace(cst.CSTTransformer):
        def leave_Subscript(self, original, updated):
            return swap(updated)

    replaced = node.visit(Replace())
    try:
        a = probe.affine(replaced)
    except Unsupported:
        return None
    if a is None:
        return None
    return IndexVar(a.var.rank, a.var.axis, a.var.length, a.offset, a.coef)
