"""The bundled examples match their references, and `nkidev demo` prints the seed's lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nkidev
from nkidev.taskfile import load_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KERNELS = {
    "softmax.py": "softmax_kernel",
    "matmul.py": "matmul_kernel",
    "rmsnorm.py": "rmsnorm_kernel",
    "layernorm.py": "layernorm_kernel",
    "attention.py": "attention_kernel",
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_example_matches_reference(name):
    task = load_task(EXAMPLES / name)
    kernel = task.kernel(KERNELS[name])
    tol = task.attr("TOLERANCE")
    for case in task.attr("cases")():
        out = np.asarray(nkidev.simulate(kernel)(*case), dtype=np.float64)
        ref = task.attr("reference")(*case)
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, atol=tol["atol"], rtol=tol["rtol"])


def test_demo_prints_the_seed_lines():
    out = subprocess.run([sys.executable, "-m", "nkidev", "demo"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    shapes = [(2, 128, 512), (4, 256, 1024), (1, 1, 64), (2, 300, 768)]
    for line, shape in zip(lines, shapes):
        assert re.fullmatch(rf"PASS: shape={re.escape(str(shape))}, max_diff=\d\.\d{{6}}", line), line
    assert lines[0] == "PASS: shape=(2, 128, 512), max_diff=0.000008"
    assert "All tests passed." in lines
