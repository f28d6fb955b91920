"""Bisecting a device/emulator mismatch to the first differing instruction.

The "device" computes one instruction wrong (tests/device/wrong_device.py: nkidev's emulator with the K-th
instruction of the kernel's own lines perturbed), so every test knows the answer the bisect must give.
Most tests call the library with that device in-process (fast); one runs the CLI over the fake SDK tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nkidev.case import Case
from nkidev.device import bisect, probes
from nkidev.taskfile import load_task
from nkidev.validate.cli import bisect_lines
from tests.device import wrong_device

CHAIN = Path(__file__).with_name("chain.py").resolve()
TINY = Path(__file__).with_name("tiny.py").resolve()
TOL = {"atol": 1e-4, "rtol": 1e-4}
# instruction index (program order) -> (line, execution, opcode) of tests/device/chain.py
EXPECTED = {3: (19, 1, "tensor_scalar"), 7: (25, 0, "memset"), 8: (27, 0, "nc_matmul"), 11: (31, 0, "dma_copy")}


def _case():
    return load_task(CHAIN).calls()[0]


def _bisect(k: int, out: Path, path: Path = CHAIN, kernel: str = "chain", narrow: bool = True, **kw) -> tuple[dict, object]:
    case = load_task(path).calls()[0]
    device = wrong_device.device(k, kernel, case)
    outputs = device(path) if narrow else None  # the uninstrumented run validate --hardware made
    device.runs = 0
    result = bisect.bisect_case(path, kernel, case, "trn2", TOL, device, out, lambda e: None, device_outputs=outputs, **kw)
    return result, device


def test_a_probe_variant_keeps_every_line_and_returns_the_tile(tmp_path):
    source = CHAIN.read_text()
    by_line = {s.line: s for s in probes.sites(source)}
    assert by_line[19].dst == "a" and by_line[27].dst == "p" and by_line[31].dst == "out"
    original = source.splitlines()
    for line, hit, expected in (
        (19, 1, lambda x, y: x * np.float32(1.5) * np.float32(1.5)),  # after the loop's second execution
        (27, 0, lambda x, y: np.zeros((128, 128), np.float32)),  # a PSUM tile: copied through SBUF
        (31, 0, lambda x, y: np.exp(x * np.float32(1.5**3)) + y),  # an HBM destination: HBM to HBM
    ):
        text = probes.probe_variant(source, "chain", by_line[line], hit)
        lines = text.splitlines()
        assert probes.marker_line(text) > len(original)
        assert lines[31] == f"    return {probes.RETURN}((out))"  # the kernel's return also gives the probe
        assert all(lines[i].startswith(original[i]) for i in range(len(original)) if i != 31), "a line moved"
        assert lines[line - 1].endswith(f"; {probes.PROBE}({by_line[line].id}, {by_line[line].dst})")
        variant = tmp_path / f"v{line}.py"
        variant.write_text(text)
        outputs = wrong_device.device(-1, "chain", _case())(variant)
        assert len(outputs) == 2
        np.testing.assert_allclose(outputs[1], expected(*_case().args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k", sorted(EXPECTED))
def test_bisect_finds_exactly_the_wrong_instruction(k, tmp_path):
    result, device = _bisect(k, tmp_path / "out")
    line, execution, opcode = EXPECTED[k]
    assert result["status"] == "found", result
    first = result["first_difference"]
    assert (first["line"], first["execution"], first["instruction"]["opcode"], first["instruction"]["id"]) == (line, execution, opcode, k)
    assert first["location"] == f"{CHAIN}:{line}" and first["source"] == CHAIN.read_text().splitlines()[line - 1].strip()
    assert result["mode"] == "dependencies" and result["probe_points"] == 12
    assert device.runs == result["device_runs"] <= result["max_runs"] == 7  # ceil(log2(13)) + 3
    assert first["max_abs_error"] == pytest.approx(1.0, abs=1e-5) and first["differing_elements"] == first["elements"] == 128 * 128
    dev, emu = np.load(first["device_file"]), np.load(first["emulator_file"])
    idx = tuple(first["first_differing_index"])
    assert dev[idx] - emu[idx] == pytest.approx(1.0, abs=1e-5) and first["device_value"] == pytest.approx(float(dev[idx]))
    assert Path(first["probe_kernel"]).read_text().count(probes.MARKER) == 1
    assert all(Path(p["device_file"]).parent == tmp_path / "out" for p in result["probes"])


def test_the_differing_output_elements_narrow_the_candidates(tmp_path):
    """Only the row tile that differs is searched: its load, its multiply and its store (3 of 6 points)."""
    two = Path(__file__).with_name("two_tiles.py").resolve()
    narrowed, device = _bisect(4, tmp_path / "a", two, "two_tiles")
    everything, _ = _bisect(4, tmp_path / "b", two, "two_tiles", narrow=False)
    for result in (narrowed, everything):
        first = result["first_difference"]
        assert result["status"] == "found" and (first["line"], first["execution"], first["instruction"]["id"]) == (15, 1, 4)
    assert narrowed["candidates"] == 3 and everything["candidates"] == 6 and device.runs == narrowed["device_runs"] <= 2


def test_program_order_search_when_there_are_too_many_points(tmp_path, monkeypatch):
    monkeypatch.setattr(bisect, "MAX_DAG_POINTS", 0)
    result, _ = _bisect(3, tmp_path / "out")
    assert result["mode"] == "program order" and result["status"] == "found"
    assert (result["first_difference"]["line"], result["first_difference"]["execution"]) == (19, 1)


def test_a_spent_probe_budget_is_inconclusive_and_says_so(tmp_path):
    result, device = _bisect(3, tmp_path / "out", max_runs=1)
    assert result["status"] == "inconclusive" and device.runs == result["device_runs"] == 1
    assert "--max-probes" in result["reason"] and result["remaining_candidates"] > 1


def test_a_device_that_only_fails_uninstrumented_is_inconclusive_with_a_note(tmp_path):
    """All probes match and the probed runs' outputs match too: the instrumentation hid the difference."""
    case = _case()
    correct = wrong_device.device(-1, "chain", case)
    result = bisect.bisect_case(CHAIN, "chain", case, "trn2", TOL, correct, tmp_path / "out", lambda e: None)
    assert result["status"] == "inconclusive" and result["first_difference"] is None
    assert "every probed intermediate" in result["reason"] and "changed what the device computes" in result["note"]
    assert all(not p["differs"] and p["outputs_differ"] is False for p in result["probes"])


