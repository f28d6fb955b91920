"""Launching kernels: SPMD grids, LNC=2 with barriers and sendrecv, copy-in/copy-out, targets, traces."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkidev
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit


@jit
def add_rows(a, b):
    """Each program adds one 128-row block of a and b."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    rows = a.shape[0] // nl.num_programs(0)
    x = nl.load(a[pid * rows : (pid + 1) * rows, :])
    y = nl.load(b[pid * rows : (pid + 1) * rows, :])
    nl.store(out[pid * rows : (pid + 1) * rows, :], nl.add(x, y))
    return out


def test_spmd_grid_programs_share_the_output():
    a = np.random.default_rng(0).standard_normal((512, 64)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((512, 64)).astype(np.float32)
    np.testing.assert_allclose(add_rows[4](a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(nkidev.simulate(add_rows[4])(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(nkidev.simulate(add_rows)[4](a, b), a + b, rtol=1e-6)


@jit
def grid_ids(x):
    out = nl.ndarray((2, 3), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    i, j = nl.program_id(0), nl.program_id(1)
    nisa.memset(dst=t, value=10 * i + j + 100 * nl.num_programs(1) + 1000 * nl.program_ndim())
    nisa.dma_copy(dst=out[i, j : j + 1], src=t)
    return out


def test_two_dimensional_grid_ids():
    np.testing.assert_array_equal(grid_ids[2, 3](np.zeros(1, np.float32)), [[2300, 2301, 2302], [2310, 2311, 2312]])


@jit
def lnc2_exchange(a):
    """Core c sends its half to the other core and writes what it receives: the halves swap."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    c = nl.program_id(0)
    half = a.shape[0] // 2
    mine = nl.ndarray((half, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    theirs = nl.ndarray((half, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[c * half : (c + 1) * half, :])
    nisa.sendrecv(src=mine, dst=theirs, send_to_rank=1 - c, recv_from_rank=1 - c, pipe_id=0)
    nisa.dma_copy(dst=out[c * half : (c + 1) * half, :], src=theirs)
    nisa.core_barrier(data=out, cores=(0, 1))
    check = nl.ndarray((half, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=check, src=out[(1 - c) * half : (2 - c) * half, :])  # the other core's write is visible
    return out


def test_lnc2_sendrecv_and_barrier():
    a = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    out = nkidev.simulate(lnc2_exchange[2])(a)
    np.testing.assert_array_equal(out, np.concatenate([a[4:], a[:4]]))


@jit
def writes_input(x):
    t = nl.load(x)
    nl.store(x, nl.multiply(t, 2.0))
    return x


def test_inputs_written_by_the_kernel_are_copied_back():
    x = np.ones((4, 4), np.float32)
    out = nkidev.simulate(writes_input)(x)
    np.testing.assert_array_equal(x, 2 * np.ones((4, 4)))
    np.testing.assert_array_equal(out, x)


@jit
def two_outputs(x, scale):
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(a, nl.multiply(t, scale))
    nl.store(b, nl.add(t, scale))
    return a, b


def test_tuple_outputs_scalars_are_constants_and_bf16_roundtrip():
    x = np.array([[1.0, 2.5]], dtype=ml_dtypes.bfloat16)
    a, b = nkidev.simulate(two_outputs)(x, 3)
    assert a.dtype == ml_dtypes.bfloat16 and b.dtype == np.float32
    np.testing.assert_array_equal(a.astype(np.float32), [[3.0, 7.5]])
    np.testing.assert_array_equal(b, [[4.0, 5.5]])


def test_unwritten_sbuf_reads_as_nan_and_int_as_four():
    @jit
    def leaky(x):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        outi = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        ti = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:, :4], src=x)
        nl.store(out, t)
        nl.store(outi, ti)
        return out, outi

    out, outi = nkidev.simulate(leaky)(np.zeros((4, 4), np.float32))
    assert (out[:, :4] == 0).all() and np.isnan(out[:, 4:]).all()
    assert (outi == 4).all()


def test_target_from_env_and_argument(monkeypatch):
    @jit
    def version(x):
        out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=nisa.get_nc_version().value)
        nl.store(out, t)
        return out

    x = np.zeros(1, np.float32)
    assert version(x)[0, 0] == 3  # default trn2
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4")
    assert version(x)[0, 0] == 4
    assert nkidev.simulate(version, target="trn1")(x)[0, 0] == 2
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn9")
    with pytest.raises(nkidev.NkiError, match="err_unknown_target"):
        version(x)


def test_trace_records_every_instruction_with_location_and_regions():
    a = np.ones((256, 64), np.float32)
    run = nkidev.run(add_rows, (a, a), grid=2)
    trace = run.trace
    assert trace.programs == 2
    assert [i.opcode for i in trace.instructions] == ["dma_copy", "dma_copy", "tensor_tensor", "dma_copy"] * 2
    tt = trace.instructions[2]
    assert tt.engine == "vector" and tt.location.endswith(f"test_launch.py:{add_rows.fn.__code__.co_firstlineno + 8}")
    assert tt.partitions == 128 and tt.free_elems == 64
    w = tt.writes[0]
    assert (w.buffer, w.partition_start, w.partitions, w.byte_start, w.byte_stop) == ("sbuf", 0, 128, 0, 256)
    load = trace.instructions[4]  # program 1's first load: rows 128..255 of `a`
    assert load.program == 1 and load.reads[0].byte_start == 128 * 64 * 4 and load.reads[0].nbytes == 128 * 64 * 4
    kinds = {t.name: t.kind for t in trace.tensors.values()}
    assert kinds["a"] == "input" and kinds["out"] == "output"


def test_no_compute_mode_builds_the_same_trace_without_numerics():
    a = np.ones((256, 64), np.float32)
    full = nkidev.run(add_rows, (a, a), grid=2).trace
    fast = nkidev.run(add_rows, (a, a), grid=2, options=EmulatorOptions(compute=False)).trace
    assert [(i.opcode, i.engine, i.location) for i in full.instructions] == [(i.opcode, i.engine, i.location) for i in fast.instructions]


def test_torch_tensors_are_accepted_when_torch_is_installed():
    torch = pytest.importorskip("torch")
    a = torch.ones((128, 64), dtype=torch.bfloat16)
    out = nkidev.simulate(add_rows)(a, a)
    assert isinstance(out, np.ndarray) and float(out.astype(np.float32).sum()) == 2 * 128 * 64
