"""One declaration per ISA op, and the dispatcher that runs it.

An `OpDef` is everything nkidev knows about an instruction: its public signature, what it does to values
(`kind`), the engines it may use, its hardware rules, its NumPy semantics, its cost expression (which also
writes the cost docs), its performance modes and its profile opcode. `public_function` turns it into the
`nki.isa` function users call; `dispatch` picks the engine, checks the rules at the caller's source line, runs
the semantics and appends one trace record. The cost model, the profile writer, the validation harness and
the docs read the same `OPS` table; groups of ops (DMAs, matmuls, moves, ...) are derived from it, never typed.
Which generations have an op is hardware data: `[features] missing_instructions` in each target's TOML.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from types import BuiltinFunctionType, FunctionType, SimpleNamespace

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator import liveness
from nkidev.emulator.alu import OpSpec
from nkidev.emulator.context import thread_state as _thread
from nkidev.emulator.costs import Env, Expr, PerfModes, TransferCost, rate_of
from nkidev.emulator.deferred import execute
from nkidev.emulator.dtypes import NkiDType
from nkidev.emulator.generated import define, parameter_list
from nkidev.emulator.instruction import NkiInstruction
from nkidev.emulator.location import kernel_location, kernel_site
from nkidev.emulator.rules import OPERAND_RULES, Rule
from nkidev.emulator.spmd import shared
from nkidev.emulator.tensor import (
    TI_GROUP,
    UNFILLED,
    CopyFill,
    NkiTensor,
    byte_span,
    check_access,
    dense_span,
    layout,
    new_versions,
    view_code,
)
from nkidev.emulator.trace import Form, Instruction, intern_form
from nkidev.errors import KernelRuleError, NkiNotSupportedError
from nkidev.hardware import Target, get_target, target_names

# What an instruction does to values. The precision check and the profile read it.
KINDS = {
    "compute": "engine arithmetic: results are rounded to the destination dtype",
    "move": "copies values (and may convert their dtype): DMA, copies, transposes, gathers, selects",
    "constant": "writes values that come from no input (memset, iota, random numbers)",
    "matmul": "Tensor Engine multiply-accumulate into PSUM",
    "sync": "orders cores against each other; touches no data",
}
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma", "sync")


@dataclass
class OpDef:
    name: str
    params: str  # the public signature after the name
    engines: tuple[str, ...]
    summary: str
    kind: str  # a key of KINDS
    cost: Expr | TransferCost  # engine cycles of its main row (DMA: the transfer the scheduler times)
    opcode: str = ""  # profile opcode of its engine row (neuron-explorer's name); default NAME.upper()
    load_cost: Expr | None = None  # Tensor Engine ops: cycles of the LoadStationary (LDWEIGHTS) row
    perf_modes: PerfModes | None = None  # throughput modes (1x/2x/4x, double_row); None: always 1x
    rendezvous: bool = False  # the k-th one of every core starts together (core_barrier, sendrecv)
    semantics: str = ""  # the math, for the docs
    writes: tuple[str, ...] = ("dst",)
    # written parameters whose whole view the semantics overwrite, element by element, reading none of its old
    # values (no mask, skip or accumulation), when every operand is a plain view: a fresh tile written so needs
    # no uninitialized fill first (tensor.py, "Lazily filled allocations"). `overwrite_when(args)`: only then.
    overwrites: tuple[str, ...] = ()
    overwrite_when: Callable | None = None
    # read parameters whose storage may hold a lazy copy not yet taken when the semantics run (tensor.py, "Lazy
    # copies"): the semantics read their bytes through tensor.loaded, and only when they need them
    lazy_reads: tuple[str, ...] = ()
    # every tile it only reads is a lazy read: a lazy copy among its operands needs no define_operands
    lazy_only: bool = field(default=False, init=False, repr=False)
    tiles: tuple[str, ...] = ()  # parameters that must be on-chip tiles when given (OPERAND_RULES)
    # further parameters passed as operand slots (signature_plan): ones a loop varies per call, whose non-default
    # value would otherwise send every call through the general signature (nc_matmul's accumulate=(k > 0))
    extra_slots: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    impl: Callable | None = None  # (args, ctx, engine) -> return value of the call
    choose_engine: Callable | None = None  # (args, ctx) -> engine when the kernel leaves engine= unknown
    attrs: Callable | None = None  # (args) -> dict for the trace
    flops: Callable | None = None  # (args) -> int
    emulated: bool = True
    # its semantics may run on the run's worker thread (deferred.py): they never warn, never raise on operand
    # values or read run-time addresses, and return nothing
    deferrable: bool = False
    namespace: str = "isa"  # the module its public function lives in: nki.isa, or nki.collectives
    split: bool = False  # NKI 0.7 also offers it as <name>_prepare + <name>_trigger (the split _v collectives)
    checked: dict = field(default_factory=dict, repr=False)  # signature (target code first) -> [engine, form]: see dispatch
    # per argument of the public function, in order: its default when immutable (signature() keys it as None),
    # else a marker no argument is
    arg_defaults: tuple = field(default=(), repr=False)
    plan: object = field(default=None, repr=False)  # SignaturePlan, made with the public function
    make_args: Callable | None = field(default=None, repr=False)  # (*operand slots) -> the call's namespace, defaults elsewhere

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"op {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        unknown = [e for e in self.engines if e not in ENGINES]
        if unknown:
            raise ValueError(f"op {self.name}: unknown engines {unknown}")
        self.opcode = self.opcode or self.name.upper()
        self.lazy_only = bool(self.lazy_reads) and set(self.tiles) - set(self.writes) <= set(self.lazy_reads)

    def semantics_impl(self, fn: Callable) -> Callable:
        self.impl = fn
        return fn

    @property
    def is_dma(self) -> bool:
        return isinstance(self.cost, TransferCost)

    def cycles(self, ins: Instruction, hw: Target) -> float:
        """Engine cycles of the instruction's main row (MATMUL for TensorE ops)."""
        return self.cost.eval(Env(ins, hw, self))

    def load_cycles(self, ins: Instruction, hw: Target) -> float:
        """Cycles of a Tensor Engine op's LoadStationary row (0 for every other op)."""
        return self.load_cost.eval(Env(ins, hw, self)) if self.load_cost is not None else 0.0

    def perf_rate(self, ins: Instruction, hw: Target) -> float:
        """Elements per lane per cycle of the performance mode the instruction runs in (1 without modes)."""
        return rate_of(Env(ins, hw, self))

    @property
    def cost_doc(self) -> str:
        """The cost formula as the docs print it, written from the expression the cost model evaluates."""
        if self.is_dma:
            return self.cost.doc
        doc = f"{self.cost.doc} engine cycles"
        if self.load_cost is not None:
            doc += f"; on TensorE after a LoadStationary of {self.load_cost.doc} cycles"
        return doc

    def available_on(self) -> tuple[str, ...]:
        """The targets that have this instruction."""
        return tuple(t for t in target_names() if get_target(t).has_instruction(self.name))


