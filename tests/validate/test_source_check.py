"""The static scan flags every way around the NKI API in tasks/static_cases.py, at the right line, and
nothing in honest kernels."""

from pathlib import Path

import pytest

from nkidev.taskfile import load_task
from nkidev.validate.source_check import scan

HERE = Path(__file__).parent
TASK = load_task(HERE / "tasks" / "static_cases.py")

FLAGGED = [
    ("private_attr", "cheat_emulator_internals", 25, "._data"),
    ("storage_attr", "cheat_emulator_internals", 30, ".storage"),
    ("frame_walk", "cheat_emulator_internals", 35, "module sys"),
    ("aliased_frame", "cheat_emulator_internals", 40, "inspect.currentframe"),
    ("dynamic_getattr", "cheat_emulator_internals", 45, "computed attribute name"),
    ("capture_stdout", "cheat_emulator_internals", 50, "module contextlib"),
    ("internal_module", "cheat_emulator_internals", 56, "module nkidev.emulator.memory"),
    ("calls_alias", "cheat_calls_reference", 61, "reference()"),
    ("via_helper", "cheat_emulator_internals", 65, "eval()"),
]


@pytest.mark.parametrize("kernel,verdict,line,what", FLAGGED, ids=[f[0] for f in FLAGGED])
def test_escape_is_flagged_at_its_line(kernel, verdict, line, what):
    findings, has_source = scan(TASK.kernel(kernel), {"reference": TASK.attr("reference")})
    assert has_source
    hits = [f for f in findings if f.verdict == verdict and f.location.endswith(f"static_cases.py:{line}")]
    assert hits and any(what in f.message for f in hits), findings


def test_honest_kernel_with_class_getattr_and_numpy_scalars_is_clean():
    findings, has_source = scan(TASK.kernel("honest"), {"reference": TASK.attr("reference")})
    assert has_source and findings == []


@pytest.mark.parametrize("path", sorted((HERE.parent / "cheats").glob("honest_*.py")), ids=lambda p: p.name)
def test_honest_corpus_is_clean(path):
    task = load_task(path)
    for kernel in task.kernels.values():
        assert scan(kernel, {"reference": task.attr("reference"), "cases": task.attr("cases")})[0] == []


def test_source_less_kernel_is_reported_not_flagged():
    namespace = {}
    exec("def k(x):\n    return x._data\n", namespace)  # no file behind it
    assert scan(namespace["k"], {}) == ([], False)
