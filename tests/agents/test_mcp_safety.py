"""The MCP server is confined to its workspace root (symlinks resolved), never deletes a user's directory,
says plainly which tools run the task file's code, and a hung tool call neither blocks other calls nor
outlives its time limit (a real stdio server subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from nkidev.mcp_server import build_server

from .helpers import EXAMPLES

TASKS = Path(__file__).parents[1] / "sandbox" / "tasks"


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(EXAMPLES / "softmax.py", root / "softmax.py")
    (tmp_path / "outside.py").write_text("import os\nos.system('touch pwned')\n")
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    (root / "linkdir").symlink_to(tmp_path)
    return root


def call_all(root: Path, calls: list[tuple[str, dict]]):
    async def go():
        async with Client(build_server(root=root)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def error(result) -> dict:
    assert result.is_error, result.content[0].text
    return json.loads(result.content[0].text)["error"]


@pytest.mark.parametrize(
    "tool,args",
    [
        ("validate", {"kernel": "../outside.py::k"}),
        ("validate", {"kernel": "{tmp}/outside.py"}),
        ("validate", {"kernel": "link.py"}),  # a symlink inside the root that points out of it
        ("validate", {"kernel": "linkdir/outside.py"}),
        ("profile", {"kernel": "softmax.py::softmax_kernel", "out": "../p"}),
        ("profile", {"kernel": "softmax.py::softmax_kernel", "out": "linkdir/p", "force": True}),
        ("analyze", {"profile_dir": "/"}),
        ("query", {"profile_dir": "..", "sql": "SELECT 1"}),
        ("compare", {"before": "../outside.py::k", "after": "softmax.py::softmax_kernel"}),
        ("compare", {"before": "softmax.py::softmax_kernel", "after": "linkdir"}),
    ],
)
def test_paths_outside_the_root_are_refused(workspace, tool, args):
    args = {k: v.format(tmp=workspace.parent) if isinstance(v, str) else v for k, v in args.items()}
    (result,) = call_all(workspace, [(tool, args)])
    assert error(result)["name"] == "err_outside_root"
    assert not (workspace / "pwned").exists() and not (workspace.parent / "pwned").exists()
    assert not (workspace.parent / "p").exists()


def test_compare_of_two_specs_inside_the_root(workspace):
    (result,) = call_all(workspace, [("compare", {"before": "softmax.py::softmax_kernel", "after": "softmax.py::softmax_kernel"})])
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert data["time"]["speedup"] == 1.0 and data["a"]["kind"] == "spec" and data["time"]["a_ns"] > 0


def test_profile_force_never_wipes_a_users_directory(workspace):
    mine = workspace / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("mine")
    forced, default = call_all(
        workspace,
        [("profile", {"kernel": "softmax.py::softmax_kernel", "out": "notes", "force": True}), ("profile", {"kernel": "softmax.py"})],
    )
    assert error(forced)["name"] == "err_output_exists" and (mine / "todo.txt").read_text() == "mine"
    assert not default.is_error, default.content[0].text
    written = Path(default.structured_content["profile_dir"])
    assert written.is_relative_to(workspace / "nkidev-profiles") and (written / "Instruction.parquet").is_file()


def test_tool_descriptions_say_which_tools_run_the_task_files_code():
    async def go():
        async with Client(build_server()) as client:
            return {t.name: t.description for t in (await client.list_tools()).tools}

    tools = anyio.run(go)
    for name in ("validate", "profile", "compare"):
        assert "EXECUTES THE TASK FILE'S PYTHON CODE" in tools[name]
    assert all("EXECUTES" not in tools[n] for n in ("analyze", "query", "docs_search", "docs_show", "explain"))


def test_a_hung_tool_neither_blocks_others_nor_outlives_its_limit(tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(TASKS, root)
    server = StdioServerParameters(command=sys.executable, args=["-m", "nkidev", "mcp", "--root", str(root), "--timeout", "8"])
    times: dict[str, float] = {}
    results: dict[str, object] = {}

    async def go():
        async with Client(server) as client:
            await client.call_tool("explain", {"name": "err_timeout"})  # the docs index is built once, before the race
            start = time.monotonic()

            async def hung():
                results["hung"] = await client.call_tool("validate", {"kernel": "endless.py", "seeds": 0})
                times["hung"] = time.monotonic() - start

            async def quick():
                await anyio.sleep(1.0)  # the endless kernel is running by now
                results["quick"] = await client.call_tool("explain", {"name": "err_timeout"})
                times["quick"] = time.monotonic() - start

            async with anyio.create_task_group() as group:
                group.start_soon(hung)
                group.start_soon(quick)

    anyio.run(go)
    assert not results["quick"].is_error and times["quick"] < times["hung"] - 2  # answered while the hung call ran
    assert error(results["hung"])["name"] == "err_timeout" and 8 <= times["hung"] < 60


PID_THEN_HANG = """
import os
from pathlib import Path

import numpy as np
import nki
import nki.language as nl


def reference(x):
    return x


def cases():
    return [(np.zeros((128, 4), np.float32),), (np.ones((128, 4), np.float32),)]


@nki.jit
def hang_kernel(x):
    Path(f"pid-{os.getpid()}").write_text("")
    while True:
        pass
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_cancelled_validate_with_workers_kills_every_worker(tmp_path):
    from nkidev.mcp_server import Tools, Workspace
    from nkidev.sandbox import Limits

    (tmp_path / "hang.py").write_text(PID_THEN_HANG)
    tools = Tools(Workspace(tmp_path), Limits(timeout_s=300))
    pids: list[int] = []

    async def go():
        with anyio.move_on_after(60) as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: tools.validate(kernel="hang.py::hang_kernel", seeds=0, workers=2))
                while len(list(tmp_path.glob("pid-*"))) < 2:  # both workers are inside the kernel
                    await anyio.sleep(0.1)
                pids.extend(int(p.name[4:]) for p in tmp_path.glob("pid-*"))
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught, "the workers never reached the kernel"

    anyio.run(go)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)
