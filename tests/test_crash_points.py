"""Crash-point injection: a process killed (os._exit) at the k-th step of an install, an uninstall or a profile
replace loses nothing, and the next run recovers (rolls the install back, puts the newest complete profile in
place, cleans the leftovers). Each crash runs in its own subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nkidev.agents.installer import install, uninstall

CRASH = textwrap.dedent(
    """
    import os, sys, json
    from nkidev import atomic
    at, n = sys.argv[1], [0]  # the k-th crash point, or the first one with this label
    def hook(label):
        n[0] += 1
        if (at.isdigit() and n[0] == int(at)) or label == at:
            os._exit(17)
    atomic.crash_hook = hook
    exec(sys.argv[2])
    print(json.dumps({"steps": n[0]}))
    """
)


def crash_at(k: int | str, code: str, cwd: Path) -> int:
    """Run `code` in a subprocess that dies at its k-th crash point (or the one labelled k); 17 = crashed."""
    done = subprocess.run([sys.executable, "-c", CRASH, str(k), code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 17), done.stderr
    return done.returncode


def edited_install(base: Path) -> Path:
    install("claude", base=base)
    skill = base / ".claude/skills/nki-writing/SKILL.md"
    skill.write_text(skill.read_text() + "\nmy notes\n")
    config = json.loads((base / ".mcp.json").read_text())
    config["mcpServers"]["other"] = {"command": "other-server"}
    (base / ".mcp.json").write_text(json.dumps(config))
    return skill


def user_data_is_safe(base: Path) -> None:
    """The user's edit exists somewhere (in place or as a backup) and .mcp.json is whole, with their server."""
    copies = [base / ".claude/skills/nki-writing/SKILL.md", *base.glob(".claude/nkidev-backups/*/.claude/skills/nki-writing/SKILL.md")]
    assert any(p.is_file() and "my notes" in p.read_text() for p in copies)
    assert json.loads((base / ".mcp.json").read_text())["mcpServers"]["other"] == {"command": "other-server"}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_a_crash_during_a_forced_install_loses_nothing(tmp_path, k):
    skill = edited_install(tmp_path)
    crashed = crash_at(k, f"from nkidev.agents.installer import install; install('claude', base={str(tmp_path)!r}, force=True)", tmp_path)
    assert crashed == 17
    user_data_is_safe(tmp_path)
    result = install("claude", base=tmp_path, force=True)  # the next run rolls back the interrupted one, then installs
    assert result["recovered"] is (k > 2)  # from the 3rd step on, a journal was there to roll back
    assert not list(tmp_path.rglob("*.nkidev-tmp-*")) and not (tmp_path / ".claude/nkidev-install.journal.json").exists()
    assert "my notes" not in skill.read_text()
    user_data_is_safe(tmp_path)
    uninstall("claude", base=tmp_path)  # the manifest is whole: uninstall still works
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"other": {"command": "other-server"}}}


@pytest.mark.parametrize("k", [2, 4, 5, 8, 29, 30])
def test_a_crash_during_a_forced_uninstall_is_rolled_back(tmp_path, k):
    edited_install(tmp_path)
    code = f"from nkidev.agents.installer import uninstall; uninstall('claude', base={str(tmp_path)!r}, force=True)"
    assert crash_at(k, code, tmp_path) == 17
    user_data_is_safe(tmp_path)
    result = uninstall("claude", base=tmp_path, force=True)
    assert result["recovered"] is (k > 3)  # from the 4th step on, a journal was there to roll back
    assert sorted(p.name for p in tmp_path.iterdir()) == [".claude", ".mcp.json"]
    assert [p.name for p in (tmp_path / ".claude").iterdir()] == ["nkidev-backups"]  # the user's edits are kept
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"other": {"command": "other-server"}}}
    assert not list(tmp_path.rglob("*.nkidev-tmp-*"))


PROFILE = """
from nkidev.profile.api import profile_task
profile_task({spec!r}, out={out!r}, force=True, compute=False)
"""


@pytest.mark.parametrize("k", ["table Instruction", "table Summary", "complete", "old moved aside", "new in place"])
def test_a_crash_during_a_profile_replace_keeps_a_complete_profile(tmp_path, k):
    from nkidev.profile.api import profile_task
    from nkidev.profile.writer import MARKER_FILE, recover

    spec = f"{Path(__file__).parent / 'profile' / 'kernels.py'}::scale_rows"
    out = tmp_path / "p"
    profile_task(spec, out=out, compute=False)
    first = (out / MARKER_FILE).read_text()
    assert crash_at(k, PROFILE.format(spec=spec, out=str(out)), tmp_path) == 17
    recover(out)  # what the next write does first
    assert (out / MARKER_FILE).is_file() and (out / "Instruction.parquet").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["p"]  # leftovers cleaned
    profile_task(spec, out=out, force=True, compute=False)
    assert (out / MARKER_FILE).read_text() != first and [p.name for p in tmp_path.iterdir()] == ["p"]
