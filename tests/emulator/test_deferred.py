"""Overlapped GEMMs (emulator/deferred.py) and the converted-operand cache (psum.py) change no result: outputs,
traces and error lines are the same as the in-line run's (EmulatorOptions(overlap=False)), reloaded or rewritten
operand tiles are never served stale rows, and no thread outlives a run."""

from __future__ import annotations

import inspect
import sys
import threading
import traceback
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nkidev.emulator import deferred, psum
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import nkidev  # noqa: E402

with nkidev.emulate():
    from matmul import matmul_kernel  # noqa: E402

_OURS = ("nkidev-deferred", "nkidev-gemm")


def _both(kernel, *args):
    """(overlapped, in line) runs of the kernel: their outputs and traces; the first did queue instructions."""
    queued = []
    real = deferred.Worker.submit

    def counted(self, *a, **kw):
        queued.append(1)
        return real(self, *a, **kw)

    deferred.Worker.submit = counted
    try:
        on = run(kernel, args, options=EmulatorOptions(overlap=True))
    finally:
        deferred.Worker.submit = real
    assert queued, "nothing was handed to the worker thread"
    off = run(kernel, args, options=EmulatorOptions(overlap=False))
    return on, off


def _bits(x) -> bytes:
    return np.ascontiguousarray(x).view(np.uint8).tobytes()


def _rows(trace) -> list:
    def places(accesses):  # tensor ids differ between runs: where in which buffer
        return tuple((a.buffer, a.shape, a.partition_start, a.byte_start, a.byte_stop) for a in accesses)

    return [(i.opcode, i.engine, i.location, places(i.reads), places(i.writes)) for i in trace.instructions]


def _line(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(_OURS)]


def test_the_matmul_example_gives_the_same_bits_and_trace_overlapped_or_in_line():
    rng = np.random.default_rng(3)
    lhsT = rng.standard_normal((512, 256)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((512, 1024)).astype(ml_dtypes.bfloat16)
    on, off = _both(matmul_kernel, lhsT, rhs)
    assert _bits(on.outputs) == _bits(off.outputs)
    assert _rows(on.trace) == _rows(off.trace)
    want = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    np.testing.assert_allclose(np.asarray(on.outputs, np.float32), want, rtol=2e-2, atol=0.2)
    assert _threads() == []


@jit
def reuse_one_rhs_tile(lhsT, rhs):
    """Every group's moving tiles are ONE storage, reloaded with other blocks (new versions) and rewritten in place
    by an engine op between groups: a converted stack keyed by the storage alone would be stale."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs = nl.ndarray((128, K // 128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // 128):
        nisa.dma_copy(dst=lhs[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, :])
    tile = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
    for rep in range(2):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                nisa.dma_copy(dst=tile, src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
                if rep == 1:
                    nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=2.0)
                nisa.nc_matmul(dst=acc, stationary=lhs[:, k, :], moving=tile)
            res = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            if rep == 1:
                nisa.dma_copy(dst=out[:, n * 512 : (n + 1) * 512], src=res)
    return out


def test_reloaded_and_rewritten_operand_tiles_are_converted_again():
    rng = np.random.default_rng(5)
    lhsT = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((256, 1024)).astype(ml_dtypes.bfloat16)
    on, off = _both(reuse_one_rhs_tile, lhsT, rhs)
    assert _bits(on.outputs) == _bits(off.outputs)
    want = lhsT.astype(np.float32).T @ (2 * rhs.astype(np.float32))  # the doubled tiles of the second pass
    np.testing.assert_allclose(on.outputs, want, rtol=1e-5, atol=1e-4)


@jit
def read_psum_right_after(a, b):
    """A queued copy of PSUM, then at once an engine read of its result and an overwrite of a tile it reads."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in range(4):  # a group large enough to be handed over (deferred._MIN_MACS)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)  # queued: reads the group's GEMM
    nisa.tensor_scalar(dst=res, data=res, op0=nl.add, operand0=1.0)  # reads and writes what the queue writes
    nisa.memset(dst=acc, value=0.0)  # overwrites what the queue read
    nisa.dma_copy(dst=out, src=res)
    return out


def test_a_psum_read_right_after_overlapped_matmuls_gives_the_in_line_bits():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    on, off = _both(read_psum_right_after, a, b)
    assert _bits(on.outputs) == _bits(off.outputs)
    want = 4 * (a.astype(np.float32).T @ b.astype(np.float32)) + 1
    np.testing.assert_allclose(on.outputs, want, rtol=1e-5, atol=1e-4)


@jit
def copies_then_raise(a, b):
    s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for _ in range(4):  # a group large enough to be handed over (deferred._MIN_MACS)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)  # the GEMM's reader
    x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=x, value=1.0)
    if a.shape[0] == 128:
        raise ValueError("the kernel's own error")
    return a


def _operands():
    rng = np.random.default_rng(1)
    return rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16), rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)


def _kernel_line_of(e: BaseException, kernel) -> int:
    """The deepest frame of the kernel (what validate and profile name as the error's line)."""
    path, name = inspect.getsourcefile(kernel.fn), kernel.fn.__name__
    return [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == path and f.name == name][-1]


@pytest.mark.parametrize("overlap", [True, False])
def test_an_error_inside_a_gemm_reports_the_line_that_reads_it(monkeypatch, overlap):
    def broken(self):
        raise RuntimeError("GEMM failed")

    monkeypatch.setattr(psum.Group, "compute", broken)
    queued = []
    real = deferred.Worker.submit
    monkeypatch.setattr(deferred.Worker, "submit", lambda self, *a: queued.append(1) or real(self, *a))
    with pytest.raises(RuntimeError, match="GEMM failed") as info:
        run(copies_then_raise, _operands(), options=EmulatorOptions(overlap=overlap))
    assert bool(queued) == overlap
    assert _kernel_line_of(info.value, copies_then_raise) == _line(copies_then_raise, "nisa.tensor_copy(dst=res, src=acc)")
    assert _threads() == []


def test_the_kernels_own_error_with_queued_work_leaves_no_thread():
    with pytest.raises(ValueError, match="the kernel's own error") as info:
        run(copies_then_raise, _operands(), options=EmulatorOptions(overlap=True))
    assert _kernel_line_of(info.value, copies_then_raise) == _line(copies_then_raise, "raise ValueError")
    assert _threads() == []


def test_a_validation_of_the_matmul_example_passes_with_no_thread_left():
    rng = np.random.default_rng(0)
    cases = [(rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16), rng.standard_normal((256, 1024)).astype(ml_dtypes.bfloat16))]
    result = nkidev.validate(matmul_kernel, lambda a, b: np.asarray(a, np.float64).T @ np.asarray(b, np.float64), cases, seeds=1)
    assert result.passed, result.to_dict()
    assert _threads() == []
