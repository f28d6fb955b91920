"""Programs of one launch progress together (emulator/spmd.py): lock-step HBM accesses, races warned with both
kernel lines, and an exception in one program re-raised while its peer waits."""

from __future__ import annotations

import inspect
import threading
import warnings

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiWarning


@jit
def clear_then_fill_half(a):
    p, f = a.shape
    out = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.shared_hbm)
    z = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    nisa.dma_copy(dst=out, src=z)  # every program clears the whole output (no barrier: a race)
    pid = nl.program_id(0)
    half = p // 2
    t = nl.ndarray((half, f), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[nl.ds(pid * half, half), :])
    nisa.dma_copy(dst=out[nl.ds(pid * half, half), :], src=t)
    return out


def _line(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_programs_progress_together_and_races_name_both_lines():
    a = np.random.default_rng(0).random((16, 8), dtype=np.float32) + 1.0
    with pytest.warns(NkiWarning, match="warn_spmd_race"):
        res = nkidev.run(clear_then_fill_half, (a,), grid=2)
    np.testing.assert_array_equal(res.outputs, a)  # lock-step cores: both clears precede both fills
    clear, fill = _line(clear_then_fill_half, "dst=out, src=z"), _line(clear_then_fill_half, "dst=out[nl.ds")
    races = [w for w in res.warnings if w["name"] == "warn_spmd_race"]
    assert {w["location"].rpartition(":")[2] for w in races} == {str(clear), str(fill)}
    both = [w["message"] for w in races if w["location"].endswith(f":{fill}")]
    assert f"test_spmd.py:{clear} (program 1)" in both[0] and f"test_spmd.py:{fill} (program 0, write)" in both[0]
    # the trace still lists each program's instructions together, ids = positions
    assert [i.program for i in res.trace.instructions] == [0] * 4 + [1] * 4
    assert [i.id for i in res.trace.instructions] == list(range(8))


@jit
def fill_own_half(a):
    p, f = a.shape
    out = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.shared_hbm)
    half = p // 2
    pid = nl.program_id(0)
    t = nl.ndarray((half, f), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[nl.ds(pid * half, half), :])
    nisa.dma_copy(dst=out[nl.ds(pid * half, half), :], src=t)
    nisa.core_barrier(data=out, cores=(0, 1))
    check = nl.ndarray((half, f), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=check, src=out[nl.ds((1 - pid) * half, half), :])  # after the barrier: ordered
    return out


def test_disjoint_parts_and_barriers_are_not_races():
    a = np.random.default_rng(1).random((16, 8), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NkiWarning)
        np.testing.assert_array_equal(nkidev.simulate(fill_own_half)[2](a), a)


@jit
def one_program_fails(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    if pid == 1:
        raise ValueError("program 1 failed before its sendrecv")
    nisa.sendrecv(src=t, dst=r, send_to_rank=1 - pid, recv_from_rank=1 - pid, pipe_id=0)
    nisa.dma_copy(dst=out, src=r)
    return out


def test_an_exception_in_one_program_is_reraised_while_the_peer_waits():
    outcome = {}

    def go():
        try:
            nkidev.simulate(one_program_fails)[2](np.ones((8, 8), np.float32))
        except ValueError as e:
            outcome["error"] = e

    runner = threading.Thread(target=go, daemon=True)
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), "the launch hung"
    assert str(outcome["error"]) == "program 1 failed before its sendrecv"
