"""One declaration per ISA op, and the dispatcher that runs it.

An `OpDef` holds everything about an instruction: its public signature, the engines it may use,
its hardware rules, its NumPy semantics, its cost formula and its doc text. `public_function`
turns it into the `nki.isa` function users call; `dispatch` checks the rules at the caller's
source line, runs the semantics and appends one trace record. The docs generator and the cost
model read the same `OPS` table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from nkidev.emulator import context as _ctx
from nkidev.emulator.location import kernel_location
from nkidev.emulator.tensor import NkiTensor, access, partition_start
from nkidev.emulator.trace import Instruction
from nkidev.errors import KernelRuleError, NkiNotSupportedError

COMPUTE_ENGINES = ("vector", "scalar", "gpsimd")


@dataclass(frozen=True)
class Rule:
    """A hardware rule: `check(args, ctx)` returns None when satisfied, else a message (or (message, fix))."""

    error: str  # the error name raised on violation
    doc: str  # what the rule requires, for the docs
    check: Callable


@dataclass
class OpDef:
    name: str
    params: str  # the public signature after the name
    engines: tuple[str, ...]
    summary: str
    semantics: str = ""  # the math, for the docs
    writes: tuple[str, ...] = ("dst",)
    tiles: tuple[str, ...] = ()  # parameters that must be on-chip tiles when given
    rules: tuple[Rule, ...] = ()
    cost: Callable | None = None  # (Instruction, Target) -> cycles of its engine (DMA: handled by the scheduler)
    cost_doc: str = ""
    min_nc: int = 2  # oldest NeuronCore version that has it
    impl: Callable | None = None  # (args, ctx, engine) -> return value of the call
    choose_engine: Callable | None = None  # (args, ctx) -> engine when the kernel leaves engine= unknown
    attrs: Callable | None = None  # (args) -> dict for the trace
    flops: Callable | None = None  # (args) -> int
    emulated: bool = True
    traced: bool = True  # False for pure queries (get_nc_version, registers)
    alignment_exempt: tuple[str, ...] = ()  # operands the partition-start rule does not apply to

    def semantics_impl(self, fn: Callable) -> Callable:
        self.impl = fn
        return fn


OPS: dict[str, OpDef] = {}


def violation(rule: Rule, result, op: str) -> KernelRuleError:
    message, fix = result if isinstance(result, tuple) else (result, None)
    return KernelRuleError(rule.error, f"{op}: {message}", fix, kernel_location())


def _engine_arg(a) -> str | None:
    eng = getattr(a, "engine", None)
    name = getattr(eng, "name", None)
    return None if name in (None, "unknown") else name


def _pick_engine(op: OpDef, a, ctx) -> str:
    """The engine= argument if given (it must be one of the op's engines), else the op's default choice."""
    wanted = _engine_arg(a)
    if wanted is None:
        return op.choose_engine(a, ctx) if op.choose_engine is not None else op.engines[0]
    if wanted not in op.engines:
        raise KernelRuleError(
            "err_invalid_argument",
            f"{op.name} cannot run on the {wanted} engine",
            f"use one of: {', '.join(op.engines)}",
            kernel_location(),
        )
    return wanted


def _check_operands(op: OpDef, a, ctx, engine: str) -> None:
    limit = ctx.target.sbuf.partitions
    for name in op.tiles:
        t = getattr(a, name, None)
        if t is None:
            continue
        if not isinstance(t, NkiTensor):
            raise KernelRuleError(
                "err_failed_to_infer_tile_from_local_tensor",
                f"{op.name}: {name} is a {type(t).__name__}, not a tile",
                "pass an SBUF/PSUM tensor allocated with nl.ndarray",
                kernel_location(),
            )
        st = t.storage
        if st.kind == "hbm":
            raise KernelRuleError(
                "err_unsupported_memory",
                f"{op.name}: {name} {t.name!r} is in HBM",
                "load it into SBUF with nisa.dma_copy first",
                kernel_location(),
            )
        p = t._data.shape[0] if t._data.ndim else 1
        if p > limit:
            raise KernelRuleError(
                "err_num_partition_exceed_arch_limit",
                f"{op.name}: {name} has {p} partitions, the limit is {limit}",
                f"split the partition dim into tiles of {limit}",
                kernel_location(),
            )
        if engine == "gpsimd" and st.kind == "psum":
            raise KernelRuleError(
                "err_gpsimd_cannot_access_psum", f"{op.name}: {name} {t.name!r} is in PSUM but runs on GpSimd", None, kernel_location()
            )
        if engine in COMPUTE_ENGINES and name not in op.alignment_exempt:
            start = partition_start(t)
            if start and not _aligned(start, p):
                allowed = "0" if p > 64 else "0 or 64" if p > 32 else "0, 32, 64 or 96"
                raise KernelRuleError(
                    "err_partition_start_alignment",
                    f"{op.name}: {name} {t.name!r} uses {p} partitions starting at partition {start}; "
                    f"a {p}-partition access must start at {allowed}",
                    None,
                    kernel_location(),
                )


def _aligned(start: int, p: int) -> bool:
    if p > 64:
        return start == 0
    if p > 32:
        return start in (0, 64)
    return start % 32 == 0 and start + p <= 128


def dispatch(op: OpDef, a: SimpleNamespace):
    ctx = _ctx.current()
    if not op.emulated:
        raise NkiNotSupportedError("err_not_supported_yet", f"nki.isa.{op.name} is not emulated by nkidev yet", None, kernel_location())
    if ctx.target.nc_version < op.min_nc:
        raise KernelRuleError(
            "err_unsupported_on_target",
            f"nki.isa.{op.name} needs NeuronCore-v{op.min_nc} or newer; {ctx.target.name} is NeuronCore-v{ctx.target.nc_version}",
            None,
            kernel_location(),
        )
    for rule in op.rules:
        result = rule.check(a, ctx)
        if result:
            raise violation(rule, result, op.name)
    engine = _pick_engine(op, a, ctx)
    _check_operands(op, a, ctx, engine)
    result = op.impl(a, ctx, engine) if (ctx.compute or not op.traced) else None
    if op.traced:
        _mark_written(op, a)
        if ctx.trace is not None:
            _record(op, a, ctx, engine)
    return result


def _mark_written(op: OpDef, a) -> None:
    for name in op.writes:
        t = getattr(a, name, None)
        if isinstance(t, NkiTensor):
            t.storage.written = True


def _record(op: OpDef, a, ctx, engine: str) -> None:
    reads, writes = [], []
    free = 0
    for name, value in a.__dict__.items():
        if value.__class__ is NkiTensor:
            data = value._data
            if data.ndim > 1:
                n = data.size // data.shape[0]
                free = n if n > free else free
            (writes if name in op.writes else reads).append(access(value, name))
        elif value.__class__ in (list, tuple) and value and value[0].__class__ is NkiTensor:
            reads.extend(access(v, name) for v in value if v.__class__ is NkiTensor)
    main = writes[0] if writes else (reads[0] if reads else None)
    parts = main.partitions if main is not None else 1
    if main is not None and main.buffer == "hbm":
        free = max(1, main.nbytes // max(1, parts))
    free = free or 1
    flops = op.flops(a) if op.flops else parts * free
    attrs = op.attrs(a) if op.attrs else {}
    counter = ctx.counter
    ctx.trace.instructions.append(
        Instruction(counter[0], op.name, engine, kernel_location(), reads, writes, parts, free, flops, ctx.program, attrs)
    )
    counter[0] += 1


def public_function(op: OpDef, namespace: dict) -> Callable:
    """Build `nki.isa.<name>` with the op's exact signature; its body hands the arguments to dispatch."""
    names = [p.strip().split("=")[0].strip().lstrip("*") for p in op.params.split(",") if p.strip()]
    names = [n for n in names if n]
    body = ", ".join(f"{n}={n}" for n in names)
    src = f"def {op.name}({op.params}):\n    return _dispatch(_op, _NS({body}))\n"
    scope = dict(namespace, _dispatch=dispatch, _op=op, _NS=SimpleNamespace)
    exec(compile(src, f"<nki.isa.{op.name}>", "exec"), scope)  # noqa: S102 - generated from our own table
    fn = scope[op.name]
    fn.__module__ = "nki.isa"
    fn.__qualname__ = op.name
    fn.__doc__ = op_doc(op)
    fn.__nki_opdef__ = op
    return fn


def op_doc(op: OpDef) -> str:
    lines = [op.summary, ""]
    if op.semantics:
        lines += [op.semantics, ""]
    lines.append(f"Engines: {', '.join(op.engines)}.")
    if op.min_nc > 2:
        lines.append(f"Available on NeuronCore-v{op.min_nc} and newer.")
    if op.rules:
        lines.append("Rules checked by nkidev:")
        lines += [f"  - {r.doc} ({r.error})" for r in op.rules]
    if op.cost_doc:
        lines.append(f"Cost: {op.cost_doc}")
    return "\n".join(lines)


def declare(name: str, params: str, engines: tuple[str, ...], summary: str, **kw) -> OpDef:
    """Register an op; its semantics are attached with `@OP.semantics_impl`."""
    if name in OPS:
        raise ValueError(f"op {name} declared twice")
    op = OpDef(name, params, engines, summary, **kw)
    OPS[name] = op
    return op
