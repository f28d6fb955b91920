"""Rule checks cached by operand signature (opdef.dispatch): a cached call skips only what depends on the
signature alone. Bounds checks of views checked when accessed, lifetimes (liveness), SPMD races and the
per-program trace layout behave the same whether a call's signature was seen before or not."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit
from nkidev.emulator.opdef import OPS
from nkidev.emulator.trace import Access, Instruction, Trace
from nkidev.errors import NkiError, NkiWarning


def _forget_signatures() -> None:
    for op in OPS.values():
        op.checked.clear()


def _line(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@jit
def clipped_after_valid(a):
    x = nl.ndarray((16, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=x[:, 4:8], value=0.0)  # checked once: its signature is cached
    nisa.memset(dst=x[:, 4:12], value=0.0)  # clipped to x[:, 4:8], the same signature, but out of bounds
    return a


def test_an_out_of_bounds_view_with_a_cached_signature_still_raises_at_its_line():
    _forget_signatures()
    with pytest.raises(NkiError) as info:
        nkidev.simulate(clipped_after_valid)(np.zeros((16, 8), np.float32))
    assert info.value.name == "err_tensor_access_out_of_bound"
    assert info.value.lineno == _line(clipped_after_valid, "x[:, 4:12]")


F = 30000  # 128 x 30000 fp32 = 120000 bytes per partition: one fits in trn2's SBUF, two do not


@jit
def two_live_tiles(a):
    out_x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=a)
    nisa.dma_copy(dst=out_y, src=y)
    nisa.dma_copy(dst=out_x, src=x)
    return out_x, out_y


def _spills(res):
    return [(sp.name, sp.buffer, sp.nbytes, sp.store_after, sp.reload_before, sp.instruction) for sp in res.trace.spills]


def test_cached_calls_stamp_lifetimes_so_spills_do_not_depend_on_the_cache():
    a = np.random.default_rng(0).random((128, F), dtype=np.float32)
    _forget_signatures()
    with pytest.warns(NkiWarning, match="warn_sbuf_spill"):
        first = nkidev.run(two_live_tiles, (a,), options=EmulatorOptions(compute=False))
    with pytest.warns(NkiWarning, match="warn_sbuf_spill"):
        second = nkidev.run(two_live_tiles, (a,), options=EmulatorOptions(compute=False))  # every signature cached now
    assert len(_spills(first)) == 1
    assert _spills(second) == _spills(first)
    assert second.peak_sbuf_bytes == first.peak_sbuf_bytes == 2 * F * 4


@jit
def clear_then_fill_half(a):
    p, f = a.shape
    out = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.shared_hbm)
    z = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    nisa.dma_copy(dst=out, src=z)  # every program clears the whole output: a race
    pid = nl.program_id(0)
    half = p // 2
    t = nl.ndarray((half, f), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[nl.ds(pid * half, half), :])
    nisa.dma_copy(dst=out[nl.ds(pid * half, half), :], src=t)
    return out


def _races(res):
    return sorted((w["location"], w["message"]) for w in res.warnings if w["name"] == "warn_spmd_race")


def test_cached_calls_pass_the_baton_and_check_races():
    a = np.random.default_rng(1).random((16, 8), dtype=np.float32) + 1.0
    _forget_signatures()
    with pytest.warns(NkiWarning, match="warn_spmd_race"):
        first = nkidev.run(clear_then_fill_half, (a,), grid=2)
    with pytest.warns(NkiWarning, match="warn_spmd_race"):
        second = nkidev.run(clear_then_fill_half, (a,), grid=2)
    np.testing.assert_array_equal(second.outputs, a)  # lock-step: both clears precede both fills
    assert _races(first) and _races(second) == _races(first)
    # per-program layout: each program's rows together, ids = positions, operands moved with their rows
    rows = second.trace.instructions
    assert [i.program for i in rows] == [0] * 4 + [1] * 4 and [i.id for i in rows] == list(range(8))
    names = [(i.opcode, [second.trace.tensors[r.tensor].name for r in i.reads + i.writes]) for i in rows]
    assert names[:4] == names[4:]
    assert names[1][1] == ["z", "out"]


def _access(tensor: int, role: str) -> Access:
    return Access(tensor, "sbuf", role, (4, 4), "float32", 64, 0, 4, 0, 16, 16)


def test_order_by_program_moves_operands_with_their_rows():
    rows = [
        Instruction(0, "memset", "vector", "k.py:1", [], [_access(10, "dst")], 4, 4, 16, 1),
        Instruction(1, "tensor_copy", "vector", "k.py:2", [_access(11, "src")], [_access(12, "dst")], 4, 4, 16, 0),
        Instruction(2, "tensor_tensor", "vector", "k.py:3", [_access(13, "a"), _access(14, "b")], [_access(15, "dst")], 4, 4, 16, 1),
        Instruction(3, "memset", "vector", "k.py:4", [], [_access(16, "dst")], 4, 4, 16, 0),
    ]
    trace = Trace("k", "trn2", rows, programs=2)
    assert trace.order_by_program() == {1: 0, 3: 1, 0: 2, 2: 3}
    got = [(i.id, i.program, i.location, [r.tensor for r in i.reads], [w.tensor for w in i.writes]) for i in trace.instructions]
    assert got == [
        (0, 0, "k.py:2", [11], [12]),
        (1, 0, "k.py:4", [], [16]),
        (2, 1, "k.py:1", [], [10]),
        (3, 1, "k.py:3", [13, 14], [15]),
    ]
    assert trace.columns().id.tolist() == [0, 1, 2, 3]  # the column snapshot is rebuilt
