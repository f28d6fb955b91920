"""The hardware path against fake neuronx-cc / neuron-explorer executables (real subprocesses writing
real-schema output), the named error without the SDK, and a device test that runs only on Trainium."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nkidev.analysis.api import analyze, query
from nkidev.calibrate.measurements import read
from nkidev.device.api import profile_hardware, validate_hardware
from nkidev.errors import NkiError, NkiUsageError
from nkidev.profile.schema import KERNEL_FILE

TINY = Path(__file__).with_name("tiny.py")


def _no_sdk_env(tmp_path) -> dict:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "HOME": str(tmp_path), "NKIDEV_CONFIG": str(tmp_path / "none.toml")}


def test_without_the_sdk_the_commands_name_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NkiUsageError) as e:
        profile_hardware(f"{TINY}::double", out=tmp_path / "p")
    assert e.value.name == "err_sdk_missing" and "neuronx-cc" in e.value.message and "neuron-explorer" in e.value.message
    assert not (tmp_path / "p").exists()
    for args in (["profile", "--hardware", f"{TINY}::double"], ["validate", "--hardware", f"{TINY}::double"]):
        proc = subprocess.run([sys.executable, "-m", "nkidev", *args, "--json"], capture_output=True, text=True, env=_no_sdk_env(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert json.loads(proc.stdout)["error"]["name"] == "err_sdk_missing"


def test_profile_hardware_captures_a_profile_the_analysis_reads(fake_path, tmp_path, monkeypatch):
    truth = tmp_path / "device.toml"
    truth.write_text('target = "trn2"\n[overrides.dma]\nfixed_cost_ns = 3000.0\n')
    monkeypatch.setenv("FAKE_DEVICE_CALIBRATION", str(truth))
    out = tmp_path / "hw"
    result = profile_hardware(f"{TINY}::double", target="trn2", out=out)
    info = json.loads((out / KERNEL_FILE).read_text())
    assert info["measured"] and info["spec"] == f"{TINY.resolve()}::double" and info["sdk"]["neuronx-cc"].startswith(str(fake_path))
    assert (out / "raw" / "kernel.neff").is_file() and (out / "raw" / "profile.ntff").is_file()
    assert (out / "Instruction_0.parquet").is_file() and result["hardware"] is True
    # the fake device is the cost model with fixed_cost_ns = 3000: slower than the documented 1300 ns
    from nkidev.profile.api import profile_task

    predicted = profile_task(f"{TINY}::double", target="trn2", out=tmp_path / "sim", compute=False, calibration="none").total_time_ns
    assert result["total_time_ns"] > predicted + 2 * 1500
    report = analyze(out)
    assert report.target == "trn2" and report.total_time_ns == pytest.approx(result["total_time_ns"], rel=1e-6)
    assert query(out, "SELECT count(*) AS n FROM Instruction")[0]["n"] > 10
    (row,) = read([out])
    assert row.measured_ns == pytest.approx(result["total_time_ns"], abs=0.1) and row.spec.endswith("tiny.py::double")


def test_validate_hardware_compares_the_device_with_reference_and_emulator(fake_path, monkeypatch):
    good = validate_hardware(f"{TINY}::double", target="trn2")
    assert good["passed"] and good["cases"][0]["agrees_with_emulator"] and good["cases"][0]["max_abs_vs_reference"] < 1e-6
    monkeypatch.setenv("FAKE_DEVICE_OFFSET", "0.5")
    bad = validate_hardware(f"{TINY}::double", target="trn2", bisect=False)  # the bisect has its own tests (test_bisect.py)
    case = bad["cases"][0]
    assert not bad["passed"] and not case["agrees_with_emulator"]
    assert case["max_abs_vs_reference"] == pytest.approx(0.5, abs=1e-5) and case["max_abs_vs_emulator"] == pytest.approx(0.5, abs=1e-5)
    assert "bisect" not in bad  # bisect=False: no probe runs


def test_a_compiler_failure_is_a_named_error_quoting_the_tool(fake_path, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_COMPILE_FAIL", "1")
    with pytest.raises(NkiError) as e:
        profile_hardware(f"{TINY}::double", out=tmp_path / "p")
    assert e.value.name == "err_hardware_run_failed" and "NCC_EVRF007" in e.value.message and "neuronx-cc exited with 70" in e.value.message
    assert not (tmp_path / "p").exists()


def test_validate_hardware_cli_exit_code(fake_path, tmp_path):
    import os

    env = {**os.environ, "NKIDEV_CONFIG": str(tmp_path / "none.toml")}
    proc = subprocess.run(
        [sys.executable, "-m", "nkidev", "validate", "--hardware", f"{TINY}::double", "--target", "trn2", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cases"][0]["passed"] is True


@pytest.mark.hw
def test_profile_on_a_real_device(tmp_path):
    """Runs only on a Trainium instance with the Neuron SDK (see conftest: skipped elsewhere)."""
    assert shutil.which("neuronx-cc")
    result = profile_hardware(f"{TINY}::double", out=tmp_path / "hw")
    assert result["total_time_ns"] > 0 and analyze(result["profile_dir"]).total_time_ns > 0
    assert validate_hardware(f"{TINY}::double")["passed"]


KEYWORDS = Path(__file__).parents[1] / "validate" / "tasks" / "keywords.py"


def test_the_device_runs_each_case_with_its_keywords(fake_path):
    """Cases 1 and 2 set eps, scale and a weight array by keyword: the device gets them through inputs.npz (were
    they dropped, its outputs would miss the reference on those cases)."""
    result = validate_hardware(f"{KEYWORDS}::scaled_rmsnorm", target="trn2", bisect=False)
    assert result["passed"] and [c["agrees_with_emulator"] for c in result["cases"]] == [True, True, True]
    assert all(c["max_abs_vs_reference"] < 1e-4 for c in result["cases"])


def test_inputs_npz_keeps_keyword_names_values_and_dtypes(tmp_path):
    import ml_dtypes
    import numpy as np

    from nkidev.case import Case
    from nkidev.device import arrays

    w = np.linspace(-1, 1, 6).astype(ml_dtypes.bfloat16)
    arrays.save_case(tmp_path / "in.npz", Case(np.arange(4, dtype=np.int32), 0.5, eps=1e-6, w__t=w, act="gelu"))
    back = arrays.load_case(tmp_path / "in.npz")
    assert back.args[0].tolist() == [0, 1, 2, 3] and back.args[1] == 0.5
    assert list(back.kwargs) == ["eps", "w__t", "act"] and back.kwargs["eps"] == 1e-6 and back.kwargs["act"] == "gelu"
    assert back.kwargs["w__t"].dtype == ml_dtypes.bfloat16 and back.kwargs["w__t"].tobytes() == w.tobytes()
    assert arrays.load(tmp_path / "in.npz", "arg")[1] == 0.5  # a positional-only reader still finds arg0, arg1
