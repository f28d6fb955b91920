"""Random numbers and cross-core synchronization."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import raw, rows, scalar_or_vector, store, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.tensor import NkiTensor

INT_TYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def _rng_engine_on_target(a, ctx, engine):
    if engine == "gpsimd" and not ctx.target.features.gpsimd_rng:
        return f"rng on GpSimd is not available on {ctx.target.name}", "use the vector engine"


RNG = declare(
    "rng",
    "dst, engine=engine.vector, name=None",
    ("vector", "gpsimd"),
    "Fill an integer tile with pseudo-random bits (low bits of 32-bit values).",
    tiles=("dst",),
    rules=(R.dtype_in("dst", INT_TYPES), R.custom("err_unsupported_on_target", "GpSimd rng needs NeuronCore-v3+", _rng_engine_on_target)),
    kind="constant",
    cost=costs.STREAMING,
)


@RNG.semantics_impl
def _rng(a, ctx, engine):
    bits = ctx.rng.integers(0, 2**32, size=a.dst.shape, dtype=np.uint64).astype(np.uint32)
    store_raw(a.dst, bits.view(np.int32).astype(a.dst.dtype.storage) if a.dst.dtype.kind == "int" else bits.astype(a.dst.dtype.storage))


RAND2 = declare(
    "rand2",
    "dst, min, max, name=None",
    ("vector",),
    "Uniform pseudo-random values in [min, max] (NeuronCore-v4).",
    tiles=("dst",),
    rules=(R.vector_operand("min"), R.vector_operand("max")),
    kind="constant",
    cost=costs.STREAMING,
)


@RAND2.semantics_impl
def _rand2(a, ctx, engine):
    p = a.dst.shape[0]
    lo, hi = scalar_or_vector(a.min, p), scalar_or_vector(a.max, p)
    u = ctx.rng.random((p, a.dst.size // p), dtype=np.float32)
    store(a.dst, lo + u * (hi - lo))


DROPOUT = declare(
    "dropout",
    "dst, data, prob, name=None",
    ("vector",),
    "Zero each element with probability prob (scalar or [P, 1]); dst dtype equals data dtype.",
    tiles=("dst", "data"),
    rules=(R.same_partitions("dst", "data"), R.same_free_size("dst", "data"), R.same_dtype("dst", "data"), R.vector_operand("prob")),
    kind="compute",
    cost=costs.STREAMING,
)


@DROPOUT.semantics_impl
def _dropout(a, ctx, engine):
    x = rows(a.data)
    keep = ctx.rng.random(x.shape, dtype=np.float32) >= scalar_or_vector(a.prob, x.shape[0])
    store(a.dst, np.where(keep, x, np.float32(0)))


SET_RNG_SEED = declare(
    "set_rng_seed",
    "src_seeds, name=None",
    ("vector",),
    "Seed the Vector Engine PRNG from a [1, 1] 32-bit tile.",
    writes=(),
    tiles=("src_seeds",),
    kind="constant",
    cost=costs.STREAMING,
)


@SET_RNG_SEED.semantics_impl
def _set_seed(a, ctx, engine):
    first = np.asarray(raw(a.src_seeds)).reshape(-1)[0]
    seed = int(np.nan_to_num(np.float64(first), nan=0.0, posinf=0.0, neginf=0.0)) if first.dtype.kind == "f" else int(first)
    ctx.rng = np.random.default_rng(seed & 0xFFFFFFFF)


STATE_WORDS = {"gpsimd": 6, "vector": 24}  # XORWOW state words per lane (aws-neuron-sdk rand_set_state docstring)


def _state_check(name: str):
    def check(a, ctx, engine):
        t = getattr(a, name)
        if not isinstance(t, NkiTensor) or t.dtype.name != "uint32" or t.ndim != 2:
            return f"{name} must be a 2-D uint32 tile", "allocate it as nl.ndarray((P, words), nl.uint32)"
        if engine == "vector" and not ctx.target.features.vector_rng_state:
            return f"the PRNG state of VectorE is not accessible on {ctx.target.name}", "use engine=nisa.engine.gpsimd"
        if t.shape[1] != STATE_WORDS[engine]:
            return f"{name} {t.shape} must hold {STATE_WORDS[engine]} state words per lane on {engine}", None
        if engine == "gpsimd" and t.storage.kind != "sbuf":
            return f"{name} must be in SBUF on GpSimd", None

    return R.custom("err_invalid_argument", f"{name} is a 2-D uint32 tile of 6 (GpSimd) or 24 (VectorE, NC-v4) words per lane", check)


RAND_SET_STATE = declare(
    "rand_set_state",
    "src_seeds, engine=engine.gpsimd, name=None",
    ("gpsimd", "vector"),
    "Seed the per-lane XORWOW PRNG states of GpSimd (or VectorE on NeuronCore-v4) from a uint32 tile.",
    semantics="Each partition seeds its lane. nkidev's generator is not XORWOW: random values differ from hardware; "
    "rand_get_state returns the state last set.",
    writes=(),
    tiles=("src_seeds",),
    rules=(R.in_memory("src_seeds", ("sbuf",)), _state_check("src_seeds")),
    kind="constant",
    cost=costs.STREAMING,
)


@RAND_SET_STATE.semantics_impl
def _rand_set_state(a, ctx, engine):
    seeds = np.asarray(raw(a.src_seeds)).astype(np.uint32).reshape(a.src_seeds.shape)
    states = ctx.rng_states.setdefault(engine, _initial_state(engine))
    states[: seeds.shape[0]] = seeds
    ctx.rng = np.random.default_rng(states.astype(np.uint64).reshape(-1).tolist())


def _initial_state(engine: str) -> np.ndarray:
    return np.random.default_rng(STATE_WORDS[engine]).integers(0, 2**32, size=(128, STATE_WORDS[engine]), dtype=np.uint64).astype(np.uint32)


RAND_GET_STATE = declare(
    "rand_get_state",
    "dst, engine=engine.gpsimd, name=None",
    ("gpsimd", "vector"),
    "Store the per-lane PRNG states (NeuronCore-v3+; VectorE on NeuronCore-v4) into a uint32 tile.",
    semantics="dst[p] = the state words of lane p: what rand_set_state stored (a fixed initial state before any).",
    tiles=("dst",),
    rules=(_state_check("dst"),),
    kind="constant",
    cost=costs.STREAMING,
)


@RAND_GET_STATE.semantics_impl
def _rand_get_state(a, ctx, engine):
    states = ctx.rng_states.setdefault(engine, _initial_state(engine))
    store_raw(a.dst, states[: a.dst.shape[0]].copy())


def _barrier_check(a, ctx, engine):
    if not isinstance(a.cores, list | tuple) or tuple(a.cores) != (0, 1):
        return f"cores={a.cores}; only (0, 1) is supported", "pass cores=(0, 1)"


CORE_BARRIER = declare(
    "core_barrier",
    "data, cores, engine=engine.gpsimd, name=None",
    ("gpsimd", "vector", "scalar", "sync"),
    "Wait until every listed NeuronCore reaches this barrier (LNC=2, NeuronCore-v3+).",
    writes=(),
    rules=(R.custom("err_invalid_argument", "cores is (0, 1)", _barrier_check),),
    attrs=lambda a: {"sync": True},
    flops=lambda a: 0,
    kind="sync",
    cost=costs.SEMAPHORE_ROUND_TRIP,
    opcode="BARRIER",
    rendezvous=True,
)


@CORE_BARRIER.semantics_impl
def _core_barrier(a, ctx, engine):
    if ctx.barrier is not None:
        ctx.barrier.barrier()


def _sendrecv_check(a, ctx, engine):
    if not isinstance(a.src, NkiTensor) or not isinstance(a.dst, NkiTensor):
        return "src and dst must be SBUF tiles", None
    if a.src.shape != a.dst.shape or a.src.dtype != a.dst.dtype:
        return f"src {a.src.shape} {a.src.dtype} and dst {a.dst.shape} {a.dst.dtype} must match", None


SENDRECV = declare(
    "sendrecv",
    "src, dst, send_to_rank, recv_from_rank, pipe_id, dma_engine=dma_engine.dma, name=None",
    ("dma",),
    "Send src to another NeuronCore of the LNC group and receive its data into dst.",
    writes=("dst",),
    tiles=("src", "dst"),
    rules=(
        R.in_memory("src", ("sbuf",)),
        R.in_memory("dst", ("sbuf",)),
        R.custom("err_shape_mismatch", "src and dst have the same shape and dtype", _sendrecv_check),
    ),
    attrs=lambda a: {"dge_mode": "none", "sync": True},
    flops=lambda a: 0,
    kind="move",
    cost=costs.TRANSFER,
    rendezvous=True,
)


@SENDRECV.semantics_impl
def _sendrecv(a, ctx, engine):
    if ctx.barrier is None:
        raise rule_error(
            "err_invalid_argument",
            "sendrecv needs an LNC=2 launch (kernel[2])",
            "launch the kernel with nki.simulate(kernel[2]) or kernel[2](...)",
        )
    data = np.array(raw(a.src))
    got = ctx.barrier.sendrecv(int(a.send_to_rank), int(a.recv_from_rank), a.pipe_id, data)
    store_raw(a.dst, got)