OPS: dict[str, OpDef] = {}


def ops_where(pred: Callable[[OpDef], bool]) -> frozenset[str]:
    """Names of the ops a predicate selects: the only way to form a group of ops."""
    return frozenset(name for name, op in OPS.items() if pred(op))


def violation(rule: Rule, result, op: str) -> KernelRuleError:
    message, fix = result if isinstance(result, tuple) else (result, None)
    return KernelRuleError(rule.error, f"{op}: {message}", fix, kernel_location())


def _engine_arg(a) -> str | None:
    eng = getattr(a, "engine", None)
    name = getattr(eng, "name", None)
    return None if name in (None, "unknown") else name


def pick_engine(op: OpDef, a, ctx) -> str:
    """The engine= argument if given (it must be one of the op's engines), else the op's default choice."""
    wanted = _engine_arg(a)
    if wanted is None:
        return op.choose_engine(a, ctx) if op.choose_engine is not None else op.engines[0]
    if op.is_dma:
        # dma_copy's engine= names the engine whose sequencer drives the hardware DGE (sync or scalar), not an
        # engine the transfer runs on: its own rules check it (it was err_invalid_argument for the documented values)
        return op.engines[0]
    if wanted not in op.engines:
        raise KernelRuleError(
            "err_invalid_argument",
            f"{op.name} cannot run on the {wanted} engine",
            f"use one of: {', '.join(op.engines)}",
            kernel_location(),
        )
    return wanted


def check_tiles(op: OpDef, a) -> None:
    """The tile parameters are NKI tensors (the first operand rule, which needs no engine): given ones, and the
    required ones even when passed as None."""
    rule = OPERAND_RULES[0]
    required = _required(op)
    for name in op.tiles:
        t = getattr(a, name, None)
        if t is not None or name in required:
            result = rule.check(t, name, op, None, None)
            if result:
                raise violation(rule, result, op.name)


_REQUIRED: dict[str, frozenset] = {}


