"""Instruction costs as expressions: one object both computes an op's engine cycles and writes its doc.

An op declaration names its cost, e.g. `cost=max_(MIN_II, N / RATE)`; the cost model evaluates it on a
trace instruction and the docs print `max(MIN_II, N / RATE)` from the same tree, so the two cannot
disagree. Terms are the documented quantities (reference: the per-instruction cost formulas of the NKI
performance guide): `N` elements per partition of the largest operand, `MIN_II` the minimum initiation
interval, `RATE` the elements per lane per cycle of the op's performance mode, ... Conditions (`when`)
read the instruction's attributes. Numbers come from the target's TOML; nothing here is per generation.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from nkidev.emulator.dtypes import DTYPES
from nkidev.hardware import Target

SIXTEEN_BIT = {"bfloat16", "float16"}


@dataclass(frozen=True)
class Env:
    """What a cost is evaluated against: the trace instruction, the hardware and the op's declaration."""

    ins: object  # nkidev.emulator.trace.Instruction
    hw: Target
    op: object  # nkidev.emulator.opdef.OpDef


class Expr:
    """A cost expression: `expr.eval(env)` computes it, `expr.render(leaf)` writes it with each leaf
    (term or condition) spelled by `leaf`; `doc` is the rendering with the leaves' names."""

    def eval(self, env: Env) -> float:
        raise NotImplementedError

    def render(self, leaf: Callable) -> str:
        raise NotImplementedError

    @property
    def doc(self) -> str:
        return self.render(lambda x: x.name)

    def __add__(self, other):
        return BinOp("+", self, _expr(other))

    def __radd__(self, other):
        return BinOp("+", _expr(other), self)

    def __mul__(self, other):
        return BinOp("*", self, _expr(other))

    def __rmul__(self, other):
        return BinOp("*", _expr(other), self)

    def __truediv__(self, other):
        return BinOp("/", self, _expr(other))


def _expr(x) -> Expr:
    return x if isinstance(x, Expr) else Const(x)


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: float

    def eval(self, env: Env) -> float:
        return self.value

    def render(self, leaf: Callable) -> str:
        return repr(self.value) if not float(self.value).is_integer() else str(int(self.value))


@dataclass(frozen=True, eq=False)
class Term(Expr):
    """A named quantity of the instruction or the hardware."""

    name: str
    meaning: str
    get: Callable[[Env], float]

    def eval(self, env: Env) -> float:
        return self.get(env)

    def render(self, leaf: Callable) -> str:
        return leaf(self)


_OPS = {"+": operator.add, "*": operator.mul, "/": operator.truediv}
_PRECEDENCE = {"+": 1, "*": 2, "/": 2}


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr

    def eval(self, env: Env) -> float:
        return _OPS[self.op](self.a.eval(env), self.b.eval(env))

    def render(self, leaf: Callable) -> str:
        def side(e: Expr, right: bool) -> str:
            text = e.render(leaf)
            inner = _PRECEDENCE.get(getattr(e, "op", ""), 3)
            mine = _PRECEDENCE[self.op]
            # the right operand of an equal-precedence operator keeps its parentheses: the docs then say exactly
            # the order the cost model evaluates in (a * (b / c) is not (a * b) / c in floating point)
            return f"({text})" if inner < mine or (right and inner == mine) else text

        return f"{side(self.a, False)} {self.op} {side(self.b, True)}"


@dataclass(frozen=True, eq=False)
class Call(Expr):
    fn: str  # "max" | "min"
    args: tuple[Expr, ...]

    def eval(self, env: Env) -> float:
        return {"max": max, "min": min}[self.fn](a.eval(env) for a in self.args)

    def render(self, leaf: Callable) -> str:
        return f"{self.fn}({', '.join(a.render(leaf) for a in self.args)})"


@dataclass(frozen=True, eq=False)
class Cond:
    """A yes/no fact about the instruction; `name` is how the docs say it."""

    name: str
    test: Callable[[Env], bool]


