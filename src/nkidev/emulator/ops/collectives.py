"""`nki.collectives` across the programs of one launch (the LNC cores and SPMD programs of one emulated device).

A rank is a program's linear id in the launch (`kernel[2]`: ranks 0 and 1). Each collective is a rendezvous: the
members of the caller's rank-list (ReplicaGroup) deposit their sources, and once all have arrived every member
writes its own destinations. A rank-list naming a rank the launch does not have is an error: nkidev does not
emulate several devices (nki-library's multi-rank tests need the real runtime).

Facts: aws-neuron-sdk nki/api/nki/collectives/__init__.py docstrings (lists of tensors for coalescing, HBM or SBUF
but not mixed, several tensors only in HBM; op in add/minimum/maximum; all_gather concatenates along
collective_dim (HBM 0, SBUF 0 or 1); reduce_scatter and all_to_all split along dim 0; the *_v variants move
flat element chunks described by a uint32 metadata tensor; ring permutes send to the successor). Which chunk goes
to which rank is the rank's position in its rank-list (the docs' examples; nki-library's collectives).
"""

from __future__ import annotations

import operator
from enum import Enum, auto

import numpy as np

from nkidev.emulator import costs, gate
from nkidev.emulator import rules as R
from nkidev.emulator.alu import op_name
from nkidev.emulator.dtypes import cast_array, from_f32, to_f32
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import raw, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.tensor import NkiTensor

REDUCE = {"add": np.add, "minimum": np.minimum, "maximum": np.maximum}


class rg_partition_op(Enum):  # noqa: N801 - NKI's spelling
    """How `ReplicaGroup.from_partition_op` maps a rank to its rank-list id (NKI 0.7): `op(rank, operand)`."""

    bitwise_and = auto()
    div = auto()
    mod = auto()


# rank-list id of a rank: the NKI 0.7 ReplicaGroup page's examples (bitwise_and 0: one list; div 4: contiguous
# blocks of 4; mod 4: strided) [v2.33.0/nki/api/generated/nki.collectives.ReplicaGroup.html, "from_partition_op"]
PARTITION_OPS = {rg_partition_op.bitwise_and: operator.and_, rg_partition_op.div: operator.floordiv, rg_partition_op.mod: operator.mod}


class ReplicaGroup:
    """Groups of ranks that take part in a collective together: `ReplicaGroup([[0, 1], [2, 3]])`; sub-groups do
    not overlap."""

    def __init__(self, groups=None):
        self.groups = [list(int(r) for r in g) for g in (groups or [])]
        seen = [r for g in self.groups for r in g]
        if len(seen) != len(set(seen)):
            raise rule_error("err_invalid_argument", f"ReplicaGroup {self.groups} lists a rank twice", "sub-groups must not overlap")

    @staticmethod
    def from_partition_op(world_size: int, op: rg_partition_op, operand: int) -> ReplicaGroup:
        """Partition ranks [0, world_size): ranks with the same `op(rank, operand)` form one rank-list; the lists are
        ordered by that id, the ranks of each in ascending order (NKI 0.7)."""
        gate.require("nki.collectives.rg_partition_op")
        if op not in PARTITION_OPS:
            raise rule_error(
                "err_invalid_argument",
                f"op={op!r} is not an nki.collectives.rg_partition_op",
                "pass rg_partition_op.div, .mod or .bitwise_and",
            )
        if not isinstance(world_size, int) or world_size < 1 or not isinstance(operand, int):
            raise rule_error(
                "err_invalid_argument",
                f"from_partition_op(world_size={world_size!r}, operand={operand!r})",
                "world_size is a positive int and operand an int",
            )
        if op is not rg_partition_op.bitwise_and and operand == 0:
            raise rule_error("err_invalid_argument", f"rg_partition_op.{op.name} with operand 0 divides by zero", "pass a non-zero operand")
        lists: dict[int, list[int]] = {}
        for rank in range(world_size):
            lists.setdefault(PARTITION_OPS[op](rank, operand), []).append(rank)
        return ReplicaGroup([lists[k] for k in sorted(lists)])

    def members(self, rank: int) -> tuple[int, ...]:
        for g in self.groups:
            if rank in g:
                return tuple(g)
        raise rule_error(
            "err_invalid_argument",
            f"rank {rank} is in no rank-list of ReplicaGroup {self.groups}",
            "list every participating rank (program) in the replica group",
        )

    def __repr__(self) -> str:
        return f"ReplicaGroup({self.groups})"


