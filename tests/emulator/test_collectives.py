"""nki.collectives across the programs of one launch: ranks are program ids; results checked against NumPy."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.emulator.nki_api import collectives as ncc
from nkidev.errors import NkiError

RNG = np.random.default_rng(0)


@jit
def hbm_collectives(x, groups):
    """Each program (rank) contributes rows [8r, 8r + 8) of x; outputs are per rank, stacked along dim 0."""
    r = nl.program_id(0)
    n = nl.num_programs()
    group = ncc.ReplicaGroup(groups)
    members = len(groups[0])
    mine = x[nl.ds(r * 8, 8), :]
    summed = nl.ndarray((8 * n, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    gathered = nl.ndarray((8 * members * n, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    scattered = nl.ndarray((8 // members * n, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    swapped = nl.ndarray((8 * n, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[mine], dsts=[summed[nl.ds(r * 8, 8), :]], replica_group=group, op=nl.add)
    ncc.all_gather(srcs=[mine], dsts=[gathered[nl.ds(r * 8 * members, 8 * members), :]], replica_group=group, collective_dim=0)
    part = 8 // members
    ncc.reduce_scatter(srcs=[mine], dsts=[scattered[nl.ds(r * part, part), :]], replica_group=group, collective_dim=0, op=nl.maximum)
    ncc.all_to_all(srcs=[mine], dsts=[swapped[nl.ds(r * 8, 8), :]], replica_group=group, collective_dim=0)
    return summed, gathered, scattered, swapped


@pytest.mark.parametrize("groups", [[[0, 1]], [[0, 1], [2, 3]], [[1, 3], [0, 2]]])
def test_hbm_collectives_over_the_rank_lists(groups):
    n = sum(len(g) for g in groups)
    x = RNG.standard_normal((8 * n, 4)).astype(np.float32)
    summed, gathered, scattered, swapped = nkidev.simulate(hbm_collectives)[n](x, groups)
    rows = {r: x[8 * r : 8 * r + 8] for r in range(n)}
    m = len(groups[0])
    for g in groups:
        for pos, r in enumerate(g):
            np.testing.assert_allclose(summed[8 * r : 8 * r + 8], sum(rows[q] for q in g), rtol=1e-6)
            np.testing.assert_array_equal(gathered[8 * m * r : 8 * m * (r + 1)], np.concatenate([rows[q] for q in g]))
            part = 8 // m
            top = np.maximum.reduce([rows[q] for q in g])
            np.testing.assert_array_equal(scattered[part * r : part * (r + 1)], top[part * pos : part * (pos + 1)])
            np.testing.assert_array_equal(swapped[8 * r : 8 * r + 8], np.concatenate([rows[q][part * pos : part * (pos + 1)] for q in g]))


@jit
def sbuf_gather_and_ring(x):
    r = nl.program_id(0)
    group = ncc.ReplicaGroup([[0, 1, 2]])
    out = nl.ndarray((3, 16, 12), dtype=x.dtype, buffer=nl.shared_hbm)
    ring = nl.ndarray((3, 3, 16, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    who = nl.ndarray((3, 1, 3), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((16, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[r])
    wide = nl.ndarray((16, 12), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_gather(srcs=[t], dsts=[wide], replica_group=group, collective_dim=1)  # SBUF: along the free dim
    nisa.dma_copy(dst=out[r], src=wide)
    # a ring: step i holds the data of rank (r - i) mod 3 (per-rank buffers: shared_hbm is shared by all programs)
    held = nl.ndarray((16, 4), dtype=x.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=held, src=t)
    ids = nl.ndarray((1, 3), dtype=nl.int32, buffer=nl.sbuf)
    for i in range(3):
        nisa.register_store(ids[:, i : i + 1], ncc.collective_permute_implicit_current_processing_rank_id(i, group))
        nisa.dma_copy(dst=ring[r, i], src=held)
        if i < 2:
            nxt = nl.ndarray((16, 4), dtype=x.dtype, buffer=nl.hbm)
            ncc.collective_permute_implicit(srcs_by_channel=[[held]], dsts_by_channel=[[nxt]], replica_group=group)
            held = nxt
    nisa.dma_copy(dst=who[r], src=ids)
    return out, ring, who


def test_sbuf_all_gather_and_ring_permute():
    x = RNG.standard_normal((3, 16, 4)).astype(np.float32)
    out, ring, who = nkidev.simulate(sbuf_gather_and_ring)[3](x)
    for r in range(3):
        np.testing.assert_array_equal(out[r], np.concatenate(list(x), axis=1))
        assert who[r, 0].tolist() == [r, (r - 1) % 3, (r - 2) % 3]
        for i in range(3):
            np.testing.assert_array_equal(ring[r, i], x[(r - i) % 3])


@jit
def permute_and_all_to_all_v(x, meta):
    r = nl.program_id(0)
    out = nl.ndarray((2, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    moved = nl.ndarray((2, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    counts = nl.ndarray((2, 3, 2), dtype=nl.uint32, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), dtype=nl.uint32, buffer=nl.hbm)  # per rank (shared_hbm is one tensor for all)
    nisa.dma_copy(dst=m, src=meta[r])
    ncc.all_to_all_v(srcs=[x[r]], dsts=[out[r]], replica_group=ncc.ReplicaGroup([[0, 1]]), metadata_tensor=m)
    ncc.collective_permute(srcs=[x[r]], dsts=[moved[r]], source_target_pairs=[(0, 1), (1, 0)])
    nisa.dma_copy(dst=counts[r], src=m)
    return out, moved, counts


def test_all_to_all_v_and_collective_permute():
    x = np.arange(16, dtype=np.float32).reshape(2, 8) + 1
    meta = np.zeros((2, 3, 2), np.uint32)
    meta[0, 0], meta[0, 1] = [3, 1], [0, 5]  # rank 0 sends 3 elements from 0 to itself, 1 element from 5 to rank 1
    meta[1, 0], meta[1, 1] = [2, 4], [0, 2]  # rank 1 sends 2 from 0 to rank 0, 4 from 2 to itself
    out, moved, counts = nkidev.simulate(permute_and_all_to_all_v)[2](x, meta)
    np.testing.assert_array_equal(moved, x[::-1])
    np.testing.assert_array_equal(out[0, :3], x[0, :3])  # slot 0: from rank 0
    np.testing.assert_array_equal(out[0, 4:6], x[1, :2])  # slot 1 starts at dst.size / 2
    np.testing.assert_array_equal(out[1, :1], x[0, 5:6])
    np.testing.assert_array_equal(out[1, 4:8], x[1, 2:6])
    assert counts[0, 2].tolist() == [3, 2] and counts[1, 2].tolist() == [1, 4]  # recv_counts written back


@jit
def group_beyond_the_launch(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[x], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1, 2, 3]]), op=nl.add)  # <-
    return out


def test_a_rank_list_beyond_the_launch_is_a_named_error():
    with pytest.raises(NkiError) as info:
        nkidev.simulate(group_beyond_the_launch)[2](np.ones((4, 4), np.float32))
    err = info.value
    lines, start = inspect.getsourcelines(group_beyond_the_launch.fn)
    assert err.name == "err_invalid_argument" and "ranks [2, 3]" in err.message
    assert err.lineno == start + next(i for i, line in enumerate(lines) if "# <-" in line)


def test_single_program_collectives_are_identities_and_traced():
    x = RNG.standard_normal((4, 4)).astype(np.float32)

    @jit
    def alone(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=ncc.ReplicaGroup([[0]]), op=nl.add)
        return out

    res = nkidev.run(alone, (x,))
    np.testing.assert_array_equal(res.outputs, x)
    (ins,) = res.trace.instructions
    assert (ins.opcode, ins.engine, len(ins.reads), len(ins.writes), ins.attrs["ranks"]) == ("all_reduce", "dma", 1, 1, 1)


@jit
def gather_v_and_ring_reduce(x, meta, y0, y1):
    r = nl.program_id(0)
    group = ncc.ReplicaGroup([[0, 1, 2]])
    out = nl.ndarray((3, 12), dtype=x.dtype, buffer=nl.shared_hbm)
    counts = nl.ndarray((3, 3, 3), dtype=nl.uint32, buffer=nl.shared_hbm)
    reduced = nl.ndarray((3, 2, 4), dtype=y0.dtype, buffer=nl.shared_hbm)
    ranks = nl.ndarray((3, 1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 3), dtype=nl.uint32, buffer=nl.hbm)  # per rank (shared_hbm is one tensor for all)
    nisa.dma_copy(dst=m, src=meta[r])
    ncc.all_gather_v(srcs=[x[r]], dsts=[out[r]], replica_group=group, metadata_tensor=m)
    nisa.dma_copy(dst=counts[r], src=m)
    got = nl.ndarray((2, 4), dtype=y0.dtype, buffer=nl.hbm)
    ncc.collective_permute_implicit_reduce(
        srcs0_by_channel=[[y0[r]]], srcs1_by_channel=[[y1[r]]], dsts_by_channel=[[got]], replica_group=group, op=nl.maximum
    )
    nisa.dma_copy(dst=reduced[r], src=got)
    me = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.register_store(me, ncc.rank_id())
    nisa.dma_copy(dst=ranks[r], src=me)
    return out, counts, reduced, ranks


def test_all_gather_v_ring_reduce_and_rank_id_follow_the_docstrings():
    """all_gather_v: each rank broadcasts src[send_displ : send_displ + send_count] (first column of rows 0/1); the
    chunk of member s lands at dst[s * dst.size / n]; recv_counts (row 2) are written back. The reduce ring permute
    sends op(srcs0, srcs1) to the successor; rank_id is the program id."""
    x = np.arange(36, dtype=np.float32).reshape(3, 12) + 1
    meta = np.zeros((3, 3, 3), np.uint32)
    sends = [(2, 1), (4, 0), (1, 7)]  # (send_count, send_displ) per rank
    for r, (count, displ) in enumerate(sends):
        meta[r, 0, 0], meta[r, 1, 0] = count, displ
        meta[r, 0, 1:], meta[r, 1, 1:] = 99, 99  # only the first column is read
    y0 = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    y1 = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    out, counts, reduced, ranks = nkidev.simulate(gather_v_and_ring_reduce)[3](x, meta, y0, y1)
    for r in range(3):
        for s, (count, displ) in enumerate(sends):
            np.testing.assert_array_equal(out[r, 4 * s : 4 * s + count], x[s, displ : displ + count])
        assert counts[r, 2].tolist() == [2, 4, 1]
        np.testing.assert_array_equal(reduced[r], np.maximum(y0[(r - 1) % 3], y1[(r - 1) % 3]))
    assert ranks.reshape(-1).tolist() == [0, 1, 2]


@jit
def gather_v_overflowing_its_slot(x, meta):
    r = nl.program_id(0)
    out = nl.ndarray((2, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), dtype=nl.uint32, buffer=nl.hbm)
    nisa.dma_copy(dst=m, src=meta[r])
    ncc.all_gather_v(srcs=[x[r]], dsts=[out[r]], replica_group=ncc.ReplicaGroup([[0, 1]]), metadata_tensor=m)  # <-
    return out


def test_all_gather_v_chunks_beyond_dst_are_a_named_error():
    meta = np.zeros((2, 3, 2), np.uint32)
    meta[:, 0, 0] = 8  # the second member's 8 elements start at slot 4 of an 8-element dst
    with pytest.raises(NkiError) as info:
        nkidev.simulate(gather_v_overflowing_its_slot)[2](np.ones((2, 8), np.float32), meta)
    err = info.value
    lines, start = inspect.getsourcelines(gather_v_overflowing_its_slot.fn)
    assert err.name == "err_tensor_access_out_of_bound" and "rank 1" in err.message
    assert err.lineno == start + next(i for i, line in enumerate(lines) if "# <-" in line)


def test_replica_group_from_partition_op_follows_the_0_7_docs_examples():
    """NKI 0.7 ReplicaGroup page, from_partition_op: ranks with the same op(rank, operand) form one rank-list."""
    op = ncc.rg_partition_op
    assert ncc.ReplicaGroup.from_partition_op(8, op.bitwise_and, 0).groups == [list(range(8))]
    assert ncc.ReplicaGroup.from_partition_op(8, op.div, 4).groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ncc.ReplicaGroup.from_partition_op(8, op.mod, 4).groups == [[0, 4], [1, 5], [2, 6], [3, 7]]


@jit
def all_reduce_over_strided_lists(x):
    r = nl.program_id(0)
    group = ncc.ReplicaGroup.from_partition_op(4, ncc.rg_partition_op.mod, 2)  # <- [[0, 2], [1, 3]]
    out = nl.ndarray((4, 2, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[x[r]], dsts=[out[r]], replica_group=group, op=nl.add)
    return out


def test_from_partition_op_groups_drive_the_collective_and_need_nki_0_7():
    x = RNG.standard_normal((4, 2, 4)).astype(np.float32)
    out = nkidev.simulate(all_reduce_over_strided_lists)[4](x)
    for r in range(4):
        np.testing.assert_allclose(out[r], x[r % 2] + x[r % 2 + 2], rtol=1e-6)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(all_reduce_over_strided_lists, nki_version="0.6")[4](x)
    lines, start = inspect.getsourcelines(all_reduce_over_strided_lists.fn)
    assert info.value.name == "err_requires_nki_version" and "rg_partition_op" in info.value.message
    assert info.value.lineno == start + next(i for i, line in enumerate(lines) if "# <-" in line)


@jit
def split_all_to_all_v(x, meta, later):
    """all_to_all_v_prepare with the metadata first; the srcs filled and the metadata rewritten (with `later`)
    afterwards, then the trigger (NKI 0.7): the prepare has already read the metadata."""
    r = nl.program_id(0)
    out = nl.ndarray((2, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    counts = nl.ndarray((2, 3, 2), dtype=nl.uint32, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), dtype=nl.uint32, buffer=nl.hbm)
    src = nl.ndarray((8,), dtype=x.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=m, src=meta[r])
    prep = ncc.all_to_all_v_prepare(srcs=[src], dsts=[out[r]], replica_group=ncc.ReplicaGroup([[0, 1]]), metadata_tensor=m)
    nisa.dma_copy(dst=src, src=x[r])  # prepare does not read srcs: they may be filled after it
    nisa.dma_copy(dst=m, src=later[r])
    ncc.all_to_all_v_trigger(prep)
    nisa.dma_copy(dst=counts[r], src=m)
    return out, counts


def test_split_all_to_all_v_equals_the_plain_call():
    x = np.arange(16, dtype=np.float32).reshape(2, 8) + 1
    meta = np.zeros((2, 3, 2), np.uint32)
    meta[0, 0], meta[0, 1] = [3, 1], [0, 5]
    meta[1, 0], meta[1, 1] = [2, 4], [0, 2]
    out, counts = nkidev.simulate(split_all_to_all_v)[2](x, meta, meta)
    want, _, want_counts = nkidev.simulate(permute_and_all_to_all_v)[2](x, meta)
    np.testing.assert_array_equal(out[0, :3], x[0, :3])
    np.testing.assert_array_equal(out[1, 4:8], x[1, 2:6])
    np.testing.assert_array_equal(out[:, [0, 1, 2, 4, 5]], want[:, [0, 1, 2, 4, 5]])
    np.testing.assert_array_equal(counts[:, 2], want_counts[:, 2])


@jit
def two_prepares(x, meta):
    out = nl.ndarray((8,), dtype=x.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 1), dtype=nl.uint32, buffer=nl.hbm)
    nisa.dma_copy(dst=m, src=meta)
    group = ncc.ReplicaGroup([[0]])
    ncc.all_gather_v_prepare(srcs=[x], dsts=[out], replica_group=group, metadata_tensor=m)
    ncc.all_to_all_v_prepare(srcs=[x], dsts=[out], replica_group=group, metadata_tensor=m)  # <-
    return out


def test_a_second_prepare_before_the_trigger_is_a_named_error_and_split_collectives_need_0_7():
    x, meta = np.ones((8,), np.float32), np.array([[8], [0], [0]], np.uint32)
    lines, start = inspect.getsourcelines(two_prepares.fn)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(two_prepares)(x, meta)
    assert info.value.name == "err_invalid_argument" and "all_gather_v_prepare awaits its trigger" in info.value.message
    assert info.value.lineno == start + next(i for i, line in enumerate(lines) if "# <-" in line)
    with pytest.raises(NkiError) as info:
        nkidev.simulate(two_prepares, nki_version="0.6")(x, meta)
    assert info.value.name == "err_requires_nki_version" and "all_gather_v_prepare" in info.value.message


def test_the_split_trigger_sends_by_the_metadata_its_prepare_read():
    """v2.33 all_to_all_v_prepare page: "prepare reads metadata_tensor, which must already hold valid data"."""
    x = np.arange(16, dtype=np.float32).reshape(2, 8) + 1
    meta = np.zeros((2, 3, 2), np.uint32)
    meta[0, 0], meta[0, 1] = [3, 1], [0, 5]
    meta[1, 0], meta[1, 1] = [2, 4], [0, 2]
    later = np.zeros_like(meta)
    later[:, 0] = 1  # one element to each member, from offset 0
    out, counts = nkidev.simulate(split_all_to_all_v)[2](x, meta, later)
    want, _, want_counts = nkidev.simulate(permute_and_all_to_all_v)[2](x, meta)
    np.testing.assert_array_equal(out[:, [0, 1, 2, 4, 5]], want[:, [0, 1, 2, 4, 5]])
    np.testing.assert_array_equal(counts[:, 2], want_counts[:, 2])  # recv counts of the prepared exchange
    np.testing.assert_array_equal(counts[:, :2], later[:, :2])  # rows 0/1 as the kernel rewrote them


@jit
def split_all_gather_v(x, meta, later):
    """all_gather_v_prepare, then the metadata rewritten with `later` before the trigger (NKI 0.7)."""
    r = nl.program_id(0)
    out = nl.ndarray((2, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    counts = nl.ndarray((2, 3, 2), dtype=nl.uint32, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), dtype=nl.uint32, buffer=nl.hbm)
    nisa.dma_copy(dst=m, src=meta[r])
    prep = ncc.all_gather_v_prepare(srcs=[x[r]], dsts=[out[r]], replica_group=ncc.ReplicaGroup([[0, 1]]), metadata_tensor=m)
    nisa.dma_copy(dst=m, src=later[r])
    ncc.all_gather_v_trigger(prep)
    nisa.dma_copy(dst=counts[r], src=m)
    return out, counts


def test_the_split_all_gather_v_trigger_also_sends_by_the_prepared_metadata():
    """v2.33 all_gather_v_prepare page: the prepare reads metadata_tensor (the all_to_all_v test above, for ag-v)."""
    x = np.arange(16, dtype=np.float32).reshape(2, 8) + 1
    meta = np.zeros((2, 3, 2), np.uint32)
    meta[0, 0, 0], meta[0, 1, 0] = 3, 1  # rank 0 broadcasts x[0][1:4]
    meta[1, 0, 0], meta[1, 1, 0] = 4, 2  # rank 1 broadcasts x[1][2:6]
    later = np.zeros_like(meta)
    later[:, 0, 0] = 1  # what the trigger would send had it read the metadata again: one element from offset 0
    out, counts = nkidev.simulate(split_all_gather_v)[2](x, meta, later)
    for r in range(2):
        np.testing.assert_array_equal(out[r, 0:3], x[0, 1:4])
        np.testing.assert_array_equal(out[r, 4:8], x[1, 2:6])
    np.testing.assert_array_equal(counts[:, 2], [[3, 4], [3, 4]])  # recv counts of the prepared exchange
    np.testing.assert_array_equal(counts[:, :2], later[:, :2])  # rows 0/1 as the kernel rewrote them