@dataclass(frozen=True, eq=False)
class When(Expr):
    cond: Cond
    then: Expr
    otherwise: Expr

    def eval(self, env: Env) -> float:
        return self.then.eval(env) if self.cond.test(env) else self.otherwise.eval(env)

    def render(self, leaf: Callable) -> str:
        return f"({self.then.render(leaf)} if {leaf(self.cond)} else {self.otherwise.render(leaf)})"


def max_(*args) -> Expr:
    return Call("max", tuple(_expr(a) for a in args))


def min_(*args) -> Expr:
    return Call("min", tuple(_expr(a) for a in args))


def when(cond: Cond, then, otherwise) -> Expr:
    return When(cond, _expr(then), _expr(otherwise))


@dataclass(frozen=True)
class TransferCost:
    """The cost of a DMA instruction: not engine cycles but a transfer the scheduler times on the DMA queues
    and engines (costmodel/dma.py implements exactly this description)."""

    doc: str


TRANSFER = TransferCost(
    "issue on its DMA queue (trigger_ns; hwdge_cost_ns / swdge_cost_ns for descriptor-generated DMAs), then "
    "fixed_cost_ns, then each DMA engine serving its partitions moves its share: bytes / (bytes_per_ns_per_engine "
    "x efficiency) + descriptors x descriptor_overhead_ns x max(0, 1 - descriptor bytes / saturating_bytes_per_partition) "
    "(efficiency: hbm_efficiency when HBM is involved, x the transpose efficiency for DMA transposes)"
)


# ---------------------------------------------------------------- performance modes


@dataclass(frozen=True)
class PerfModes:
    """The throughput modes an op may run in: `rate(env)` is elements per lane per cycle (1, 2 or 4)."""

    name: str
    doc: str
    rate: Callable[[Env], float]


def _contiguous(a) -> bool:
    per_partition = a.nbytes // max(1, a.partitions)
    return a.contiguous_bytes >= per_partition


def _mode_engine(env: Env):
    """The Vector/Scalar/GpSimd engine whose performance modes apply, or None (other engines have none)."""
    return env.hw.engine(env.ins.engine) if env.ins.engine in ("vector", "scalar", "gpsimd") else None


def _in_mode_dtypes(eng, accesses) -> bool:
    return bool(accesses) and all(a.dtype in eng.mode_dtypes for a in accesses)


def _copy_rate(env: Env) -> float:
    eng = _mode_engine(env)
    if eng is None:
        return 1.0
    ops = env.ins.reads + env.ins.writes
    if not _in_mode_dtypes(eng, ops):
        return eng.other_dtype_rate
    in_sbuf = all(a.buffer == "sbuf" for a in ops)
    contiguous = all(_contiguous(a) for a in ops)
    if in_sbuf and contiguous:
        return eng.copy_mode_rate
    if in_sbuf or contiguous:  # strided in SBUF, or contiguous with one side in PSUM
        return eng.copy_mode_rate_partial
    return eng.other_dtype_rate  # strided and in PSUM: no documented mode


def _tensor_tensor_rate(env: Env) -> float:
    eng = _mode_engine(env)
    if eng is None:
        return 1.0
    ins = env.ins
    if _in_mode_dtypes(eng, ins.reads + ins.writes) and all(a.buffer == "sbuf" for a in ins.reads):
        return eng.tensor_tensor_mode_rate
    return eng.other_dtype_rate


