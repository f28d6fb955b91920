"""`nkidev migrate` on legacy index constructs: sums and non-literal scales of index expressions. Each rewrite is
checked as text and run old against new on the file's cases (the legacy front end vs the current API); what cannot be
rewritten exactly is a manual step at its line and is left in place."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from nkidev.migrate import migrate_file, migrate_source
from nkidev.taskfile import load_task

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"


def migrated(tmp_path: Path, name: str):
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    result = migrate_file(path, write=True)
    assert Path(result.backup).read_text() == (FIXTURES / name).read_text()  # --write still keeps the original
    return result, path.read_text(), load_task(path)


def run(task, kernel: str, *args):
    return task.module.nki.simulate(task.kernels[kernel])(*args)


def manual(source: str) -> list[tuple[int, str, str]]:
    _, _, notes = migrate_source(source, "k.py")
    return [(n.line, n.construct, n.step) for n in notes if n.kind == "manual"]


def test_sums_and_non_literal_scales_of_indices_become_exact_slices(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_index_sums.py")
    assert result.manual == []
    assert {r["status"] for r in result.validation["kernels"]} == {"identical"}, result.validation
    assert "src=x[j * 64:j * 64 + 64, k * 64:k * 64 + 64]" in text
    assert "x[0:128, (stride - 1):(stride - 1) + stride * (64 - 1) + 1:stride]" in text
    assert "x[0:128, 1:1 + 2 * (x.shape[1] // 2 - 1) + 1:2]" in text  # stops right after the last column, inside x
    for x in (c[0] for c in new.cases()):
        np.testing.assert_array_equal(run(new, "column_tiles_kernel", x), x * 3.0)
        stride = x.shape[1] // 64
        np.testing.assert_array_equal(run(new, "strided_kernel", x), x[:, stride - 1 :: stride])
        np.testing.assert_array_equal(run(new, "odd_columns_kernel", x), x[:, 1::2])
