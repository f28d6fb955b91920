"""Legacy Beta-1 (`neuronxcc.nki`) -> current NKI, as LibCST rules.

Follows the SDK's migration guide (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/index.html,
"Migrating from NKI 0.1.0 to NKI 0.2.0" and "0.2.0 to 0.3.0"): the `nki` namespace; `@nki.jit` without modes;
`nki.simulate(kernel)(...)` for `nki.simulate_kernel`; ISA calls with an explicit `dst` (the result tile
allocated with `nl.ndarray`); `psum += matmul` as `nisa.nc_matmul(dst=psum, ...)`; `nl.arange`/`nl.mgrid`
indices as slices (sums of index variables as `.ap()` patterns); masks as bounded slices (`min(...)`);
`nl.par_dim` dropped; static ranges as `range`; `t[...] = op(..., dtype=D)` through a D tile when D is not t's dtype;
NumPy op specifiers as `nl` ones; returned HBM outputs in `nl.shared_hbm`. Index variables are followed
through `if`s and loops (indexing.Scope.merge): a range that differs by path is read from companions assigned
with each definition, or else every access through it is a manual step. Block dims fold into the free dims
(blocks.py). What it cannot rewrite (block tensors used whole, direct allocation, benchmark/profile
harnesses, transposed or non-affine indexing, two-sided masks) is left in place and listed with its line and
the manual step.
"""

from __future__ import annotations

import dataclasses
import inspect
import operator
from dataclasses import dataclass, field

import libcst as cst

from nkidev.emulator.dtypes import to_nki_dtype
from nkidev.legacy import isa as L
from nkidev.legacy import language as LN
from nkidev.migrate import blocks, memory
from nkidev.migrate.common import Notes, Rules, arg_value, code, expr, imports, keyword, kwarg, literal_int, stmt, without_kwargs
from nkidev.migrate.indexing import (
    IndexVar,
    Scope,
    State,
    Unsupported,
    add,
    derived_var,
    mask_bounds,
    mgrid_vars,
    rewrite_subscript,
    space_shape,
)
from nkidev.migrate.ranks import TileRanks


def _positional(fn) -> tuple[str, ...]:
    """The parameters a legacy ISA call may pass by position (the front end's own signature is the fact)."""
    return tuple(p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD)


LEGACY_MODULES = {
    "neuronxcc.nki": "nki",
    "neuronxcc.nki.language": "language",
    "neuronxcc.nki.isa": "isa",
    "neuronxcc.nki.typing": "typing",
    "neuronxcc.nki.compiler": "compiler",
}
CURRENT = {"nki": "nki", "language": "nki.language", "isa": "nki.isa", "typing": "nki.typing"}
INDEX_ATTRIBUTES = ("arange", "mgrid")  # the legacy index constructors, nl.arange and nl.mgrid

NUMPY_OPS = {
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "divide": "divide",
    "max": "maximum",
    "amax": "maximum",
    "maximum": "maximum",
    "min": "minimum",
    "amin": "minimum",
    "minimum": "minimum",
    "sum": "add",
    "exp": "exp",
    "log": "log",
    "square": "square",
    "sqrt": "sqrt",
    "tanh": "tanh",
    "copy": "copy",
    "abs": "abs",
    "absolute": "abs",
    "equal": "equal",
    "not_equal": "not_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "less": "less",
    "less_equal": "less_equal",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    L.reciprocal.__name__: L.reciprocal.__name__,  # np.reciprocal -> nl.reciprocal (the ISA op has the same name)
}
OP_KWARGS = {"op", "op0", "op1", "reduce_op", "comp_op0", "comp_op1", "dst_rmw_op", "cmp_op"}
# the legacy reductions double as op specifiers for the element-wise op they reduce with (the legacy front end's
# nl.max is op "maximum", legacy/language.py); the current ISA ops take only the element-wise ones
REDUCTION_OPS = {LN.sum.__name__: "add", LN.max.__name__: "maximum", LN.min.__name__: "minimum", LN.prod.__name__: "multiply"}

# legacy ISA ops that return their result: positional parameters, the parameter the result is shaped like
_RETURNING = (
    L.nc_matmul,
    L.nc_transpose,
    L.activation,
    L.activation_reduce,
    L.tensor_tensor,
    L.tensor_scalar,
    L.tensor_reduce,
    L.tensor_partition_reduce,
    L.tensor_tensor_scan,
    L.scalar_tensor_tensor,
    L.tensor_scalar_reduce,
    L.tensor_copy,
    L.reciprocal,
    L.dropout,
    L.memset,
    L.iota,
    L.bn_stats,
    L.bn_aggr,
    L.max8,
    L.nc_find_index8,
    L.nc_match_replace8,
    L.range_select,
    L.dma_transpose,
    L.affine_select,
)
LEGACY_SIGNATURES = {f.__name__: _positional(f) for f in _RETURNING}
LEGACY_SIGNATURES[L.dma_transpose.__name__] += ("axes",)  # the legacy docs pass axes second; the front end takes it by keyword
SHAPED_LIKE = {
    L.activation.__name__: "data",
    L.activation_reduce.__name__: "data",
    L.tensor_tensor.__name__: "data1",
    L.tensor_scalar.__name__: "data",
    L.tensor_tensor_scan.__name__: "data0",
    L.scalar_tensor_tensor.__name__: "data",
    L.tensor_scalar_reduce.__name__: "data",
    L.tensor_copy.__name__: "src",
    L.reciprocal.__name__: "data",
    L.dropout.__name__: "data",
    L.nc_match_replace8.__name__: "data",
    L.range_select.__name__: "on_true_tile",
}
PER_PARTITION = {
    L.bn_stats.__name__: ("data", 6),
    L.bn_aggr.__name__: ("data", 2),
    L.max8.__name__: ("src", 8),
    L.nc_find_index8.__name__: ("data", 8),
}
PROMOTED = {  # ops whose legacy result dtype (without dtype=) is the promotion of two inputs' dtypes
    L.tensor_tensor.__name__: ("data1", "data2"),
    L.tensor_tensor_scan.__name__: ("data0", "data1"),
    L.scalar_tensor_tensor.__name__: ("data", "operand1"),
}
DTYPE_FROM = {  # other ops whose legacy result has one input's dtype
    L.tensor_reduce.__name__: "data",
    L.tensor_partition_reduce.__name__: "data",
    L.affine_select.__name__: "on_true_tile",
    L.nc_transpose.__name__: "data",
    L.dma_transpose.__name__: "src",
}
MOVES = {L.tensor_copy.__name__, L.nc_transpose.__name__, L.dma_transpose.__name__, L.max8.__name__}
NO_EQUIVALENT = {
    "tensor_copy_dynamic_src": "use nisa.tensor_copy with src.ap(pattern, offset, scalar_offset=offset_tile, indirect_dim=1)",
    "tensor_copy_dynamic_dst": "use nisa.tensor_copy with dst.ap(pattern, offset, scalar_offset=offset_tile, indirect_dim=1)",
    L.local_gather.__name__: "allocate the destination and call nisa.local_gather(dst=..., src_buffer=..., index=...)",
    L.sequence_bounds.__name__: "allocate a (1, 2, n) destination and call nisa.sequence_bounds(dst=..., segment_ids=...)",
    "builtin_custom_op": "custom ISA ops have no current equivalent",
}


def legacy_modules(module: cst.Module) -> dict[str, str]:
    """Local names bound to the legacy modules (and names imported from them) in a file."""
    names: dict[str, str] = {}
    for s in imports(module):
        if isinstance(s, cst.Import):
            for alias in s.names:
                full = code(alias.name)
                if full in LEGACY_MODULES:
                    local = code(alias.asname.name) if alias.asname else full.split(".")[0]
                    names[local if alias.asname else full] = LEGACY_MODULES[full]
        elif isinstance(s, cst.ImportFrom) and s.module is not None and not isinstance(s.names, cst.ImportStar):
            base = code(s.module)
            for alias in s.names:
                local = code(alias.asname.name) if alias.asname else code(alias.name)
                full = f"{base}.{code(alias.name)}"
                if full in LEGACY_MODULES:
                    names[local] = LEGACY_MODULES[full]
                elif base in LEGACY_MODULES:
                    names[local] = f"fn:{LEGACY_MODULES[base]}.{code(alias.name)}"
    return names


def is_legacy(module: cst.Module) -> bool:
    return bool(legacy_modules(module))