def test_sites_take_one_destination_per_statement():
    source = "def k(x, y):\n    a, b = f(x)\n    c = g(x)\n    nisa.tensor_copy(c, y)\n    nisa.iota(dst=c[0:1], expr=1)\n    h(x)\n"
    assert [(s.line, s.dst) for s in probes.sites(source)] == [(3, "c"), (4, "c"), (5, "c[0:1]")]


def test_a_legacy_kernel_is_skipped_with_the_reason(tmp_path):
    legacy = tmp_path / "legacy.py"
    legacy.write_text("import neuronxcc.nki as nki\n\n@nki.jit\ndef k(x):\n    return x\n")
    result = bisect.bisect_case(legacy, "k", Case(), "trn2", TOL, lambda p: [], tmp_path / "out", lambda e: None)
    assert result["status"] == "skipped" and "neuronxcc" in result["reason"] and not (tmp_path / "out").exists()


def test_validate_hardware_bisects_over_the_fake_sdk_and_prints_json(fake_path, tmp_path):
    """The whole path: the CLI in a child, the fake neuronx-cc / neuron-explorer as subprocesses per device run."""
    env = {**os.environ, "NKIDEV_CONFIG": str(tmp_path / "none.toml"), "FAKE_DEVICE_WRONG": "1"}
    out = tmp_path / "bisect"
    proc = subprocess.run(
        [sys.executable, "-m", "nkidev", "validate", "--hardware", f"{TINY}::double", "--target", "trn2", "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert not result["cases"][0]["agrees_with_emulator"]
    found = result["bisect"]
    assert found["status"] == "found" and found["case"] == 0 and found["device_runs"] == 2
    first = found["first_difference"]
    assert (first["line"], first["execution"], first["instruction"]["opcode"]) == (14, 0, "tensor_scalar")
    assert Path(first["device_file"]).parent == out / "case0" and Path(first["device_file"]).is_file()


def test_the_text_report_names_instruction_line_values_and_dumps(tmp_path):
    result, _ = _bisect(3, tmp_path / "out")
    text = "\n".join(bisect_lines({"case": 0, **result}))
    first = result["first_difference"]
    assert f"first differing instruction: tensor_scalar (#3, vector) at {CHAIN}:19, execution 1" in text
    assert "nisa.tensor_scalar(dst=a, data=a, op0=nl.multiply, operand0=1.5)" in text
    assert "max abs error 1," in text and "16384/16384 elements differ; first at [0, 0]" in text
    assert first["device_file"] in text and first["emulator_file"] in text


def test_bisect_options_without_hardware_are_a_named_error():
    from typer.testing import CliRunner

    from nkidev.cli import app

    r = CliRunner().invoke(app, ["validate", f"{TINY}::double", "--max-probes", "2", "--json"])
    assert r.exit_code == 2 and json.loads(r.output)["error"]["name"] == "err_invalid_argument"
