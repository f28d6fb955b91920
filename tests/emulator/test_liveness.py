"""On-chip occupancy from access intervals (emulator/liveness.py): what Python holds does not count; demand
above capacity is spilled (Trace.spills + a warning naming the tensor and line); impossible tiles are errors."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.jit import jit
from nkidev.errors import NkiError, NkiWarning

F = 30000  # 128 x 30000 fp32 = 120000 bytes per partition: one fits in trn2's 212984, two do not


@jit
def rebound_in_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for _ in range(3):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)  # the previous t is still referenced here
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
    return out


@jit
def kept_in_a_list(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = []
    for _ in range(3):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        tiles.append(t)  # held by Python after its last use
    return out


@pytest.mark.parametrize("kernel", [rebound_in_loop, kept_in_a_list])
def test_dead_tiles_occupy_nothing_whatever_python_holds(kernel):
    a = np.random.default_rng(0).random((128, F), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NkiWarning)
        res = nkidev.run(kernel, (a,))
    np.testing.assert_array_equal(res.outputs, a)
    assert res.trace.spills == [] and res.peak_sbuf_bytes == F * 4


@jit
def two_live_tiles(a):
    out_x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=a)  # x is live (used again below) while y comes in: one of them must leave SBUF
    nisa.activation(dst=y, op=nl.exp, data=y)
    nisa.dma_copy(dst=out_y, src=y)
    nisa.dma_copy(dst=out_x, src=x)
    return out_x, out_y


def _line(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_demand_above_capacity_is_spilled_and_recorded():
    a = np.random.default_rng(1).random((128, F), dtype=np.float32)
    with pytest.warns(NkiWarning, match=r"warn_sbuf_spill: .*'x' \(allocated at test_liveness.py:\d+\) is spilled to HBM once"):
        res = nkidev.run(two_live_tiles, (a,))
    np.testing.assert_array_equal(res.outputs[0], a)  # accepted, values intact
    np.testing.assert_allclose(res.outputs[1], np.exp(a), rtol=1e-6)
    assert res.peak_sbuf_bytes == 2 * F * 4
    (sp,) = res.trace.spills
    ins = {i.id: i for i in res.trace.instructions}
    assert (sp.name, sp.buffer, sp.to, sp.bytes_per_partition, sp.partitions, sp.nbytes) == ("x", "sbuf", "hbm", F * 4, 128, 128 * F * 4)
    assert sp.location.endswith(f":{_line(two_live_tiles, 'dst=y, src=a')}")  # where the demand peaks
    assert sp.tensor_location.endswith(f":{_line(two_live_tiles, '    x = nl.ndarray')}")
    assert ins[sp.store_after].location.endswith(f":{_line(two_live_tiles, 'dst=x, src=a')}")
    assert ins[sp.reload_before].location.endswith(f":{_line(two_live_tiles, 'dst=out_x, src=x')}")
    assert [w["name"] for w in res.warnings] == ["warn_sbuf_spill"] and res.warnings[0]["location"] == sp.location


@jit
def one_instruction_too_big(a):
    x = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=x, value=1.0)
    nisa.tensor_copy(dst=y, src=x)  # <-
    return a


def test_operands_that_cannot_be_resident_together_are_refused_at_the_instruction():
    with pytest.raises(NkiError) as info:
        nkidev.simulate(one_instruction_too_big)(np.zeros((2, 2), np.float32))
    err = info.value
    assert err.name == "err_sbuf_capacity_exceeded" and err.lineno == _line(one_instruction_too_big, "# <-")
    assert "240000" in err.message and "212984" in err.message


def test_check_capacity_false_skips_the_bookkeeping():
    a = np.random.default_rng(2).random((128, F), dtype=np.float32)
    res = nkidev.run(two_live_tiles, (a,), options=nkidev.EmulatorOptions(check_capacity=False))
    assert res.trace.spills == [] and res.warnings == []


@jit
def two_live_psum_tiles(a):
    out = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.psum)  # 12000 bytes per partition: two exceed 16384
    y = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.psum)
    s = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=x, value=2.0)
    nisa.memset(dst=y, value=3.0)  # x is live (read below) while y comes in
    nisa.tensor_copy(dst=s, src=y)
    nisa.tensor_tensor(dst=s, data1=s, data2=x, op=nl.multiply)
    nisa.dma_copy(dst=out, src=s)
    return out


def test_psum_demand_above_capacity_is_spilled_to_sbuf():
    with pytest.warns(NkiWarning, match=r"warn_psum_spill: .*'x'"):
        res = nkidev.run(two_live_psum_tiles, (np.zeros((1, 1), np.float32),))
    np.testing.assert_array_equal(res.outputs, np.full((128, 3000), 6.0, np.float32))
    assert res.peak_psum_bytes == 2 * 12000
    (sp,) = res.trace.spills
    assert (sp.name, sp.buffer, sp.to, sp.bytes_per_partition) == ("x", "psum", "sbuf", 12000)
    assert sp.location.endswith(f":{_line(two_live_psum_tiles, 'dst=y, value=3.0')}")
    assert [w["name"] for w in res.warnings] == ["warn_psum_spill"]


@jit
def evicted_then_space_held(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out_s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    big = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=big, value=1.0)  # x leaves SBUF for big
    s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=big[0:128, 0:128])  # big's last access: its space is free after this one
    nisa.dma_copy(dst=out_s, src=s)
    nisa.dma_copy(dst=out, src=x)  # x is back for this
    return out, out_s


def test_a_reload_may_start_once_the_space_it_returns_to_is_free():
    a = np.random.default_rng(2).random((128, F), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NkiWarning)
        res = nkidev.run(evicted_then_space_held, (a,))
    np.testing.assert_array_equal(res.outputs[0], a)
    (sp,) = res.trace.spills
    ins = {i.id: i for i in res.trace.instructions}
    at = {
        k: f":{_line(evicted_then_space_held, text)}" for k, text in [("evict", "x leaves"), ("free", "big's last"), ("next", "x is back")]
    }
    assert sp.name == "x" and ins[sp.instruction].location.endswith(at["evict"])
    assert ins[sp.reload_after].location.endswith(at["free"])  # not the memset: big still holds the space after it
    assert ins[sp.reload_before].location.endswith(at["next"])