def _required(op: OpDef) -> frozenset:
    """Parameters of the op's signature without a default."""
    found = _REQUIRED.get(op.name)
    if found is None:
        params = [p.strip() for p in op.params.split(",") if p.strip() and not p.strip().startswith("*")]
        found = _REQUIRED[op.name] = frozenset(p for p in params if "=" not in p)
    return found


def check(op: OpDef, a, ctx, engine: str) -> None:
    """Every rule of the call, with the engine known: the operand rules on each tile operand, then the op's."""
    for name in op.tiles:
        t = getattr(a, name, None)
        if t is None:
            continue
        for rule in OPERAND_RULES:
            result = rule.check(t, name, op, ctx, engine)
            if result:
                raise violation(rule, result, op.name)
    for rule in op.rules:
        result = rule.check(a, ctx, engine)
        if result:
            raise violation(rule, result, op.name)


def dispatch(op: OpDef, a: SimpleNamespace):
    ctx = _ctx.current()
    ids_r: list[int] = []
    ids_w: list[int] = []
    storages: list = []
    written: list = []
    key = signature(op, a, ctx.target_code, ids_r, ids_w, storages, written)
    return _dispatch_signed(op, a, ctx, key, ids_r, ids_w, storages, written)


def _dispatch_signed(op: OpDef, a: SimpleNamespace, ctx, key, ids_r: list, ids_w: list, storages: list, written: list):
    """dispatch once the call's signature is known (`key` and the lists as `signature` returns and fills them):
    dispatch_slots, which has the operand slots at hand, builds them without `signature`'s default checks."""
    cache = op.checked
    entry = cache.get(key) if key is not None else None
    if entry is None:
        entry = _checked(op, a, ctx)
        if key is not None:
            if len(cache) >= MAX_CACHED:
                cache.clear()
            cache[key] = entry
    engine = entry[0]
    # What depends on more than the signature runs on every call: the SPMD baton and race checks, the lifetime
    # stamps of on-chip storages (liveness), written marks, and the trace record.
    if ctx.barrier is not None and op.kind != "sync":  # sync ops order the programs themselves
        _spmd_access(op, a, ctx)
    usage = ctx.usage
    if usage.check:
        if key is not None:  # the signature found every operand: plain tiles (no indirection), flat lists
            _stamp_storages(storages, usage, ctx.target)
        else:
            _touch(a, ctx, usage)
    if not ctx.options.compute:
        result = None
    else:
        if key is None:
            written = _written_storages(op, a)
            claimed = define_operands(op, a, None)
        else:
            for st in storages:
                if st.unfilled is not None:
                    if op.lazy_only and st.unfilled.__class__ is CopyFill and st not in written:
                        continue  # read lazily by the semantics (define_operands would skip it too)
                    claimed = define_operands(op, a, storages)
                    break
            else:
                claimed = None
        if claimed is None:  # _semantics, inlined: this runs per instruction
            if ctx.overlap:  # GEMMs on the worker thread while the kernel goes on (deferred.py)
                result = execute(op, a, ctx, engine, storages if key is not None else None, written)
            else:
                new_versions(written)
                result = op.impl(a, ctx, engine)
        else:
            result = _semantics_claiming(op, a, ctx, engine, storages if key is not None else None, written, claimed)
    if key is not None:
        for st in written:
            st.written = True
    else:
        _mark_written(op, a)
    trace = ctx.trace
    if trace is not None:
        form = entry[1]
        if form is None:
            form, ids_r, ids_w = form_of_call(op, a, engine)
            if key is not None:
                entry[1] = form
        counter = ctx.counter
        n = counter[0]
        # 3: past this function and its caller (dispatch or dispatch_slots); the generated nki.isa function and
        # anything else of nkidev's own further out are skipped by kernel_site itself (never kernel code)
        site = kernel_site(3)
        location = site[0] if site is not None else None
        trace.record(n, form, location, ctx.program, ids_r + ids_w)
        if usage.check:  # Occupancy.recorded, inlined: this runs per instruction
            records = usage.records
            records += (usage.clock, n, location)
            if len(records) >= liveness.BLOCK:
                usage.pack()
        counter[0] = n + 1
        if result is None:
            return NkiInstruction(n)
    return result


def _semantics(op: OpDef, a, ctx, engine: str, storages: list | None, written: list):
    if ctx.overlap:  # GEMMs on the worker thread while the kernel goes on (deferred.py)
        return execute(op, a, ctx, engine, storages, written)
    new_versions(written)
    return op.impl(a, ctx, engine)