# ---------------------------------------------------------------- the exchange


def _members(a, ctx) -> tuple[int, ...]:
    if not isinstance(a.replica_group, ReplicaGroup):
        raise rule_error("err_invalid_argument", f"replica_group={a.replica_group!r}", "pass nki.collectives.ReplicaGroup([[0, 1]])")
    return _in_launch(a.replica_group.members(ctx.program), a.replica_group, ctx)


def _in_launch(group: tuple[int, ...], described, ctx) -> tuple[int, ...]:
    n = ctx.barrier.n if ctx.barrier is not None else 1
    outside = [r for r in group if not 0 <= r < n]
    if outside:
        raise rule_error(
            "err_invalid_argument",
            f"ranks {outside} of {described} are not programs of this launch ({n} program{'s' if n > 1 else ''})",
            "nkidev emulates collectives across the programs of one launch (kernel[n]); run multi-device collectives on Trainium",
        )
    return group


def exchange(ctx, group: tuple[int, ...], payload) -> dict[int, object]:
    """Every member's payload, once all members of the rank-list have arrived."""
    if len(group) == 1:
        return {group[0]: payload}
    return ctx.barrier.exchange(group, payload)


def _values(tensors) -> list[tuple[np.ndarray, object]]:
    return [(np.array(raw(t)), t.dtype) for t in tensors]


def _write(dst: NkiTensor, values: np.ndarray, dtype) -> None:
    if values.size != dst.size:
        raise rule_error(
            "err_shape_mismatch",
            f"collective result of {values.size} elements does not fit dst {dst.name!r} {dst.shape} ({dst.size})",
            "size dsts for the whole rank-list (all_gather: n x src along collective_dim; reduce_scatter: src / n)",
        )
    store_raw(dst, cast_array(values, dtype, dst.dtype).reshape(dst.shape))


# ---------------------------------------------------------------- rules


def _lists(*names: str, hbm_only: bool = False, single: bool = False):
    def check(a, ctx, engine):
        kinds = set()
        for name in names:
            ts = getattr(a, name)
            if not isinstance(ts, list | tuple) or not ts or not all(isinstance(t, NkiTensor) for t in ts):
                return f"{name} must be a non-empty list of tensors", f"pass {name}=[tensor]"
            if single and len(ts) != 1:
                return f"{name} holds {len(ts)} tensors; exactly one is supported", None
            kinds |= {t.storage.kind for t in ts}
        if len({len(getattr(a, n)) for n in names}) > 1:
            return f"{' and '.join(names)} have different lengths", "pass one dst per src"
        if len(kinds) > 1:
            return f"tensors are in {' and '.join(sorted(k.upper() for k in kinds))}; all must be in HBM or all in SBUF", None
        if "psum" in kinds or (hbm_only and kinds != {"hbm"}):
            return f"tensors are in {kinds.pop().upper()}; this collective needs {'HBM' if hbm_only else 'HBM or SBUF'}", None
        if kinds == {"sbuf"} and len(getattr(a, names[0])) > 1:
            return "several tensors (coalescing) are only supported in HBM", "issue one collective per SBUF tensor"

    return R.custom("err_invalid_argument", f"{', '.join(names)}: lists of tensors, all in HBM or all in SBUF", check)


def _reduce_op(a, ctx, engine):
    if op_name(a.op) not in REDUCE:
        return f"op={getattr(a.op, '__name__', a.op)!r} is not a collective reduction", "use nl.add, nl.minimum or nl.maximum"


