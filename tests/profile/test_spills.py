"""Spills in a profile: the SBUF -> HBM spills the emulator records (Trace.spills) fill Summary's and the Instruction
rows' spill_save_bytes / spill_reload_bytes; PSUM -> SBUF spills and kernels without spills keep 0."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import duckdb
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np
import pytest

from nkidev.errors import NkiWarning
from nkidev.profile.api import profile
from tests.profile import kernels as K

BIG = 53200  # [128, 53200] fp32 = 212800 bytes per partition: fits trn2's 212984 alone, not with one [128, 128] fp32
SMALL = 128 * 128 * 4  # bytes of one [128, 128] fp32 tile, the size of each spill below


@nki.jit
def evicted_around_a_matmul(w_in, m_in):
    """w is evicted when the big tile comes in and reloaded for the matmul (before its LDWEIGHTS); m is evicted
    after the matmul reads it (after its MATMUL) and reloaded for its store."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    out_m = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=w_in)  # <- w saved
    big = nl.ndarray((128, BIG), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=big, value=1.0)
    m = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=m, src=m_in)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=w, moving=m)  # <- w reloaded, m saved
    res = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    again = nl.ndarray((128, BIG), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=again, value=2.0)
    nisa.dma_copy(dst=out_m, src=m)  # <- m reloaded
    return out, out_m


@nki.jit
def two_live_psum_tiles(a):
    out = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.psum)  # 12000 bytes per partition: two exceed 16384
    y = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.psum)
    s = nl.ndarray((128, 3000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=x, value=2.0)
    nisa.memset(dst=y, value=3.0)
    nisa.tensor_copy(dst=s, src=y)
    nisa.tensor_tensor(dst=s, data1=s, data2=x, op=nl.multiply)
    nisa.dma_copy(dst=out, src=s)
    return out


def sql(path, query: str):
    con = duckdb.connect()
    for f in Path(path).glob("*.parquet"):
        con.sql(f"CREATE VIEW {f.stem} AS SELECT * FROM read_parquet('{f}')")
    return con.sql(query).fetchall()


def _line(kernel, marker: str) -> int:
    fn = getattr(kernel, "fn", None) or getattr(kernel, "func", None) or kernel
    lines, start = inspect.getsourcelines(inspect.unwrap(fn))
    return start + next(i for i, line in enumerate(lines) if marker in line)


def _profile(kernel, args, out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NkiWarning)
        return profile(kernel, *args, target="trn2", out=out)


@pytest.fixture(scope="module")
def spilled(tmp_path_factory):
    rng = np.random.default_rng(3)
    args = (rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32))
    return _profile(evicted_around_a_matmul, args, tmp_path_factory.mktemp("spill") / "p")


def test_the_kernel_spills_two_sbuf_tiles(spilled):
    spills = spilled.timeline.trace.spills
    assert sorted((sp.name, sp.to, sp.nbytes) for sp in spills) == [("m", "hbm", SMALL), ("w", "hbm", SMALL)]


def test_summary_counts_each_sbuf_spill_once_each_way(spilled):
    ((save, reload),) = sql(spilled.profile_dir, "SELECT spill_save_bytes, spill_reload_bytes FROM Summary")
    assert (save, reload) == (2 * SMALL, 2 * SMALL)


def test_saves_and_reloads_sit_on_the_instructions_around_the_gap(spilled):
    rows = sql(
        spilled.profile_dir,
        "SELECT opcode, nki_source_location, spill_save_bytes, spill_reload_bytes FROM Instruction "
        "WHERE spill_save_bytes > 0 OR spill_reload_bytes > 0 ORDER BY id",
    )
    at = {marker: _line(evicted_around_a_matmul, marker) for marker in ("<- w saved", "<- w reloaded", "<- m reloaded")}
    got = [(opcode, int(loc.rpartition(":")[2]), save, reload) for opcode, loc, save, reload in rows]
    assert got == [
        ("DMA_TRIGGER", at["<- w saved"], SMALL, 0),  # w leaves SBUF after its load
        ("LDWEIGHTS", at["<- w reloaded"], 0, SMALL),  # and is back before the matmul's first row reads it
        ("MATMUL", at["<- w reloaded"], SMALL, 0),  # m leaves after the matmul's last row has read it
        ("DMA_TRIGGER", at["<- m reloaded"], 0, SMALL),  # and is back for its store
    ]


def test_psum_spills_to_sbuf_are_not_device_memory_spills(tmp_path):
    res = _profile(two_live_psum_tiles, (np.zeros((1, 1), np.float32),), tmp_path / "p")
    assert [sp.buffer for sp in res.timeline.trace.spills] == ["psum"]
    assert sql(res.profile_dir, "SELECT spill_save_bytes, spill_reload_bytes FROM Summary") == [(0, 0)]
    assert sql(res.profile_dir, "SELECT count(*) FROM Instruction WHERE spill_save_bytes <> 0 OR spill_reload_bytes <> 0") == [(0,)]


def test_a_kernel_without_spills_keeps_zero(tmp_path):
    res = profile(K.matmul, *K.cases()[1], target="trn2", out=tmp_path / "p")
    assert res.timeline.trace.spills == []
    assert sql(res.profile_dir, "SELECT spill_save_bytes, spill_reload_bytes FROM Summary") == [(0, 0)]
    assert sql(res.profile_dir, "SELECT sum(spill_save_bytes), sum(spill_reload_bytes) FROM Instruction") == [(0, 0)]


def test_each_program_of_a_launch_gets_its_own_spills(tmp_path):
    rng = np.random.default_rng(4)
    args = (rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32))
    res = _profile(evicted_around_a_matmul[2], args, tmp_path / "p")
    rows = sql(
        res.profile_dir,
        "SELECT pcore_idx, list(opcode ORDER BY id), sum(spill_save_bytes), sum(spill_reload_bytes) FROM Instruction "
        "WHERE spill_save_bytes > 0 OR spill_reload_bytes > 0 GROUP BY pcore_idx ORDER BY pcore_idx",
    )
    opcodes = ["DMA_TRIGGER", "LDWEIGHTS", "MATMUL", "DMA_TRIGGER"]
    assert rows == [(0, opcodes, 2 * SMALL, 2 * SMALL), (1, opcodes, 2 * SMALL, 2 * SMALL)]
    assert sql(res.profile_dir, "SELECT spill_save_bytes, spill_reload_bytes FROM Summary") == [(4 * SMALL, 4 * SMALL)]
