"""Calibration: profiles generated with known constants are fitted back to those constants, leave-one-out
errors are computed, and the written file is applied (strictly) by profile/validate/analyze."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nkidev.calibrate import stats
from nkidev.calibrate.api import calibrate
from nkidev.calibrate.measurements import read
from nkidev.errors import NkiUsageError
from nkidev.fidelity.api import default_set
from nkidev.hardware import get_target, with_overrides
from nkidev.hardware.calibration import (
    CALIBRATION_ENV,
    CONFIG_ENV,
    bundled_calibration,
    calibrated_target,
    load_calibration,
    write_calibration,
)
from nkidev.profile.api import profile_task
from nkidev.profile.schema import HARDWARE_FILE, KERNEL_FILE, MARKER_FILE

KERNELS = Path(__file__).with_name("kernels.py")
TRUTH = {"dma": {"fixed_cost_ns": 700.0, "hbm_efficiency": 0.6}, "vector_engine": {"clock_ghz": 1.5}}
FIT = ["dma.fixed_cost_ns", "dma.hbm_efficiency", "vector_engine.clock_ghz"]
RUNS = [("dma_stream", 0), ("dma_stream", 1), ("dma_chain", 2), ("dma_chain", 3), ("vector_chain", 2), ("vector_chain", 3)]


@pytest.fixture(autouse=True)
def _no_user_calibration(monkeypatch, tmp_path):
    monkeypatch.delenv(CALIBRATION_ENV, raising=False)
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "no-config.toml"))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Six 'hardware' profiles: the cost model run with the TRUTH constants, written in the real table layout
    and stripped of everything nkidev-only except nkidev-kernel.json (what a capture records)."""
    root = tmp_path_factory.mktemp("measured")
    truth = write_calibration(root / "truth.toml", "trn2", TRUTH, {"what": "the constants the synthetic profiles were made with"})
    dirs = []
    for kernel, case in RUNS:
        result = profile_task(
            f"{KERNELS}::{kernel}", case=case, target="trn2", out=root / f"{kernel}-{case}", compute=False, calibration=str(truth)
        )
        d = Path(result.profile_dir)
        for name in (HARDWARE_FILE, MARKER_FILE, "trace.json"):
            (d / name).unlink()
        dirs.append(d)
    return root, dirs


@pytest.fixture(scope="module")
def fitted(measured):
    root, dirs = measured
    old = {k: os.environ.pop(k, None) for k in (CALIBRATION_ENV,)}
    try:
        return calibrate(dirs, "trn2", out=root / "fit.toml", fit=FIT)
    finally:
        os.environ.update({k: v for k, v in old.items() if v is not None})


def test_profiles_record_the_kernel_they_measured(measured):
    _, dirs = measured
    info = json.loads((dirs[2] / KERNEL_FILE).read_text())
    assert info["spec"] == f"{KERNELS.resolve()}::dma_chain" and info["case"] == 2 and info["target"] == "trn2"
    assert info["calibration"].endswith("truth.toml")
    rows = read(dirs)
    assert [r.case for r in rows] == [c for _, c in RUNS] and all(r.measured_ns > 1000 for r in rows)


def test_fit_recovers_the_constants_the_profiles_were_made_with(fitted):
    got = {c["key"]: c["fitted"] for c in fitted["constants"]}
    assert got["dma.fixed_cost_ns"] == pytest.approx(700.0, rel=0.05)
    assert got["dma.hbm_efficiency"] == pytest.approx(0.6, rel=0.05)
    assert got["vector_engine.clock_ghz"] == pytest.approx(1.5, rel=0.05)
    assert all(c["identifiable"] for c in fitted["constants"])
    assert fitted["before"]["mape_percent"] > 20  # the documented constants miss the synthetic hardware
    assert fitted["fit"]["mape_percent"] < 2


def test_leave_one_out_is_computed_per_row(fitted):
    loo = fitted["leave_one_out"]
    assert len(fitted["rows"]) == 6 and all(r["predicted_loo_ns"] > 0 for r in fitted["rows"])
    assert loo["mape_percent"] < 5 and loo["progressions"]["(all)"]["kendall_tau"] == 1.0
    assert loo["progressions"]["(all)"]["top1_agrees"] is True
    worst = fitted["worst_rows"]
    assert len(worst) == 3 and worst[0]["loo_ape_percent"] == max(r["loo_ape_percent"] for r in fitted["rows"])
    assert fitted["before"]["progressions"]["(all)"]["kendall_tau"] < 1.0


