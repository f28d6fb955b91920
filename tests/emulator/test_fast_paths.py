"""The emulator's per-call fast paths (allocation checks cached per shape, rule-cache signatures from view codes
and default arguments, shape-only tiles over one zero buffer, kernel sites by bytecode offset) change no result:
errors fire at the same line with the same name, and shape-only traces equal the computed ones."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

from nkidev.emulator import isa as nisa
from nkidev.emulator import language as nl
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import jit, run
from nkidev.errors import NkiError


def _line(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@jit
def matmuls_then_bad_perf_mode(a, b):
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    for _ in range(3):  # the same signature: checked once, then cached
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m, perf_mode="bogus")  # one argument off its default
    return a


@pytest.mark.parametrize("compute", [False, True])
def test_a_non_default_argument_after_cached_calls_is_checked_at_its_line(compute):
    a, b = np.zeros((128, 128), np.float32), np.zeros((128, 512), np.float32)
    with pytest.raises(NkiError) as info:
        run(matmuls_then_bad_perf_mode, (a, b), {}, options=EmulatorOptions(target="trn2", compute=compute))
    assert info.value.name == "err_invalid_argument"
    assert info.value.lineno == _line(matmuls_then_bad_perf_mode, 'perf_mode="bogus"')


@jit
def keeps_tiles(a):
    kept = []
    for _ in range(8):
        t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)  # 512 KiB each
        kept.append(t)
    return a


def test_the_memory_budget_still_binds_once_an_allocation_is_checked_from_the_cache():
    budget = 3 * 128 * 1024 * 4 + 1024  # three tiles and the input fit, the fourth does not
    with pytest.raises(NkiError) as info:
        run(keeps_tiles, (np.zeros((4, 4), np.float32),), {}, options=EmulatorOptions(compute=False, memory_budget=budget))
    assert info.value.name == "err_memory_limit"
    assert info.value.lineno == _line(keeps_tiles, "t = nl.ndarray")


@jit
def tiles_and_slices(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(2):
        x = nl.ndarray((64, 256), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((64, 256), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a[i * 64 : (i + 1) * 64, :])
        nisa.tensor_copy(dst=y[:, 128:256], src=x[:, 0:128])
        nisa.tensor_copy(dst=x[:, 0:128], src=y[:, 128:256])
        nisa.dma_copy(dst=out[i * 64 : (i + 1) * 64, :], src=x)
    return out


def _trace_facts(res):
    t = res.trace
    cols = t.columns()
    row = {tid: k for k, tid in enumerate(t.tensors.keys())}  # storage ids count on across runs: compare table rows
    rows = [
        (i.opcode, i.engine, [(row[x.tensor], x.layout()) for x in i.reads + i.writes], i.partitions, i.free_elems, i.flops)
        for i in t.instructions
    ]
    tensors = [(r.name, r.buffer, r.shape, r.dtype, r.nbytes, r.kind) for r in t.tensors.values()]
    return rows, tensors, cols.location.tolist(), [t.locations[c] for c in cols.location.tolist()]


def test_shape_only_traces_equal_computed_ones_and_tiles_are_read_only_zeros():
    a = np.arange(128 * 256, dtype=np.float32).reshape(128, 256)
    shape_only = run(tiles_and_slices, (a,), {}, options=EmulatorOptions(target="trn2", compute=False))
    computed = run(tiles_and_slices, (a,), {}, options=EmulatorOptions(target="trn2", compute=True))
    facts = _trace_facts(shape_only)
    assert facts[:3] == _trace_facts(computed)[:3]
    assert [r[0] for r in facts[1]] == ["a", "out", "x", "y", "x", "y"]
    assert set(facts[3]) == {
        f"{inspect.getsourcefile(tiles_and_slices.fn)}:{_line(tiles_and_slices, src)}"
        for src in (
            "nisa.dma_copy(dst=x",
            "nisa.tensor_copy(dst=y",
            "nisa.tensor_copy(dst=x",
            "nisa.dma_copy(dst=out",
        )
    }
    expected = a.copy()
    expected[:, :128] = a[:, :128].astype(ml_dtypes.bfloat16).astype(np.float32)  # through y, a bf16 tile
    np.testing.assert_array_equal(computed.outputs, expected)


@jit
def looks_at_its_tiles(a):
    x = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    y = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    seen.extend([x.storage.array, y.storage.array])
    return a


seen: list = []


def test_shape_only_tiles_are_views_of_one_read_only_zero_buffer():
    seen.clear()
    run(looks_at_its_tiles, (np.zeros((2, 2), np.float32),), {}, options=EmulatorOptions(compute=False))
    x, y = seen
    assert not x.flags.writeable and not y.flags.writeable
    assert np.shares_memory(x, y) and not np.any(x.view(np.uint16))
    seen.clear()
    run(looks_at_its_tiles, (np.zeros((2, 2), np.float32),), {}, options=EmulatorOptions(compute=True))
    assert seen[0].flags.writeable and not np.shares_memory(*seen)
