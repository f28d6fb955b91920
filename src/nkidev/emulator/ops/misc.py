"""Random numbers and cross-core synchronization and exchange (core_barrier, sendrecv, sendrecv_compute)."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.alu import op_name
from nkidev.emulator.dtypes import from_f32, to_f32
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import raw, rows, scalar_or_vector, store, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.tensor import NkiTensor, shared_storage

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


def _prob_check(a, ctx, engine):
    # prob is the drop probability: 1.0 drops every element, 0.0 keeps every one
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.dropout.html);
    # 1.5 acted as 1.0 and -0.5 as 0.0. A [P, 1] tile's values are run-time data and are not checked.
    v = a.prob
    if isinstance(v, NkiTensor) or not isinstance(v, int | float | np.number) or isinstance(v, bool):
        return None
    if not 0.0 <= float(v) <= 1.0:
        return f"prob={v!r} is not a probability in [0, 1]", "pass a drop probability between 0.0 and 1.0"


DROPOUT = declare(
    "dropout",
    "dst, data, prob, name=None",
    ("vector",),
    "Zero each element with probability prob (scalar or [P, 1]); dst dtype equals data dtype.",
    tiles=("dst", "data"),
    rules=(
        R.same_partitions("dst", "data"),
        R.same_free_size("dst", "data"),
        R.same_dtype("dst", "data"),
        R.vector_operand("prob"),
        R.custom("err_invalid_argument", "a constant prob is a probability in [0, 1]", _prob_check),
    ),
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


def _require_lnc2(ctx, op: str) -> None:
    """The exchanges between the two NeuronCores of an LNC=2 launch exist only in one (ctx.barrier pairs them)."""
    if ctx.barrier is None:
        raise rule_error(
            "err_invalid_argument",
            f"{op} needs an LNC=2 launch (kernel[2])",
            "launch the kernel with nki.simulate(kernel[2]) or kernel[2](...)",
        )


@SENDRECV.semantics_impl
def _sendrecv(a, ctx, engine):
    _require_lnc2(ctx, "sendrecv")
    data = np.array(raw(a.src))
    got = ctx.barrier.sendrecv(int(a.send_to_rank), int(a.recv_from_rank), a.pipe_id, data)
    store_raw(a.dst, got)


# ---------------------------------------------------------------- sendrecv_compute (NKI 0.7)
#
# Facts from https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.sendrecv_compute.html
# (the nki.isa page; no v2.32.0 page, so NKI 0.7; NKI 0.8 deprecates it for nki.lnc.sendrecv_compute:
# latest/about-neuron/announcements/neuron2.x/announce-intent-eos-nki-virtualregister-lnc-apis.html): a sendrecv
# whose received tile is reduced with the local src by the DMA engine, dst = reduce_op(src, peer); LNC degree > 1;
# ranks 0 or 1; reduce_op nl.add / nl.maximum / nl.minimum; src and dst both in SBUF or both in private HBM. The
# stored page breaks off inside its constraints list, so the arithmetic is the DMA engine's as nki.isa.dma_compute
# documents it (inputs widened to fp32, the fp32 result cast to dst's dtype) and dtypes may differ, as there.
# An LNC degree above 1 rules out trn1, which runs LNC=1 only (NCC_EARG001): trn1.toml lists it among its missing
# instructions. (The NKI 0.8 nki.lnc page says NeuronCore-v3 or newer outright.)

SENDRECV_REDUCTIONS = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum}
_COMPUTE_PIPE = object()  # its messages pair with the peer's sendrecv_compute only, never with a sendrecv's pipe


def _space(t: NkiTensor) -> str:
    if t.storage.kind != "hbm":
        return t.storage.kind.upper()
    return "shared HBM" if shared_storage(t.storage) else "private HBM"


def _compute_memory(a, ctx, engine):
    spaces = (_space(a.src), _space(a.dst))
    if spaces not in (("SBUF", "SBUF"), ("private HBM", "private HBM")):
        return (
            f"src {a.src.name!r} is in {spaces[0]} and dst {a.dst.name!r} in {spaces[1]}; both must be in SBUF or both in private HBM",
            "allocate both in nl.sbuf, or both with buffer=nl.private_hbm (never shared HBM, a kernel argument or PSUM)",
        )


def _compute_shapes(a, ctx, engine):
    if tuple(a.src.shape) != tuple(a.dst.shape):
        return f"src {a.src.shape} and dst {a.dst.shape} must have the same shape", "slice both to one shape"


def _compute_op(a, ctx, engine):
    if op_name(a.reduce_op) not in SENDRECV_REDUCTIONS:
        return f"reduce_op={getattr(a.reduce_op, '__name__', a.reduce_op)!r} is not supported", "use nl.add, nl.maximum or nl.minimum"


def _compute_ranks(a, ctx, engine):
    for name in ("send_to_rank", "recv_from_rank"):
        rank = getattr(a, name)
        if not isinstance(rank, int | np.integer) or isinstance(rank, bool) or int(rank) not in (0, 1):
            return f"{name}={rank!r} is not a rank of the LNC", "pass 0 or 1 (e.g. 1 - nl.program_id(0))"


SENDRECV_COMPUTE = declare(
    "sendrecv_compute",
    "src, dst, send_to_rank, recv_from_rank, reduce_op, name=None",
    ("dma",),
    "Send src to the other NeuronCore of the LNC group and write reduce_op(src, the tile received from it) to dst (NKI 0.7).",
    semantics="dst = reduce_op(src, the peer's src) element-wise, in fp32 (cast to dst's dtype, which may differ from src's); "
    "reduce_op is nl.add, nl.maximum or nl.minimum. Pairs with the peer core's sendrecv_compute (program order), never with "
    "a sendrecv.",
    writes=("dst",),
    rules=(
        R.tensor_required("src"),
        R.tensor_required("dst"),
        R.custom("err_unsupported_memory", "src and dst are both in SBUF or both in private HBM", _compute_memory),
        R.custom("err_shape_mismatch", "src and dst have the same shape", _compute_shapes),
        R.custom("err_invalid_op", "reduce_op is nl.add, nl.maximum or nl.minimum", _compute_op),
        R.custom("err_invalid_argument", "send_to_rank and recv_from_rank are ranks of the LNC (0 or 1)", _compute_ranks),
    ),
    attrs=lambda a: {"dge_mode": "none", "sync": True, "reduce_op": op_name(a.reduce_op), "dst_dtype": a.dst.dtype.name},
    flops=lambda a: a.dst.size,
    overwrites=("dst",),
    kind="compute",
    cost=costs.TRANSFER,
    rendezvous=True,
)


@SENDRECV_COMPUTE.semantics_impl
def _sendrecv_compute(a, ctx, engine):
    _require_lnc2(ctx, "sendrecv_compute")
    mine = np.array(raw(a.src))  # a copy: the peer may read it after this core went on and rewrote src
    peer, peer_dtype = ctx.barrier.sendrecv(int(a.send_to_rank), int(a.recv_from_rank), _COMPUTE_PIPE, (mine, a.src.dtype))
    if peer.shape != mine.shape:
        raise rule_error(
            "err_shape_mismatch",
            f"sendrecv_compute: the tile received from rank {int(a.recv_from_rank)} has shape {peer.shape}, this core's src {mine.shape}",
            "send tiles of one shape from both cores",
        )
    reduce = SENDRECV_REDUCTIONS[op_name(a.reduce_op)]
    store_raw(a.dst, from_f32(reduce(to_f32(mine, a.src.dtype), to_f32(peer, peer_dtype)), a.dst.dtype))