def _dim(allowed_sbuf: tuple[int, ...]):
    def check(a, ctx, engine):
        sbuf = a.srcs[0].storage.kind == "sbuf"
        allowed = allowed_sbuf if sbuf else (0,)
        if int(a.collective_dim) not in allowed:
            return f"collective_dim={a.collective_dim} on {'SBUF' if sbuf else 'HBM'}; supported: {allowed}", None

    return R.custom("err_invalid_argument", "collective_dim is 0 (SBUF all_gather: 0 or 1)", check)


COMMON = dict(engines=("dma",), kind="move", cost=costs.TRANSFER, rendezvous=True, namespace="collectives", flops=lambda a: 0)


def _attrs(a) -> dict:
    return {"dge_mode": "none", "sync": True, "ranks": getattr(a, "_ranks", 1)}


def _declare(name: str, params: str, summary: str, semantics: str, writes: tuple[str, ...], rules: tuple, **kw):
    return declare(name, params, summary=summary, semantics=semantics, writes=writes, rules=rules, attrs=_attrs, **(COMMON | kw))


PRIORITY = "priority=None, name=None"

# ---------------------------------------------------------------- all_reduce, all_gather, reduce_scatter, all_to_all

ALL_REDUCE = _declare(
    "all_reduce",
    f"srcs, dsts, replica_group, op, {PRIORITY}",
    "Element-wise reduction over the rank-list; every member receives it.",
    "dsts[i] = op over the members' srcs[i] (fp32, cast to the dst dtype)",
    ("dsts",),
    (_lists("srcs", "dsts"), R.custom("err_invalid_op", "op is nl.add, nl.minimum or nl.maximum", _reduce_op)),
    kind="compute",
)


@ALL_REDUCE.semantics_impl
def _all_reduce(a, ctx, engine):
    group = _members(a, ctx)
    a._ranks = len(group)
    got = exchange(ctx, group, _values(a.srcs))
    fn = REDUCE[op_name(a.op)]
    for i, dst in enumerate(a.dsts):
        total = None
        for r in group:
            values, dt = got[r][i]
            x = to_f32(values, dt).astype(np.float32)
            total = x if total is None else fn(total, x)
        store_raw(dst, from_f32(total, dst.dtype).reshape(dst.shape))


ALL_GATHER = _declare(
    "all_gather",
    f"srcs, dsts, replica_group, collective_dim, {PRIORITY}",
    "Concatenate the members' tensors along collective_dim, in rank-list order; every member receives it.",
    "dsts[i] = concatenate([srcs[i] of each member], axis=collective_dim)",
    ("dsts",),
    (_lists("srcs", "dsts"), _dim((0, 1))),
)


@ALL_GATHER.semantics_impl
def _all_gather(a, ctx, engine):
    group = _members(a, ctx)
    a._ranks = len(group)
    got = exchange(ctx, group, _values(a.srcs))
    axis = int(a.collective_dim)
    for i, dst in enumerate(a.dsts):
        parts = [cast_array(got[r][i][0], got[r][i][1], dst.dtype) for r in group]
        _write(dst, np.concatenate(parts, axis=axis), dst.dtype)


REDUCE_SCATTER = _declare(
    "reduce_scatter",
    f"srcs, dsts, replica_group, collective_dim, op, {PRIORITY}",
    "Reduce over the rank-list, then split along dim 0: the member at position j of its rank-list receives chunk j.",
    "dsts[i] = split(op over the members' srcs[i], n, axis=0)[position]",
    ("dsts",),
    (_lists("srcs", "dsts"), _dim((0,)), R.custom("err_invalid_op", "op is nl.add, nl.minimum or nl.maximum", _reduce_op)),
    kind="compute",
)


@REDUCE_SCATTER.semantics_impl
def _reduce_scatter(a, ctx, engine):
    group = _members(a, ctx)
    a._ranks = len(group)
    got = exchange(ctx, group, _values(a.srcs))
    fn = REDUCE[op_name(a.op)]
    me = group.index(ctx.program)
    for i, dst in enumerate(a.dsts):
        total = None
        for r in group:
            x = to_f32(*got[r][i]).astype(np.float32)
            total = x if total is None else fn(total, x)
        chunk = np.ascontiguousarray(_chunks(total, len(group), a.srcs[i].name)[me])
        if chunk.size != dst.size:
            raise rule_error("err_shape_mismatch", f"dst {dst.name!r} {dst.shape} cannot hold a chunk of shape {chunk.shape}", None)
        store_raw(dst, from_f32(chunk, dst.dtype).reshape(dst.shape))


