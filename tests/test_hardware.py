"""Hardware generations are data: strict TOML files, aliases from the files, and a new generation is one file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nkidev.emulator.ops import OPS
from nkidev.errors import NkiUsageError
from nkidev.hardware import TARGET_NAMES, get_target, load_target_file, resolve_target_name, target_names

HARDWARE = Path(__file__).resolve().parents[1] / "src" / "nkidev" / "hardware"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_bundled_targets_and_aliases_come_from_the_files():
    assert TARGET_NAMES == ("trn1", "trn2", "trn3")
    assert [resolve_target_name(a) for a in ("gen2", "inf2", "GEN3", "trn3")] == ["trn1", "trn1", "trn2", "trn3"]
    for name in TARGET_NAMES:
        t = get_target(name)
        assert t.name == name and t.source.endswith(f"{name}.toml")


def test_features_name_real_instructions_and_operators():
    from nkidev.emulator.alu import ALU

    for name in TARGET_NAMES:
        f = get_target(name).features
        assert set(f.missing_instructions) <= set(OPS), f.missing_instructions
        assert set(f.missing_alu_ops) <= set(ALU)
    assert not get_target("trn1").has_instruction("dma_transpose") and get_target("trn2").has_instruction("dma_transpose")


def _edited(tmp_path: Path, old: str, new: str, name: str = "trn2") -> Path:
    text = (HARDWARE / f"{name}.toml").read_text()
    assert old in text
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_unknown_key_is_a_named_error_naming_file_and_key(tmp_path):
    path = _edited(tmp_path, "start_cycles = 150", "start_cylces = 150")
    with pytest.raises(NkiUsageError) as e:
        load_target_file(path)
    assert e.value.name == "err_bad_hardware_file"
    assert str(path) in e.value.message and "start_cylces" in e.value.message


def test_missing_key_and_wrong_type_are_named_errors(tmp_path):
    with pytest.raises(NkiUsageError, match=r"missing key \[dma\] fixed_cost_ns"):
        load_target_file(_edited(tmp_path, "fixed_cost_ns = 1300", "# gone"))
    with pytest.raises(NkiUsageError, match=r"\[features\] hwdge = 'yes' is not a bool"):
        load_target_file(_edited(tmp_path, "hwdge = true", 'hwdge = "yes"'))


TEST_GEN = """
name = "trn_test"
aliases = ["trn_test", "gen9"]
instance_type = "trn-test.1xlarge"
"""


def _synthetic_generation(directory: Path) -> Path:
    """A fourth generation: trn3's numbers with a bigger SBUF, a faster DMA and no dma_transpose."""
    text = (HARDWARE / "trn3.toml").read_text()
    head, _, body = text.partition("[sbuf]")
    lines = [ln for ln in head.splitlines() if not ln.startswith(("name", "aliases", "instance_type"))]
    body = body.replace("usable_bytes_per_partition = 245752", "usable_bytes_per_partition = 491512")
    body = body.replace("bytes_per_ns_per_engine = 33.0", "bytes_per_ns_per_engine = 66.0")
    body = body.replace("missing_instructions = []", 'missing_instructions = ["dma_transpose"]')
    path = directory / "trn_test.toml"
    path.write_text("\n".join(lines) + TEST_GEN + "[sbuf]" + body)
    return path


def test_a_new_generation_is_one_file(tmp_path, monkeypatch):
    _synthetic_generation(tmp_path)
    monkeypatch.setenv("NKIDEV_HARDWARE_PATH", str(tmp_path))
    assert target_names()[-1] == "trn_test" and resolve_target_name("gen9") == "trn_test"
    t = get_target("trn_test")
    assert t.sbuf.usable_bytes_per_partition == 491512 and not t.has_instruction("dma_transpose")
    assert TARGET_NAMES == ("trn1", "trn2", "trn3")  # the bundled set is unchanged


def test_a_new_generation_validates_and_profiles_end_to_end(tmp_path):
    _synthetic_generation(tmp_path)
    env = {**os.environ, "NKIDEV_HARDWARE_PATH": str(tmp_path)}
    spec = f"{EXAMPLES / 'matmul.py'}::matmul_kernel"

    def nkidev(*args):
        return subprocess.run([sys.executable, "-m", "nkidev", *args], capture_output=True, text=True, env=env, timeout=300)

    v = nkidev("validate", spec, "--target", "trn_test", "--seeds", "0", "--json")
    assert v.returncode == 0, v.stdout + v.stderr
    assert '"target": "trn_test"' in v.stdout
    p = nkidev("profile", spec, "--target", "gen9", "--out", str(tmp_path / "prof"), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    import json

    fast = json.loads(p.stdout)
    base = json.loads(nkidev("profile", spec, "--target", "trn3", "--out", str(tmp_path / "prof3"), "--json").stdout)
    assert fast["target"] == "trn_test" and 0 < fast["total_time_ns"] < base["total_time_ns"]  # the faster DMA shows


def test_a_hardware_file_share_above_one_is_a_named_error(tmp_path):
    with pytest.raises(NkiUsageError, match=r"\[dma\] transpose_efficiency = 1.9 must be a share in \(0, 1\]") as e:
        load_target_file(_edited(tmp_path, "transpose_efficiency = 0.9", "transpose_efficiency = 1.9"))
    assert e.value.name == "err_bad_hardware_file"