def test_written_calibration_applies_and_names_its_provenance(fitted, measured):
    root, dirs = measured
    cal = load_calibration(root / "fit.toml")
    assert cal.target == "trn2" and len(cal.provenance["fitted_to"]) == 6
    assert cal.provenance["fitted"] == FIT and cal.provenance["loo_mape_percent"] == fitted["leave_one_out"]["mape_percent"]
    hw = calibrated_target("trn2", str(root / "fit.toml"))
    assert hw.dma.fixed_cost_ns == pytest.approx(700.0, rel=0.05) and hw.calibration == str(root / "fit.toml")
    again = profile_task(
        f"{KERNELS}::dma_chain", case=2, target="trn2", out=root / "again", compute=False, calibration=str(root / "fit.toml")
    )
    assert again.total_time_ns == pytest.approx(fitted["rows"][2]["measured_ns"], rel=0.02)


def test_calibration_files_are_strict(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('target = "trn2"\n[overrides.dma]\nfixed_cost = 900.0\n')
    with pytest.raises(NkiUsageError) as e:
        calibrated_target("trn2", str(bad))
    assert e.value.name == "err_bad_calibration_file" and "overrides.dma.fixed_cost" in e.value.message and str(bad) in e.value.message
    bad.write_text('target = "trn2"\n[overrides.dma]\nfixed_cost_ns = "fast"\n')
    with pytest.raises(NkiUsageError, match="fixed_cost_ns = 'fast' is not a float"):
        calibrated_target("trn2", str(bad))
    bad.write_text('target = "trn2"\ncomment = 1\n')
    with pytest.raises(NkiUsageError, match="unknown key comment"):
        calibrated_target("trn2", str(bad))
    other = write_calibration(tmp_path / "trn1.toml", "trn1", {"dma": {"fixed_cost_ns": 900.0}}, {})
    with pytest.raises(NkiUsageError, match="was fitted for trn1, not trn2"):
        calibrated_target("trn2", str(other))


def test_environment_and_user_config_choose_the_calibration(tmp_path, monkeypatch):
    one = write_calibration(tmp_path / "one.toml", "trn2", {"engines": {"semaphore_sync_ns": 77.0}}, {})
    monkeypatch.setenv(CALIBRATION_ENV, str(one))
    assert calibrated_target("trn2").engines.semaphore_sync_ns == 77.0
    assert calibrated_target("trn1").engines.semaphore_sync_ns == get_target("trn1").engines.semaphore_sync_ns  # other target
    assert calibrated_target("trn2", "none").engines.semaphore_sync_ns == get_target("trn2").engines.semaphore_sync_ns
    monkeypatch.delenv(CALIBRATION_ENV)
    config = tmp_path / "config.toml"
    config.write_text(f'calibration = "{one}"\n')
    monkeypatch.setenv(CONFIG_ENV, str(config))
    assert calibrated_target("trn2").calibration == str(one)


def test_bundled_calibration_applies_with_its_provenance():
    hw = calibrated_target("trn2", "default")
    cal = load_calibration(hw.calibration)
    assert cal.target == "trn2" and cal.provenance["fitted_to"] and cal.provenance["written_by"].startswith("nkidev")
    for section, values in cal.overrides.items():
        for key, value in values.items():
            assert getattr(getattr(hw, section), key) == value


def test_free_constants_come_from_the_target_file(tmp_path):
    t = get_target("trn2")
    keys = [k for k, _, _ in t.free_constants]
    assert "dma.fixed_cost_ns" in keys and "vector_engine.clock_ghz" in keys and len(keys) <= 12
    assert all(low <= with_overrides(t, {}, "x").dma.fixed_cost_ns <= high for k, low, high in t.free_constants if k == "dma.fixed_cost_ns")
    text = Path(t.source).read_text().replace('"dma.fixed_cost_ns" = [100.0, 4000.0]', '"dma.fixed_cost" = [100.0, 4000.0]')
    (tmp_path / "trn2.toml").write_text(text)
    from nkidev.hardware import load_target_file

    with pytest.raises(NkiUsageError) as e:
        load_target_file(tmp_path / "trn2.toml")
    assert e.value.name == "err_bad_hardware_file" and "'dma.fixed_cost' names no number" in e.value.message


def test_a_profile_without_its_kernel_is_a_named_error(tmp_path, measured):
    _, dirs = measured
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "Summary.parquet").write_bytes((dirs[0] / "Summary.parquet").read_bytes())
    with pytest.raises(NkiUsageError) as e:
        calibrate([bare], "trn2")
    assert e.value.name == "err_calibration_failed" and KERNEL_FILE in e.value.message
    with pytest.raises(NkiUsageError, match="not a free constant of trn2"):
        calibrate(dirs[:1], "trn2", fit=["dma.engines"])