def _chunks(x: np.ndarray, n: int, name: str) -> list[np.ndarray]:
    if x.shape[0] % n:
        raise rule_error(
            "err_shape_mismatch",
            f"dim 0 of {name!r} ({x.shape[0]}) does not split into {n} rank chunks",
            "make dim 0 a multiple of the ranks",
        )
    return np.split(x, n, axis=0)


ALL_TO_ALL = _declare(
    "all_to_all",
    f"srcs, dsts, replica_group, collective_dim, {PRIORITY}",
    "Split each member's tensor along dim 0 into one chunk per member; member j receives chunk j of everyone, in order.",
    "dsts[i] = concatenate([split(srcs[i] of member r, n)[position] for r in rank-list], axis=0) (HBM)",
    ("dsts",),
    (_lists("srcs", "dsts", hbm_only=True), _dim((0,))),
)


@ALL_TO_ALL.semantics_impl
def _all_to_all(a, ctx, engine):
    group = _members(a, ctx)
    a._ranks = len(group)
    got = exchange(ctx, group, _values(a.srcs))
    me = group.index(ctx.program)
    for i, dst in enumerate(a.dsts):
        parts = [cast_array(_chunks(got[r][i][0], len(group), a.srcs[i].name)[me], got[r][i][1], dst.dtype) for r in group]
        _write(dst, np.concatenate(parts, axis=0), dst.dtype)


# ---------------------------------------------------------------- variable-length: all_gather_v, all_to_all_v


def _metadata(a, ctx, n: int) -> np.ndarray:
    """The metadata as (rows, n) int64: as the tensor holds it now, or as a split collective's prepare read it."""
    meta = a.metadata_tensor
    if not isinstance(meta, NkiTensor) or meta.dtype.name != "uint32":
        raise rule_error("err_invalid_argument", "metadata_tensor must be a uint32 tensor", "allocate it as nl.uint32")
    rows = 4 if a.has_rdispls else 3
    read = ctx.prepared_metadata if ctx.prepared_metadata is not None else raw(meta)
    values = np.asarray(read).astype(np.int64).reshape(-1)
    if values.size != rows * n:
        raise rule_error(
            "err_shape_mismatch",
            f"metadata_tensor {meta.shape} must hold {rows} rows x {n} ranks",
            f"use shape ({rows}, {n}) in HBM or (1, {rows}, {n}) in SBUF",
        )
    return values.reshape(rows, n)


def _flat(t: NkiTensor) -> np.ndarray:
    return np.asarray(raw(t)).reshape(-1)


def _place_chunks(a, group, chunks: dict[int, np.ndarray], meta: np.ndarray) -> None:
    """Write the chunk of each sender into dst at its slot (or recv_displs), and recv_counts into row 2."""
    dst = a.dsts[0]
    n = len(group)
    out = np.array(_flat(dst))
    slot = dst.size // n
    for j, r in enumerate(group):
        chunk = chunks[r]
        at = int(meta[3, j]) if a.has_rdispls else slot * j
        if at < 0 or at + chunk.size > out.size:
            raise rule_error(
                "err_tensor_access_out_of_bound",
                f"the {chunk.size} elements from rank {r} at offset {at} overflow dst {dst.name!r} ({dst.size})",
                "check send counts against the destination slots",
            )
        out[at : at + chunk.size] = chunk
    store_raw(dst, out.reshape(dst.shape))
    if not a.recv_counts_known:  # only row 2 is written: the other rows stay as the kernel last wrote them
        now = np.array(raw(a.metadata_tensor)).reshape(meta.shape)
        now[2] = [chunks[r].size for r in group]
        store_raw(a.metadata_tensor, now.reshape(a.metadata_tensor.shape))


