"""The top-level help cache (nkidev.help_cache): a cached `nkidev --help` prints exactly typer's output without
importing typer, and anything the output depends on gives a new entry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Run the real entry point; report on stderr's last line whether typer was imported.
PROBE = (
    "import atexit, sys; atexit.register(lambda: sys.stderr.write('\\nTYPER=%s' % ('typer' in sys.modules)))\n"
    "from nkidev.entry import main; main()"
)


def _nkidev(args: list[str], cache: Path, **env) -> tuple[int, str, str, bool]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NKIDEV_", "COLUMNS"))}
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *sys.path[1:]])
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=base | {"XDG_CACHE_HOME": str(cache), "COLUMNS": "100"} | env,
        timeout=120,
    )
    stderr, _, flag = out.stderr.rpartition("\nTYPER=")
    return out.returncode, out.stdout, stderr, flag == "True"


@pytest.mark.parametrize("args", [["--help"], [], ["--version"]])
def test_a_cached_help_is_typers_output_without_importing_typer(tmp_path, args):
    reference = _nkidev(args, tmp_path, NKIDEV_HELP_CACHE="0")
    assert reference[3] is True and reference[0] in (0, 2) and "nkidev" in reference[1] + reference[2]
    first = _nkidev(args, tmp_path)  # renders with typer and records
    assert first == reference
    assert len(list((tmp_path / "nkidev").glob("help-*.txt"))) == 1
    code, stdout, stderr, imported_typer = _nkidev(args, tmp_path)  # served from the cache
    assert (code, stdout, stderr) == reference[:3]
    assert imported_typer is False


def test_the_terminal_width_is_part_of_the_key(tmp_path):
    _nkidev(["--help"], tmp_path)
    wide = _nkidev(["--help"], tmp_path, COLUMNS="180")
    assert wide[3] is True  # a new width renders again
    assert wide == _nkidev(["--help"], tmp_path, COLUMNS="180", NKIDEV_HELP_CACHE="0")
    assert max(len(line) for line in wide[1].splitlines()) > 100
    assert len(list((tmp_path / "nkidev").glob("help-*.txt"))) == 2


def test_a_damaged_entry_is_ignored_and_other_commands_are_never_cached(tmp_path):
    reference = _nkidev(["--help"], tmp_path, NKIDEV_HELP_CACHE="0")
    _nkidev(["--help"], tmp_path)
    (entry,) = (tmp_path / "nkidev").glob("help-*.txt")
    entry.write_bytes(b"\xff\xfe not a recording")
    assert _nkidev(["--help"], tmp_path) == reference
    _nkidev(["analyze", "--help"], tmp_path)
    assert len(list((tmp_path / "nkidev").glob("help-*.txt"))) == 1


def test_only_the_newest_recordings_are_kept(tmp_path):
    from nkidev import help_cache

    for i in range(help_cache.MAX_ENTRIES + 5):
        entry = tmp_path / f"help-{i:04d}.txt"
        entry.write_text("x")
        os.utime(entry, ns=(i * 10**9, i * 10**9))
    (tmp_path / "other.txt").write_text("kept")
    help_cache._prune(str(tmp_path))
    kept = sorted(p.name for p in tmp_path.glob("help-*.txt"))
    assert len(kept) == help_cache.MAX_ENTRIES and kept[0] == "help-0005.txt"
    assert (tmp_path / "other.txt").exists()
