"""The same kernel source loaded from two files reports each file's own path in its errors (code objects compare
equal across files, so the location cache must key on the file too)."""

import numpy as np
import pytest

from nkidev.emulator.jit import run
from nkidev.errors import KernelRuleError
from nkidev.taskfile import load_task

SOURCE = """import nki
import nki.language as nl


@nki.jit
def bad(x):
    t = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)
    return t
"""


def test_identical_sources_in_two_files_report_their_own_paths(tmp_path):
    locations = []
    for name in ("one", "two"):
        path = tmp_path / name / "kernel.py"
        path.parent.mkdir()
        path.write_text(SOURCE)
        kernel = load_task(path).kernels["bad"]
        with pytest.raises(KernelRuleError) as e:
            run(kernel, (np.zeros((128, 4), np.float32),))
        locations.append(str(e.value.location))
    assert locations == [f"{tmp_path / 'one' / 'kernel.py'}:7", f"{tmp_path / 'two' / 'kernel.py'}:7"]