def _semantics_claiming(op: OpDef, a, ctx, engine: str, storages: list | None, written: list, claimed: list):
    """_semantics of an instruction that overwrites bytes of fresh storages nothing filled (define_operands): their
    mark is off while the semantics write them (store() would fill them first); a failure fills them after all."""
    try:
        result = _semantics(op, a, ctx, engine, storages, written)
    except BaseException:  # (a kernel may catch it and read on): what it claimed holds the fill, as if never written
        for st, fill, spans in claimed:
            st.unfilled, st.spans = fill, spans
            st.fill_rest()
        raise
    for st, _, _ in claimed:
        if st.unfilled is not None and st.pending is None:
            st.pending = UNFILLED
    return result


def define_operands(op: OpDef, a, storages: list | None) -> list | None:
    """Before the semantics run, settle the lazily filled operands (tensor.py, "Lazily filled allocations"): bytes
    the op overwrites in full need no fill, nor does a read of bytes written since the allocation; anything else
    it touches of such a storage is filled first. Returns (storage, its Fill, its written spans before) of the
    storages left unfilled, whose mark is off while the semantics run, or None. `storages` None: the call's
    operands are not all plain views (run-time addressed, nested lists): every marked one is filled."""
    if storages is None:
        for value in a.__dict__.values():
            for t in tiles_in(value):
                _fill_marked(t)
        return None
    writes, overwrites = op.writes, op.overwrites
    full = []
    kept = []
    for name, value in a.__dict__.items():
        for t in tiles_in(value) if value.__class__ is not NkiTensor else (value,):
            st = t.storage
            if st.unfilled is None:
                continue
            if name in writes:
                span = dense_span(t) if name in overwrites and (op.overwrite_when is None or op.overwrite_when(a)) else None
                if span is not None:
                    full.append((st, span))
                    continue
            else:
                if name in op.lazy_reads and st.unfilled.__class__ is CopyFill:
                    continue  # the semantics take the copy if they need its bytes
                span = byte_span(t)
                if span is not None and st.written_within(*span):
                    kept.append(st)
                    continue
            st.fill_rest()  # read, or written in part: what it does not write holds the fill first
    claimed = []
    for st in kept:  # (reads come before this instruction's writes)
        if st.unfilled is not None:
            claimed.append((st, st.unfilled, st.spans))
    for st, (lo, hi) in full:
        if st.unfilled is not None:  # not filled for another operand's access, nor covered by an earlier one
            claimed.append((st, st.unfilled, st.spans))
            st.wrote(lo, hi)
    if not claimed:
        return None
    for st, _, _ in claimed:
        if st.pending is UNFILLED:
            st.pending = None
    return claimed


def _fill_marked(t: NkiTensor) -> None:
    if t.storage.unfilled is not None:
        t.storage.fill_rest()
    if t.dyn is not None and isinstance(t.dyn.index, NkiTensor):  # the offsets tile of an indirect view is read too
        _fill_marked(t.dyn.index)


def dispatch_slots(op: OpDef, slots: tuple):
    """dispatch for a call whose every argument outside the operand slots is its default (the public function
    checked that), given the slot values in `op.plan.tiles` order. A shape-only call whose signature was checked
    and recorded before, outside an SPMD launch, runs here without a namespace of its arguments; anything else
    (numerics on included) goes to dispatch with the arguments it had, before any side effect."""
    ctx = getattr(_thread, "ctx", None) or _ctx.current()  # current(), inlined: this runs per instruction
    ids: list[int] = []  # the storage ids of the reads, then of the writes
    ids_w: list[int] = []
    storages: list = []
    written: list = []
    key = _slots_key(ctx.target_code, slots, op.plan.tiles, ids, ids_w, storages, written)  # signature()'s cache entries
    if ctx.options.compute:  # the semantics read the arguments, and may run on the worker (deferred.execute)
        if key is None:
            return dispatch(op, op.make_args(*slots))
        # every other argument is its default: signature() would make this very key (its slots path)
        return _dispatch_signed(op, op.make_args(*slots), ctx, key, ids, ids_w, storages, written)
    if key is not None:
        entry = op.checked.get(key)
        trace = ctx.trace
        if entry is not None and ctx.barrier is None and (entry[1] is not None or trace is None):
            usage = ctx.usage
            check = usage.check
            if check:
                _stamp_storages(storages, usage, ctx.target)
            for st in written:
                st.written = True
            if trace is not None:
                counter = ctx.counter
                n = counter[0]
                site = kernel_site(3)  # 3: past this function and the generated nki.isa function
                location = site[0] if site is not None else None
                ids += ids_w
                trace.record(n, entry[1], location, ctx.program, ids)
                if check:  # Occupancy.recorded, inlined
                    records = usage.records
                    records += (usage.clock, n, location)
                    if len(records) >= liveness.BLOCK:
                        usage.pack()
                counter[0] = n + 1
                return NkiInstruction(n)
            return None
    return dispatch(op, op.make_args(*slots))


