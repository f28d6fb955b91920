"""The suite's tasks: the task files in nkidev/bench/tasks/, and what each declares.

A bench task file is an ordinary nkidev task file (`nkidev validate FILE::ENTRY` works on it) with a few more
names: FAMILY, ENTRY (the kernel a solution must define), DTYPES, quick_cases(seed) and full_cases(seed)
(`cases` is quick_cases), TOLERANCE, FLOPS(*case) and MIN_BYTES(*case) (the work and the bytes the roofline
divides by) and optionally TUNABLE (kernel keyword -> candidate values).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from nkidev.case import Case
from nkidev.errors import NkiUsageError
from nkidev.taskfile import Task, load_task

TASKS_DIR = Path(__file__).parent / "tasks"
REQUIRED = ("FAMILY", "ENTRY", "DTYPES", "reference", "quick_cases", "full_cases", "FLOPS", "MIN_BYTES")


def task_names() -> list[str]:
    """Every task of the suite, sorted."""
    return sorted(p.stem for p in TASKS_DIR.glob("*.py") if not p.stem.startswith("_"))


def task_path(name: str) -> Path:
    """The task file of `name`, or err_unknown_task naming the tasks there are."""
    path = TASKS_DIR / f"{name}.py"
    if name not in task_names():
        raise NkiUsageError("err_unknown_task", f"no bench task {name!r}", f"use one of: {', '.join(task_names())} (nkidev bench list)")
    return path


def select(tasks: str | list[str] | None) -> list[str]:
    """`--tasks a,b` as a checked list of names (None or empty: every task)."""
    if not tasks:
        return task_names()
    names = [t.strip() for t in tasks.split(",")] if isinstance(tasks, str) else list(tasks)
    for name in names:
        task_path(name)
    return list(dict.fromkeys(n for n in names if n))


@dataclass(frozen=True)
class TaskInfo:
    name: str
    path: Path
    family: str
    entry: str
    dtypes: tuple[str, ...]
    tunable: dict | None
    doc: str

    @property
    def spec(self) -> str:
        """FILE::ENTRY of the baseline."""
        return f"{self.path}::{self.entry}"


def load(name: str, path: Path | None = None) -> tuple[TaskInfo, Task]:
    """The task's declarations and its loaded task file (imported under emulation); `path`: a task file outside
    the suite (the KernelBench adapter's)."""
    path = task_path(name) if path is None else Path(path)
    task = load_task(path)
    missing = [k for k in REQUIRED if task.attr(k) is None]
    if missing:
        raise NkiUsageError("err_bad_task_file", f"{path}: bench task lacks {', '.join(missing)}", "define them (nkidev/bench/registry.py)")
    info = TaskInfo(
        name,
        path,
        task.attr("FAMILY"),
        task.attr("ENTRY"),
        tuple(task.attr("DTYPES")),
        task.attr("TUNABLE"),
        (task.module.__doc__ or "").strip(),
    )
    return info, task


@cache
def describe(name: str) -> dict:
    """The `bench list` row of a task: {"task", "family", "entry", "dtypes", "quick_cases", "full_cases"} (shapes only)."""
    info, task = load(name)
    return {
        "task": name,
        "family": info.family,
        "entry": info.entry,
        "dtypes": list(info.dtypes),
        "quick_cases": _shapes(task.calls("quick_cases")),
        "full_cases": _full_shapes(task),
    }


def _shapes(cases: list[Case]) -> list[list]:
    """Per case, each input's shape (its value for a scalar): positional inputs, then keyword ones."""
    return [[list(x.shape) if hasattr(x, "shape") else x for x in case.values()] for case in cases]


def _full_shapes(task: Task) -> list[list]:
    """Shapes of the full cases without drawing their (large) inputs: the cases are built under a sampler that
    returns zero-strided arrays."""
    from nkidev.bench import inputs

    with inputs.shapes_only():
        return _shapes(task.calls("full_cases"))