def test_calibrate_cli_writes_a_file_and_reports_json(measured, tmp_path):
    _, dirs = measured
    out = tmp_path / "cli.toml"
    args = [sys.executable, "-m", "nkidev", "calibrate", str(dirs[4]), str(dirs[5]), "--target", "trn2", "--fit", "vector_engine.clock_ghz"]
    proc = subprocess.run([*args, "--out", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["constants"][0]["fitted"] == pytest.approx(1.5, rel=0.05)
    assert result["leave_one_out"]["mape_percent"] is not None and load_calibration(out).overrides["vector_engine"]["clock_ghz"]


def test_kendall_tau_and_errors():
    assert stats.kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert stats.kendall_tau([3, 2, 1], [10, 20, 30]) == -1.0
    assert stats.kendall_tau([1, 3, 2], [10, 20, 30]) == pytest.approx(1 / 3)
    assert stats.mape([110, 90], [100, 100]) == pytest.approx(10.0)
    assert stats.median_ape([110, 50, 100], [100, 100, 100]) == pytest.approx(10.0)
    assert stats.top1_agrees([3, 1, 2], [30, 10, 20]) is True and stats.top1_agrees([1, 3], [30, 10]) is False


def test_bundled_trn2_calibration_is_fitted_to_the_calibration_rows_and_round_trips(tmp_path):
    """The shipped calibration names every row it was fitted to: all the trn2 calibration rows of the public set and no
    held-out row; it reports its leave-one-out error and an evaluation on the held-out rows; writing it back gives
    the same file content."""
    path = bundled_calibration("trn2")
    cal = load_calibration(path)
    rows = [m for m in read([default_set()]) if m.target == "trn2"]
    fitted = {(r["label"], r["measured_ns"]) for r in cal.provenance["fitted_to"]}
    assert fitted == {(m.label, m.measured_ns) for m in rows if m.split == "calibration"}
    assert cal.provenance["loo_mape_percent"] > 0 and "held-out" in cal.provenance["evaluation"]
    assert "STALE" not in path.read_text()
    again = load_calibration(write_calibration(tmp_path / "again.toml", cal.target, cal.overrides, cal.provenance))
    assert (again.target, again.overrides, again.provenance) == (cal.target, cal.overrides, cal.provenance)


def test_the_fit_re_simulates_a_measured_case_with_its_keywords():
    """A measurement of keywords.py case 1 (a Case with weight=) is predicted from that call's trace."""
    from nkidev.calibrate.fit import simulate
    from nkidev.calibrate.measurements import Measurement
    from nkidev.costmodel import schedule
    from nkidev.emulator.context import EmulatorOptions
    from nkidev.emulator.jit import run
    from nkidev.taskfile import load_task

    path = Path(__file__).parents[1] / "validate" / "tasks" / "keywords.py"
    hw = get_target("trn2")
    predicted = simulate([Measurement("m1", f"{path}::scaled_rmsnorm", 1, "trn2", 1.0)], hw, lambda event: None)(hw, [0])
    task = load_task(path)
    kernel, case = task.kernel("scaled_rmsnorm"), task.calls()[1]

    def predict(args, kwargs) -> float:
        return schedule(run(kernel, args, kwargs, options=EmulatorOptions(target=hw, compute=False)).trace, hw).total_ns

    assert predicted == [predict(case.args, case.kwargs)] and predicted[0] != predict(case.args, {})


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("spill_traffic_fraction", 1.5, r"\[dma\] spill_traffic_fraction = 1.5 must be a share in \[0, 1\]"),
        ("spill_traffic_fraction", -0.25, r"\[dma\] spill_traffic_fraction = -0.25 must be a share in \[0, 1\]"),
        ("hbm_efficiency", 0.0, r"\[dma\] hbm_efficiency = 0.0 must be a share in \(0, 1\]"),
        ("transpose_efficiency", 1.2, r"\[dma\] transpose_efficiency = 1.2 must be a share in \(0, 1\]"),
    ],
)
def test_shares_out_of_range_are_named_errors_not_clamped(tmp_path, key, value, expected):
    bad = tmp_path / "share.toml"
    bad.write_text(f'target = "trn2"\n[overrides.dma]\n{key} = {value}\n')
    with pytest.raises(NkiUsageError, match=expected) as e:
        calibrated_target("trn2", str(bad))
    assert e.value.name == "err_bad_calibration_file" and str(bad) in e.value.message


def test_shares_at_their_bounds_are_accepted(tmp_path):
    ok = tmp_path / "ok.toml"
    ok.write_text('target = "trn2"\n[overrides.dma]\nspill_traffic_fraction = 1.0\nhbm_efficiency = 1.0\n')
    assert calibrated_target("trn2", str(ok)).dma.spill_traffic_fraction == 1.0
    ok.write_text('target = "trn2"\n[overrides.dma]\nspill_traffic_fraction = 0\n')
    assert calibrated_target("trn2", str(ok)).dma.spill_traffic_fraction == 0.0
