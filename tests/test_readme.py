"""The README stays true: its first lines are the two newcomer commands, CI runs its test command, and its
code examples run."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_starts_with_install_demo_and_test_commands():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert README.index("```bash") < 20
    assert first_block[0].endswith("pip install -e '.[test]' && nkidev demo")
    assert first_block[1] == "python -m pytest -q"


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "python -m pytest -q"


def test_readme_task_file_example_validates(tmp_path):
    from nkidev.validate.api import validate_task

    code = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "axpy_kernel" in b)
    (tmp_path / "axpy.py").write_text(code)
    result = validate_task(f"{tmp_path / 'axpy.py'}::axpy_kernel", seeds=1)
    assert result.passed and len(result.cases) == 2
    assert all(c.primary.max_abs_diff < 1e-5 for c in result.cases)


def test_readme_simulate_example_runs(tmp_path):
    import runpy

    code = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "add_kernel" in b)
    code = code.replace("print(", "result = (")
    ns = runpy.run_path(str(_write(tmp_path / "quick.py", code)))
    np.testing.assert_allclose(ns["result"], 2 * ns["a"], rtol=1e-6)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
