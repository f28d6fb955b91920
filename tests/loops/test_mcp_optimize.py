"""The IDE agent drives an optimization over MCP: start (baseline + findings), submit candidates (judged against the
original task file), status; sessions live on disk under the server root, and paths stay confined to it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
from mcp.client import Client

from nkidev.mcp_server import build_server
from nkidev.sandbox.limits import Limits

HERE = Path(__file__).resolve().parent
REPLAY = HERE.parents[1] / "examples" / "replay" / "swiglu_naive"


def calls(root: Path, steps: list[tuple[str, dict]]) -> list[dict]:
    async def go():
        async with Client(build_server(root=root, limits=Limits(timeout_s=60))) as client:
            out = []
            for name, args in steps:
                if "session" in args and args["session"] is None:
                    args = {**args, "session": out[0]["session"]}
                result = await client.call_tool(name, args)
                out.append({"is_error": bool(result.is_error), **json.loads(result.content[0].text)})
            return out

    return anyio.run(go)


def test_agent_session_flow(tmp_path):
    shutil.copy(HERE / "data" / "swiglu_small.py", tmp_path / "swiglu_small.py")
    honest = (REPLAY / "06_honest_rewrite.py").read_text()
    start, cheat, good, status, outside = calls(
        tmp_path,
        [
            ("optimize_start", {"kernel": "swiglu_small.py::swiglu_naive", "target_speedup": 1.05, "seeds": 0}),
            ("optimize_submit", {"session": None, "source": (REPLAY / "03_input_writer.py").read_text()}),
            ("optimize_submit", {"session": None, "source": honest}),
            ("optimize_status", {"session": None}),
            ("optimize_start", {"kernel": "../elsewhere.py::k"}),
        ],
    )
    assert not start["is_error"] and start["baseline"]["total_time_ns"] > 0
    assert "redundant_load" in {f["kind"] for f in start["findings"]}
    session_dir = tmp_path / "nkidev-optimize" / start["session"]
    assert (session_dir / "state.json").is_file()

    assert cheat["accepted"] is False and "cheat_input_modified" in cheat["verdicts"] and cheat["target_met"] is False
    assert good["accepted"] is True and good["speedup"] > 1.05 and good["target_met"] is True
    assert "redundant_load" not in {f["kind"] for f in good["findings"]}

    assert status["stopped"] == "target_met" and status["best"]["index"] == 2
    assert [(h["index"], h["accepted"]) for h in status["iterations"]] == [(1, False), (2, True)]
    assert (session_dir / "best.py").read_text() == honest and (session_dir / "report.html").is_file()
    assert outside["is_error"] and outside["error"]["name"] == "err_outside_root"


def test_unknown_session_is_a_named_error(tmp_path):
    (missing, bad) = calls(tmp_path, [("optimize_status", {"session": "nope"}), ("optimize_submit", {"session": "../x", "source": "x"})])
    assert missing["is_error"] and missing["error"]["name"] == "err_bad_session"
    assert bad["is_error"] and bad["error"]["name"] == "err_bad_session"
