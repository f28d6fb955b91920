"""Kernel task files: the convention every nkidev command uses.

A task file is a plain Python module with one or more `@nki.jit` kernels, a `reference(*inputs)`
function (NumPy, or PyTorch when installed), a `cases()` function returning a list of cases -- input tuples, or
`nkidev.Case(*args, **kwargs)` for kernels that take keyword arguments (nkidev/case.py) --
and optionally `TOLERANCE = dict(atol=..., rtol=...)` and `GRID` (the SPMD launch grid: `GRID = 4`, `GRID = (2, 2)`,
or `GRID = {"kernel_name": 4}` per kernel). Commands name a kernel as FILE::KERNEL, or FILE::KERNEL[4] /
FILE::KERNEL[2,2] to launch it on a grid (the spec's grid wins over GRID).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from nkidev.case import Case
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

    def calls(self, name: str = "cases") -> list[Case]:
        """The cases of `cases()`, each as a Case of NumPy inputs: every command reads them through here and
        calls `case.call(kernel)`, i.e. `kernel(*case.args, **case.kwargs)`."""
        fn = self.function(name, CASES_FN)
        return case_list(fn, f"{self.path}: {name}")

    def cases(self, name: str = "cases") -> list[tuple | Case]:
        """The cases as `calls` checks them, in the form scripts written before Case unpack with `kernel(*case)`:
        a case without keywords as its tuple of NumPy inputs, one with keywords as its Case."""
        return [c if c.kwargs else c.args for c in self.calls(name)]

    def launch(self, spec: KernelSpec):
        """The kernel a spec names, with its launch grid (the spec's, else the task file's GRID) applied."""
        kernel = self.kernel(spec.name)
        grid = spec.grid or self.grid(kernel.__name__)
        return kernel[grid] if grid is not None else kernel

    def grid(self, kernel_name: str) -> tuple[int, ...] | None:
        """The task file's GRID for this kernel (None: launch one program)."""
        value = self.attr("GRID")
        if isinstance(value, dict):
            value = value.get(kernel_name)
        if value is None:
            return None
        return check_grid(value, f"{self.path}: GRID")

    def version_scope(self):
        """A `with` block checking this task's kernels against its NKI_VERSION (e.g. "0.6"), unless a version was
        chosen explicitly (--nki-version / emulate(nki_version=)); it takes precedence over $NKIDEV_NKI_VERSION."""
        from nkidev.emulator import versions

        pinned = self.attr("NKI_VERSION")
        if pinned is None or versions.nki_version_override.get() is not None:
            return versions.scope(None)
        if not isinstance(pinned, str):
            raise NkiUsageError(
                "err_bad_task_file", f"{self.path}: NKI_VERSION = {pinned!r}", 'write it as a string, e.g. NKI_VERSION = "0.6"'
            )
        return versions.scope(pinned)

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


CASES_FN = "cases() returning a list of cases: input tuples, or nkidev.Case(*args, **kwargs) for keyword arguments"


def case_list(cases, where: str) -> list[Case]:
    """A task's cases (a list of input tuples or Case values, or a function returning one) as Cases of NumPy inputs."""
    try:
        value = cases() if callable(cases) else cases
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the task's generator failed (exit() too): report it, no traceback
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where}() raised {type(e).__name__}: {e}",
            "fix cases() so it returns a list of cases (input tuples, or nkidev.Case values)",
        ) from None
    one_case = isinstance(value, tuple) and not all(isinstance(c, list | tuple | Case) for c in value)
    if one_case or not isinstance(value, Iterable) or isinstance(value, np.ndarray | str | dict | Case):
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where} gave a {type(value).__name__}, not a list of cases",
            "return e.g. [(x,), (x2, 0.5), nkidev.Case(x3, eps=1e-6)]: one tuple of kernel arguments (or one Case) per case",
        )
    out = [numpy_case(_check_shape(c, i, where)) for i, c in enumerate(value)]
    if not out:
        raise NkiUsageError("err_bad_task_file", f"{where} is empty", "return at least one case")
    return out


def _check_shape(case, i: int, where: str):
    """A case is a tuple/list of positional inputs, a bare input, or a Case with str keywords; a dict is refused
    rather than guessed at (keywords by name, or {"args", "kwargs"}: see nkidev/case.py)."""
    if isinstance(case, dict):
        raise NkiUsageError(
            "err_bad_task_file",
            f"{where}: case {i} is a dict ({', '.join(map(repr, list(case)[:4]))}{', ...' if len(case) > 4 else ''})",
            "write keyword arguments as nkidev.Case(*positional, name=value, ...) (from nkidev import Case)",
        )
    if isinstance(case, Case):
        bad = _bad_case_parts(case)
        if bad:
            raise NkiUsageError(
                "err_bad_task_file", f"{where}: case {i} is {case!r}: {bad}", "build it as Case(x, w, eps=1e-6): inputs, then name=value"
            )
    return case


