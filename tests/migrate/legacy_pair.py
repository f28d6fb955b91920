"""Migrating a fixture file, and running one kernel of a migrated file both ways: the backup (legacy API, legacy
simulator) and the rewritten file (current API), on the file's first case."""

from __future__ import annotations

import shutil
from pathlib import Path

from nkidev.migrate import migrate_file
from nkidev.taskfile import load_task

FIXTURES = Path(__file__).parent / "fixtures"


def migrated(tmp_path: Path, name: str):
    """(the MigrateResult, the rewritten text, its Task) of fixture `name` copied to tmp_path and migrated with --write."""
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    result = migrate_file(path, write=True)
    assert Path(result.backup).read_text() == (FIXTURES / name).read_text()  # --write still keeps the original
    return result, path.read_text(), load_task(path)


def run_both(result, path: Path, kernel: str):
    """(legacy outputs, current-API outputs, the two inputs) of `kernel` in `path`, migrated with a backup (`result`)."""
    old, new = load_task(Path(result.backup)), load_task(path)
    a, b = new.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels[kernel], a, b)
    after = new.module.nki.simulate(new.kernels[kernel])(a, b)
    return before, after, a, b