V_PARAMS = f"srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False, has_rdispls=False, {PRIORITY}"

ALL_GATHER_V = _declare(
    "all_gather_v",
    V_PARAMS,
    "Variable-length all-gather of flat chunks: each member broadcasts src[send_displ : send_displ + send_count].",
    "metadata rows: 0 send_count and 1 send_displ (first column), 2 recv_counts (written unless recv_counts_known), "
    "3 recv_displs (has_rdispls); the chunk from member j lands at dst[j * dst.size / n] (or recv_displs[j])",
    ("dsts", "metadata_tensor"),
    (_lists("srcs", "dsts", hbm_only=True, single=True),),
    split=True,  # v2.33.0 nki.collectives.*_v_prepare / *_v_trigger pages
)


@ALL_GATHER_V.semantics_impl
def _all_gather_v(a, ctx, engine):
    group = _members(a, ctx)
    a._ranks = len(group)
    meta = _metadata(a, ctx, len(group))
    src = a.srcs[0]
    count, displ = int(meta[0, 0]), int(meta[1, 0])
    chunk = cast_array(_flat(src)[displ : displ + count], src.dtype, a.dsts[0].dtype)
    got = exchange(ctx, group, chunk)
    _place_chunks(a, group, got, meta)


ALL_TO_ALL_V = _declare(
    "all_to_all_v",
    V_PARAMS,
    "Variable-length all-to-all of flat chunks: member r sends src[send_displs[r] : + send_counts[r]] to member r.",
    "metadata rows: 0 send_counts[r], 1 send_displs[r], 2 recv_counts[r] (written unless recv_counts_known), "
    "3 recv_displs[r] (has_rdispls); the chunk from member j lands at dst[j * dst.size / n] (or recv_displs[j])",
    ("dsts", "metadata_tensor"),
    (_lists("srcs", "dsts", hbm_only=True, single=True),),
    split=True,  # v2.33.0 nki.collectives.*_v_prepare / *_v_trigger pages
)


@ALL_TO_ALL_V.semantics_impl
def _all_to_all_v(a, ctx, engine):
    group = _members(a, ctx)
    a._ranks = len(group)
    meta = _metadata(a, ctx, len(group))
    src = a.srcs[0]
    flat = cast_array(_flat(src), src.dtype, a.dsts[0].dtype)
    outgoing = {r: flat[int(meta[1, j]) : int(meta[1, j]) + int(meta[0, j])] for j, r in enumerate(group)}
    got = exchange(ctx, group, outgoing)
    _place_chunks(a, group, {r: got[r][ctx.program] for r in group}, meta)


# ---------------------------------------------------------------- permutes


def _pairs_check(a, ctx, engine):
    pairs = [tuple(p) for p in a.source_target_pairs]
    if any(len(p) != 2 for p in pairs):
        return "source_target_pairs must be (source, target) pairs", None
    targets = [t for _, t in pairs]
    if len(targets) != len(set(targets)):
        return "a rank is the target of two pairs", "give every target one source"


COLLECTIVE_PERMUTE = _declare(
    "collective_permute",
    f"srcs, dsts, source_target_pairs, {PRIORITY}",
    "Send each source rank's tensor to its target rank (explicit pairs).",
    "for (s, t) in source_target_pairs: dsts of t = srcs of s; a rank that is no target keeps its dsts",
    ("dsts",),
    (
        _lists("srcs", "dsts", hbm_only=True, single=True),
        R.custom("err_invalid_argument", "pairs of ranks, one source per target", _pairs_check),
    ),
)


@COLLECTIVE_PERMUTE.semantics_impl
def _collective_permute(a, ctx, engine):
    pairs = [(int(s), int(t)) for s, t in a.source_target_pairs]
    group = tuple(sorted({r for p in pairs for r in p}))
    if ctx.program not in group:
        return
    _in_launch(group, f"source_target_pairs {pairs}", ctx)
    a._ranks = len(group)
    got = exchange(ctx, group, _values(a.srcs))
    for s, t in pairs:
        if t == ctx.program:
            values, dt = got[s][0]
            _write(a.dsts[0], values, dt)


