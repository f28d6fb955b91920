"""Where the bundled example kernels live: the repo's examples/ in a checkout, nkidev/examples in a wheel."""

from __future__ import annotations

from pathlib import Path

from nkidev.errors import NkiUsageError


def examples_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "examples", here / "examples"):
        if (candidate / "softmax.py").is_file():
            return candidate
    raise NkiUsageError(
        "err_bad_task_file",
        "the bundled examples are missing from this install",
        "reinstall nkidev (pip install nkidev) or run from a source checkout",
    )


def example(name: str) -> Path:
    path = examples_dir() / name
    if not path.is_file():
        raise NkiUsageError("err_bad_task_file", f"no bundled example {name!r}", f"see {examples_dir()}")
    return path
