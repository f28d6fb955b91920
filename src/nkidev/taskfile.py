"""Kernel task files: the convention every nkidev command uses.

A task file is a plain Python module with one or more `@nki.jit` kernels, a `reference(*inputs)`
function (NumPy, or PyTorch when installed), a `cases()` function returning a list of input tuples,
and optionally `TOLERANCE = dict(atol=..., rtol=...)`. Commands name a kernel as FILE::KERNEL.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from nkidev.errors import NkiUsageError
from nkidev.validate.inputs import numpy_case


@dataclass
class Task:
    path: Path
    module: ModuleType
    kernels: dict  # name -> Kernel

    def attr(self, name: str):
        return getattr(self.module, name, None)

    def function(self, name: str, what: str) -> Callable:
        """The task's function `name` (reference, cases, ...), or err_bad_task_file saying what it should be."""
        fn = self.attr(name)
        if not callable(fn):
            found = "is not a function" if fn is not None else "is missing"
            raise NkiUsageError("err_bad_task_file", f"{self.path}: {name} {found}", f"define {what}")
        return fn

    def cases(self, name: str = "cases") -> list[tuple]:
        """The input tuples of `cases()` (every command reads them through here)."""
        fn = self.function(name, "cases() returning a list of input tuples")
        return case_list(fn, f"{self.path}: {name}")

    def kernel(self, name: str | None):
        if name is None:
            if len(self.kernels) == 1:
                return next(iter(self.kernels.values()))
            raise NkiUsageError(
                "err_kernel_not_found",
                f"{self.path} defines {len(self.kernels)} kernels ({', '.join(self.kernels) or 'none'}); say which one",
                f"use {self.path.name}::KERNEL",
            )
        if name not in self.kernels:
            plain = getattr(self.module, name, None)
            if callable(plain):
                from nkidev.emulator.jit import as_kernel

                return as_kernel(plain)
            raise NkiUsageError(
                "err_kernel_not_found",
                f"{self.path} has no kernel {name!r}; kernels: {', '.join(self.kernels) or 'none'}",
                f"use {self.path.name}::<one of those>",
            )
        return self.kernels[name]


def case_list(cases, where: str) -> list[tuple]:
    """A task's cases (a list of input tuples, or a function returning one) as tuples of NumPy inputs."""
    try:
        value = cases() if callable(cases) else cases
    except Exception as e:  # noqa: BLE001 - the task's generator failed: report it, no traceback
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where}() raised {type(e).__name__}: {e}",
            "fix cases() so it returns a list of input tuples",
        ) from None
    one_case = isinstance(value, tuple) and not all(isinstance(c, list | tuple) for c in value)
    if one_case or not isinstance(value, Iterable) or isinstance(value, np.ndarray | str | dict):
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where} gave a {type(value).__name__}, not a list of input tuples",
            "return e.g. [(x,), (x2, 0.5)]: one tuple of kernel arguments per case",
        )
    out = [numpy_case(c) for c in value]
    if not out:
        raise NkiUsageError("err_bad_task_file", f"{where} is empty", "return at least one input tuple")
    return out


def parse_spec(spec: str) -> tuple[Path, str | None]:
    """'path/to/file.py::kernel' -> (path, 'kernel'); the kernel part is optional."""
    path, _, name = str(spec).partition("::")
    return Path(path), (name or None)


def _error_line(exc: BaseException, path: Path) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path.resolve():
            return f"{path.name}:{frame.lineno}"
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f"{path.name}:{exc.lineno}"
    return path.name


def load_task(path: str | Path) -> Task:
    """Import a task file with `nki` resolving to the emulator."""
    from nkidev.emulator.jit import Kernel
    from nkidev.shim import emulate

    path = Path(path)
    if not path.is_file():
        raise NkiUsageError("err_bad_task_file", f"no such file: {path}", "check the path (FILE::KERNEL)")
    name = f"nkidev_task_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        with emulate():
            sys.modules[name] = module
            spec.loader.exec_module(module)
    except NkiUsageError:
        raise
    except BaseException as e:  # noqa: BLE001 - any failure while importing user code is a task-file problem
        sys.modules.pop(name, None)
        raise NkiUsageError(
            "err_bad_task_file",
            f"{path} failed to import at {_error_line(e, path)}: {type(e).__name__}: {e}",
            "fix the error in the task file",
        ) from None
    finally:
        sys.path.remove(str(path.parent.resolve()))
    kernels = {k: v for k, v in vars(module).items() if isinstance(v, Kernel)}
    return Task(path, module, kernels)
