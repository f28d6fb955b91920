"""Optimization driven by an IDE agent (the MCP tools optimize_start / optimize_submit / optimize_status).

The agent writes candidates; nkidev judges them exactly as `nkidev optimize` does (the same `Session` on disk,
the same gate against the ORIGINAL task file, the same report), so no API key is needed inside nkidev. A
session is a directory `ROOT/nkidev-optimize/<id>/` with the layout of an `--out` run; its id is the
directory's name. Once a submission meets the target the session says `stopped: "target_met"`; later
submissions are still judged and reported.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from nkidev.errors import NkiUsageError
from nkidev.executors import LocalExecutor
from nkidev.loops.report import write_reports
from nkidev.loops.session import Session
from nkidev.loops.tune import read_task_source
from nkidev.sandbox.limits import Limits

SESSIONS_DIR = "nkidev-optimize"
PROVIDER = "agent (MCP optimize_submit)"
_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def _lock(out: Path) -> threading.Lock:
    """One submission at a time per session (they share state.json); sessions run concurrently."""
    with _locks_lock:
        return _locks.setdefault(str(out), threading.Lock())


def session_dir(root: Path, session: str) -> Path:
    if not _ID.match(session or "") or session in (".", ".."):
        raise NkiUsageError("err_bad_session", f"session id {session!r}", "pass the id optimize_start returned")
    return root / SESSIONS_DIR / session


def start(spec: str, root: Path, limits: Limits, settings: dict) -> dict:
    """Create a session, gate and profile the original kernel; returns its id, baseline and findings."""
    from nkidev.profile.api import default_out

    kernel = read_task_source(spec)[2]
    out = default_out(kernel, root / SESSIONS_DIR)
    session = Session.create(spec, out, PROVIDER, {**settings, "timeout_s": limits.timeout_s, "memory_bytes": limits.memory_bytes})
    with _lock(out):
        baseline = session.evaluate_baseline(LocalExecutor(1))
        write_reports(session, session.result())
    return {
        "session": out.name,
        "out": str(out),
        "kernel": session.state["kernel"],
        "target": session.state["target"],
        "baseline": {"total_time_ns": baseline["total_time_ns"], "peak_percent": baseline["peak_percent"]},
        "bottleneck_engine": baseline["bottleneck_engine"],
        "findings": baseline["findings"],
        "settings": {k: v for k, v in session.settings.items() if v is not None},
    }


def submit(root: Path, session: str, source: str) -> dict:
    """Judge one candidate module (source text) in the session; returns the verdict and whether the target is met."""
    if not isinstance(source, str) or not source.strip():
        raise NkiUsageError("err_invalid_argument", "empty candidate source", "pass the complete Python module defining the kernel")
    out = session_dir(root, session)
    with _lock(out):
        s = Session.open(out)
        s.add([source])
        record = s.judge(LocalExecutor(1))[0]
        write_reports(s, s.result())
        best = s.state["best"]
        return {
            "index": record["index"],
            "accepted": record["accepted"],
            "verdicts": record["verdicts"],
            "error": record["error"],
            "total_time_ns": record["total_time_ns"],
            "speedup": record["speedup"],
            "reason": record["reason"],
            "findings": record["findings"] if record["accepted"] else best["findings"],
            "best": {"index": best["index"], "total_time_ns": best["total_time_ns"], "speedup": best["speedup"]},
            "target_met": s.target_met(),
            "budget_left": s.budget_left(),
        }


def status(root: Path, session: str) -> dict:
    """Best so far, the history with the reason for each verdict, and `stopped`."""
    s = Session.open(session_dir(root, session))
    result = s.result()
    stopped = "target_met" if s.target_met() else (None if s.budget_left() else "budget_exhausted")
    history = [{k: it[k] for k in ("index", "accepted", "verdicts", "total_time_ns", "speedup", "reason")} for it in s.state["iterations"]]
    return {**result, "session": s.out.name, "iterations": history, "stopped": stopped, "findings": s.state["best"]["findings"]}
