"""bench/corpus: the fetch step (against a local git repository, no network) and the report's rates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus"
sys.path.insert(0, str(CORPUS))

import report  # noqa: E402
from repos import FetchError, Repo, fetch_one  # noqa: E402


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _upstream(tmp_path: Path) -> tuple[Path, str, str]:
    up = tmp_path / "upstream"
    up.mkdir()
    _git("init", "-q", cwd=up)
    commits = []
    for i in range(2):
        (up / "k.py").write_text(f"V = {i}\n")
        _git("add", "k.py", cwd=up)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{i}", cwd=up)
        commits.append(_git("rev-parse", "HEAD", cwd=up))
    return up, commits[0], commits[1]


def test_fetch_checks_out_the_pinned_commit_and_skips_when_there(tmp_path):
    up, first, _ = _upstream(tmp_path)
    dest = fetch_one(Repo("k", "o/k", first), tmp_path / "src", url=str(up))
    assert (dest / "k.py").read_text() == "V = 0\n"
    assert _git("rev-parse", "HEAD", cwd=dest) == first
    (dest / "marker").write_text("")  # a second fetch at the same commit leaves the clone alone
    fetch_one(Repo("k", "o/k", first), tmp_path / "src", url=str(up))
    assert (dest / "marker").exists()


def test_fetch_failure_is_named(tmp_path):
    with pytest.raises(FetchError) as e:
        fetch_one(Repo("k", "o/k", "0" * 40), tmp_path / "src", url=str(tmp_path / "missing"))
    assert e.value.name == "corpus_fetch_failed"


def test_adjusted_rate_leaves_out_compiler_and_upstream_failures():
    res = [
        {"corpus": "x", "status": "PASS"},
        {"corpus": "x", "status": "ERROR", "cause": "needs_compiler_trace"},
        {"corpus": "x", "status": "ERROR", "cause": "kernel_uses_removed_kwarg"},  # category (c)
        {"corpus": "x", "status": "ERROR", "cause": "nl_range_missing"},  # category (a): an nkidev bug, counted
        {"corpus": "x", "status": "SKIP"},
    ]
    row = report.pass_table(res)[2]
    assert row.endswith("| 1 | 1/4 = 25% | 1/2 = 50% |")
