"""Every nkidev command that a skill, an agent or a guide tells an agent to run exists and works.

Commands are extracted from ```bash blocks and `inline code` in the bundled Markdown, placeholders are
replaced by the bundled softmax example (and a profile of it), and each command runs in-process. SQL
recipes in ```sql blocks run against that profile. Commands whose backend has not landed are skipped
with a reason naming the backend.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import typer

from nkidev.agents.bundle import AGENTS_DIR, SKILLS_DIR
from nkidev.cli import app

from .helpers import EXAMPLES, REPO, backend_available, run_cli

GUIDES = REPO / "src" / "nkidev" / "docs" / "guides"
SOURCES = sorted([*SKILLS_DIR.rglob("*.md"), *AGENTS_DIR.glob("*.md"), *GUIDES.glob("*.md")])
BACKENDS = {
    "validate": "nkidev.validate.api",
    "profile": "nkidev.profile.api",
    "analyze": "nkidev.analysis.api",
    "query": "nkidev.analysis.api",
}
NEEDS_PROFILE = ("analyze", "query")
SPEC = "my_kernel.py::softmax_kernel"
BARE = re.compile(r"^nkidev (docs )?[a-z]+$")
SUBSTITUTIONS = (
    ("claude|kiro|cursor", "claude"),
    ("my_kernel.py::my_kernel", SPEC),
    ("FILE.py::KERNEL", SPEC),
    ("FILE::KERNEL", SPEC),
    ('"SQL"', '"SELECT total_time FROM Summary"'),
    ("WORDS", "psum bank"),
    ("TOPIC", "nc_matmul"),
    ("INSTRUCTION", "nc_matmul"),
    (" ID", " nc_matmul"),
    ("NAME", "err_psum_bank_overflow"),
    ("ERROR", "err_psum_bank_overflow"),
)


def _commands() -> dict[str, str]:
    """command text -> the file it first appears in."""
    found: dict[str, str] = {}
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        lines = [line.strip() for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, re.S) for line in block.splitlines()]
        # inline code that only names a command (`nkidev analyze`) is prose, not something to run
        lines += [c for c in re.findall(r"`(nkidev [^`]+)`", text) if not BARE.match(c)]
        for line in lines:
            if line.startswith("nkidev ") and line.split()[1] != "mcp":  # the server is tested in test_mcp.py
                found.setdefault(_substitute(line), path.relative_to(REPO).as_posix())
    return found


def _substitute(command: str) -> str:
    for placeholder, value in SUBSTITUTIONS:
        command = command.replace(placeholder, value)
    return command


def _sql_recipes() -> list[str]:
    queries = []
    for path in SOURCES:
        for block in re.findall(r"```sql\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            queries += [" ".join(q.split()) for q in re.split(r"\n(?=SELECT )", block.strip()) if q.strip()]
    return queries


COMMANDS = _commands()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    shutil.copy(EXAMPLES / "softmax.py", ws / "my_kernel.py")
    shutil.copytree(EXAMPLES, ws / "examples")
    (ws / "script.py").write_text("import nki.language as nl\nprint(nl.tile_size.pmax)\n")
    return ws


@pytest.fixture(scope="module")
def profile_dir(workspace) -> Path:
    if not backend_available("nkidev.profile.api"):
        pytest.skip("profiler backend nkidev.profile.api has not landed; analyze/query need a profile")
    from nkidev.profile.api import profile_task

    out = workspace / "profiles" / "shared"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workspace)
        profile_task(SPEC, out=str(out))
    return out


def _registered() -> set[str]:
    return set(typer.main.get_command(app).commands)


def test_skills_agents_and_guides_name_the_main_commands():
    verbs = {c.split()[1] for c in COMMANDS}
    assert {"validate", "profile", "analyze", "query", "docs", "explain", "install"} <= verbs


@pytest.mark.parametrize("command", sorted(COMMANDS), ids=lambda c: c[:80])
def test_command_runs(command, workspace, request, monkeypatch):
    verb = command.split()[1]
    module = BACKENDS.get(verb)
    if module and not backend_available(module):
        pytest.skip(f"backend {module} has not landed ({COMMANDS[command]})")
    if verb not in _registered():
        pytest.skip(f"`nkidev {verb}` is not registered yet ({COMMANDS[command]})")
    args = shlex.split(command)[1:]
    for i, arg in enumerate(args):
        if arg == "DIR" or arg.startswith("profiles/"):
            if i and args[i - 1] == "--out":
                args[i] = str(workspace / "profiles" / f"out{len(list(workspace.glob('profiles/out*')))}")
            else:
                args[i] = str(request.getfixturevalue("profile_dir"))
    if verb in NEEDS_PROFILE and not any("profiles" in a for a in args):
        args.insert(1, str(request.getfixturevalue("profile_dir")))
    monkeypatch.chdir(workspace)
    monkeypatch.setattr("sys.argv", ["nkidev"])
    code, out, err = run_cli(args)
    assert code == 0, f"`{command}` from {COMMANDS[command]} exited {code}:\n{out[-2000:]}\n{err[-2000:]}"


@pytest.mark.parametrize("sql", _sql_recipes(), ids=lambda q: q[:60])
def test_sql_recipes_run_on_an_nkidev_profile(sql, profile_dir):
    if not backend_available("nkidev.analysis.api"):
        pytest.skip("analysis backend nkidev.analysis.api has not landed")
    from nkidev.analysis.api import query

    assert isinstance(query(profile_dir, sql), list)


@pytest.mark.parametrize(
    "args,name",
    [
        (["validate", "no_such_file.py::kernel", "--json"], "err_bad_task_file"),
        (["validate", "my_kernel.py::no_such_kernel", "--json"], "err_kernel_not_found"),
        (["analyze", "no_such_profile", "--json"], "err_bad_profile"),
        (["explain", "err_no_such_error", "--json"], "err_unknown_topic"),
        (["install", "--target", "vscode", "--json"], "err_unknown_client"),
    ],
)
def test_a_failing_skill_command_says_what_to_do(args, name, workspace, monkeypatch):
    verb = args[0]
    if verb in BACKENDS and not backend_available(BACKENDS[verb]):
        pytest.skip(f"backend {BACKENDS[verb]} has not landed")
    monkeypatch.chdir(workspace)
    code, out, err = run_cli(args)
    payload = json.loads(out)
    assert code == 2 and payload["error"]["name"] == name and payload["error"]["fix"]
    assert "Traceback" not in out + err