COPY_MODES = PerfModes(
    "copy performance modes",
    "every operand of the engine's mode_dtypes: copy_mode_rate when all are in SBUF and contiguous (4x VectorE on "
    "NC-v3/v4, 2x ScalarE on NC-v4), copy_mode_rate_partial when strided in SBUF or contiguous with PSUM (2x VectorE); "
    "else other_dtype_rate (1x)",
    _copy_rate,
)
TENSOR_TENSOR_MODES = PerfModes(
    "tensor_tensor performance mode",
    "both inputs in SBUF and every operand of the engine's mode_dtypes: tensor_tensor_mode_rate (2x VectorE on NC-v3/v4); "
    "else other_dtype_rate",
    _tensor_tensor_rate,
)
DOUBLE_ROW = PerfModes(
    "double_row",
    "perf_mode=double_row (fp8): 1 / fp8_cycle_factor (2x on NC-v3/v4)",
    lambda env: 1.0 / env.hw.tensor_engine.fp8_cycle_factor if env.ins.attrs.get("perf_mode") == "double_row" else 1.0,
)


def rate_of(env: Env) -> float:
    modes = env.op.perf_modes
    return modes.rate(env) if modes is not None else 1.0


# ---------------------------------------------------------------- terms


def _attr(key: str, default=0):
    return lambda env: env.ins.attrs.get(key, default)


