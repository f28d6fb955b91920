"""A sandbox child never outlives its time limit by more than the grace period, and never outlives its parent:
an endless kernel is stopped (with what it started) even when the nkidev process that started it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from nkidev import sandbox
from nkidev.sandbox import Limits
from nkidev.sandbox.child import TIMEOUT_GRACE_S

ROOT = Path(__file__).parents[2]
PARENT = """
import os, sys, time
from nkidev import sandbox
from nkidev.sandbox import Limits
job = sandbox.start("tests.sandbox.funcs:spins", {"pidfile": sys.argv[1]}, Limits(timeout_s=600))
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read().endswith("\\n"):
    time.sleep(0.05)
os._exit(0)  # dies without stopping its child, as a killed or crashed parent would
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _wait_pids(pidfile: Path, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while not (pidfile.exists() and pidfile.read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the child never started spinning"
        time.sleep(0.05)
    return [int(p) for p in pidfile.read_text().split()]


def _stopped_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_running(p) for p in pids)


def test_an_orphaned_child_stops_itself_and_its_group(tmp_path):
    pidfile = tmp_path / "pids"
    parent = subprocess.run([sys.executable, "-c", PARENT, str(pidfile)], cwd=ROOT, timeout=120)
    pids = _wait_pids(pidfile)
    try:
        assert parent.returncode == 0 and len(pids) == 2
        assert _stopped_within(pids, 10), "the orphaned child (or its grandchild) is still running"
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_child_whose_parent_never_collects_it_stops_after_the_limit_and_grace(tmp_path):
    pidfile = tmp_path / "pids"
    job = sandbox.start("tests.sandbox.funcs:spins", {"pidfile": str(pidfile)}, Limits(timeout_s=1), cwd=ROOT)
    started = time.monotonic()
    try:
        pids = _wait_pids(pidfile)
        assert _stopped_within(pids, 1 + TIMEOUT_GRACE_S + 10)
        assert time.monotonic() - started >= 1 + TIMEOUT_GRACE_S - 0.5  # the parent's own timer has the first word
    finally:
        job.worker.kill()
