"""`nkidev install` / `uninstall`: the expected tree per client, idempotence, exact removal, merged MCP configs,
and refusing to overwrite a user's edits."""

from __future__ import annotations

import json

import pytest

from nkidev import exitcodes
from nkidev.agents.bundle import agents, skill_files, skill_names
from nkidev.agents.clients import CLIENTS, mcp_entry
from nkidev.agents.installer import install, uninstall
from nkidev.errors import NkiUsageError

from .helpers import run_cli, run_json, snapshot

MCP_CONFIG = {"claude": ".mcp.json", "kiro": ".kiro/settings/mcp.json", "cursor": ".cursor/mcp.json"}


def _expected_files(client: str) -> set[str]:
    c = CLIENTS[client]
    files = {f"{c.skills_dir}/{s}/{rel}" for s in skill_names() for rel, _ in skill_files(s)}
    files |= {f"{c.agents_dir}/{a.name}{c.agent_suffix}" for a in agents()}
    return files | {MCP_CONFIG[client], c.manifest}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_install_twice_then_uninstall(tmp_path, client):
    (tmp_path / "kernel.py").write_text("# the user's project\n")
    before = snapshot(tmp_path)

    first = install(client, base=tmp_path)
    assert first["changed"] and not first["conflicts"]
    files = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert files == _expected_files(client) | {"kernel.py"}
    config = json.loads((tmp_path / MCP_CONFIG[client]).read_text())
    assert config == {"mcpServers": {"nkidev": mcp_entry()}}
    for skill in skill_names():
        assert (tmp_path / CLIENTS[client].skills_dir / skill / "SKILL.md").is_file()

    installed = snapshot(tmp_path)
    second = install(client, base=tmp_path)
    assert not second["changed"] and set(second["summary"]) == {"unchanged"}
    assert snapshot(tmp_path) == installed

    removed = uninstall(client, base=tmp_path)
    assert removed["changed"] and not removed["conflicts"]
    assert snapshot(tmp_path) == before
    with pytest.raises(NkiUsageError) as e:  # nothing left to remove: no manifest is a named error, not a silent success
        uninstall(client, base=tmp_path)
    assert e.value.name == "err_not_installed" and snapshot(tmp_path) == before


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_mcp_config_is_merged_and_restored(tmp_path, client):
    path = tmp_path / MCP_CONFIG[client]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = '{"mcpServers": {"other": {"command": "other-server"}}, "keep": 1}'  # the user's formatting
    path.write_text(original)
    install(client, base=tmp_path)
    merged = json.loads(path.read_text())
    assert merged["mcpServers"] == {"other": {"command": "other-server"}, "nkidev": mcp_entry()}
    assert merged["keep"] == 1
    uninstall(client, base=tmp_path)
    assert path.read_text() == original  # untouched since install: the exact bytes come back


def test_uninstall_keeps_servers_added_after_install(tmp_path):
    install("claude", base=tmp_path)
    path = tmp_path / ".mcp.json"
    config = json.loads(path.read_text())
    config["mcpServers"]["later"] = {"command": "later-server"}
    path.write_text(json.dumps(config))
    uninstall("claude", base=tmp_path)
    assert json.loads(path.read_text()) == {"mcpServers": {"later": {"command": "later-server"}}}


def test_a_user_edit_is_never_overwritten_without_force(tmp_path):
    install("claude", base=tmp_path)
    edited = tmp_path / ".claude/skills/nki-writing/SKILL.md"
    edited.write_text(edited.read_text() + "\nmy notes\n")
    before = snapshot(tmp_path)
    with pytest.raises(NkiUsageError) as e:
        install("claude", base=tmp_path)
    assert e.value.name == "err_install_conflict" and ".claude/skills/nki-writing/SKILL.md" in e.value.message
    assert snapshot(tmp_path) == before  # nothing was changed

    with pytest.raises(NkiUsageError) as e:
        uninstall("claude", base=tmp_path)
    assert e.value.name == "err_install_conflict"
    assert install("claude", base=tmp_path, dry_run=True)["conflicts"] == [".claude/skills/nki-writing/SKILL.md"]

    result = install("claude", base=tmp_path, force=True)
    assert {"path": ".claude/skills/nki-writing/SKILL.md", "kind": "skill", "action": "overwrite"} in result["actions"]
    assert "my notes" not in edited.read_text()


def test_a_preexisting_user_file_comes_back_after_a_forced_install(tmp_path):
    mine = tmp_path / ".claude/agents/nki-agent.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own agent\n")
    with pytest.raises(NkiUsageError):
        install("claude", base=tmp_path)
    install("claude", base=tmp_path, force=True)
    assert mine.read_text() != "my own agent\n"
    uninstall("claude", base=tmp_path)
    assert mine.read_text() == "my own agent\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == [".claude", "agents", "nki-agent.md"]