def _checked(op: OpDef, a, ctx) -> list:
    """Every check of a call: [engine, form (filled in at the first record)] once they all pass."""
    if not op.emulated:
        raise NkiNotSupportedError(
            "err_not_supported_yet", f"nki.{op.namespace}.{op.name} is not emulated by nkidev yet", None, kernel_location()
        )
    if not ctx.target.has_instruction(op.name):
        raise KernelRuleError(
            "err_unsupported_on_target",
            f"nki.{op.namespace}.{op.name} is not available on {ctx.target.name}; it exists on {', '.join(op.available_on())}",
            "pick a target that has it (--target), or use another instruction",
            kernel_location(),
        )
    check_tiles(op, a)  # before anything (the engine choice included) reads a tile operand's attributes
    engine = pick_engine(op, a, ctx)
    if ctx.deferred_views:
        _prepare_views(a, engine)
    check(op, a, ctx, engine)
    return [engine, None]


def _spmd_access(op: OpDef, a, ctx) -> None:
    """Several programs share HBM: pass the baton before each HBM access (lock-step cores), then check races."""
    hbm = []
    for name, value in a.__dict__.items():
        if isinstance(value, NkiTensor):
            if value.storage.kind == "hbm":
                hbm.append((name, value))
        elif value.__class__ in (list, tuple):
            hbm += [(name, v) for v in tiles_in(value) if v.storage.kind == "hbm"]
    if not hbm:
        return
    ctx.barrier.step()
    for name, t in hbm:
        if shared(t):
            ctx.barrier.races.access(t, name in op.writes, ctx.program)


def _touch(a, ctx, usage) -> None:
    """Stamp the on-chip storages this instruction accesses with the program's clock (their lifetimes)."""
    clock = usage.tick()
    seen: list = []
    for value in a.__dict__.values():
        if isinstance(value, NkiTensor):
            _stamp(value, clock, seen, usage)
        elif value.__class__ in (list, tuple):
            for v in tiles_in(value):
                _stamp(v, clock, seen, usage)
    if len(seen) > 1:
        usage.operands(seen, ctx.target)


def _stamp_storages(storages: list, usage, target: Target) -> None:
    """_touch for a call whose operands `signature` listed (the same stamps, in the same order)."""
    clock = usage.clock = usage.clock + 1  # Occupancy.tick, inlined: this runs per instruction
    seen: list = []
    total = 0
    stamps = usage.stamps
    for st in storages:
        life = st.life
        if life is not None and st.stamped != clock:
            st.stamped = clock
            stamps += (life, clock)
            seen.append(st)
            total += st.pp_bytes
    if len(stamps) >= liveness.BLOCK:
        usage.pack()
    if len(seen) > 1 and total > target.psum.bytes_per_partition:  # below it neither buffer can overflow
        usage.operands(seen, target)


def _stamp(t: NkiTensor, clock: int, seen: list, usage) -> None:
    st = t.storage
    life = st.life
    if life is not None and st.stamped != clock:
        st.stamped = clock
        stamps = usage.stamps
        stamps += (life, clock)
        if len(stamps) >= liveness.BLOCK:
            usage.pack()
        seen.append(st)
    if t.dyn is not None and isinstance(t.dyn.index, NkiTensor):  # the offsets tile of an indirect view is read too
        _stamp(t.dyn.index, clock, seen, usage)


def _prepare_views(a, engine: str) -> None:
    """Views are bounds-checked when an instruction accesses them (see NkiTensor.bad); a tensor-indirection
    view learns which engine reads it (its offsets' group size)."""
    for name, value in a.__dict__.items():
        for v in tiles_in(value):
            check_access(v, name)
            if v.dyn is not None and v.dyn.mode == "ti":
                v.dyn.group = TI_GROUP.get(engine, TI_GROUP["vector"])


def tiles_in(value):
    """The tensors of an argument: a tensor, or (nested) lists of them (collectives take lists per channel)."""
    if isinstance(value, NkiTensor):  # legacy tiles are NkiTensor subclasses
        yield value
    elif value.__class__ in (list, tuple):
        for v in value:
            yield from tiles_in(v)


def _written_storages(op: OpDef, a) -> list:
    return [v.storage for name in op.writes for v in tiles_in(a.__dict__.get(name))]


