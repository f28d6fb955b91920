"""`nkidev fidelity`: the bundled published-measurement set is well formed, and the report's numbers are the
cost model's predictions compared with the measured times (MAPE, Kendall tau, top-1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nkidev
from nkidev.calibrate import stats
from nkidev.calibrate.measurements import read
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run
from nkidev.errors import NkiUsageError
from nkidev.fidelity.api import default_set, fidelity
from nkidev.hardware.calibration import write_calibration
from nkidev.profile.api import profile_task
from nkidev.taskfile import kernel_spec, load_task

KERNELS = Path(__file__).resolve().parents[1] / "calibrate" / "kernels.py"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fidelity"


def _row(kernel: str, case: int, order: int, measured_ns: float, progression: str = "synthetic", target: str = "trn2") -> str:
    return f"""
[[measurement]]
progression = "{progression}"
order = {order}
kernel = "{KERNELS}::{kernel}"
case = {case}
target = "{target}"
dtype = "float32"
shapes = "x [128, N]"
measured_ns = {measured_ns}
split = "held-out"
source = "https://example.org/not-published"
section = "test"
note = "made up for the test"
"""


def test_the_bundled_set_names_real_kernels_with_sources():
    rows = read([default_set()])
    assert len(rows) >= 13 and {r.split for r in rows} == {"calibration", "held-out"} and {r.target for r in rows} == {"trn1", "trn2"}
    for r in rows:
        spec = kernel_spec(r.spec)
        assert spec.path.is_file() and spec.path.parent == EXAMPLES and r.source.startswith("https://")
        assert spec.name in load_task(spec.path).kernels and r.measured_ns > 1e5
    progressions = {r.progression for r in rows}
    assert any("trn1 matmul tutorial" in p for p in progressions) and any("trn2 kernel-optimization" in p for p in progressions)


def test_published_set_rows_are_strict(tmp_path):
    path = tmp_path / "set.toml"
    path.write_text(_row("dma_stream", 2, 1, 1e4).replace('note = "made up for the test"', 'notes = "typo"'))
    with pytest.raises(NkiUsageError) as e:
        read([path])
    assert e.value.name == "err_calibration_failed" and "unknown key notes" in e.value.message


def test_an_unknown_split_is_named_not_read_as_no_measurements():
    # a typo in --split used to end as err_calibration_failed "no measurements given" (both fidelity and calibrate)
    with pytest.raises(NkiUsageError) as e:
        read([default_set()], split="heldout")
    assert e.value.name == "err_invalid_argument" and e.value.message == "--split 'heldout'" and "held-out" in e.value.fix
    proc = subprocess.run(
        [sys.executable, "-m", "nkidev", "fidelity", "--split", "bogus", "--json"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["name"] == "err_invalid_argument"


def test_published_profile_components_are_optional_and_checked(tmp_path):
    v0 = next(r for r in read([default_set()]) if r.label == "trn2 bounds analysis (bf16 4096^3) #1")
    assert v0.profile == {"dma_active_ns": 7906e3, "te_active_ns": 4806e3, "dma_bytes": 1_207_697_408.0, "dma_descriptors": 1_473_920.0}
    path = tmp_path / "set.toml"
    path.write_text(_row("dma_stream", 2, 1, 1e4) + "te_active_ns = 5e3\n")
    assert read([path])[0].profile == {"te_active_ns": 5e3}
    path.write_text(_row("dma_stream", 2, 1, 1e4) + "dma_bytes = -1\n")
    with pytest.raises(NkiUsageError) as e:
        read([path])
    assert e.value.name == "err_calibration_failed" and "dma_bytes = -1 is not a positive number" in e.value.message


def test_report_compares_the_cost_model_with_the_measured_times(tmp_path):
    path = tmp_path / "set.toml"
    path.write_text(_row("dma_stream", 2, 1, 30000.0) + _row("vector_chain", 2, 2, 20000.0) + _row("dma_chain", 2, 3, 5000.0))
    report = fidelity(path, calibration="none")
    rows = report["rows"]
    sim = [
        profile_task(f"{KERNELS}::{k}", case=2, target="trn2", out=tmp_path / k, compute=False, calibration="none").total_time_ns
        for k in ("dma_stream", "vector_chain", "dma_chain")
    ]
    assert [r["predicted_ns"] for r in rows] == pytest.approx(sim, rel=1e-4)
    measured = [30000.0, 20000.0, 5000.0]
    assert report["summary"]["mape_percent"] == pytest.approx(stats.mape(sim, measured), abs=1e-2)
    p = report["progressions"]["synthetic"]
    assert p["kendall_tau"] == pytest.approx(stats.kendall_tau(sim, measured), abs=1e-3)
    assert p["top1_agrees"] == stats.top1_agrees(sim, measured)
    assert report["calibration"] == {"trn2": "none (documented constants)"} and report["splits"]["held-out"]["rows"] == 3


def test_a_row_the_emulator_rejects_is_reported_not_fatal(tmp_path):
    path = tmp_path / "set.toml"
    path.write_text(_row("dma_stream", 2, 1, 30000.0) + _row("dma_stream", 9, 2, 20000.0))
    report = fidelity(path, calibration="none")
    bad = report["rows"][1]
    assert bad["predicted_ns"] is None and bad["error"]["name"] == "err_calibration_failed" and "case 9" in bad["error"]["message"]
    assert report["summary"]["rows"] == 1 and report["summary"]["rows_not_predicted"] == 1


def test_fidelity_cli_json(tmp_path):
    path = tmp_path / "set.toml"
    path.write_text(_row("dma_stream", 2, 1, 30000.0) + _row("dma_chain", 2, 2, 5000.0))
    proc = subprocess.run(
        [sys.executable, "-m", "nkidev", "fidelity", "--set", str(path), "--calibration", "none", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["summary"]["rows"] == 2 and report["progressions"]["synthetic"]["kendall_tau"] in (1.0, -1.0)


@pytest.mark.parametrize("kernel", ["matmul_transpose_tiles", "matmul_pretransposed"])
def test_transpose_progression_kernels_compute_the_product(kernel):
    task = load_task(EXAMPLES / "matmul_transpose.py")
    a, b = task.cases()[0]
    arg = a if kernel == "matmul_transpose_tiles" else np.ascontiguousarray(a.T)
    out = np.asarray(nkidev.simulate(task.kernel(kernel))(arg, b), np.float64)
    np.testing.assert_allclose(out, task.attr("reference")(a, b), atol=0.5, rtol=2e-2)


@pytest.mark.parametrize("kernel", ["mamba_v1", "mamba_v2", "mamba_v3"])
def test_fused_mamba_kernels_compute_the_selective_scan(kernel):
    task = load_task(EXAMPLES / "fused_mamba.py")
    args = task.cases()[0]  # 2 channel tiles, 2 seq_len tiles of mamba_v3, 2 states
    out = np.asarray(nkidev.simulate(task.kernel(kernel))(*args), np.float64)
    expected = task.attr("reference")(*args)
    assert np.abs(expected).max() > 1.0  # the scan carries: not a near-zero output
    np.testing.assert_allclose(out, expected, atol=1e-4, rtol=1e-4)


def test_fused_mamba_v3_keeps_its_intermediates_in_sbuf_as_the_tutorial_does():
    """The published mamba_v3 allocates no PSUM tile of its own: only a partition broadcast's matmul writes PSUM, and
    only the VectorE product consuming the broadcast reads it, with no copy into SBUF (the tutorial: "a separate
    instruction on TensorE"); the C product and its accumulation stay in SBUF."""
    task = load_task(EXAMPLES / "fused_mamba.py")
    kernel = task.kernel("mamba_v3")
    trace = run(kernel, task.cases()[0], {}, options=EmulatorOptions(target="trn1", compute=False)).trace
    psum_writers = {ins.opcode for ins in trace.instructions if any(w.buffer == "psum" for w in ins.writes)}
    psum_readers = {ins.opcode for ins in trace.instructions if any(r.buffer == "psum" for r in ins.reads)}
    assert psum_writers == {"nc_matmul"}
    assert psum_readers == {"tensor_tensor"}


def test_a_calibration_file_applies_to_its_own_targets_rows_only(tmp_path):
    """A file is fitted for one target: a mixed set predicts the other targets' rows with the documented constants."""
    path = tmp_path / "set.toml"
    path.write_text(_row("dma_stream", 2, 1, 30000.0, "on trn2") + _row("dma_stream", 2, 1, 30000.0, "on trn1", target="trn1"))
    cal = write_calibration(tmp_path / "trn2.toml", "trn2", {"dma": {"fixed_cost_ns": 4000.0}}, {"written_by": "test"})
    plain = {r["target"]: r["predicted_ns"] for r in fidelity(path, calibration="none")["rows"]}
    report = fidelity(path, calibration=str(cal))
    got = {r["target"]: r["predicted_ns"] for r in report["rows"]}
    assert got["trn1"] == plain["trn1"] and got["trn2"] > plain["trn2"]
    assert report["calibration"]["trn2"] == str(cal) and "calibration file is for trn2" in report["calibration"]["trn1"]
    only_trn1 = tmp_path / "trn1.toml"
    only_trn1.write_text(_row("dma_stream", 2, 1, 30000.0, target="trn1"))
    with pytest.raises(NkiUsageError) as e:
        fidelity(only_trn1, calibration=str(cal))
    assert e.value.name == "err_bad_calibration_file" and "no selected measurement is on trn2" in e.value.message


def _vector_ns(kernel: str, seq_len: int) -> dict[str, float]:
    """VectorE busy ns per profiler opcode of one Fused Mamba step (128 channels, 1 state) on trn1."""
    from nkidev.costmodel import schedule

    task = load_task(EXAMPLES / "fused_mamba.py")
    args = task.attr("_inputs")(1, 128, seq_len, 1)
    rows = schedule(run(task.kernel(kernel), args, {}, options=EmulatorOptions(target="trn1", compute=False)).trace).rows
    busy: dict[str, float] = {}
    for i, engine in enumerate(rows.engine):
        if engine == "vector":
            busy[rows.opcode[i]] = busy.get(rows.opcode[i], 0.0) + float(rows.end[i] - rows.start[i])
    return busy


def test_fused_mamba_broadcast_products_read_psum_at_the_documented_rate():
    """One state step at seq_len 512 (N): delta*u, the scan and the accumulation read two SBUF tiles (2N VectorE
    cycles each), the products with the broadcast B and C read it from PSUM (N each) [sources: isa-legacy
    tensor_tensor "one input tile is in PSUM"]: 8N cycles at trn1's 1.12 GHz, and no PSUM -> SBUF copy."""
    busy = _vector_ns("mamba_v2", 512)
    assert "TENSOR_COPY" not in busy
    assert busy["TENSOR_TENSOR"] == pytest.approx((2 + 1 + 1 + 2) * 512 / 1.12, rel=1e-9)
    assert busy["TENSOR_TENSOR_SCAN"] == pytest.approx(2 * 512 / 1.12, rel=1e-9)


def test_fused_mamba_broadcast_wider_than_a_psum_bank_is_copied_to_sbuf():
    """At seq_len 1024 one nc_matmul cannot write the broadcast row (one 2 KiB bank holds 512 fp32): it is
    nl.broadcast_to's matmul per bank and a copy into SBUF (N per bank), and both products read SBUF (2N)."""
    busy = _vector_ns("mamba_v2", 1024)
    assert busy["TENSOR_COPY"] == pytest.approx(2 * 2 * 512 / 1.12, rel=1e-9)
    assert busy["TENSOR_TENSOR"] == pytest.approx(4 * 2 * 1024 / 1.12, rel=1e-9)