def test_foreign_mcp_entry_with_our_name_is_a_conflict(tmp_path):
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"nkidev": {"command": "/somewhere/else"}}}')
    with pytest.raises(NkiUsageError) as e:
        install("claude", base=tmp_path)
    assert ".mcp.json" in e.value.message
    install("claude", base=tmp_path, force=True)
    uninstall("claude", base=tmp_path)
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"nkidev": {"command": "/somewhere/else"}}}


def test_dry_run_changes_nothing(tmp_path):
    result = install("kiro", base=tmp_path, dry_run=True)
    assert result["dry_run"] and result["summary"]["create"] == len(_expected_files("kiro")) - 1
    assert list(tmp_path.iterdir()) == []


def test_user_scope_installs_into_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    result = install("kiro", scope="user")
    assert result["base"] == str(tmp_path)
    spec = json.loads((tmp_path / ".kiro/agents/nki-agent.json").read_text())
    assert spec["resources"][0] == "skill://~/.kiro/skills/nki-writing/SKILL.md"
    assert json.loads((tmp_path / ".kiro/settings/mcp.json").read_text())["mcpServers"]["nkidev"] == mcp_entry()
    uninstall("kiro", scope="user")
    assert list(tmp_path.iterdir()) == []


def test_claude_user_scope_registers_in_claude_json(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".claude.json").write_text('{"numStartups": 3}')
    install("claude", scope="user")
    assert json.loads((tmp_path / ".claude.json").read_text()) == {"numStartups": 3, "mcpServers": {"nkidev": mcp_entry()}}
    uninstall("claude", scope="user")
    assert (tmp_path / ".claude.json").read_text() == '{"numStartups": 3}'


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda base: install("vscode", base=base), "err_unknown_client"),
        (lambda base: install("claude", scope="global", base=base), "err_invalid_argument"),
        (lambda base: install("claude", base=base / "missing"), "err_not_writable"),
    ],
)
def test_bad_input_is_a_named_error(tmp_path, call, name):
    with pytest.raises(NkiUsageError) as e:
        call(tmp_path)
    assert e.value.name == name


def test_unwritable_location_is_reported_before_writing(tmp_path):
    (tmp_path / ".claude").write_text("a file where a directory should be")
    with pytest.raises(NkiUsageError) as e:
        install("claude", base=tmp_path)
    assert e.value.name == "err_not_writable" and ".claude" in e.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == [".claude"]


def test_invalid_client_config_is_not_touched(tmp_path):
    (tmp_path / ".mcp.json").write_text("{not json")
    with pytest.raises(NkiUsageError) as e:
        install("claude", base=tmp_path)
    assert e.value.name == "err_bad_client_config"
    assert (tmp_path / ".mcp.json").read_text() == "{not json" and not (tmp_path / ".claude").exists()


def test_cli_install_uninstall_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, result = run_json("install --target cursor --json")
    assert code == exitcodes.OK and result["target"] == "cursor" and result["changed"]
    assert (tmp_path / ".cursor/agents/nki-writer.md").is_file()
    code, result = run_json("install --target cursor --dry-run --json")
    assert code == exitcodes.OK and not result["changed"]
    code, result = run_json("uninstall --target cursor --json")
    assert code == exitcodes.OK and list(tmp_path.iterdir()) == []


def test_cli_reports_bad_input_without_traceback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("install --target emacs")
    assert code == exitcodes.USAGE and "err_unknown_client" in err and "Traceback" not in out + err
    install("claude", base=tmp_path)
    (tmp_path / ".claude/agents/nki-writer.md").write_text("changed")
    code, payload = run_json("install --target claude --json")
    assert code == exitcodes.USAGE and payload["error"]["name"] == "err_install_conflict"
    code, payload = run_json("install --target claude --dry-run --json")
    assert code == exitcodes.FAILED and payload["conflicts"] == [".claude/agents/nki-writer.md"]


def test_mcp_entry_is_portable_and_a_missing_launcher_is_named(tmp_path, monkeypatch):
    import os

    from nkidev.agents.clients import launcher_problem, mcp_entry

    entry = mcp_entry()
    assert not os.path.isabs(entry["command"]) and entry["command"] in ("nkidev", "python3", "python")
    assert entry["args"][-1] == "mcp"
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: nkidev would not start from the client
    entry = mcp_entry()
    assert entry == {"command": "nkidev", "args": ["mcp"]}
    assert "not on PATH" in launcher_problem(entry)
