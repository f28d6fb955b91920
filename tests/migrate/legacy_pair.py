"""Running one kernel of a migrated file both ways: the backup (legacy API, legacy simulator) and the rewritten file
(current API), on the file's first case."""

from __future__ import annotations

from pathlib import Path

from nkidev.taskfile import load_task


def run_both(result, path: Path, kernel: str):
    """(legacy outputs, current-API outputs, the two inputs) of `kernel` in `path`, migrated with a backup (`result`)."""
    old, new = load_task(Path(result.backup)), load_task(path)
    a, b = new.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels[kernel], a, b)
    after = new.module.nki.simulate(new.kernels[kernel])(a, b)
    return before, after, a, b