def _channels(*names: str):
    def check(a, ctx, engine):
        lengths = set()
        for name in names:
            chans = getattr(a, name)
            if not isinstance(chans, list | tuple) or not all(isinstance(c, list | tuple) and len(c) == 1 for c in chans):
                return f"{name} must be a list of one-tensor lists, one per channel", None
            if not all(isinstance(c[0], NkiTensor) and c[0].storage.kind == "hbm" for c in chans):
                return f"{name} must hold HBM tensors", None
            lengths.add(len(chans))
        ids = list(a.channel_ids)
        if len(lengths) != 1 or ids != list(range(len(ids))) or len(ids) != lengths.pop():
            return "channel_ids must be 0, 1, ... with one tensor list per channel", None
        if len(ids) > 4:
            return f"{len(ids)} channels; at most 4 are supported", None

    return R.custom("err_invalid_argument", "one single-tensor HBM list per channel; channel_ids 0..n-1, at most 4", check)


def _ring(a, ctx) -> tuple[tuple[int, ...], int, int]:
    group = _members(a, ctx)
    me = group.index(ctx.program)
    return group, group[(me + 1) % len(group)], group[(me - 1) % len(group)]


PERMUTE_IMPLICIT = _declare(
    "collective_permute_implicit",
    f"srcs_by_channel, dsts_by_channel, replica_group, channel_ids=[0], {PRIORITY}",
    "Ring permute: every member sends to its successor in the rank-list and receives from its predecessor.",
    "dsts_by_channel[c][0] = srcs_by_channel[c][0] of the predecessor",
    ("dsts_by_channel",),
    (_channels("srcs_by_channel", "dsts_by_channel"),),
)


@PERMUTE_IMPLICIT.semantics_impl
def _permute_implicit(a, ctx, engine):
    group, _, prev = _ring(a, ctx)
    a._ranks = len(group)
    got = exchange(ctx, group, [_values(c)[0] for c in a.srcs_by_channel])
    for c, dsts in enumerate(a.dsts_by_channel):
        values, dt = got[prev][c]
        _write(dsts[0], values, dt)


PERMUTE_IMPLICIT_REDUCE = _declare(
    "collective_permute_implicit_reduce",
    f"srcs0_by_channel, srcs1_by_channel, dsts_by_channel, replica_group, op, channel_ids=[0], {PRIORITY}",
    "Ring permute of op(srcs0, srcs1): every member sends its reduced pair to its successor.",
    "dsts_by_channel[c][0] = op(srcs0_by_channel[c][0], srcs1_by_channel[c][0]) of the predecessor (fp32)",
    ("dsts_by_channel",),
    (
        _channels("srcs0_by_channel", "srcs1_by_channel", "dsts_by_channel"),
        R.custom("err_invalid_op", "op is nl.add, nl.minimum or nl.maximum", _reduce_op),
    ),
    kind="compute",
)


@PERMUTE_IMPLICIT_REDUCE.semantics_impl
def _permute_implicit_reduce(a, ctx, engine):
    group, _, prev = _ring(a, ctx)
    a._ranks = len(group)
    fn = REDUCE[op_name(a.op)]
    mine = []
    for c0, c1 in zip(a.srcs0_by_channel, a.srcs1_by_channel):
        (x, dx), (y, dy) = _values(c0)[0], _values(c1)[0]
        mine.append(fn(to_f32(x, dx).astype(np.float32), to_f32(y, dy).astype(np.float32)))
    got = exchange(ctx, group, mine)
    for c, dsts in enumerate(a.dsts_by_channel):
        dst = dsts[0]
        store_raw(dst, from_f32(got[prev][c], dst.dtype).reshape(dst.shape))


def current_processing_rank(replica_group: ReplicaGroup, rank: int, iteration: int) -> int:
    """The rank whose data a ring member holds at `iteration`: itself at 0, then its predecessors in turn."""
    group = replica_group.members(rank)
    return group[(group.index(rank) - int(iteration)) % len(group)]