def _mark_written(op: OpDef, a) -> None:
    for name in op.writes:
        t = a.__dict__.get(name)
        if isinstance(t, NkiTensor):
            t.storage.written = True
        elif t.__class__ in (list, tuple):
            for v in tiles_in(t):
                v.storage.written = True


# ---------------------------------------------------------------- the operand signature of a call
#
# Rules, engine choice, attributes, flops and operand layouts depend only on what the signature holds: for each
# tile operand its memory, dtype, shape, strides and region (partition start, byte range); for every other
# argument its type and value. So a call whose signature was checked before on the same target skips the
# rules and reuses the recorded form. Arguments of any other type (registers, replica groups, nested lists of
# tiles, ...) and views checked or resolved only when accessed (run-time addressed, tensor indirection, out of
# bounds or empty: see tensor.check_access) make a call uncacheable: it is checked and recorded from scratch.
# What a call does beyond its signature (baton, races, lifetimes, written marks) is never cached: see dispatch.
# The key is cheap to build: a tile is its view code (tensor.view_code: one int per distinct view, cached on the
# view), an argument that is its parameter's (immutable) default object is None, and a call whose every
# non-operand argument is its default (checked in C through the op's SignaturePlan) keys its operand slots only.

MAX_CACHED = 50_000  # signatures remembered per op (then forgotten all at once)
_ATOMS = {int, bool, str, type(None), FunctionType, BuiltinFunctionType, np.ufunc, NkiDType, OpSpec, np.int32, np.int64}
_FLOATS = {float, np.float32, np.float64}


def signature(op: OpDef, a, target_code: int, ids_r: list, ids_w: list, storages: list, written: list) -> tuple | None:
    """The call's operand signature on a target (None: uncacheable); appends the storage ids of its operands,
    reads and writes, in the order the trace records them, their storages in argument order, and the storages
    it writes (complete only when the call is cacheable).

    The common case first: every argument outside the operand slots is its default (checked in C, see
    SignaturePlan). The key is then the slots alone, after a marker (a str: no general signature has one
    there); a slot holding an indirect, out-of-bounds or empty view or a list of tiles leaves it to the
    general signature."""
    plan = op.plan
    if plan is not None and (plan.get is None or all(map(_is, plan.get(a), plan.expected))):
        args = a.__dict__
        key = _slots_key(target_code, [args[t[0]] for t in plan.tiles], plan.tiles, ids_r, ids_w, storages, written)
        if key is not None:
            return key
        ids_r.clear()
        ids_w.clear()
        storages.clear()
        written.clear()
    return _general_signature(op, a, target_code, ids_r, ids_w, storages, written)


def _slots_key(target_code: int, values, tiles, ids_r: list, ids_w: list, storages: list, written: list) -> tuple | None:
    """signature()'s key when every argument outside the operand slots is its default: the target, a marker, then
    per slot (`values` in `plan.tiles` order) its view code, None for its default, or its value's key; appends
    as signature() does. None when a slot is uncacheable (the lists are then partly filled)."""
    key = [target_code, "tiles"]
    for v, (_, write, default) in zip(values, tiles):
        if v.__class__ is NkiTensor:
            code = v._code
            if code is None:
                code = view_code(v)
            if not code:
                return None
            key.append(code)
            st = v.storage
            if write:
                ids_w.append(st.id)
                written.append(st)
            else:
                ids_r.append(st.id)
            storages.append(st)
        elif v is default:
            key.append(None)
        else:
            value = _value_key(v)  # an operand slot that is no tensor: tensor_tensor's op=, tensor_scalar's operand0=
            if value is None:
                return None
            key.append(value)
    return tuple(key)