def _input_elems(env: Env) -> float:
    reads = env.ins.reads
    return max((a.nbytes // max(1, a.partitions) // _itemsize(a.dtype)) for a in reads) if reads else 0


def _itemsize(dtype: str) -> int:
    return DTYPES[dtype].itemsize if dtype in DTYPES else 4


N = Term("N", "elements per partition of the largest operand", lambda env: env.ins.free_elems)
N_IN = Term("N_in", "elements per partition of the largest input", _input_elems)
P = Term("P", "partitions used", lambda env: env.ins.partitions)
MIN_II = Term("MIN_II", "minimum initiation interval, engine cycles", lambda env: env.hw.engines.min_ii_cycles)
RATE = Term("RATE", "elements per lane per cycle of the op's performance mode (1, 2 or 4)", rate_of)
GPSIMD_START = Term("GPSIMD_START", "GpSimd start-up cycles", lambda env: env.hw.gpsimd_engine.start_cycles)
M = Term(
    "M",
    "stationary free size (a TensorE transpose loads its F columns)",
    lambda env: env.ins.attrs.get("M", env.ins.attrs.get("F", env.hw.tensor_engine.stationary_fmax)),
)
N_MOVING = Term("N_moving", "moving free size", _attr("N"))
F = Term("F", "free size of the transposed data", lambda env: env.ins.attrs.get("F", env.ins.free_elems))
K_TOP = Term("K", "values kept per 16-partition group (val_dst's free size)", _attr("k"))
N_SNAKE = Term("n", "active elements of one 16-partition snake", _attr("n"))
FP32_FACTOR = Term("FP32_FACTOR", "TensorE cycle factor of fp32 operands", lambda env: env.hw.tensor_engine.fp32_cycle_factor)
LS_FACTOR = Term("LS_FACTOR", "LoadStationary cycles per stationary column", lambda env: env.hw.tensor_engine.load_stationary_factor)


def _all(dtypes: set, accesses) -> bool:
    return all(a.dtype in dtypes for a in accesses)


# The legacy tensor_tensor page's N row: "input/output data types are all bfloat16" and the inputs contiguous along
# the free dimension, besides both inputs in SBUF and add/multiply/subtract ([sources: isa-legacy]).
PSUM_INPUT_OR_BF16_ADD = Cond(
    "a PSUM input, or bf16 add/multiply/subtract of contiguous SBUF inputs into bf16",
    lambda env: (
        any(a.buffer == "psum" for a in env.ins.reads)
        or (
            env.ins.attrs.get("op") in ("add", "multiply", "subtract")
            and all(a.dtype == "bfloat16" and a.buffer == "sbuf" and _contiguous(a) for a in env.ins.reads)
            and _all({"bfloat16"}, env.ins.writes)
        )
    ),
)
BF16_ADD_MAX = Cond(
    "bf16 add/max",
    lambda env: env.ins.attrs.get("op") in ("add", "maximum") and _all({"bfloat16"}, env.ins.reads + env.ins.writes),
)
READS_ACCUMULATOR = Cond("reduce_res is read", lambda env: bool(env.ins.attrs.get("reads_accumulator")))
ZERO_INTO_16BIT = Cond("zero into bf16/fp16", lambda env: env.ins.attrs.get("value") == 0 and _all(SIXTEEN_BIT, env.ins.writes))
BF16_SUB_MUL_EVEN = Cond(
    "bf16 subtract then multiply with even N",
    lambda env: (
        env.ins.attrs.get("op0") == "subtract"
        and env.ins.attrs.get("op1") == "multiply"
        and env.ins.free_elems % 2 == 0
        and _all({"bfloat16"}, env.ins.reads)
    ),
)
SPLIT_SBUF_PSUM = Cond("src and predicate split over SBUF and PSUM", lambda env: len({a.buffer for a in env.ins.reads}) > 1)
FP32_OPERANDS = Cond("fp32 operands (not one-zero)", lambda env: bool(env.ins.attrs.get("fp32")) and not env.ins.attrs.get("onezero"))
FP32_STATIONARY = Cond("fp32 operands", lambda env: bool(env.ins.attrs.get("fp32")))
ON_VECTOR = Cond("on VectorE", lambda env: env.ins.engine == "vector")


# ---------------------------------------------------------------- the documented formulas

STREAMING = max_(MIN_II, N)  # activation, bn_stats, rng, ... (ops without performance modes)
PERF_STREAMING = max_(MIN_II, N / RATE)  # tensor_scalar, tensor_copy: up to 4x in their performance modes
TENSOR_TENSOR = max_(MIN_II, when(PSUM_INPUT_OR_BF16_ADD, 1, 2) * N / RATE)
TENSOR_REDUCE = max_(MIN_II, N_IN / when(BF16_ADD_MAX, 2, 1))
PLUS_MIN_II = STREAMING + MIN_II  # activation_reduce, tensor_scalar_reduce (extra accumulator read)
ACTIVATION = STREAMING + when(READS_ACCUMULATOR, MIN_II, 0)
MEMSET = max_(MIN_II, when(ZERO_INTO_16BIT, 0.5, 1) * N)
RECIPROCAL = max_(MIN_II, 8 * N)  # VectorE reciprocal
SCAN = max_(MIN_II, 2 * N)  # tensor_tensor_scan, tensor_scalar_cumulative
SCALAR_TENSOR_TENSOR = max_(MIN_II, when(BF16_SUB_MUL_EVEN, 1, 2) * N)
COPY_PREDICATED = max_(MIN_II, when(SPLIT_SBUF_PSUM, 1, 2) * N)
BN_AGGR = max_(MIN_II, 13 * N / 3)
LINEAR = N  # max8, nc_find_index8
GPSIMD = GPSIMD_START + N  # iota, affine_select
GPSIMD_STREAMING = GPSIMD_START + STREAMING
MATMUL = max_(min_(64, M), N_MOVING) * when(FP32_OPERANDS, FP32_FACTOR, 1) / RATE
LOAD_STATIONARY = M * LS_FACTOR * when(FP32_STATIONARY, FP32_FACTOR, 1)  # runs behind the previous MATMUL
PE_TRANSPOSE = when(ON_VECTOR, STREAMING, max_(P, min_(64, F)))
MATCH_REPLACE8 = min_(MIN_II, N)  # as documented
EXPONENTIAL = STREAMING / 4  # VectorE exp: 4x the throughput of ScalarE exp
TOPK = 4 * N_SNAKE + K_TOP  # the topk page's estimate, cycles per partition
SEMAPHORE_ROUND_TRIP = MIN_II  # core_barrier

TERMS = (N, N_IN, P, MIN_II, RATE, GPSIMD_START, M, N_MOVING, F, K_TOP, N_SNAKE, FP32_FACTOR, LS_FACTOR)
