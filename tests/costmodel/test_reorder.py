"""The scheduler reorders like the compiler's list scheduler: instructions of independent iterations issue out of
source order within a bounded window per engine, so a chain alternating engines pipelines across iterations;
sequential_range iterations, no_reorder blocks and true dependencies keep their order."""

from __future__ import annotations

import dataclasses

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np
import pytest

from nkidev.costmodel import schedule
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run
from nkidev.hardware import get_target

ROWS, COLS, ITERS = 128, 512, 12


def _chain(t):
    """vector -> scalar -> vector -> scalar on an SBUF tile: each step needs the previous one."""
    a = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=a, data=t, op0=nl.add, operand0=1.0)
    b = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=b, op=nl.exp, data=a)
    c = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=c, data=b, op0=nl.multiply, operand0=0.5)
    d = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=d, op=nl.exp, data=c)
    return d


def _loaded(x):
    t = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t, nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)


@nki.jit
def independent(x):
    t, out = _loaded(x)
    for _ in nl.affine_range(ITERS):
        d = _chain(t)
    nisa.dma_copy(dst=out, src=d)
    return out


@nki.jit
def sequential(x):
    t, out = _loaded(x)
    for _ in nl.sequential_range(ITERS):
        d = _chain(t)
    nisa.dma_copy(dst=out, src=d)
    return out


@nki.jit
def pinned(x):
    t, out = _loaded(x)
    with nl.no_reorder():
        for _ in nl.affine_range(ITERS):
            d = _chain(t)
    nisa.dma_copy(dst=out, src=d)
    return out


@nki.jit
def accumulate(x):
    """A loop-carried dependency through acc: the adds must stay in iteration order."""
    t, out = _loaded(x)
    acc = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for _ in nl.affine_range(ITERS):
        e = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=e, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out


X = np.zeros((ROWS, COLS), dtype=np.float32)


def _trace(kernel, version="0.6"):
    return run(kernel, (X,), options=EmulatorOptions(target="trn2", compute=False, nki_version=version)).trace


def _in_order(target: str = "trn2"):
    hw = get_target(target)
    return dataclasses.replace(hw, engines=dataclasses.replace(hw.engines, schedule_window=1))


def _busy_fraction(timeline, engine: str) -> float:
    """The engine's busy time over the span from its first start to its last end."""
    rows = timeline.rows
    mine = [k for k, e in enumerate(rows.engine) if e == engine]
    busy = sum(rows.end[k] - rows.start[k] for k in mine)
    return busy / (max(rows.end[k] for k in mine) - min(rows.start[k] for k in mine))


def _vector_issue_order(timeline) -> list[int]:
    """Trace positions of the Vector Engine's instructions, in the order they started."""
    rows = timeline.rows
    vector = [k for k, e in enumerate(rows.engine) if e == "vector"]
    return [int(rows.ins[k]) for k in sorted(vector, key=lambda k: (rows.start[k], rows.pc[k]))]


def test_independent_iterations_pipeline_across_engines():
    trace = _trace(independent)
    reordered, in_order = schedule(trace, "trn2"), schedule(trace, _in_order())
    # in source order the Vector Engine idles while ScalarE works on the same iteration; reordered they overlap
    assert reordered.total_ns < 0.8 * in_order.total_ns
    assert _busy_fraction(reordered, "vector") > 0.9 > 0.7 > _busy_fraction(in_order, "vector")
    order = _vector_issue_order(reordered)
    assert order != sorted(order)  # the next iteration's first vector op ran before this one's second
    assert _vector_issue_order(in_order) == sorted(_vector_issue_order(in_order))


def test_the_profile_pc_follows_issue_order():
    timeline = schedule(_trace(independent), "trn2")
    rows = timeline.rows
    vector = [k for k, e in enumerate(rows.engine) if e == "vector"]
    by_pc = sorted(vector, key=lambda k: rows.pc[k])
    assert sorted(rows.pc[k] for k in vector) == list(range(len(vector)))  # still a permutation of 0..n-1
    assert [rows.start[k] for k in by_pc] == sorted(rows.start[k] for k in vector)


@pytest.mark.parametrize("kernel", [sequential, pinned], ids=["sequential_range", "no_reorder"])
def test_sequential_range_and_no_reorder_keep_source_order(kernel):
    trace = _trace(kernel)
    reordered, in_order = schedule(trace, "trn2"), schedule(trace, _in_order())
    assert _vector_issue_order(reordered) == sorted(_vector_issue_order(reordered))
    assert reordered.total_ns == in_order.total_ns


def test_sequential_range_reorders_under_nki_07_where_it_is_python_range():
    trace = _trace(sequential, version="0.7")
    assert schedule(trace, "trn2").total_ns < 0.8 * schedule(trace, _in_order()).total_ns


def test_a_true_dependency_is_never_reordered():
    trace = _trace(accumulate)
    timeline = schedule(trace, "trn2")
    rows = timeline.rows
    adds = [k for k, op in enumerate(rows.opcode) if rows.engine[k] == "vector" and op != "MEMSET"]
    starts = [rows.start[k] for k in sorted(adds, key=lambda k: rows.ins[k])]
    assert len(starts) == ITERS and starts == sorted(starts)
    ends = [rows.end[k] for k in sorted(adds, key=lambda k: rows.ins[k])]
    assert all(s >= e for s, e in zip(starts[1:], ends[:-1]))  # each add waits for the previous one


def test_window_one_is_source_order():
    trace = _trace(independent)
    timeline = schedule(trace, _in_order())
    rows = timeline.rows
    for engine in ("vector", "scalar"):
        mine = [k for k, e in enumerate(rows.engine) if e == engine]
        assert [rows.ins[k] for k in sorted(mine, key=lambda k: rows.start[k])] == sorted(rows.ins[k] for k in mine)


@nki.jit
def chained_by_hand(x):
    """Independent iterations, but each one's first op is made to wait for the previous one's last (depends_on)."""
    t, out = _loaded(x)
    last = None
    for _ in nl.affine_range(ITERS):
        a = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
        first = nisa.tensor_scalar(dst=a, data=t, op0=nl.add, operand0=1.0)
        if last is not None:
            first.depends_on(last, kind=nisa.dependency.runtime)
        b = nl.ndarray((ROWS, COLS), dtype=nl.float32, buffer=nl.sbuf)
        last = nisa.activation(dst=b, op=nl.exp, data=a)
    nisa.dma_copy(dst=out, src=b)
    return out


def test_depends_on_edges_are_honoured():
    trace = _trace(chained_by_hand, version="0.7")
    assert len(trace.edges) == ITERS - 1
    rows = schedule(trace, "trn2").rows
    ops = sorted((k for k, e in enumerate(rows.engine) if e in ("vector", "scalar")), key=lambda k: rows.ins[k])
    assert all(rows.start[b] >= rows.end[a] for a, b in zip(ops, ops[1:]))  # one after another, never overlapping
    free = _trace(independent, version="0.7")
    assert not free.edges


def test_depends_on_rejects_what_is_not_an_instruction():
    from nkidev.errors import KernelRuleError

    @nki.jit
    def bad(x):
        t, out = _loaded(x)
        nisa.memset(dst=t, value=0.0).depends_on(t)
        return out

    with pytest.raises(KernelRuleError) as e:
        _trace(bad, version="0.7")
    assert e.value.name == "err_invalid_argument"
    line = next(n for n, text in enumerate(open(__file__), 1) if ".depends_on(t)" in text)
    assert str(e.value.location).endswith(f"test_reorder.py:{line}")