def _bad_case_parts(case: Case) -> str | None:
    if not isinstance(case.args, tuple):
        return f"its args are a {type(case.args).__name__}, not a tuple"
    if not isinstance(case.kwargs, dict):
        return f"its kwargs are a {type(case.kwargs).__name__}, not a dict"
    keys = [k for k in case.kwargs if not isinstance(k, str) or not k.isidentifier()]
    if keys:
        return f"keyword {keys[0]!r} is not a parameter name"
    return None


@dataclass(frozen=True)
class KernelSpec:
    """FILE::KERNEL[grid] taken apart: the task file, the kernel's name (None: the file's only kernel), the grid."""

    path: Path
    name: str | None
    grid: tuple[int, ...] | None = None


_GRID = re.compile(r"^(?P<name>[^\[\]]*)\[(?P<grid>[^\[\]]*)\]$")
MAX_PROGRAMS = 1024  # a grid larger than this is a typo, not a launch the emulator should attempt


def check_grid(value, where: str) -> tuple[int, ...]:
    """A launch grid as a tuple of positive ints (4 -> (4,)), or err_invalid_argument saying what is wrong."""
    items = (value,) if isinstance(value, int) else value
    try:
        grid = tuple(items)
        ok = bool(grid) and all(isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in grid)
    except TypeError:
        ok = False
    if not ok or len(grid) > 4 or _product(grid) > MAX_PROGRAMS:
        raise NkiUsageError(
            "err_invalid_argument",
            f"{where}: launch grid {value!r}",
            f"use 1 to 4 positive ints with at most {MAX_PROGRAMS} programs, e.g. ::kernel[4] or ::kernel[2,2] (GRID = (2, 2))",
        )
    return grid


def _product(grid: tuple[int, ...]) -> int:
    n = 1
    for g in grid:
        n *= g
    return n


def kernel_spec(spec: str) -> KernelSpec:
    """'path/to/file.py::kernel[2,2]' -> KernelSpec(path, 'kernel', (2, 2)); the kernel and the grid are optional."""
    path, _, name = str(spec).partition("::")
    grid = None
    m = _GRID.match(name)
    if m:
        name = m.group("name")
        try:
            parts = tuple(int(g) for g in m.group("grid").split(","))
        except ValueError:
            parts = m.group("grid")
        grid = check_grid(parts, spec)
    return KernelSpec(Path(path), name or None, grid)


def parse_spec(spec: str) -> tuple[Path, str | None]:
    """'path/to/file.py::kernel' -> (path, 'kernel'); the kernel part is optional, a [grid] suffix is dropped."""
    parsed = kernel_spec(spec)
    return parsed.path, parsed.name


def check_cases(kernel, cases: list[Case], where: str) -> None:
    """Every case fits the kernel's signature (its keywords included) and holds only values a kernel can take
    (err_bad_task_file)."""
    fn = getattr(kernel, "fn", kernel)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    for i, case in enumerate(cases):
        try:
            signature.bind(*case.args, **case.kwargs)
        except TypeError as e:
            keywords = f" and keyword(s) {', '.join(case.kwargs)}" if case.kwargs else ""
            raise NkiUsageError(
                "err_bad_task_file",
                f"{where}: case {i} has {len(case.args)} input(s){keywords} but {getattr(fn, '__name__', 'the kernel')}{signature} "
                f"does not take them ({e})",
                "make each case a tuple with one value per kernel parameter, in order (or Case(..., name=value) for keywords)",
            ) from None
        for j, x in enumerate(case.args):
            _check_value(x, f"{where}: case {i} input {j}")
        for name, x in case.kwargs.items():
            _check_value(x, f"{where}: case {i} keyword {name!r}")


def _check_value(x, what: str) -> None:
    if not _kernel_value(x):
        raise NkiUsageError(
            "err_bad_task_file",
            f"{what} is a {type(x).__name__}, which a kernel cannot take",
            "pass NumPy arrays (or torch CPU tensors), Python numbers, bools, strings, enums or None",
        )


def _kernel_value(x, depth: int = 0) -> bool:
    from enum import Enum

    if x is None or isinstance(x, bool | int | float | str | Enum | np.ndarray | np.generic):
        return True
    if type(x).__module__.split(".")[0] == "torch":
        return True
    if isinstance(x, list | tuple) and depth < 3:
        return all(_kernel_value(v, depth + 1) for v in x)
    return False


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
    # a file not named *.py (a migration's kernel.py.bak) is still Python source
    spec = importlib.util.spec_from_loader(name, importlib.machinery.SourceFileLoader(name, str(path)))
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
