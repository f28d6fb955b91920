"""nkidev.validate: check a kernel's numerics against a CPU reference, with anti-cheat checks.

    from nkidev.validate import validate, validate_task
    result = validate(kernel, reference, cases)          # -> ValidationResult (.passed, .to_dict())
    result = validate_task("examples/softmax.py::softmax_kernel")

The package itself is callable, so `nkidev.validate(kernel, reference, cases)` works too. Attributes load
lazily: importing the package (e.g. for the CLI) does not import the emulator.
"""

from __future__ import annotations

import importlib
import sys
import types

_EXPORTS = {
    "validate": "nkidev.validate.api",
    "validate_task": "nkidev.validate.api",
    "ValidationResult": "nkidev.validate.result",
    "CaseResult": "nkidev.validate.result",
    "Finding": "nkidev.validate.result",
    "Tolerance": "nkidev.validate.tolerance",
    "VERDICTS": "nkidev.validate.verdicts",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nkidev.validate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)


class _CallableModule(types.ModuleType):
    """`nkidev.validate(...)` is `nkidev.validate.validate(...)`: one name for the package and the function."""

    def __call__(self, *args, **kwargs):
        return self.validate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