def _general_signature(op: OpDef, a, target_code: int, ids_r: list, ids_w: list, storages: list, written: list) -> tuple | None:
    args = a.__dict__
    defaults = op.arg_defaults
    if len(args) != len(defaults):  # not called through the public function
        return None
    key = [target_code]
    writes = op.writes
    # Arguments left at their (immutable) default are the common case: the default object itself is passed, and
    # None (which no other argument's key is) stands for it. Tiles are view codes (negative ints, see
    # tensor.view_code), Enum members their id (positive), other atoms (class, value) tuples.
    for (name, v), default in zip(args.items(), defaults):
        if v is default:
            key.append(None)
            continue
        c = v.__class__
        if c is NkiTensor:
            code = v._code
            if code is None:
                code = view_code(v)
            if not code:  # checked (and resolved) when accessed
                return None
            key.append(code)
            st = v.storage
            if name in writes:
                ids_w.append(st.id)
                written.append(st)
            else:
                ids_r.append(st.id)
            storages.append(st)
        elif c in _ATOMS:
            key.append((c, v))
        elif c in _FLOATS:
            key.append((c, v, math.copysign(1.0, v)))  # -0.0 == 0.0, but not in attributes and profiles
        elif isinstance(v, Enum):
            key.append(id(v))  # members are singletons; Enum.__hash__ is Python code
        elif c is list or c is tuple:
            if v and v[0].__class__ is NkiTensor:
                write = name in writes
                ids = ids_w if write else ids_r
                for t in v:
                    if t.__class__ is not NkiTensor:
                        return None
                    code = t._code
                    if code is None:
                        code = view_code(t)
                    if not code:
                        return None
                    key.append(code)
                    ids.append(t.storage.id)
                    storages.append(t.storage)
                    if write:
                        written.append(t.storage)
            else:
                inner = _plain(v)
                if inner is None:
                    return None
                key.append((c, inner))
        else:
            return None
    return tuple(key)


_NO_DEFAULT = object()  # a parameter without a default, or with a mutable one: no argument is this object
_is = operator.is_


@dataclass(frozen=True)
class SignaturePlan:
    """How `signature` reads an op's call fast. `get(a)` reads, in C, every parameter that is not an operand slot
    (None: there are none); the call has them all at their default when each `is` its `expected` object.
    `tiles` = (name, written?, default) of the operand slots (tile, written and required parameters), in
    argument order."""

    get: Callable | None
    expected: tuple
    tiles: tuple[tuple[str, bool, object], ...]