class LegacyToCurrent(Rules):
    def __init__(self, notes: Notes, modules: dict[str, str]):
        super().__init__(notes, modules)
        self.scopes: list[Scope] = [Scope(self._is_arange)]
        self.hoisted: list[list[cst.BaseStatement]] = []
        self.counter = 0
        self.accumulators: set[str] = set()  # PSUM tiles written by nc_matmul(dst=...) instead of `+=`
        self.returned: set[str] = set()
        self.top_calls: set[int] = set()  # the calls that are a statement's whole value (rewritten as statements)
        self.index_names: set[str] = set()  # index, grid and mask variables (their definitions go when unused)
        self.psum_names: set[str] = set()  # tiles allocated with buffer=nl.psum
        self.trailing: list[list[cst.BaseStatement]] = []  # statements to add after the statement being visited
        self.if_frames: list[_IfFrame] = []
        self.loop_frames: list[State] = []  # the index state before each enclosing loop
        self.module_names: set[str] = set()  # every name the file uses (generated names must not collide)
        self.taken: set[str] = set()
        self.block_scans: list[blocks.Blocked] = [blocks.Blocked({}, set(), {})]  # per enclosing function
        self.filled: list[dict[str, Filled]] = [{}]  # per enclosing function: tiles allocated only by nl.zeros / ones / full
        self.masked_calls: list[int] = []  # ids of the masked loads / stores / copies being visited
        self.dtypes: list[dict[str, str]] = [{}]  # per enclosing function: tile -> the dtype every allocation of it gives
        self.ranks: list[TileRanks] = [TileRanks()]  # per enclosing function: tile -> the rank its source shows (ranks.py)
        self.module_blocks: dict[int, blocks.Blocked] = {}  # id(FunctionDef) -> its block tensors (blocks.scan_module)
        self.index_origins: dict[int, tuple[int, cst.Attribute]] = {}  # id(arange / mgrid attribute) -> (original line, it)
        self.hbm_access: set[int] = set()  # ids of the subscripts a legacy load reads / store writes (HBM tensors)
        self.folded_buffers: set[int] = set()  # allocator calls that are a folded block allocation's buffer=
        self.allocators: dict[str, str] = {}  # module-level names of legacy direct allocators -> "sbuf" / "psum"
        self.numpy: str | None = None  # the name of the module-level numpy import, if any
        self.masked_access: set[int] = set()  # those of masked loads / stores
        self.memories: list[memory.Memories | None] = [None]  # per enclosing function: which tiles are PSUM ones
        self.kernel_names: set[str] = set()  # functions the file passes to nki.jit / baremetal / simulate_kernel
        self.program: memory.Program | None = None  # the file's functions, for which tiles are PSUM ones (visit_Module)

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    # ---------------------------------------------------------------- imports
    def leave_Import(self, original: cst.Import, updated: cst.Import):
        names = []
        for alias in updated.names:
            full = code(alias.name)
            if full in LEGACY_MODULES:
                new = CURRENT.get(LEGACY_MODULES[full])
                if new is None:
                    self.notes.manual(self.line(original), f"import {full}", self._compiler_step())
                    names.append(alias)
                    continue
                asname = alias.asname or (cst.AsName(name=cst.Name(full.split(".")[-1])) if full != "neuronxcc.nki" else None)
                if full == "neuronxcc.nki" and alias.asname is not None and code(alias.asname.name) == "nki":
                    asname = None
                names.append(alias.with_changes(name=expr(new), asname=asname))
            else:
                names.append(alias)
        return updated.with_changes(names=names)

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        if updated.module is None or isinstance(updated.names, cst.ImportStar):
            return updated
        base = code(updated.module)
        if base == "neuronxcc" and all(code(a.name) == "nki" for a in updated.names):
            return cst.Import(names=[cst.ImportAlias(name=cst.Name("nki"), asname=updated.names[0].asname)])
        if base not in LEGACY_MODULES:
            return updated
        kind = LEGACY_MODULES[base]
        keep, drop = [], []
        for alias in updated.names:
            name = code(alias.name)
            if kind == "language" and name == "par_dim" or kind == "nki" and name in ("baremetal", "simulate_kernel", "trace"):
                drop.append(name)
            elif kind == "nki" and name in ("benchmark", "profile"):
                self.notes.manual(
                    self.line(original), f"from {base} import {name}", f"nki.{name} has no current equivalent; use `nkidev profile`"
                )
                drop.append(name)
            else:
                keep.append(alias)
        if drop:
            self.notes.changed(self.line(original), f"from {base} import {', '.join(drop)}", "dropped (rewritten where used)")
        if kind == "compiler":
            self.notes.manual(self.line(original), f"from {base} import ...", self._compiler_step())
            return updated
        if not keep:
            return cst.RemovalSentinel.REMOVE
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(module=expr(CURRENT[kind]), names=keep)

    @staticmethod
    def _compiler_step() -> str:
        return (
            "the legacy direct-allocation API (ncc.sbuf.mod_alloc, ...) has no current form: allocate with "
            "nl.ndarray(..., buffer=nl.sbuf, address=(partition, byte_offset)) or let the compiler allocate"
        )

    # ---------------------------------------------------------------- functions and decorators
    def _is_arange(self, call) -> bool:
        return self._is(call, "language", "arange")

    def visit_Module(self, node: cst.Module) -> None:
        self.module_names = _all_names(node)
        for st in node.body:  # sb_mod = nki.compiler.sbuf.mod_alloc
            for small in st.body if isinstance(st, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                    region = _allocator_region(code(small.value))
                    if region is not None:
                        self.allocators[small.targets[0].target.value] = region
        self.numpy = _numpy_alias(node)
        self.taken = set(self.module_names)
        self.kernel_names = _kernels_called(node, self._target)
        self.program = memory.Program(node, self._memory_hooks())
        self.module_blocks = blocks.scan_module(
            node, self._is_block_allocation, self._is_par_dim, self._is_index_call, self.line, self._is_subkernel_decorator
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = Scope(self._is_arange)
        self.taken = set(self.module_names)  # generated names are per function (each kernel its own i_f_size)
        for name in _assigned_more_than_once(node):
            scope.companions[name] = (self._fresh(f"{name}_size"), self._fresh(f"{name}_start"))
        self.scopes.append(scope)
        scan = self.module_blocks.get(id(node))
        if scan is None:  # not seen by scan_module (cannot happen: it scans every function)
            scan = blocks.scan(node, self._is_block_allocation, self._is_par_dim, self._is_index_call, self.line)
        if len(self.block_scans) > 1:  # a nested function: the enclosing one's folded tensors it reads fold here too
            outer = {n: t for n, t in self.block_scans[-1].fold.items() if n not in blocks.param_names(node.params)}
            scan = dataclasses.replace(scan, fold={**outer, **scan.fold})
        self.block_scans.append(scan)
        self.filled.append(_filled_allocations(node, lambda call: self._target(call.func)))
        self.dtypes.append(_allocated_dtypes(node, lambda call: self._target(call.func)))
        self.ranks.append(TileRanks(node, self._target))
        self.memories.append(self.program.memories(node))
        for name, tensor in scan.params.items():
            self.notes.changed(
                self.line(node),
                f"parameter {name} of {node.name.value}",
                f"receives block tensors folded into the free dims: its blocks are accessed as {name}[p, b, f] "
                f"({tensor.blocks} block dim(s) behind the partition dim)",
            )
        self.returned |= _returned_names(node)  # before the body: an output is allocated before its return

    def _memory_hooks(self) -> memory.Hooks:
        return memory.Hooks(
            target_of=self._target,
            isa_in_psum=lambda call, name: name in LEGACY_SIGNATURES and self._result_in_psum(name, self._keywords(call, name)),
            psum_buffer=lambda b: code(b).endswith("psum") or self._direct_allocator(b) == "psum",
            is_kernel=self._is_kernel,
            line=self.line,
        )

    def _is_kernel(self, fn: cst.FunctionDef) -> bool:
        """A kernel (its parameters are HBM tensors): decorated with @nki.jit / baremetal / benchmark / ... (not a
        sub-kernel's trace mode), or passed to nki.jit(...) / nki.simulate_kernel(...) somewhere in the file."""
        if fn.name.value in self.kernel_names:
            return True
        for d in fn.decorators:
            dec = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if self._target(dec)[0] == "nki" and not self._is_subkernel_decorator(d):
                return True
        return False

    def _is_par_dim(self, call: cst.Call) -> bool:
        return self._is(call, "language", "par_dim")

    def _is_index_call(self, node: cst.BaseExpression) -> bool:
        return self._is(node, "language", "arange") or self._is_mgrid(node)

    def _is_block_allocation(self, call: cst.Call) -> bool:
        """An on-chip allocation whose shape can hold block dims (HBM tensors have no partition dim to move)."""
        kind, name = self._target(call.func)
        buffer = kwarg(call, "buffer")
        on_chip = buffer is None or code(buffer.value).endswith(("sbuf", "psum")) or self._direct_allocator(buffer.value) is not None
        return kind == "language" and name in ("ndarray", "zeros", "ones", "full") and on_chip

    def _direct_allocator(self, buffer: cst.BaseExpression) -> str | None:
        """ "sbuf" / "psum" for a legacy direct allocator as a buffer (ncc.sbuf.mod_alloc(base_addr=..., num_free_tiles=...),
        nki.compiler.psum.alloc(func), or a module-level name bound to one), else None."""
        if not isinstance(buffer, cst.Call):
            return None
        if isinstance(buffer.func, cst.Name):
            return self.allocators.get(buffer.func.value)
        return _allocator_region(code(buffer.func))

    def _unblock(self, node):
        """A subscript of a folded block tensor with its block numbers moved behind the partition dim (and a read
        of its shape, `t.shape[k]`, with k moved the same way)."""
        if isinstance(node, cst.Subscript):
            shape_read = blocks.folded_shape_index(node, self.block_scans[-1].fold)
            if shape_read is not None:
                return shape_read
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            tensor = self.block_scans[-1].fold.get(node.value.value)
            if tensor is not None:
                return blocks.unblock(node, tensor.blocks)
        return node

    def _index(self, node: cst.Subscript, valid=None, hbm: bool = False) -> cst.Subscript | None:
        """rewrite_subscript of an original (not yet transformed) subscript, block numbers moved as in leave_Subscript;
        `hbm`: node is a load's source or a store's destination (an index sum or transposed access may be an .ap())."""
        new = rewrite_subscript(node, self.scope, valid, patterns=hbm, hbm=hbm)
        return None if new is None else self._unblock_all(new)

    def _unblock_all(self, node):
        """_unblock at every level of an original expression (`t[b][i, j]` has the block access inside)."""
        if not self.block_scans[-1].fold:
            return node
        outer = self

        class Unblock(cst.CSTTransformer):
            def leave_Subscript(self_, original, updated):  # noqa: N805
                return outer._unblock(updated)

        return node.visit(Unblock())

    def _fresh(self, name: str) -> str:
        base, n = name, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name

    # ---------------------------------------------------------------- if/else: index variables per path
    def visit_If(self, node: cst.If) -> None:
        outer = self.if_frames[-1] if self.if_frames else None
        if outer is not None and outer.node.orelse is node:  # an elif: the outer if's body is done
            outer.branches.append(self.scope.snapshot())
            self.scope.restore(outer.before)
        self.if_frames.append(_IfFrame(node, self.scope.snapshot(), self.line(node)))

    def visit_Else(self, node: cst.Else) -> None:
        frame = self.if_frames[-1] if self.if_frames else None
        if frame is not None and frame.node.orelse is node:
            frame.branches.append(self.scope.snapshot())
            self.scope.restore(frame.before)

    def leave_If(self, original: cst.If, updated: cst.If):
        frame = self.if_frames.pop()
        frame.branches.append(self.scope.snapshot())
        if original.orelse is None:
            frame.branches.append(frame.before)  # the path where the test is false
        self._merge(frame.branches, f"the if at line {frame.line}", frame.line)
        return updated

    def _merge(self, states: list[State], where: str, line: int) -> None:
        for name in self.scope.merge(states, where):
            size, start = self.scope.companions[name]
            self.notes.changed(
                line, f"{name} assigned on several paths", f"accesses after {where} slice with {size} / {start}, set with each definition"
            )

    # ---------------------------------------------------------------- loops: a body that redefines an index variable
    def visit_For(self, node: cst.For) -> None:
        for name in _target_names(node.target):
            self.scope.forget(name)
        self._enter_loop(node)

    def leave_For(self, original: cst.For, updated: cst.For):
        updated = self._leave_loop(original, updated)
        return self._loop_directives(original, updated)

    def _loop_directives(self, original: cst.For, updated: cst.For):
        """`for i in nl.sequential_range(n, directives=nki.compiler.no_reorder()):` -> the loop over range(n) inside
        `with nl.no_reorder():`, the current API's way of keeping a block's instructions in source order
        (nki.compiler has no no_reorder now; a range takes no directives). Any other directive is a manual step."""
        loop = original.iter
        if not (isinstance(loop, cst.Call) and self._target(loop.func)[0] == "language" and kwarg(loop, "directives")):
            return updated
        directive = kwarg(loop, "directives").value
        line = self.line(original)
        if not (isinstance(directive, cst.Call) and self._target(directive.func)[1] == "no_reorder" and not directive.args):
            self.notes.manual(
                line, f"directives={code(directive)}", "a range takes no directives: drop it or give the loop its order another way"
            )
            return updated
        iterations = updated.iter.with_changes(args=[a for a in updated.iter.args if not (a.keyword and a.keyword.value == "directives")])
        iterations = iterations.with_changes(
            args=[*iterations.args[:-1], iterations.args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        )
        self.notes.changed(line, f"directives={code(directive)}", "the loop inside `with nl.no_reorder():` (a range takes no directives)")
        inner = updated.with_changes(iter=iterations, leading_lines=[])
        return cst.With(
            items=[cst.WithItem(expr("nl.no_reorder()"))], body=cst.IndentedBlock(body=[inner]), leading_lines=updated.leading_lines
        )

    def visit_While(self, node: cst.While) -> None:
        self._enter_loop(node)

    def leave_While(self, original: cst.While, updated: cst.While):
        return self._leave_loop(original, updated)

    def _enter_loop(self, node) -> None:
        """An index name the body assigns again has, before that assignment, the previous iteration's range from
        the second iteration on: unless the body's definitions are the one before the loop, word for word, over
        names the loop does not change, its accesses there are manual steps."""
        self.loop_frames.append(self.scope.snapshot())
        line = self.line(node)
        changed = _assigned_in(node.body) | set(_target_names(node.target) if isinstance(node, cst.For) else ())
        for name in changed & self.scope.state.known():
            before = self.scope.state.defs.get(name)
            again = _definitions_in(node.body, name)
            if before is not None and all(d == before for d in again) and not (_names_in(before) & changed):
                continue  # the same range on every iteration
            self.scope.forget(name)
            self.scope.poisoned[name] = f"{name} is assigned again later in the body of the loop at line {line}"

    def _leave_loop(self, original, updated):
        before, after = self.loop_frames.pop(), self.scope.snapshot()
        # the body ran (a name it defines exists after the loop only then) or did not (the state before)
        for name in after.known() - before.known():
            if name not in before.poisoned:
                for attr in ("vars", "grids", "masks", "sums"):
                    if name in getattr(after, attr):
                        getattr(before, attr)[name] = getattr(after, attr)[name]
                before.defs[name] = after.defs.get(name, "")
        self._merge([before, after], f"the loop at line {self.line(original)}", self.line(original))
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.scopes.pop()
        self.block_scans.pop()
        self.filled.pop()
        self.dtypes.pop()
        self.ranks.pop()
        self.memories.pop()
        decorators = []
        for d in updated.decorators:
            new = self._decorator(d, original)
            if new is not None:
                decorators.append(new)
        return updated.with_changes(decorators=decorators)

    def _is_subkernel_decorator(self, d: cst.Decorator) -> bool:
        """@nki.jit(mode='trace') / @nki.trace: a sub-kernel, which the migration makes a plain function."""
        dec = d.decorator
        call = dec if isinstance(dec, cst.Call) else None
        kind, name = self._target(call.func if call else dec)
        if kind != "nki":
            return False
        if name == "trace":
            return True
        mode = kwarg(call, "mode") if call is not None and name == "jit" else None
        return mode is not None and code(mode.value).strip("'\"") == "trace"

    def _decorator(self, d: cst.Decorator, fn: cst.FunctionDef) -> cst.Decorator | None:
        dec = d.decorator
        call = dec if isinstance(dec, cst.Call) else None
        target = call.func if call else dec
        kind, name = self._target(target)
        line = self.line(fn)
        if kind == "compiler" and name in _ALLOCATION_PASS_DECORATORS:
            self.notes.changed(line, f"@{code(dec)}", _ALLOCATION_PASS_STEP)
            return None
        if kind != "nki":
            return d
        if name == "jit" and call is not None:
            mode = kwarg(call, "mode")
            if mode is not None and code(mode.value).strip("'\"") == "trace":
                self.notes.changed(line, "@nki.jit(mode='trace')", "removed: sub-kernels are plain functions in the current API")
                return None
            if call.args:
                self.notes.changed(
                    line, code(dec), "@nki.jit (modes and platform options are gone; the target comes from NEURON_PLATFORM_TARGET_OVERRIDE)"
                )
            return d.with_changes(decorator=expr("nki.jit"))
        if name in ("baremetal", "jit"):
            if name == "baremetal":
                self.notes.changed(line, code(dec), "@nki.jit (kernels run standalone with NumPy arrays)")
            return d.with_changes(decorator=expr("nki.jit"))
        if name == "trace":
            self.notes.changed(line, code(dec), "removed: sub-kernels are plain functions")
            return None
        if name in ("benchmark", "profile"):
            self.notes.manual(line, code(dec), f"nki.{name} has no current equivalent: use @nki.jit and `nkidev profile FILE::KERNEL`")
        return d

    def _target(self, node: cst.BaseExpression) -> tuple[str | None, str | None]:
        if isinstance(node, cst.Attribute):
            return self.module_of(node.value), node.attr.value
        if isinstance(node, cst.Name) and self.modules.get(node.value, "").startswith("fn:"):
            return tuple(self.modules[node.value][3:].split("."))
        return None, None

    # ---------------------------------------------------------------- index variables
    def _is(self, call: cst.BaseExpression, kind: str, name: str) -> bool:
        return isinstance(call, cst.Call) and self._target(call.func) == (kind, name)

    def _is_mgrid(self, node: cst.BaseExpression) -> bool:
        return self._target(node) == ("language", "mgrid")

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.hoisted.append([])
        self.trailing.append([])
        for s in node.body:
            value = getattr(s, "value", None)
            if isinstance(s, cst.Assign | cst.AugAssign | cst.Expr) and isinstance(value, cst.Call):
                self.top_calls.add(id(value))
            if isinstance(s, cst.AugAssign):
                for name in _target_names(s.target):
                    was_index = name in self.scope.state.known() or name in self.scope.poisoned
                    self.scope.forget(name)
                    if was_index:
                        self.scope.poisoned[name] = f"{name} is an index updated in place ({code(s)})"
            if not (isinstance(s, cst.Assign) and len(s.targets) == 1):
                continue
            target, value = s.targets[0].target, s.value
            buffer = kwarg(value, "buffer") if isinstance(value, cst.Call) else None
            psum = buffer is not None and (code(buffer.value).endswith("psum") or self._direct_allocator(buffer.value) == "psum")
            if isinstance(target, cst.Name) and psum:
                self.psum_names.add(target.value)
            var = derived_var(value, self.scope, lambda c: self._is(c, "language", "arange"))
            chosen = self._chosen_var(target, value) if var is None else None
            uses_index = self.scope.uses_index(value)
            for name in _target_names(target):
                self.scope.forget(name)  # whatever it was before, this assignment decides
            if var is not None and isinstance(target, cst.Name):
                self._define(target.value, var, code(value))
                continue
            if chosen is not None:
                var, companions = chosen
                self._define(target.value, var, code(value))
                self.trailing[-1].extend(companions)
                self.notes.changed(
                    self.line(s),
                    code(s),
                    "an index chosen by a condition: its start / step / length chosen the same way, so each access slices the one chosen",
                )
                continue
            parts = mgrid_vars(value, self._is_mgrid)
            if parts is not None:
                if isinstance(target, cst.Tuple):
                    for i, (e, v) in enumerate(zip(target.elements, parts)):
                        if isinstance(e.value, cst.Name):
                            self._define(e.value.value, v, f"{code(value)}[{i}]")
                elif isinstance(target, cst.Name):
                    self.scope.grids[target.value] = parts
                    self.scope.state.defs[target.value] = code(value)
                    self.index_names.add(target.value)
                continue
            mask_names = self.scope.masks.keys() & _all_names(value)
            if isinstance(target, cst.Name) and (uses_index or mask_names) and _is_mask(value, self.scope.masks):
                self.scope.masks[target.value] = value
                self.scope.state.defs[target.value] = code(value)
                self.index_names.add(target.value)
            elif isinstance(target, cst.Name) and uses_index and isinstance(value, cst.Subscript):
                # values of a tensor at index positions (a gather's token indices): as a subscript element it is an
                # indirect access, never a number to slice from
                self.scope.poisoned[target.value] = f"{target.value} = {code(value)} holds tensor values (an indirect index)"
            elif isinstance(target, cst.Name) and uses_index and isinstance(value, cst.BinaryOperation) and self._sum(target.value, value):
                pass  # an index sum (`i_h + i_kh`): its accesses become .ap() patterns
            elif isinstance(target, cst.Name) and uses_index and (_is_arithmetic(value) or self._is_helper_call(value)):
                # computed from index variables in a way the rewrite does not follow (two index variables added, a
                # helper of the kernel's own, ...): its uses are manual steps, never rewritten as if it were a plain value
                self.scope.poisoned[target.value] = f"{target.value} = {code(value)} is not an index expression the rewrite follows"
            elif isinstance(target, cst.Name) and _is_comparison(value):
                self.scope.state.flags.add(target.value)  # a plain condition: as a mask it switches the instruction

    def _chosen_var(self, target, value):
        """`i = a if cond else b` with a and b index variables on the same axis (`i_upper if half else i_upper * 2`):
        (the IndexVar whose length, start and step are companion names, the statements that set each of them with
        the same condition) -- an exact range on either path; None for anything else."""
        if not (isinstance(target, cst.Name) and isinstance(value, cst.IfExp)) or self.scope.uses_index(value.test):
            return None
        is_arange = lambda c: self._is(c, "language", "arange")  # noqa: E731
        a, b = derived_var(value.body, self.scope, is_arange), derived_var(value.orelse, self.scope, is_arange)
        if a is None or b is None or (a.rank, a.axis) != (b.rank, b.axis):
            return None
        test = code(value.test)
        parts, companions = [], []
        for what, x, y in (("size", a.length, b.length), ("start", a.start, b.start), ("step", str(a.step), str(b.step))):
            if x == y:
                parts.append(x)
                continue
            name = self._fresh(f"{target.value}_{what}")
            companions.append(stmt(f"{name} = {x} if {test} else {y}"))
            self.index_names.add(name)
            parts.append(name)
        length, start, step = parts
        return IndexVar(a.rank, a.axis, length, start, int(step) if step.lstrip("-").isdigit() else step), companions

    def _sum(self, name: str, value: cst.BaseExpression) -> bool:
        """`name = <a sum of index variables>`: recorded as a Linear form (True), or False when it is not one."""
        try:
            form = self.scope.linear(value)
        except Unsupported:
            return False
        if form is None or len(form.terms) < 2:
            return False
        self.scope.state.sums[name] = form
        self.scope.state.defs[name] = code(value)
        self.index_names.add(name)
        return True

    def _is_helper_call(self, node: cst.BaseExpression) -> bool:
        """A call of a function of the kernel's own (it may return an index expression), not of an NKI module."""
        return isinstance(node, cst.Call) and self._target(node.func)[0] is None

    def _define(self, name: str, var, source: str) -> None:
        self.scope.vars[name] = var
        self.scope.state.defs[name] = source
        self.index_names.add(name)
        if name in self.scope.companions:
            # the variable is assigned again elsewhere (another branch of an if): its range goes along with it
            size, start = self.scope.companions[name]
            self.trailing[-1].extend([stmt(f"{size} = {var.length}"), stmt(f"{start} = {var.start}")])
            self.index_names.update((size, start))

    def _patterns(self, node: cst.Subscript) -> bool:
        """Whether an index sum into this tensor may become an .ap() pattern: not a folded block tensor (its
        elements are not where the legacy shape puts them)."""
        if self.masked_calls:
            return False  # inside a masked call: the mask's slices need the plain form (mask_bounds), not a pattern
        return not (isinstance(node.value, cst.Name) and node.value.value in self.block_scans[-1].fold)

    def visit_Call(self, node: cst.Call) -> None:
        # the accesses whose mask becomes bounds on their slices (elsewhere a mask is dropped: the whole tile is computed)
        target = self._target(node.func)
        if _mask(node) is not None and target in (
            ("language", "load"),
            ("language", "store"),
            ("isa", L.dma_copy.__name__),
        ):
            self.masked_calls.append(id(node))
        # a legacy load reads HBM and a store writes it: those accesses may take any .ap() pattern (no partitions)
        buffer = kwarg(node, "buffer")
        if buffer is not None and self.block_scans and id(node) in self.block_scans[-1].calls:
            self.folded_buffers.add(id(buffer.value))  # the folded allocation replaces its allocator itself
        if target in (("language", "load"), ("language", "store")):
            access = arg_value(node, 0, "src" if target[1] == "load" else "dst")
            if isinstance(access, cst.Subscript):
                self.hbm_access.add(id(access))
                if _mask(node) is not None:
                    self.masked_access.add(id(access))

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript):
        hbm = id(original) in self.hbm_access
        try:
            new = rewrite_subscript(updated, self.scope, patterns=self._patterns(updated), hbm=hbm)
        except Unsupported as e:
            if id(original) in self.masked_access:
                return updated  # the masked load / store rewrites it with the mask's bounds (or says why it cannot)
            self.notes.manual(self.line(original), code(original), f"rewrite this index by hand (slices or .ap()): {e}")
            return updated
        if isinstance(new, cst.Call):
            self.notes.changed(
                self.line(original), code(original), "an index sum as an .ap() access pattern: one [step, num] pair per index axis"
            )
            return new
        if new is not None:
            self.notes.changed(self.line(original), code(original), "nl.arange / nl.mgrid indices as slices")
        return self._unblock(new if new is not None else updated)

    def leave_AssignTarget(self, original: cst.AssignTarget, updated: cst.AssignTarget):
        """`t[i_p, i_y + i_x] = value` became `t.ap(...)`, which is no assignment target: `t.ap(...)[...] = value`."""
        if isinstance(updated.target, cst.Call):
            return updated.with_changes(target=_whole(updated.target))
        return updated

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign):
        if isinstance(updated.target, cst.Call):
            return updated.with_changes(target=_whole(updated.target))
        return updated

    # ---------------------------------------------------------------- expressions
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if updated.attr.value in INDEX_ATTRIBUTES:
            # LibCST rebuilds every node it visits: an index expression left in the code is found again by the id
            # of this node (kept alive here), so its manual step can name the original file's line
            self.index_origins[id(updated)] = (self.line(original), updated)
            return updated
        if updated.attr.value in ("min", "max") and isinstance(updated.value, cst.Attribute) and updated.value.attr.value == "fp32":
            if self.module_of(updated.value.value) in ("language", "isa"):
                return expr("-3.4028235e38" if updated.attr.value == "min" else "3.4028235e38")
        if updated.attr.value == "hbm" and self.module_of(updated.value) == "language":
            return updated  # fixed for returned tensors in leave_SimpleStatementLine
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if self.masked_calls and self.masked_calls[-1] == id(original):
            self.masked_calls.pop()
        kind, name = self._target(updated.func)
        line = self.line(original)
        if kind is None:
            return self._inner_call(original, updated, line)
        if kind == "language":
            if name == "par_dim":
                return updated.args[0].value
            if name in ("affine_range", "sequential_range", "static_range"):
                self.notes.changed(line, f"nl.{name}", "range (static ranges are Python ranges in the current API)")
                return updated.with_changes(func=cst.Name("range"))
            if name in ("arange", "mgrid"):
                return updated
            scan = self.block_scans[-1]
            if id(original) in scan.calls:
                folded = blocks.folded_shape(updated, blocks.par_position(original, self._is_par_dim))
                self.notes.changed(
                    line,
                    code(original.args[0].value),
                    f"{code(folded.args[0].value)}: the block dims folded into the free dims behind the partition dim "
                    "(all blocks live at once; allocating one (P, F) tile inside the loop over blocks needs less memory)",
                )
                updated = folded
                buffer = kwarg(updated, "buffer")
                region = None if buffer is None else self._direct_allocator(buffer.value)
                if region is not None:
                    # the legacy front end gives every block storage of its own, as the folded tensor does
                    self.notes.changed(
                        line,
                        f"buffer={code(buffer.value)}",
                        f"buffer=nl.{region}: the folded tensor holds every block at once, so the allocator's placement of "
                        "each block goes (the migration guide's list of tiles at computed addresses would keep it)",
                    )
                    updated = updated.with_changes(
                        args=[keyword("buffer", expr(f"nl.{region}")) if a is buffer else a for a in updated.args]
                    )
            elif name in ("ndarray", "zeros", "ones", "full", "empty_like", "zeros_like") and updated.args:
                shape = updated.args[0].value
                if (
                    isinstance(shape, cst.Tuple | cst.List)
                    and any("par_dim" in code(e.value) for e in shape.elements[1:])
                    or self._block_shape(original)
                ):
                    where, why = scan.manual.get(id(original), (line, None))
                    buffer = kwarg(original, "buffer")
                    if why is None and buffer is not None and not code(buffer.value).endswith(("sbuf", "psum")):
                        why = f"buffer={code(buffer.value)} is not nl.sbuf or nl.psum (an allocator places each block)"
                    self.notes.manual(
                        line,
                        code(original.args[0].value),
                        "block dims (nl.par_dim not leftmost) are gone: use a list of (P, F) tiles, fold the blocks "
                        "into a free dim (P, B, F), or allocate each block inside its loop"
                        + (f" (not folded automatically: line {where}: {why})" if why is not None else ""),
                    )
            if name in _REORDERABLE_REDUCTIONS:
                updated = self._reduce_last(updated, name, line, original)
            if name == "shared_constant":
                updated = self._cast_constant(updated, line)
            if name == "load_transpose2d" and kwarg(updated, "dtype") is not None and code(kwarg(updated, "dtype").value) != "None":
                updated = self._transpose_then_cast(updated, line)
            if name == "num_programs" and not updated.args:
                self.notes.manual(line, "nl.num_programs()", "the default is now axis 0, not all axes: pass the axes you mean")
            if kwarg(updated, "mask") is not None and _mask(updated) is None:
                updated = without_kwargs(updated, {"mask"})  # mask=None is no mask (machine-generated kernels spell it)
            if kwarg(updated, "mask") is not None and name not in ("load", "store"):
                self.notes.changed(
                    line, f"nl.{name}(..., mask=...)", "mask dropped: the whole tile is computed (masked-off values were undefined)"
                )
                updated = without_kwargs(updated, {"mask"})
            if name in _ARITHMETIC:
                updated = self._promoted_arithmetic(updated, name, line)
            if name == "transpose":
                return self._transpose_to_sbuf(self._map_ops(updated, line), line)
            return self._map_ops(updated, line)
        if kind == "nki":
            return self._harness_call(updated, name, line)
        if kind == "isa" and name in LEGACY_SIGNATURES and id(original) not in self.top_calls:
            return self._hoist(updated, name, line)
        if kind == "isa" and name in NO_EQUIVALENT:
            self.notes.manual(line, f"nisa.{name}", NO_EQUIVALENT[name])
        return updated

    def leave_Module(self, original: cst.Module, updated: cst.Module):
        """Rewritten ISA calls need `nisa`: import nki.isa when the file does not."""
        updated = self._without_unused_allocators(updated)
        text = updated.code
        # the rewrites write `nisa.`: the isa module bound under another name (`import neuronxcc.nki.isa as ni`) is not it
        has_isa = self.modules.get("nisa") == "isa" or "import nki.isa as nisa" in text
        if "nisa." not in text or has_isa:
            return updated
        body = list(updated.body)
        at = max((i for i, st in enumerate(body) if "import nki" in cst.Module([st]).code), default=-1)
        body.insert(at + 1, stmt("import nki.isa as nisa"))
        return updated.with_changes(body=body)

    def _promoted_arithmetic(self, call: cst.Call, name: str, line: int) -> cst.Call:
        """`nl.multiply(x, 3.0)` without dtype=: the legacy result has the promotion of both operands' dtypes, a Python
        float counting as float32 and an int as int32 ("NKI Type Promotion" and "Weakly Typed Scalar Type Inference",
        https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.0/general/nki/api/nki.api.shared.html: a float16 tile
        times 1.2 is float32). The current pages give these ops no default result dtype (nki.language.multiply,
        https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.language.multiply.html) and
        the current API here gives the first tile's, so the legacy dtype is passed as dtype= when it can differ: always
        for a float literal (float32 is the widest float), for an int literal or a second tile when the dtypes are
        known. Operands of dtypes not known here (two tiles, an int literal) are left as they are."""
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) > 2 or kwarg(call, "dtype") is not None:
            return call
        operands = [arg_value(call, i, n) for i, n in enumerate(("x", "y"))]
        if any(v is None for v in operands):
            return call
        dtypes = self.dtypes[-1]

        def dtype_of(v) -> tuple[str | None, bool]:  # (dtype name, is a tile)
            if isinstance(v, cst.Float) or (isinstance(v, cst.UnaryOperation) and isinstance(v.expression, cst.Float)):
                return "float32", False
            if literal_int(v) is not None:
                return "int32", False
            known = dtypes.get(_base_name(v) or "")
            key = None if known is None else _dtype_key(known)
            return (key if key in _NAMED else None), True

        (a, a_tile), (b, b_tile) = dtype_of(operands[0]), dtype_of(operands[1])
        if not (a_tile or b_tile):
            return call
        kept = a if a_tile else b  # the current API's result dtype: the first tile's
        if a_tile and b_tile:
            if a is None or b is None:
                return call
            legacy = LN.promote(to_nki_dtype(a), to_nki_dtype(b)).name
        else:
            scalar = b if a_tile else a
            if scalar == "float32":
                legacy = "float32"  # wider than or equal to any tile dtype, float or int
            elif kept is None:
                return call
            else:
                legacy = LN.promote(to_nki_dtype(kept), to_nki_dtype(scalar)).name
        if legacy == kept:
            return call
        self.notes.changed(
            line,
            f"nl.{name}({code(operands[0])}, {code(operands[1])})",
            f"dtype=nl.{legacy}: the legacy result dtype (the promotion of both operands, a Python float as float32, an int "
            "as int32); the current API gives the tile's own",
        )
        return call.with_changes(args=[*call.args, keyword("dtype", expr(f"nl.{legacy}"))])

    def _without_unused_allocators(self, module: cst.Module) -> cst.Module:
        """`sb_mod = nki.compiler.sbuf.mod_alloc` goes once no allocation uses sb_mod (nki.compiler has no sbuf now)."""
        if not self.allocators:
            return module
        used = set()

        class Uses(cst.CSTVisitor):
            def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
                used.add(n.value)

        body = []
        for st in module.body:
            single = isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign)
            target = st.body[0].targets[0].target if single and len(st.body[0].targets) == 1 else None
            if not (isinstance(target, cst.Name) and target.value in self.allocators):
                st.visit(Uses())
        for st in module.body:
            single = isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign)
            target = st.body[0].targets[0].target if single and len(st.body[0].targets) == 1 else None
            if isinstance(target, cst.Name) and target.value in self.allocators and target.value not in used:
                continue
            body.append(st)
        return module.with_changes(body=body)

    def _reduce_last(self, call: cst.Call, name: str, line: int, original: cst.Call | None = None) -> cst.Call:
        """`nl.max(t.ap(pattern=[a, b, c, d]), axis=[1, 3])` -> `nl.max(t.ap(pattern=[a, c, b, d]), axis=[2, 3])`: the
        current API reduces the last free axes only, and an access pattern can list its axes in any order. The kept
        axes keep their order and the reduced ones follow in order, as the legacy front end permutes them before it
        reduces the trailing axes: the same values in the same order for sum / prod / mean too."""
        data, axis = arg_value(call, 0, "x"), kwarg(call, "axis")
        if axis is None and len(call.args) > 1 and call.args[1].keyword is None:
            axis = call.args[1]
        given, shown = data, "t.ap(...)"
        if original is not None and axis is not None and not isinstance(data, cst.Name) and not _is_ap(data):
            data = self._hoisted_operand(call, arg_value(original, 0, "x"), data, axis, name, line)
        if isinstance(data, cst.Name) and axis is not None:
            shown = data.value
            data = self._plain_reduce_access(call, name, data, axis, line)
            if data is None:
                return call
        if not (isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute) and data.func.attr.value == "ap"):
            return call
        pattern = kwarg(data, "pattern")
        keepdims = _keepdims(call)
        if axis is None or pattern is None or not isinstance(pattern.value, cst.List) or keepdims is None:
            return call  # keepdims not a literal: whether the kept 1-dims move is not known here
        pairs = list(pattern.value.elements)
        values = axis.value.elements if isinstance(axis.value, cst.List | cst.Tuple) else [cst.Element(axis.value)]
        axes = [literal_int(e.value) for e in values]
        n = len(pairs)
        if any(a is None for a in axes) or not axes or len(set(axes)) != len(axes):
            return call
        axes = sorted(a % n for a in axes)
        if 0 in axes or axes == list(range(n - len(axes), n)):
            return call
        kept = [p for i, p in enumerate(pairs) if i not in axes]
        order = kept + [pairs[a] for a in axes]
        order = [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in order]
        new_data = data.with_changes(
            args=[a.with_changes(value=pattern.value.with_changes(elements=order)) if a is pattern else a for a in data.args]
        )
        new_axis = expr("[" + ", ".join(str(i) for i in range(len(kept), n)) + "]")
        self.notes.changed(
            line,
            f"nl.{name}({shown}, axis={code(axis.value)})",
            f"the reduced axes' pattern pairs moved last (axis={code(new_axis)}): the current API reduces the last free axes only",
        )
        args = []
        for a in call.args:
            if a is axis:
                args.append(a.with_changes(value=new_axis))
            elif a.value is given:
                args.append(a.with_changes(value=new_data))
            else:
                args.append(a)
        reduced = call.with_changes(args=args)
        if not keepdims:
            return reduced
        # keepdims=True leaves the 1-dims last; the legacy result has them where the reduced axes were
        dims = ["1" if i in axes else code(p.value.elements[1].value) for i, p in enumerate(pairs)]
        return cst.Call(func=cst.Attribute(value=reduced, attr=cst.Name("reshape")), args=[cst.Arg(expr(f"({', '.join(dims)})"))])

    def _hoisted_operand(self, call, legacy, data, axis: cst.Arg, name: str, line: int):
        """`nl.sum(nl.exp(t), axis=1)` over a rank-3 operand: `_reduced_1 = nl.exp(t)` first (in the statements
        before), so that the reduction can read it through an access pattern; the operand as it was when its rank
        is not known or the axes are the last ones already."""
        rank = None if legacy is None else self.ranks[-1].of(legacy)
        values = axis.value.elements if isinstance(axis.value, cst.List | cst.Tuple) else [cst.Element(axis.value)]
        axes = [literal_int(e.value) for e in values]
        if rank is None or not axes or any(a is None for a in axes) or len(set(axes)) != len(axes):
            return data
        norm = sorted(a % rank for a in axes)
        if 0 in norm or norm == list(range(rank - len(norm), rank)):
            return data
        if not self.hoisted or _keepdims(call) is None:
            self.notes.manual(
                line,
                f"nl.{name}(..., axis={code(axis.value)})",
                "bind the reduced operand to a name and reduce name.ap(pattern=...) with the reduced axes' pairs last "
                "(the current reductions take the last free axes only)",
            )
            return data
        self.counter += 1
        temp = f"_reduced_{self.counter}"
        self.hoisted[-1].append(stmt(f"{temp} = {code(data)}"))
        self.ranks[-1].add(temp, rank)
        return cst.Name(temp)

    def _plain_reduce_access(self, call: cst.Call, name: str, tile: cst.Name, axis: cst.Arg, line: int) -> cst.Call | None:
        """For `nl.max(t, axis=1)` over a plain tile of rank 3: `t.ap(pattern=...)` listing t's own dims in order
        (row-major steps), which _reduce_last then reorders; None when the axes are the last ones already (nothing
        to do) or t's rank is not known here: then axes that cannot be the last ones of any tile (axis=[1, 3]) are a
        manual note. The legacy reduction takes any free axes (the legacy front end permutes the kept axes first,
        like numpy.max); the current one only the last contiguous ones ("can only be the last contiguous dim(s) of
        the tile", https://awsdocs-neuron.readthedocs-hosted.com/general/nki/api/generated/nki.language.max.html)."""
        values = axis.value.elements if isinstance(axis.value, cst.List | cst.Tuple) else [cst.Element(axis.value)]
        axes = [literal_int(e.value) for e in values]
        if not axes or any(a is None for a in axes) or len(set(axes)) != len(axes):
            return None
        rank = self.ranks[-1].get(tile.value)
        t = tile.value
        if rank is None:
            if all(a < 0 for a in axes) and sorted(axes) == list(range(-len(axes), 0)):
                return None  # the last axes of any rank
            positive = sorted(a for a in axes if a >= 0)
            if any(a < 0 for a in axes) or positive != list(range(positive[0], positive[0] + len(positive))):
                self.notes.manual(
                    line,
                    f"nl.{name}({t}, axis={code(axis.value)})",
                    f"the current nl.{name} reduces the last contiguous free axes only: reduce over "
                    f"{t}.ap(pattern=...) listing the reduced axes' [step, num] pairs last ({t}'s rank is not known here)",
                )
            else:
                # axes that are the last ones of a tile of one rank only: the file does not show t's (ranks.py)
                self.notes.manual(
                    line,
                    f"nl.{name}({t}, axis={code(axis.value)})",
                    f"kept as it was: right only if {t} has {positive[-1] + 1} dims ({t}'s rank is not shown here); "
                    f"with more, reduce {t}.ap(pattern=...) listing the reduced axes' [step, num] pairs last (the "
                    f"current nl.{name} reduces the last free axes only)",
                )
            return None
        norm = sorted(a % rank for a in axes)
        if 0 in norm or norm == list(range(rank - len(norm), rank)):
            return None  # the partition axis: the legacy API rejects it too
        if _keepdims(call) is None:
            self.notes.manual(
                line,
                f"nl.{name}({t}, axis={code(axis.value)}, keepdims=...)",
                f"reduce {t}.ap(pattern=...) with the reduced axes' pairs last, then reshape for the kept dims",
            )
            return None

        def step(i):
            return " * ".join(f"{t}.shape[{j}]" for j in range(i + 1, rank)) or "1"

        pairs = ", ".join(f"[{step(i)}, {t}.shape[{i}]]" for i in range(rank))
        return expr(f"{t}.ap(pattern=[{pairs}], offset=0)")

    def _cast_constant(self, call: cst.Call, line: int) -> cst.Call:
        """`nl.shared_constant(c, dtype=D)` -> `nl.shared_constant(np.asarray(c).astype(D))`: the legacy call casts the
        constant to D; the current one takes the constant only ("shared_constant(constant)", its element type the
        array's: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.language.shared_constant.html).
        An nl dtype is a NumPy dtype-like, so the cast happens on the host, as the legacy front end's does."""
        dtype = kwarg(call, "dtype")
        if dtype is None and len(call.args) > 1 and call.args[1].keyword is None:
            dtype = call.args[1]
        constant = arg_value(call, 0, "constant")
        if dtype is None or constant is None or code(dtype.value) == "None":
            return without_kwargs(call, {"dtype"}) if dtype is not None else call
        construct = f"nl.shared_constant({code(constant)}, dtype={code(dtype.value)})"
        if self.numpy is None:
            step = "cast the constant on the host (numpy .astype(D)) and drop dtype=: the current call has none"
            self.notes.manual(line, construct, step)
            return call
        cast = expr(f"{self.numpy}.asarray({code(constant)}).astype({code(dtype.value)})")
        self.notes.changed(line, construct, f"nl.shared_constant({code(cast)}): the current call has no dtype=")
        return call.with_changes(args=[cst.Arg(cast)])

    def _transpose_then_cast(self, call: cst.Call, line: int) -> cst.Call:
        """`nl.load_transpose2d(src, dtype=D)` -> `nl.copy(nl.load_transpose2d(src), dtype=D)`. The legacy load
        DMA-transposes at the source's dtype and then casts to D ("dtype: data type to cast the output type to",
        https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.load_transpose2d.html,
        the neuronxcc page); the current one is a dma_transpose into a D tile, which a DMA transpose rejects for a D
        other than the source's (err_dtype_mismatch). A copy to D after the transpose is the legacy cast: the same
        values."""
        dtype = kwarg(call, "dtype")
        load = without_kwargs(call, {"dtype"})
        if load.args:
            load = load.with_changes(args=[*load.args[:-1], load.args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        self.notes.changed(
            line,
            f"nl.load_transpose2d(..., dtype={code(dtype.value)})",
            f"nl.copy(nl.load_transpose2d(...), dtype={code(dtype.value)}): transposed at the source's dtype, then cast, "
            "as the legacy load did (a DMA transpose does not cast)",
        )
        return cst.Call(func=expr("nl.copy"), args=[cst.Arg(load), keyword("dtype", dtype.value)])

    def _transpose_to_sbuf(self, call: cst.Call, line: int) -> cst.Call:
        """`nl.transpose(x, dtype=D)` -> `nl.copy(nl.transpose(x), dtype=D)`. The legacy transpose gives an SBUF tile
        (the Tensor Engine's PSUM result copied out, cast to D), the current one the PSUM tile itself (its page's
        example names it result_psum and copies it to SBUF with nisa.tensor_copy,
        https://awsdocs-neuron.readthedocs-hosted.com/general/nki/api/generated/nki.language.transpose.html), which a
        matmul operand or a store cannot read: the copy is the legacy one, the same bits."""
        dtype = kwarg(call, "dtype")
        inner = without_kwargs(call, {"dtype"})
        copied = cst.Call(func=expr("nl.copy"), args=[cst.Arg(inner)] + ([keyword("dtype", dtype.value)] if dtype is not None else []))
        self.notes.changed(
            line,
            "nl.transpose(x)",
            "nl.copy(nl.transpose(x)): the current transpose leaves its result in PSUM; the legacy one copied it to SBUF",
        )
        return copied

    def _block_shape(self, call: cst.Call) -> bool:
        if not call.args:
            return False
        shape = call.args[0].value
        return isinstance(shape, cst.Tuple | cst.List) and any(
            isinstance(e.value, cst.Call) and self._target(e.value.func) == ("language", "par_dim") for e in shape.elements[1:]
        )

    def _inner_call(self, original: cst.Call, call: cst.Call, line: int):
        region = self._direct_allocator(call)
        if region is not None and id(original) not in self.folded_buffers:
            # a direct allocator's placement outside a folded block tensor (a plain tile's buffer=, or a helper
            # returning one): the legacy emulator gives the tile storage of its own, as nl.sbuf / nl.psum does
            self.notes.changed(line, code(original), f"nl.{region}: the current API has no direct allocator (the placement goes)")
            return expr(f"nl.{region}")
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "broadcast_to" and len(call.args) == 1:
            # the legacy tile method; the current API has nl.broadcast_to(x, shape)
            shape = call.args[0].value
            self.notes.changed(line, "tile.broadcast_to(shape)", "nl.broadcast_to(tile, shape=shape)")
            return cst.Call(func=expr("nl.broadcast_to"), args=[cst.Arg(call.func.value), keyword("shape", shape)])
        # kernel[grid](...) and nki.baremetal(k)[grid] forms are handled where the kernel is named
        if isinstance(call.func, cst.Call):
            inner_kind, inner = self._target(call.func.func)
            if inner_kind == "nki" and inner in ("baremetal", "jit", "benchmark", "profile") and len(call.args) == 1:
                if inner in ("benchmark", "profile"):
                    self.notes.manual(line, code(call), f"nki.{inner} has no current equivalent; use `nkidev profile`")
                    return call
                self.notes.changed(line, code(call), "nki.jit(kernel)")
                return cst.Call(func=expr("nki.jit"), args=[call.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        return call

    def _harness_call(self, call: cst.Call, name: str, line: int):
        if name == "simulate_kernel" and call.args:
            kernel, rest = call.args[0], list(call.args[1:])
            self.notes.changed(line, "nki.simulate_kernel(kernel, *args)", "nki.simulate(kernel)(*args)")
            inner = cst.Call(func=expr("nki.simulate"), args=[kernel.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
            return cst.Call(func=inner, args=rest)
        if name in ("baremetal", "jit") and call.args and call.args[0].keyword is None:
            if name == "baremetal" or len(call.args) > 1:
                self.notes.changed(line, code(call), "nki.jit(kernel)")
            return cst.Call(func=expr("nki.jit"), args=[call.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        if name in ("benchmark", "profile"):
            self.notes.manual(line, code(call), f"nki.{name} has no current equivalent: use @nki.jit and `nkidev profile FILE::KERNEL`")
        return call

    def _map_ops(self, call: cst.Call, line: int) -> cst.Call:
        """NumPy op specifiers (np.add, np.max, ...) as nl ones, and the legacy reductions passed as ops (op=nl.max)
        as the element-wise op each stood for (nl.maximum): the current ISA ops reject a reduction as op."""
        args = []
        for a in call.args:
            v = a.value
            if a.keyword is not None and a.keyword.value in OP_KWARGS and isinstance(v, cst.Attribute):
                if v.attr.value in REDUCTION_OPS and self.module_of(v.value) == "language":
                    op = REDUCTION_OPS[v.attr.value]
                    self.notes.changed(line, f"{a.keyword.value}=nl.{v.attr.value}", f"{a.keyword.value}=nl.{op} (the element-wise op)")
                    a = a.with_changes(value=expr(f"nl.{op}"))
                    v = a.value
            if (a.keyword is not None and a.keyword.value in OP_KWARGS) or a.keyword is None:
                if isinstance(v, cst.Attribute) and isinstance(v.value, cst.Name) and v.value.value in ("np", "numpy"):
                    mapped = NUMPY_OPS.get(v.attr.value)
                    if mapped is not None and (a.keyword is not None or v.attr.value in ("exp", "square", "tanh", "copy", "log", "sqrt")):
                        a = a.with_changes(value=expr(f"nl.{mapped}"))
            args.append(a)
        return call.with_changes(args=args)

    # ---------------------------------------------------------------- ISA calls that return their result
    def _hoist(self, call: cst.Call, name: str, line: int):
        """A legacy ISA call inside an expression: allocate its result first (in the statements before)."""
        self.counter += 1
        temp = f"_{name}_{self.counter}"
        made = self._isa_statements(call, name, line, dst=None, target=temp)
        if made is None:
            return call
        self.hoisted[-1].extend(made)
        return cst.Name(temp)

    def _keywords(self, call: cst.Call, name: str) -> dict[str, cst.BaseExpression]:
        positional = LEGACY_SIGNATURES.get(name, ())
        out, i = {}, 0
        for a in call.args:
            if a.keyword is not None:
                out[a.keyword.value] = a.value
            elif not a.star:
                if i < len(positional):
                    out[positional[i]] = a.value
                i += 1
        return out

    def _isa_statements(self, call: cst.Call, name: str, line: int, dst, target: str | None) -> list[cst.BaseStatement] | None:
        """`target = nisa.op(...)` (or `dst[...] = nisa.op(...)` when dst is given) in the current form: the result
        tile allocated with nl.ndarray, then the op with dst=. None when the op has no mechanical rewrite."""
        kw = self._keywords(call, name)
        dtype = kw.pop("dtype", None)
        mask = kw.pop("mask", None)
        if mask is not None and code(mask) != "None":
            self.notes.changed(
                line, f"nisa.{name}(..., mask=...)", "mask dropped: the whole tile is computed (masked-off values were undefined)"
            )
        alloc = copy = None
        if dst is not None and dtype is None and not self._result_in_psum(name, kw):
            # `t[...] = nisa.op(...)` without dtype=: the legacy op still rounds its result to a dtype of its own (its
            # input's, or the promotion of two inputs'), which need not be t's: bf16 inputs into an f32 tile
            dtype = implicit = self._legacy_result_dtype(name, kw, dst, line)
            if dtype is False:
                return None
        else:
            implicit = None
        rounded = dst is not None and dtype is not None and not self._result_in_psum(name, kw)
        dst_dtype = self.dtypes[-1].get(_base_name(dst) or "") if dst is not None else None
        if rounded and _same_dtype(code(dtype), dst_dtype):
            rounded = False  # dst is allocated with that dtype: the op writes it at dst's own dtype, the same values
        elif rounded and _dtype_key(code(dtype)) == "float32" and dst_dtype is not None and _dtype_key(dst_dtype) in _FLOATS:
            # the engines compute in float32 (same pages: "performs the element-wise operation in float32 math"): a
            # float32 result rounded to a float dst is what the op writing dst directly gives (not for memset / iota,
            # whose values are not engine results)
            rounded = name in (L.memset.__name__, L.iota.__name__)
        if rounded:
            # `t[...] = nisa.op(..., dtype=D)`: the legacy op rounds its result to D (the legacy ISA pages: "cast to
            # the target data type specified in the dtype field before written into the output tile", e.g.
            # https://awsdocs-neuron.readthedocs-hosted.com/en/v2.21.0.beta/general/nki/api/generated/nki.isa.tensor_tensor.html)
            # and the assignment then copies that tile into t. A dst= op would round to t's dtype only, so go through a
            # tile of dtype D and copy it into t (a narrower D than t's dtype rounds the values)
            self.counter += 1
            target, copy = f"_{name}_{self.counter}", stmt(f"nisa.tensor_copy(dst={code(dst)}, src=_{name}_{self.counter})")
            dst = None
        elif dst is not None and self._result_in_psum(name, kw) and _base_name(dst) not in self.psum_names:
            # `sbuf_tile[...] = nisa.nc_transpose(...)`: the legacy result is a PSUM tile the assignment copies out;
            # the current op writes PSUM only, so go through a PSUM tile and copy it to the destination
            self.counter += 1
            target, copy = f"{name}_psum_{self.counter}", stmt(f"nisa.tensor_copy(dst={code(dst)}, src={name}_psum_{self.counter})")
            dst = None
        if dst is None:
            alloc = self._result_alloc(name, kw, dtype, line, target)
            if alloc is None:
                return None
            dst = cst.Name(target)
        body = self._current_call(name, kw, dst, line)
        if body is None:
            return None
        staged = body[:-1] if isinstance(body, list) else []
        body = body[-1] if isinstance(body, list) else body
        if rounded and implicit is not None:
            self.notes.changed(
                line,
                f"t[...] = nisa.{name}(...) without dtype=",
                f"nisa.{name} into a new {code(dtype)} tile (the legacy result dtype), then nisa.tensor_copy into t: "
                "the result rounded to that dtype first, as before",
            )
        elif rounded:
            self.notes.changed(
                line,
                f"t[...] = nisa.{name}(..., dtype={code(dtype)})",
                f"nisa.{name} into a new {code(dtype)} tile, then nisa.tensor_copy into t: the result rounded to dtype first, as before",
            )
        else:
            self.notes.changed(line, f"nisa.{name}(...) returning a tile", f"nisa.{name}(dst=..., ...) with the result allocated first")
        return ([alloc] if alloc is not None else []) + staged + [body] + ([copy] if copy is not None else [])

    def _legacy_result_dtype(self, name: str, kw: dict, dst, line: int):
        """The dtype (an expression) a legacy op without dtype= gives its result when the assignment then copies it
        into `dst`; None when writing dst directly gives the same values (the result dtype is dst's, or float32 into
        a float dst); False (with a manual note) when it is the promotion of dtypes not known here."""
        dtypes = self.dtypes[-1]

        def known(param):
            v = kw.get(param)
            return None if v is None else dtypes.get(_base_name(v) or "")

        if name in MOVES:
            return None  # the result holds input values unchanged (its dtype's): copying it into dst rounds once too
        if name == L.nc_find_index8.__name__:
            result = "nl.uint32"
        elif name in PROMOTED:
            result = self._promoted_dtype(
                name, kw, line, "t[...]", "then is copied into t; writing t directly would round once, to t's dtype"
            )
            if result is None or result is False:
                return result
        else:
            param = SHAPED_LIKE.get(name) or DTYPE_FROM.get(name) or (PER_PARTITION.get(name) or (None,))[0]
            if param is None or kw.get(param) is None:
                return None
            result = known(param) or f"{code(kw[param])}.dtype"
        dst_dtype = dtypes.get(_base_name(dst) or "")
        if _same_dtype(result, dst_dtype):
            return None
        if _dtype_key(result) == "float32" and dst_dtype is not None and _dtype_key(dst_dtype) in _FLOATS:
            return None
        return expr(result)

    def _promoted_dtype(self, name: str, kw: dict, line: int, target: str, why: str) -> str | None | bool:
        """The legacy result dtype (source text) of an op of two inputs without dtype=: the promotion of their dtypes
        (the legacy pages: "the same as the data type of data1 or data2, whichever has the higher precision",
        https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/api/generated/nki.isa.tensor_tensor.html);
        None when an input is missing; False, with a manual note at the line, when the dtypes are not known here and
        may differ (`x = nl.load(a)` and `y = nl.load(b)`: a's and b's)."""
        dtypes = self.dtypes[-1]
        first, second = PROMOTED[name]
        if kw.get(first) is None or kw.get(second) is None:
            return None
        a, b = (dtypes.get(_base_name(kw[p]) or "") for p in (first, second))
        if a is not None and b is not None and _same_dtype(a, b):
            return a
        if a is not None and b is not None and _dtype_key(a) in _NAMED and _dtype_key(b) in _NAMED:
            return "nl." + LN.promote(to_nki_dtype(_dtype_key(a)), to_nki_dtype(_dtype_key(b))).name
        self.notes.manual(
            line,
            # a hoisted call's result (_tensor_tensor_3) has no name in the user's file
            f"{'' if target.startswith('_') else target + ' = '}nisa.{name}({first}, {second}, ...)",
            f"pass dtype=: the legacy result has the promoted dtype of {code(kw[first])} and {code(kw[second])} (not known here), {why}",
        )
        return False

    @staticmethod
    def _result_in_psum(name: str, kw: dict) -> bool:
        """Whether the legacy op returns its result in PSUM (TensorE: matmul, and transpose unless on VectorE)."""
        if name == L.nc_matmul.__name__:
            return True
        engine = kw.get("engine")
        return name == L.nc_transpose.__name__ and not (engine is not None and code(engine).endswith("vector"))

    def _result_alloc(self, name: str, kw: dict, dtype, line: int, target: str) -> cst.BaseStatement | None:
        def like(param):
            v = kw.get(param)
            return code(v) if v is not None else None

        def dtypes_of(v):
            return self.dtypes[-1].get(_base_name(v) or "")

        buffer = "nl.sbuf"
        if name == L.nc_matmul.__name__:
            s, m = like("stationary"), like("moving")
            shape, dt, buffer = f"({s}.shape[1], {m}.shape[1])", "nl.float32", "nl.psum"
        elif name == L.nc_transpose.__name__:
            d = like("data")
            shape, dt = f"({d}.shape[1], {d}.shape[0])", f"{d}.dtype"
            engine = kw.get("engine")
            buffer = "nl.sbuf" if engine is not None and code(engine).endswith("vector") else "nl.psum"
        elif name in SHAPED_LIKE:
            d = like(SHAPED_LIKE[name])
            shape, dt = f"{d}.shape", f"{d}.dtype"
            if name in PROMOTED and dtype is None:
                # `x = nisa.tensor_tensor(bf16_tile, f32_tile, ...)`: a float32 result in the legacy API, not data1's
                # (dtypes not known here: allocated with data1's, which is right when both are the same, and a note)
                why = f"the result is allocated with {d}'s dtype: right only when both have the same dtype"
                promoted = self._promoted_dtype(name, kw, line, target, why)
                if promoted not in (None, False) and not _same_dtype(promoted, dtypes_of(kw[SHAPED_LIKE[name]])):
                    dt = promoted
        elif name in PER_PARTITION:
            param, width = PER_PARTITION[name]
            d = like(param)
            shape, dt = f"({d}.shape[0], {width})", ("nl.uint32" if name == L.nc_find_index8.__name__ else f"{d}.dtype")
        elif name == L.tensor_reduce.__name__:
            d, axis = like("data"), kw.get("axis")
            if axis is None or code(axis).replace(" ", "") not in ("1", "-1", "[1]", "(1,)", "[-1]") or "keepdims" in kw:
                self.notes.manual(
                    line, f"nisa.tensor_reduce(axis={code(axis) if axis else '?'})", "allocate dst with the kept dims and pass it as dst="
                )
                return None
            shape, dt = f"({d}.shape[0], 1)", f"{d}.dtype"
        elif name == L.tensor_partition_reduce.__name__:
            d = like("data")
            shape, dt = f"(1, {d}.shape[1])", f"{d}.dtype"
        elif name == L.memset.__name__:
            shape, dt = like("shape"), like("dtype") or (code(dtype) if dtype is not None else None)
            kw.pop("shape", None)
            if dt is None:
                return None
            kw.pop("dtype", None)
        elif name == L.dma_transpose.__name__ and "axes" not in kw:
            s = like("src")
            shape, dt = f"({s}.shape[1], {s}.shape[0])", f"{s}.dtype"
        elif name == L.iota.__name__:
            return self._iota_alloc(kw, dtype, line, target)
        elif name == L.affine_select.__name__:
            d = like("on_true_tile")
            shape, dt = f"{d}.shape", f"{d}.dtype"
        else:
            self.notes.manual(line, f"nisa.{name}", "allocate the result with nl.ndarray and pass it as dst=")
            return None
        if None in (shape, dt):
            return None
        if dtype is not None:
            dt = code(dtype)
        if buffer == "nl.psum":
            self.psum_names.add(target)  # a TensorE result: what reads it next may need it in SBUF
        return _plain_ap_reads(stmt(f"{target} = nl.ndarray({shape}, dtype={dt}, buffer={buffer})"))

    def _iota_alloc(self, kw, dtype, line, target):
        e = kw.get("expr")
        dt = code(dtype) if dtype is not None else (code(kw["dtype"]) if "dtype" in kw else None)
        try:
            a = self.scope.affine(e) if e is not None else None
        except Unsupported:
            a = None
        if a is None or a.var.rank != 2 or dt is None:
            self.notes.manual(
                line, "nisa.iota(expr, dtype)", "allocate dst and call nisa.iota(dst, pattern=[[step, num]], offset=, channel_multiplier=)"
            )
            return None
        shape = f"({a.var.length}, 1)" if a.var.axis == 0 else f"(1, {a.var.length})"
        kw["_iota"] = a
        return stmt(f"{target} = nl.ndarray({shape}, dtype={dt}, buffer=nl.sbuf)")

    def _current_call(self, name: str, kw: dict, dst, line: int) -> cst.BaseStatement | None:
        kw.pop("dtype", None)
        if name == L.memset.__name__:
            kw.pop("shape", None)  # `t[...] = nisa.memset(shape=...)`: the destination has the shape
        if name == L.iota.__name__:
            a = kw.pop("_iota", None)
            if a is None:
                return None
            offset = a.offset
            if a.var.axis == 0:
                text = f"nisa.iota(dst={code(dst)}, pattern=[[0, 1]], offset={offset}, channel_multiplier={a.coef})"
            else:
                text = f"nisa.iota(dst={code(dst)}, pattern=[[{a.coef}, {a.var.length}]], offset={offset}, channel_multiplier=0)"
            return stmt(text)
        if name == L.affine_select.__name__:
            return self._affine_select(kw, dst, line)
        if name == L.activation.__name__ and "reduce_res" in kw:
            kw.setdefault("reduce_op", expr("nl.add"))
            kw.setdefault("reduce_cmd", expr("nisa.reduce_cmd.reset_reduce"))
        if name == L.range_select.__name__:
            kw["reduce_cmd"] = expr("nisa.reduce_cmd.reset_reduce")
        if name == L.nc_matmul.__name__ and "perf_mode" in kw and "double_row" in code(kw["perf_mode"]):
            kw["perf_mode"] = expr("nisa.matmul_perf_mode.double_row")
        args = [keyword("dst", dst)]
        for k, v in kw.items():
            if k in OP_KWARGS:
                v = self._map_ops(cst.Call(func=cst.Name("f"), args=[keyword(k, v)]), line).args[0].value
            args.append(keyword(k, v))
        return cst.SimpleStatementLine(body=[cst.Expr(cst.Call(func=expr(f"nisa.{name}"), args=args))])

    def _affine_select(self, kw: dict, dst, line: int):
        pred = kw.get("pred")
        cmp = {
            cst.LessThan: "nl.less",
            cst.LessThanEqual: "nl.less_equal",
            cst.GreaterThan: "nl.greater",
            cst.GreaterThanEqual: "nl.greater_equal",
            cst.Equal: "nl.equal",
        }
        if not (isinstance(pred, cst.Comparison) and len(pred.comparisons) == 1 and type(pred.comparisons[0].operator) in cmp):
            self.notes.manual(line, "nisa.affine_select(pred=...)", "express pred as pattern/channel_multiplier/offset with cmp_op")
            return None
        try:
            left, right = self.scope.affine(pred.left), self.scope.affine(pred.comparisons[0].comparator)
        except Unsupported as e:
            self.notes.manual(line, "nisa.affine_select(pred=...)", str(e))
            return None
        coef = {0: 0, 1: 0}
        offset = "0"
        for a, sign in ((left, 1), (right, -1)):
            if a is None:
                continue
            if a.var.rank != 2 or a.var.start != "0" or not isinstance(a.coef, int):
                self.notes.manual(
                    line, "nisa.affine_select(pred=...)", "only 2-d index spaces from 0 with literal coefficients are rewritten"
                )
                return None
            coef[a.var.axis] += sign * a.coef
            # pred is left - right <op> 0: both sides' offsets count (the right one negated)
            if a.offset != "0":
                offset = add(offset, a.offset if sign == 1 else f"-({a.offset})")
        free = kw["on_true_tile"]
        staged = []
        if _base_name(free) in self.psum_names:
            # the current affine_select runs on GpSimd, which cannot read PSUM: copy the tile to SBUF first (same
            # dtype, so the values are the same)
            self.counter += 1
            name = f"_select_src_{self.counter}"
            staged = [
                stmt(f"{name} = nl.ndarray({code(free)}.shape, dtype={code(free)}.dtype, buffer=nl.sbuf)"),
                stmt(f"nisa.tensor_copy(dst={name}, src={code(free)})"),
            ]
            self.notes.changed(
                line, "nisa.affine_select(on_true_tile=<a PSUM tile>)", "on_true_tile copied to SBUF first (GpSimd reads no PSUM)"
            )
            free = cst.Name(name)
        op = cmp[type(pred.comparisons[0].operator)]
        text = (
            f"nisa.affine_select(dst={code(dst)}, pattern=[[{coef[1]}, {code(free)}.shape[1]]], channel_multiplier={coef[0]}, "
            f"on_true_tile={code(free)}, on_false_value={code(kw['on_false_value'])}, cmp_op={op}, offset={offset})"
        )
        return [*staged, stmt(text)] if staged else stmt(text)

    # ---------------------------------------------------------------- statements
    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        trailing = self.trailing.pop() if self.trailing else []
        result = self._rewrite_statement_line(original, updated)
        if not trailing:
            return result
        if isinstance(result, cst.FlattenSentinel):
            return cst.FlattenSentinel([*result.nodes, *trailing])
        return cst.FlattenSentinel(trailing if result is cst.RemovalSentinel.REMOVE else [result, *trailing])

    def _rewrite_statement_line(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        hoisted = self.hoisted.pop() if self.hoisted else []
        if not updated.body:  # an import that is gone
            return cst.RemovalSentinel.REMOVE if not hoisted else cst.FlattenSentinel(hoisted)
        if len(updated.body) != len(original.body):
            return updated
        out: list[cst.BaseStatement] = []
        for orig, new in zip(original.body, updated.body):
            made = self._statement(orig, new)
            out.extend(made if made is not None else [cst.SimpleStatementLine(body=[new])])
        out = hoisted + out
        if len(out) == 1 and isinstance(out[0], cst.SimpleStatementLine) and out[0].body == updated.body:
            return updated
        out[0] = out[0].with_changes(leading_lines=original.leading_lines)
        return cst.FlattenSentinel(out)

    def _statement(self, orig: cst.BaseSmallStatement, new: cst.BaseSmallStatement) -> list[cst.BaseStatement] | None:
        line = self.line(orig)
        if isinstance(new, cst.Assign):
            unpacked = blocks.folded_shape_unpack(new, self.block_scans[-1].fold)
            if unpacked is not None:
                self.notes.changed(line, code(orig), "the shape's names in the folded order (the partition dim first)")
                return [cst.SimpleStatementLine(body=[unpacked])]
        if isinstance(orig, cst.Assign) and len(orig.targets) == 1 and isinstance(orig.value, cst.Call):
            return self._assign(orig, new, line)
        if isinstance(orig, cst.AugAssign) and isinstance(orig.value, cst.Call) and isinstance(orig.operator, cst.AddAssign):
            return self._accumulate(orig, new, line)
        if isinstance(orig, cst.Expr) and isinstance(orig.value, cst.Call):
            return self._call_statement(orig.value, new.value if isinstance(new, cst.Expr) else None, line)
        return None

    def _assign(self, orig: cst.Assign, new: cst.Assign, line: int):
        call = orig.value
        kind, name = self._target(call.func)
        target = orig.targets[0].target
        new_target = new.targets[0].target
        if kind == "language" and name == "load":
            return self._load(call, target, new_target, line)
        if kind == "language" and name in ("ndarray", "zeros", "full", "ones", "empty_like") and code(target) in self.returned:
            hbm = kwarg(new.value, "buffer") if isinstance(new.value, cst.Call) else None
            if hbm is not None and code(hbm.value).endswith(".hbm"):
                self.notes.changed(line, "buffer=nl.hbm (a returned output)", "buffer=nl.shared_hbm")
                value = new.value.with_changes(
                    args=[a if a is not hbm else a.with_changes(value=expr("nl.shared_hbm")) for a in new.value.args]
                )
                return [cst.SimpleStatementLine(body=[new.with_changes(value=value)])]
        if kind == "language" and name == "loop_reduce":
            return self._loop_reduce(call, new.value if isinstance(new.value, cst.Call) else call, target, new_target, line)
        if kind == "isa" and name in LEGACY_SIGNATURES:
            updated_call = new.value if isinstance(new.value, cst.Call) else call
            if isinstance(target, cst.Name):
                return self._isa_statements(updated_call, name, line, dst=None, target=target.value)
            return self._isa_statements(updated_call, name, line, dst=new_target, target=None)
        return None

    def _loop_reduce(self, call: cst.Call, new_call: cst.Call, target, new_target, line: int):
        """`t[...] = nl.loop_reduce(x, op, loop_indices)` (or `t = ...`): the destination is also op's other input,
        t = op(t, x), which the nki.language.loop_reduce page states is nisa.tensor_tensor(data1=t, data2=x, op=op)
        (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.loop_reduce.html);
        the current API is not emulated here, so the rewrite is the dst= form of that. loop_indices only tells the
        compiler which loops the reduction runs over, and goes. Exact only when t holds values before the first
        reduction: a tile allocated with nl.zeros / ones / full (a fresh nl.ndarray starts the reduction with x in
        the legacy emulator, which op(t, x) does not) -- anything else, and a mask, is a manual step."""
        construct = "nl.loop_reduce(x, op, loop_indices)"
        base = _base_name(target)
        x, op = arg_value(new_call, 0, "x"), arg_value(new_call, 1, "op")
        if _mask(call) is not None or x is None or op is None:
            self.notes.manual(line, construct, "with a mask: write nisa.tensor_tensor(dst=t, data1=t, data2=x, op=op) on the masked slices")
            return None
        filled = self.filled[-1].get(base) if base is not None else None
        why = None
        if filled is None:
            why = f"{code(target)} is not a tile allocated here with nl.zeros / nl.ones / nl.full"
        elif isinstance(target, cst.Name) and filled.aliased:
            # `t = nl.loop_reduce(...)` binds a new tile in the legacy API; the rewrite updates t in place, the same
            # only while no other name or container holds t's old tile
            why = f"{base} is also read whole here other than as an argument (an alias would see the in-place update)"
        if why is not None:
            step = "t = op(t, x): write nisa.tensor_tensor(dst=t, data1=t, data2=x, op=op) once t is initialised"
            self.notes.manual(line, construct, f"{step} ({why})")
            return None
        if isinstance(op, cst.Attribute) and isinstance(op.value, cst.Name) and op.value.value in ("np", "numpy"):
            if op.attr.value not in NUMPY_OPS:
                self.notes.manual(line, construct, f"{code(op)} has no nl op: pass the nl op it computes")
                return None
            op = expr(f"nl.{NUMPY_OPS[op.attr.value]}")
        dtype = kwarg(new_call, "dtype")
        dst = new_target
        if dtype is not None and code(dtype.value) != filled.dtype:
            # the legacy result is rounded to dtype before it is stored into t: compute into a tile of that dtype
            self.counter += 1
            temp = f"_loop_reduce_{self.counter}"
            made = [
                stmt(f"{temp} = nl.ndarray({code(dst)}.shape, dtype={code(dtype.value)}, buffer=nl.sbuf)"),
                stmt(f"nisa.tensor_tensor(dst={temp}, data1={code(dst)}, data2={code(x)}, op={code(op)})"),
                stmt(f"nisa.tensor_copy(dst={code(dst)}, src={temp})"),
            ]
            step = f"nisa.tensor_tensor into a {code(dtype.value)} tile, then nisa.tensor_copy into t: t = op(t, x) rounded to dtype"
        else:
            made = [stmt(f"nisa.tensor_tensor(dst={code(dst)}, data1={code(dst)}, data2={code(x)}, op={code(op)})")]
            step = "nisa.tensor_tensor(dst=t, data1=t, data2=x, op=op): t = op(t, x)"
        self.notes.changed(line, construct, step)
        return made

    def _load(self, call: cst.Call, target, new_target, line: int):
        src = arg_value(call, 0, "src")
        mask = _mask(call)
        dtype = kwarg(call, "dtype")
        if mask is None:
            if isinstance(target, cst.Subscript):
                self.notes.changed(line, "t[...] = nl.load(src)", "nisa.dma_copy(dst=t[...], src=src)")
                src_new = self._rewritten(src, line)
                return [stmt(f"nisa.dma_copy(dst={code(new_target)}, src={code(src_new)})")]
            if isinstance(target, cst.Name) and src is not None:
                return self._load_into_new_tile(target.value, self._rewritten(src, line), dtype, line)
            return None
        if not isinstance(src, cst.Subscript):
            self.notes.manual(line, code(call), "a masked load needs an indexed source: slice it with the mask's bounds")
            return None
        try:
            valid, loop_only = mask_bounds(mask.value, self.scope)
            src_new = self._index(src, valid, hbm=True)
            shape = space_shape(src, self.scope)
        except Unsupported as e:
            self.notes.manual(line, code(call), f"bound the slices by the mask by hand: {e}")
            return None
        if src_new is None or shape is None:
            return None
        rank = shape.count(",") + (0 if shape.endswith(",)") else 1)
        dst_slices = ", ".join(f"0:{valid[a]}" if a in valid else ":" for a in range(rank))
        dt = code(dtype.value) if dtype is not None else f"{code(src.value)}.dtype"
        out = []
        if isinstance(target, cst.Name):
            out.append(stmt(f"{target.value} = nl.ndarray({shape}, dtype={dt}, buffer=nl.sbuf)"))
            dst = f"{target.value}[{dst_slices}]"
        else:
            dst = self._bounded_tile(target, valid, rank, line)
            if dst is None:
                return None
        copy = stmt(f"nisa.dma_copy(dst={dst}, src={code(src_new)})")
        out.append(_guard(copy, loop_only))
        self.notes.changed(line, "nl.load(..., mask=...)", "nisa.dma_copy of the slices the mask keeps (min(...) bounds)")
        return out

    def _load_into_new_tile(self, name: str, src: cst.BaseExpression, dtype: cst.Arg | None, line: int):
        """`t = nl.load(src)` -> an SBUF tile shaped like src and a dma_copy into it (what nl.load does)."""
        base = src.value if isinstance(src, cst.Subscript) else src
        dt = code(dtype.value) if dtype is not None else f"{code(base)}.dtype"
        self.notes.changed(line, "t = nl.load(src)", "t = nl.ndarray(src.shape, ..., buffer=nl.sbuf); nisa.dma_copy(dst=t, src=src)")
        return [
            _plain_ap_reads(stmt(f"{name} = nl.ndarray({code(src)}.shape, dtype={dt}, buffer=nl.sbuf)")),
            stmt(f"nisa.dma_copy(dst={name}, src={code(src)})"),
        ]

    def _bounded_tile(self, t, valid: dict[int, str], rank: int, line: int) -> str | None:
        """A tile operand restricted to the mask's box: t[0:n0, ...] for a name or t[...]; an indexed tile gets
        its own slices bounded."""
        if isinstance(t, cst.Subscript):
            if len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index) and isinstance(t.slice[0].slice.value, cst.Ellipsis):
                t = t.value
            else:
                try:
                    new = self._index(t, valid)
                except Unsupported as e:
                    self.notes.manual(line, code(t), str(e))
                    return None
                if new is None:
                    self.notes.manual(line, code(t), "slice this tile to the mask's bounds by hand")
                    return None
                return code(new)
        slices = ", ".join(f"0:{valid[a]}" if a in valid else ":" for a in range(rank))
        return f"{code(t)}[{slices}]"

    def _rewritten(self, node, line: int):
        if isinstance(node, cst.Subscript):
            try:
                hbm = id(node) in self.hbm_access
                return self._unblock_all(rewrite_subscript(node, self.scope, patterns=self._patterns(node), hbm=hbm) or node)
            except Unsupported:
                return node
        return node

    def _accumulate(self, orig: cst.AugAssign, new: cst.AugAssign, line: int):
        call = orig.value
        kind, name = self._target(call.func)
        if (kind, name) == ("isa", L.nc_matmul.__name__):
            kw = self._keywords(new.value if isinstance(new.value, cst.Call) else call, name)
            s, m = kw.get("stationary"), kw.get("moving")
        elif (kind, name) == ("language", "matmul"):
            updated_call = new.value if isinstance(new.value, cst.Call) else call
            x, y = arg_value(updated_call, 0, "x"), arg_value(updated_call, 1, "y")
            transpose = kwarg(updated_call, "transpose_x")
            if transpose is None or code(transpose.value) != "True":
                self.notes.manual(
                    line, code(orig), "nl.matmul without transpose_x=True: transpose x (nisa.nc_transpose) and use nisa.nc_matmul(dst=...)"
                )
                return None
            s, m = x, y
        else:
            return None
        if s is None or m is None:
            return None
        target = new.target
        base = target.value if isinstance(target, cst.Subscript) else target
        if isinstance(base, cst.Name):
            self.accumulators.add(base.value)
        self.notes.changed(
            line, "psum += matmul(...)", "nisa.nc_matmul(dst=psum, ...): the first matmul of a group overwrites, later ones accumulate"
        )
        return [stmt(f"nisa.nc_matmul(dst={code(target)}, stationary={code(s)}, moving={code(m)})")]

    def _call_statement(self, call: cst.Call, new_call: cst.Call | None, line: int):
        kind, name = self._target(call.func)
        new_call = new_call or call
        if (kind, name) == ("language", "store"):
            return self._store(call, new_call, line)
        if kind == "isa" and name == L.dma_copy.__name__:
            return self._dma_copy(call, new_call, line)
        if kind == "isa" and name == L.nc_stream_shuffle.__name__:
            kw = self._keywords(new_call, name) | dict(
                zip(("src", "dst", "shuffle_mask"), [a.value for a in new_call.args if a.keyword is None])
            )
            self.notes.changed(line, "nisa.nc_stream_shuffle(src, dst, mask)", "nisa.nc_stream_shuffle(dst=, src=, shuffle_mask=)")
            return [stmt(f"nisa.nc_stream_shuffle(dst={code(kw['dst'])}, src={code(kw['src'])}, shuffle_mask={code(kw['shuffle_mask'])})")]
        if kind == "isa" and name in LEGACY_SIGNATURES:
            self.counter += 1
            return self._isa_statements(new_call, name, line, dst=None, target=f"_{name}_{self.counter}")
        return None

    def _store(self, call: cst.Call, new_call: cst.Call, line: int):
        mask = _mask(call)
        if mask is None:
            dst, value = arg_value(new_call, 0, "dst"), arg_value(new_call, 1, "value")
            if dst is None or value is None:
                return None
            staged, src = self._from_psum(arg_value(call, 1, "value"), value, line)
            if not staged:
                self.notes.changed(line, "nl.store(dst, value)", "nisa.dma_copy(dst=dst, src=value)")
            return [*staged, stmt(f"nisa.dma_copy(dst={code(dst)}, src={src})")]
        dst, value = arg_value(call, 0, "dst"), arg_value(call, 1, "value")
        if not isinstance(dst, cst.Subscript) or value is None:
            self.notes.manual(line, code(call), "a masked store needs an indexed destination: slice both sides by the mask's bounds")
            return None
        try:
            valid, loop_only = mask_bounds(mask.value, self.scope)
            dst_new = self._index(dst, valid, hbm=True)
            shape = space_shape(dst, self.scope)
        except Unsupported as e:
            self.notes.manual(line, code(call), f"bound the slices by the mask by hand: {e}")
            return None
        if dst_new is None or shape is None:
            return None
        rank = shape.count(",") + (0 if shape.endswith(",)") else 1)
        if not isinstance(value, cst.Name | cst.Subscript):
            self.notes.manual(
                line, code(call), "a masked store of a computed value: assign it to a tile first, then store the mask's box of it"
            )
            return None
        value_code = self._bounded_tile(value, valid, rank, line)
        if value_code is None:
            return None
        staged, src = self._from_psum(value, expr(value_code), line)
        self.notes.changed(line, "nl.store(..., mask=...)", "nisa.dma_copy of the slices the mask keeps (min(...) bounds)")
        return _guarded([*staged, stmt(f"nisa.dma_copy(dst={code(dst_new)}, src={src})")], loop_only)

    def _from_psum(self, original: cst.BaseExpression | None, value: cst.BaseExpression, line: int):
        """(statements, source) for storing `value` (the rewritten form of the store's `original` value): a PSUM
        tile is copied into a new SBUF tile of its shape and dtype first (the same bits: no cast), which the legacy
        store did itself and the current dma_copy does not (see memory.py); a value that may or may not be one is
        stored as it is, with a manual note."""
        found = self.memories[-1]
        where = found.of(original) if found is not None and original is not None else memory.Where(memory.OTHER)
        shown = code(original) if original is not None else code(value)
        if where.kind in (memory.MIXED, memory.UNKNOWN):
            self.notes.manual(
                line,
                f"nl.store(..., value={shown})",
                f"if {shown} is a PSUM tile here ({where.why}), nisa.tensor_copy it into an SBUF tile and store that: the "
                "current nisa.dma_copy reads SBUF or HBM only (the legacy nl.store made that copy itself)",
            )
        if where.kind != memory.PSUM:
            return [], code(value)
        staged = []
        if not (isinstance(value, cst.Name | cst.Subscript) or _is_ap(value)):
            # an expression (nl.matmul(...)): computed once, into a name both statements below read
            name = self._fresh("store_psum")
            staged.append(stmt(f"{name} = {code(value)}"))
            value = cst.Name(name)
        base = _base_name(value.func.value if _is_ap(value) else value) or "store"
        tile, v = self._fresh(f"{base}_sbuf"), code(value)
        dtype = f"{base}.dtype" if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) else f"{v}.dtype"
        staged += [
            _plain_ap_reads(stmt(f"{tile} = nl.ndarray({v}.shape, dtype={dtype}, buffer=nl.sbuf)")),
            stmt(f"nisa.tensor_copy(dst={tile}, src={v})"),
        ]
        self.notes.changed(
            line,
            f"nl.store(dst, value={shown})",
            f"{shown} is a PSUM tile: nisa.tensor_copy into a new SBUF tile {tile} of its shape and dtype, then "
            f"nisa.dma_copy(dst=dst, src={tile}) (the current dma_copy reads SBUF or HBM only; the legacy store made this copy)",
        )
        return staged, tile

    def _dma_copy(self, call: cst.Call, new_call: cst.Call, line: int):
        mask = _mask(call)
        rmw = kwarg(new_call, "dst_rmw_op")
        dst, src = arg_value(call, 0, "dst"), arg_value(call, 1, "src")
        if mask is not None:
            try:
                valid, loop_only = mask_bounds(mask.value, self.scope)
                sides = [self._index(x, valid) if isinstance(x, cst.Subscript) else None for x in (dst, src)]
            except Unsupported as e:
                self.notes.manual(line, code(call), f"bound the slices by the mask by hand: {e}")
                return None
            if None in sides:
                self.notes.manual(line, code(call), "slice both sides of the copy by the mask's bounds")
                return None
            dst_code, src_code = code(sides[0]), code(sides[1])
        else:
            loop_only = []
            dst_code, src_code = code(arg_value(new_call, 0, "dst")), code(arg_value(new_call, 1, "src"))
        rest = [a for a in new_call.args if a.keyword is not None and a.keyword.value in ("oob_mode", "dge_mode")]
        extra = "".join(f", {a.keyword.value}={code(a.value)}" for a in rest)
        if rmw is not None:
            self.notes.changed(line, "nisa.dma_copy(..., dst_rmw_op=np.add)", "nisa.dma_compute(dst, [src, dst], reduce_op=nl.add)")
            return [_guard(stmt(f"nisa.dma_compute(dst={dst_code}, srcs=[{src_code}, {dst_code}], reduce_op=nl.add)"), loop_only)]
        if mask is None:
            return None
        self.notes.changed(line, "nisa.dma_copy(..., mask=...)", "nisa.dma_copy of the slices the mask keeps (min(...) bounds)")
        return [_guard(stmt(f"nisa.dma_copy(dst={dst_code}, src={src_code}{extra})"), loop_only)]


@dataclass
class _IfFrame:
    """An `if` being visited: the index state before it and at the end of each path done so far."""

    node: cst.If
    before: State
    line: int
    branches: list[State] = field(default_factory=list)


def _is_arithmetic(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation | cst.UnaryOperation | cst.IfExp | cst.BooleanOperation | cst.Comparison)


@dataclass(frozen=True)
class Filled:
    """A tile every binding of which is an nl.zeros / ones / full allocation (or `t = nl.loop_reduce(...)`)."""

    dtype: str | None  # the allocations' dtype= source (None: not given, or not the same in each)
    aliased: bool  # the name is read other than as a call's argument or a subscript's base (`u = t`, `[t]`, `return t`)


_FILLING = {("language", "zeros"), ("language", "ones"), ("language", "full")}


def _filled_allocations(fn: cst.FunctionDef, target_of) -> dict[str, Filled]:
    """The tiles of a function (nested functions included) that hold values from their allocation on: every binding
    is an nl.zeros / ones / full, or a `t = nl.loop_reduce(...)` (which the migration makes an in-place update).
    `target_of(call)` is ("language", "zeros") for nl.zeros."""
    bindings: dict[str, list[str | None] | None] = {
        p.name.value: None for p in [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
    }  # name -> dtype= of each allocation, None once bound otherwise
    plain_reads: dict[int, bool] = {}  # id(Name) -> read where it can be kept (an argument, a subscript's base)

    def other(target) -> None:
        for name in _target_names(target):
            bindings[name] = None

    class Bindings(cst.CSTVisitor):
        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            kind = target_of(n.value) if isinstance(n.value, cst.Call) else None
            single = len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
            if single and kind in _FILLING:
                dtype = kwarg(n.value, "dtype")
                found = bindings.setdefault(n.targets[0].target.value, [])
                if found is not None:
                    found.append(code(dtype.value) if dtype is not None else None)
            elif not (single and kind == ("language", "loop_reduce")):
                for t in n.targets:
                    other(t.target)

        def visit_AnnAssign(self_, n: cst.AnnAssign) -> None:  # noqa: N805
            other(n.target)

        def visit_For(self_, n: cst.For) -> None:  # noqa: N805
            other(n.target)

        def visit_NamedExpr(self_, n: cst.NamedExpr) -> None:  # noqa: N805
            other(n.target)

        def visit_AsName(self_, n: cst.AsName) -> None:  # noqa: N805
            other(n.name)

        def visit_CompFor(self_, n: cst.CompFor) -> None:  # noqa: N805
            other(n.target)

        def visit_Arg(self_, n: cst.Arg) -> None:  # noqa: N805
            if isinstance(n.value, cst.Name) and not n.star:
                plain_reads[id(n.value)] = True

        def visit_Subscript(self_, n: cst.Subscript) -> None:  # noqa: N805
            if isinstance(n.value, cst.Name):
                plain_reads[id(n.value)] = True

        def visit_AssignTarget(self_, n: cst.AssignTarget) -> None:  # noqa: N805
            if isinstance(n.target, cst.Name):
                plain_reads[id(n.target)] = True  # a binding, not a read

        def visit_Attribute(self_, n: cst.Attribute) -> None:  # noqa: N805
            if isinstance(n.value, cst.Name):
                plain_reads[id(n.value)] = True  # t.shape, t.dtype
            plain_reads[id(n.attr)] = True

    aliased: set[str] = set()

    class Reads(cst.CSTVisitor):
        def visit_Arg(self_, n: cst.Arg) -> None:  # noqa: N805
            if n.keyword is not None:
                plain_reads[id(n.keyword)] = True

        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            if n.value in bindings and not plain_reads.get(id(n)):
                aliased.add(n.value)

    fn.body.visit(Bindings())
    fn.body.visit(Reads())
    out = {}
    for name, dtypes in bindings.items():
        if dtypes:
            dtype = dtypes[0] if len(set(dtypes)) == 1 else None
            out[name] = Filled(dtype, name in aliased)
    return out


_FLOATS = {"float32", "bfloat16", "float16", "tfloat32", "float8_e4m3", "float8_e5m2", "float8_e4m3fn"}
_DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "tf32": "tfloat32"}


# legacy nki.compiler decorators that choose compiler passes or the allocator, not what a kernel computes; the
# current nki.compiler has none of them (only CompileConfig, SpecializationConfig and AddressRotation:
# https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.1/nki/api/nki.compiler.html)
_ALLOCATION_PASS_DECORATORS = ("skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc")
_ALLOCATION_PASS_STEP = "removed: a legacy compiler-pass switch (the current nki.compiler has no such decorator; the results do not change)"

# the nl reductions the migration moves the reduced axes of to the end: the legacy front end reduces any free axes by
# permuting the kept ones first and the reduced ones (in order) last, then reducing the trailing axes, which is
# the same order of operations the moved access pattern gives
_REORDERABLE_REDUCTIONS = ("max", "min", "sum", "prod", "mean", "all")

_INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_"}


_NAMED = {n for n in _FLOATS | _INTS if n != "bool_"}


def _allocator_region(text: str) -> str | None:
    """The memory of a legacy direct allocator named by `text` (`nki.compiler.sbuf.mod_alloc`, `ncc.psum.alloc`)."""
    parts = text.replace(" ", "").split(".")
    if len(parts) >= 2 and parts[-1] in ("mod_alloc", "alloc", "auto_alloc") and parts[-2] in ("sbuf", "psum"):
        return parts[-2]
    return None


# nl element-wise ops whose legacy result dtype without dtype= is the promotion of both operands'
_ARITHMETIC = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "fmod", "mod"}


def _dtype_key(text: str) -> str:
    """`nl.float32`, `np.float32`, `"float32"` and `nl.fp32` all as "float32" (the dtype a source text names); any
    other text (`x.dtype`) as itself, so that `a.dtype` and `b.dtype` are not taken for the same dtype."""
    text = text.strip().strip("'\"")
    name = text.rsplit(".", 1)[-1]
    name = _DTYPE_ALIASES.get(name, name)
    return name if name in _FLOATS or name in _INTS else text.replace(" ", "")


def _same_dtype(a: str, b: str | None) -> bool:
    return b is not None and _dtype_key(a) == _dtype_key(b)


_ALLOCATIONS = {("language", "ndarray"): 1, ("language", "zeros"): 1, ("language", "ones"): 1, ("language", "full"): 2}


def _agreed_bindings(fn: cst.FunctionDef, value_of, same=operator.eq) -> dict:
    """The names of a function every binding of which is a one-name assignment whose `value_of(value)` is known and
    the same (by `same`) each time: name -> that value. A parameter, or a name bound any other way (augmented, loop,
    walrus, unpacking target, or a value `value_of` gives None for), is left out."""
    found: dict = {p.name.value: None for p in [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]}

    def unknown(target) -> None:
        for name in _target_names(target):
            found[name] = None

    class Bindings(cst.CSTVisitor):
        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            value = value_of(n.value)
            if value is not None and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                name = n.targets[0].target.value
                before = found.get(name, value)
                found[name] = value if before is not None and same(value, before) else None
                return
            for t in n.targets:
                unknown(t.target)

        def visit_AugAssign(self_, n: cst.AugAssign) -> None:  # noqa: N805
            unknown(n.target)

        def visit_For(self_, n: cst.For) -> None:  # noqa: N805
            unknown(n.target)

        def visit_NamedExpr(self_, n: cst.NamedExpr) -> None:  # noqa: N805
            unknown(n.target)

    fn.body.visit(Bindings())
    return {name: value for name, value in found.items() if value is not None}


def _allocated_dtypes(fn: cst.FunctionDef, target_of) -> dict[str, str]:
    """The tiles of a function every binding of which is an nl.ndarray / zeros / ones / full allocation with the same
    dtype (by keyword or position), or an nl.load: name -> that dtype's source. `target_of(call)` is
    ("language", "zeros") for nl.zeros."""

    def dtype_of(value) -> str | None:
        if not isinstance(value, cst.Call):
            return None
        target = target_of(value)
        if target in _ALLOCATIONS:
            dtype = arg_value(value, _ALLOCATIONS[target], "dtype")
            return None if dtype is None else code(dtype)
        if target == ("language", "load"):
            # `x = nl.load(a[...])`: a tile of a's dtype (or of the load's dtype=)
            given, src = arg_value(value, 1, "dtype"), _base_name(arg_value(value, 0, "src") or cst.Name("_"))
            return code(given) if given is not None else (f"{src}.dtype" if src not in (None, "_") else None)
        return None

    return _agreed_bindings(fn, dtype_of, _same_dtype)


def _assigned_more_than_once(fn: cst.FunctionDef) -> set[str]:
    """Names an assignment binds more than once in a function (an index variable defined in both branches of an if)."""
    counts: dict[str, int] = {}

    class Count(cst.CSTVisitor):
        def visit_AssignTarget(self_, n: cst.AssignTarget) -> None:  # noqa: N805
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 1

    fn.body.visit(Count())
    return {name for name, n in counts.items() if n > 1}


def _assigned_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_AssignTarget(self_, n: cst.AssignTarget) -> None:  # noqa: N805
            names.update(_target_names(n.target))

        def visit_AugAssign(self_, n: cst.AugAssign) -> None:  # noqa: N805
            names.update(_target_names(n.target))

        def visit_For(self_, n: cst.For) -> None:  # noqa: N805
            names.update(_target_names(n.target))

    node.visit(Collect())
    return names


def _definitions_in(node: cst.CSTNode, name: str) -> list[str]:
    """The source of every value assigned to `name` under `node` (a tuple target's element as `value[i]`)."""
    found: list[str] = []

    class Collect(cst.CSTVisitor):
        def visit_Assign(self_, n: cst.Assign) -> None:  # noqa: N805
            for t in n.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    found.append(code(n.value))
                elif isinstance(t.target, cst.Tuple):
                    names = _target_names(t.target)
                    if name in names:
                        found.append(f"{code(n.value)}[{names.index(name)}]")

        def visit_AugAssign(self_, n: cst.AugAssign) -> None:  # noqa: N805
            if name in _target_names(n.target):
                found.append(f"<{code(n)}>")

    node.visit(Collect())
    return found


def _names_in(source: str) -> set[str]:
    return _all_names(cst.parse_expression(source))


def _numpy_alias(module: cst.Module) -> str | None:
    """The name a module-level `import numpy [as np]` binds, else None."""
    for st in module.body:
        for small in st.body if isinstance(st, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if code(alias.name) == "numpy":
                        return alias.asname.name.value if alias.asname is not None else "numpy"
    return None


def _all_names(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self_, n: cst.Name) -> None:  # noqa: N805
            names.add(n.value)

    node.visit(Collect())
    return names


def _is_mask(node: cst.BaseExpression, masks) -> bool:
    """A comparison, a mask variable, or `&` of them (`mask_k & mask_m`)."""
    if isinstance(node, cst.Name):
        return node.value in masks
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitAnd):
        return _is_mask(node.left, masks) or _is_mask(node.right, masks)
    return _is_comparison(node)


def _is_comparison(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitAnd):
        return _is_comparison(node.left) or _is_comparison(node.right)
    return False


def _guarded(statements: list[cst.BaseStatement], conditions: list[str]) -> list[cst.BaseStatement]:
    """_guard of several statements: one `if` around all of them."""
    if not conditions or len(statements) == 1:
        return [_guard(s, conditions) for s in statements]
    body = "".join("    " + line + "\n" for s in statements for line in cst.Module([s]).code.strip().splitlines())
    return [stmt(f"if {' and '.join(conditions)}:\n{body}")]


def _keepdims(call: cst.Call) -> bool | None:
    """A reduction's keepdims= (False when not given); None when it is not a literal."""
    given = kwarg(call, "keepdims")
    if given is None:
        return False
    return {"True": True, "False": False}.get(code(given.value))


def _is_ap(node: cst.BaseExpression) -> bool:
    """`t.ap(...)`: an access pattern of a tile."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "ap"


def _guard(statement: cst.BaseStatement, conditions: list[str]) -> cst.BaseStatement:
    """A mask on loop variables only switches the whole instruction on or off: an `if`."""
    if not conditions:
        return statement
    return stmt(f"if {' and '.join(conditions)}:\n    {cst.Module([statement]).code.strip()}\n")


class Cleanup(cst.CSTTransformer):
    """After the rewrite: drop index-variable definitions nothing uses any more, and make the PSUM tiles that
    nc_matmul now accumulates into plain allocations (their zero-fill would need accumulate=True)."""

    def __init__(self, notes: Notes, accumulators: set[str], index_defs: set[str], index_origins: dict | None = None):
        super().__init__()
        self.notes, self.accumulators, self.index_defs = notes, accumulators, index_defs
        self.index_origins = {} if index_origins is None else index_origins  # see LegacyToCurrent.leave_Attribute
        self.scopes: list[set[str]] = []  # per enclosing function (module first): names read

    def visit_Module(self, node: cst.Module) -> None:
        self.scopes = [_live_names(node, self.index_defs)]

    def leave_Attribute(self, original, updated):
        if id(original) in self.index_origins:
            self.index_origins[id(updated)] = (self.index_origins[id(original)][0], updated)
        return updated

    # uses are counted per function: `i` still used by another kernel of the file does not keep this one's `i`
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(_live_names(node, self.index_defs))

    def leave_FunctionDef(self, original, updated):
        self.scopes.pop()
        return updated

    def _dead(self, statement) -> bool:
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Assign)):
            return False
        names = _target_names(statement.body[0].targets[0].target)
        return bool(names) and set(names) <= self.index_defs and not (set(names) & self.scopes[-1])

    def _without_dead(self, body):
        """The statements minus dead index definitions; their comments move to the next statement."""
        out, carried = [], []
        for st in body:
            if self._dead(st):
                carried.extend(st.leading_lines)
                continue
            if carried and hasattr(st, "leading_lines"):
                st = st.with_changes(leading_lines=[*carried, *st.leading_lines])
                carried = []
            out.append(st)
        return out or [stmt("pass")]

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._without_dead(updated.body))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._without_dead(updated.body))

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) == 1 and isinstance(updated.body[0], cst.Assign):
            a = updated.body[0]
            names = _target_names(a.targets[0].target)
            if len(names) == 1 and names[0] in self.accumulators and isinstance(a.value, cst.Call) and code(a.value.func).endswith("zeros"):
                call = a.value.with_changes(func=expr("nl.ndarray"))
                return updated.with_changes(body=[a.with_changes(value=call)])
        return updated


def _names_read(node: cst.CSTNode) -> set[str]:
    """Names read under `node`: every occurrence except as the target of an assignment (a name assigned twice, like
    a mask redefined for the next access, is still unused when nothing reads it)."""
    read: set[str] = set()

    class Count(cst.CSTVisitor):
        def visit_AssignTarget(self_, n: cst.AssignTarget) -> bool:  # noqa: N805
            return not isinstance(n.target, cst.Name | cst.Tuple)  # `t[i] = ...` reads t and i

        def visit_Name(self_, n: cst.Name):  # noqa: N805
            read.add(n.value)

    node.visit(Count())
    return read


def _live_names(node: cst.CSTNode, index_defs: set[str]) -> set[str]:
    """Names read under `node` by anything but a dead index definition: an index definition (`i = k * 128 + i`,
    which reads the i it redefines) keeps the names it reads only while something live reads one it assigns."""
    read: set[str] = set()
    defs: list[tuple[set[str], set[str]]] = []  # (names an index definition assigns, names it reads)

    class Count(cst.CSTVisitor):
        def visit_SimpleStatementLine(self_, n: cst.SimpleStatementLine) -> bool:  # noqa: N805
            if len(n.body) == 1 and isinstance(n.body[0], cst.Assign) and len(n.body[0].targets) == 1:
                names = set(_target_names(n.body[0].targets[0].target))
                if names and names <= index_defs:
                    defs.append((names, _names_read(n.body[0].value)))
                    return False
            return True

        def visit_AssignTarget(self_, n: cst.AssignTarget) -> bool:  # noqa: N805
            return not isinstance(n.target, cst.Name | cst.Tuple)  # `t[i] = ...` reads t and i

        def visit_Name(self_, n: cst.Name):  # noqa: N805
            read.add(n.value)

    node.visit(Count())
    changed = True
    while changed:
        changed = False
        for names, reads in defs:
            if names & read and not reads <= read:
                read |= reads
                changed = True
    return read


def _mask(call: cst.Call) -> cst.Arg | None:
    """The call's mask= argument; None when absent or the literal None (no mask)."""
    arg = kwarg(call, "mask")
    return None if arg is None or code(arg.value) == "None" else arg


def _returned_names(fn: cst.FunctionDef) -> set[str]:
    """The expressions a function returns (`return a, b` -> {"a", "b"}), nested functions included."""
    names: set[str] = set()

    class Returns(cst.CSTVisitor):
        def visit_Return(self_, r: cst.Return):  # noqa: N805
            if r.value is not None:
                values = r.value.elements if isinstance(r.value, cst.Tuple) else [r.value]
                names.update(code(v.value if isinstance(v, cst.Element) else v) for v in values)

    fn.visit(Returns())
    return names


def _plain_ap_reads(statement: cst.BaseStatement) -> cst.BaseStatement:
    """`t.ap(pattern=[[s0, n0], [s1, n1]], ...).shape` as `(n0, n1)` and `.dtype` as `t.dtype` (what they are)."""

    class Plain(cst.CSTTransformer):
        def leave_Attribute(self, original, updated):
            call = updated.value
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "ap"):
                return updated
            pattern = kwarg(call, "pattern")
            if updated.attr.value == "dtype":
                return cst.Attribute(value=call.func.value, attr=cst.Name("dtype"))
            if updated.attr.value == "shape" and pattern is not None and isinstance(pattern.value, cst.List):
                nums = [code(e.value.elements[1].value) for e in pattern.value.elements]
                return expr("(" + ", ".join(nums) + ("," if len(nums) == 1 else "") + ")")
            return updated

    return statement.visit(Plain())


def _whole(node: cst.BaseExpression) -> cst.Subscript:
    """`node[...]`: all of a view, as an assignment target."""
    return cst.Subscript(value=node, slice=[cst.SubscriptElement(cst.Index(cst.Ellipsis()))])


def _base_name(node: cst.BaseExpression) -> str | None:
    """`t` of `t`, `t[...]` or `t.attr[...]` (the tile an assignment writes)."""
    while isinstance(node, cst.Subscript | cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _kernels_called(module: cst.Module, target_of) -> set[str]:
    """The names of functions passed first to an nki call (`nki.simulate_kernel(kernel, ...)`, `nki.jit(kernel)`,
    `nki.baremetal(kernel)[grid]`): kernels whose parameters are the HBM tensors their callers pass."""
    found: set[str] = set()

    class Calls(cst.CSTVisitor):
        def visit_Call(self_, n: cst.Call) -> None:  # noqa: N805
            kind, name = target_of(n.func)
            if kind == "nki" and name != "trace" and n.args and isinstance(n.args[0].value, cst.Name):
                found.add(n.args[0].value.value)

    module.visit(Calls())
    return found


def _target_names(t) -> list[str]:
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, cst.Tuple):
        return [e.value.value for e in t.elements if isinstance(e.value, cst.Name)]
    return []