def signature_plan(op: OpDef, fn: Callable) -> SignaturePlan | None:
    params = list(inspect.signature(fn).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    # operand slots: the tile parameters, the written ones, and the required ones (dma_copy's HBM-or-tile dst/src)
    slots = {p.name for p in params if p.name in op.tiles or p.name in op.writes or p.name in op.extra_slots or p.default is p.empty}
    tiles = tuple((p.name, p.name in op.writes, _immutable_default(p.default)) for p in params if p.name in slots)
    others = [p for p in params if p.name not in slots]
    if not others:
        return SignaturePlan(None, (), tiles)
    names = [p.name for p in others]
    expected = tuple(_immutable_default(p.default) for p in others)
    if len(names) == 1:  # attrgetter of one name returns the value, not a 1-tuple
        names, expected = names * 2, expected * 2
    return SignaturePlan(operator.attrgetter(*names), expected, tiles)


def _immutable_default(value):
    """A default value an argument can be identical to and still mean the same (`signature` keys it as None)."""
    c = value.__class__
    if c in _ATOMS or c in _FLOATS or isinstance(value, Enum) or (c is tuple and _plain(value) is not None):
        return value
    return _NO_DEFAULT


def _value_key(v):
    """The key of one argument that is not a tile, as _general_signature makes it (None: uncacheable)."""
    c = v.__class__
    if c in _ATOMS:
        return (c, v)
    if c in _FLOATS:
        return (c, v, math.copysign(1.0, v))
    if isinstance(v, Enum):
        return id(v)
    if c is tuple or (c is list and not (v and v[0].__class__ is NkiTensor)):
        inner = _plain(v)
        return None if inner is None else (c, inner)
    return None


def _plain(v) -> tuple | None:
    """A nested list/tuple of atoms as a hashable key (None when it holds anything else)."""
    out = []
    for x in v:
        c = x.__class__
        if c in _ATOMS:
            out.append((c, x))
        elif c in _FLOATS:
            out.append((c, x, math.copysign(1.0, x)))
        elif c is list or c is tuple:
            inner = _plain(x)
            if inner is None:
                return None
            out.append((c, inner))
        elif isinstance(x, Enum):
            out.append(id(x))
        else:
            return None
    return tuple(out)


def form_of_call(op: OpDef, a, engine: str) -> tuple[Form, list[int], list[int]]:
    """The trace form of a call (interned), and the storage ids of its reads and writes."""
    reads, writes, ids_r, ids_w = [], [], [], []
    free = 0
    for name, value in a.__dict__.items():
        if isinstance(value, NkiTensor):  # not `__class__ is`: legacy tiles are NkiTensor subclasses
            data = value._data
            if data.ndim > 1:
                n = data.size // data.shape[0]
                free = n if n > free else free
            if name in op.writes:
                writes.append(layout(value, name))
                ids_w.append(value.storage.id)
            else:
                reads.append(layout(value, name))
                ids_r.append(value.storage.id)
        elif value.__class__ in (list, tuple) and value:
            lays, ids = (writes, ids_w) if name in op.writes else (reads, ids_r)
            for v in tiles_in(value):
                lays.append(layout(v, name))
                ids.append(v.storage.id)
    main = writes[0] if writes else (reads[0] if reads else None)
    parts = main.partitions if main is not None else 1
    if main is not None and main.buffer == "hbm":
        free = max(1, main.nbytes // max(1, parts))
    free = free or 1
    flops = op.flops(a) if op.flops else parts * free
    attrs = op.attrs(a) if op.attrs else {}
    return intern_form(Form(op.name, engine, parts, free, flops, attrs, tuple(reads), tuple(writes))), ids_r, ids_w


def public_function(op: OpDef, namespace: dict) -> Callable:
    """Build `nki.isa.<name>` with the op's exact signature; its body hands the arguments to dispatch (or, when
    every argument outside the operand slots is its default, the operand slots alone to dispatch_slots)."""
    names = [p.strip().split("=")[0].strip().lstrip("*") for p in op.params.split(",") if p.strip()]
    names = [n for n in names if n]
    body = ", ".join(f"{n}={n}" for n in names)
    src = f"def {op.name}({op.params}):\n    return _dispatch(_op, _NS({body}))\n"
    scope = dict(namespace, _dispatch=dispatch, _call=dispatch_slots, _op=op, _NS=SimpleNamespace)
    fn = _generated(op, src, scope)
    params = list(inspect.signature(fn).parameters.values())
    op.arg_defaults = tuple(_immutable_default(p.default) for p in params)
    op.plan = signature_plan(op, fn)
    fast = _with_slots_path(op, params, scope)
    fn = fast or fn
    fn.__module__ = f"nki.{op.namespace}"
    fn.__qualname__ = op.name
    fn.__doc__ = op_doc(op)
    fn.__nki_opdef__ = op
    return fn


def _generated(op: OpDef, src: str, scope: dict) -> Callable:
    return define(op.name, src, op.namespace, scope)


def _with_slots_path(op: OpDef, params: list, scope: dict) -> Callable | None:
    """The public function with a fast path: a call whose every argument outside the operand slots is its
    (immutable) default object -- tested with `is` in the function's own bytecode -- passes only the slots, as a
    tuple, to dispatch_slots (no namespace of arguments, which a shape-only run never reads); the op's
    `make_args(*slots)` builds that namespace when something does. The defaults are the very objects of the
    plain function's signature, so `inspect.signature` is unchanged. None when the op has no such path."""
    plan = op.plan
    if plan is None:
        return None
    slots = [name for name, _, _ in plan.tiles]
    others = [(i, p) for i, p in enumerate(params) if p.name not in slots]
    if any(op.arg_defaults[i] is _NO_DEFAULT for i, _ in others):
        return None
    head = parameter_list(params, scope)
    every = ", ".join(f"{p.name}={p.name}" for p in params)
    at_default = " and ".join(f"{p.name} is _d{i}" for i, p in others) or "True"
    slot_tuple = "".join(f"{name}, " for name in slots)
    src = (
        f"def {op.name}({head}):\n"
        f"    if {at_default}:\n"
        f"        return _call(_op, ({slot_tuple}))\n"
        f"    return _dispatch(_op, _NS({every}))\n"
    )
    fn = _generated(op, src, scope)
    with_defaults = ", ".join(f"{p.name}={p.name}" if p.name in slots else f"{p.name}=_d{i}" for i, p in enumerate(params))
    op.make_args = _generated(op, f"def {op.name}({', '.join(slots)}):\n    return _NS({with_defaults})\n", scope)
    return fn


def op_doc(op: OpDef) -> str:
    lines = [op.summary, ""]
    if op.semantics:
        lines += [op.semantics, ""]
    lines.append(f"Engines: {', '.join(op.engines)}.")
    lines.append(f"Available on: {', '.join(op.available_on()) or 'no bundled target'}.")
    if op.rules:
        lines.append("Rules checked by nkidev:")
        lines += [f"  - {r.doc} ({r.error})" for r in op.rules]
    lines.append(f"Cost: {op.cost_doc}")
    return "\n".join(lines)


def declare(name: str, params: str, engines: tuple[str, ...], summary: str, **kw) -> OpDef:
    """Register an op; its semantics are attached with `@OP.semantics_impl`."""
    if name in OPS:
        raise ValueError(f"op {name} declared twice")
    op = OpDef(name, params, engines, summary, **kw)
    OPS[name] = op
    return op
