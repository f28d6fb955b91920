"""The startup hook's part of the import shim (nkidev_shim.pth, run in every Python process of the environment):
meta-path finders that resolve `nki.*` (and the legacy `neuronxcc.*`) to the emulator.

This module imports only `os` and `sys`, which every interpreter has loaded before site-packages' .pth files run.
With NKIDEV_EMULATE set the hook line calls `install_from_env()`; without it, it does not import this module at
all: it appends a stand-in finder, defined on the line itself, that imports it only when asked for an nki.* /
neuronxcc.* module (`lazy_find_spec`). Importing even this small module and the `nkidev` package cost every
process ~6 ms where no bytecode is cached (an editable install under PYTHONDONTWRITEBYTECODE compiles both each
time); the line alone costs ~0.1 ms. The finders follow the meta-path protocol by duck typing (subclassing
importlib.abc would import importlib.resources, pathlib, re, enum: ~40 ms). The `emulate()` block built on them
is in nkidev.shim.
"""

import os
import sys

ENV_VAR = "NKIDEV_EMULATE"


_PREFIXES = ("nki", "neuronxcc")  # the current API and the legacy Beta-1 API (neuronxcc.nki)


def _modules() -> dict:
    from nkidev.emulator.nki_api import MODULES

    return MODULES


def _legacy_modules() -> dict:
    from nkidev.legacy.api import MODULES

    return MODULES


def _ours(fullname: str) -> bool:
    return fullname.split(".")[0] in _PREFIXES


def _module_for(fullname: str):
    if fullname.split(".")[0] == "neuronxcc":
        return _legacy_modules().get(fullname)
    return _modules().get(fullname)


class _Loader:
    """Hands out the emulator's already-built module object (importlib.abc.Loader's protocol)."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class Finder:
    """Resolves nki.* to the emulator (first when forced, else only when no real nki is found)."""

    def __init__(self, fallback: bool):
        self.fallback = fallback

    def find_spec(self, fullname, path=None, target=None):
        if not _ours(fullname):
            return None
        if self.fallback and _real_nki_available(fullname):
            return None
        module = _module_for(fullname)
        if module is None:
            return None
        packages = ("nki", "nki.isa", "neuronxcc", "neuronxcc.nki", "neuronxcc.nki.isa", "neuronxcc.nki.language")
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, _Loader(module), is_package=fullname in packages)


def _real_nki_available(fullname: str) -> bool:
    top = fullname.split(".")[0]
    for finder in sys.meta_path:
        if isinstance(finder, Finder):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            if find(top, None, None) is not None:
                return True
        except Exception:  # noqa: BLE001 - a broken finder must not break imports
            continue
    return False


FORCED = Finder(fallback=False)
FALLBACK = Finder(fallback=True)


def install_fallback() -> None:
    """Let `import nki` fall back to the emulator when no real nki package is installed."""
    if FALLBACK not in sys.meta_path:
        sys.meta_path.append(FALLBACK)


def lazy_find_spec(stand_in, fullname, path=None, target=None):
    """The .pth line's stand-in finder was asked for an nki module: the fallback finder takes the place of every
    stand-in on sys.meta_path (site runs a venv's .pth files twice: there are two), before it answers: its search
    for a real nki asks the other finders."""
    meta = sys.meta_path
    at = [i for i, f in enumerate(meta) if type(f).__module__ == _STAND_IN_MODULE]
    if at and FALLBACK not in meta:
        meta[at.pop(0)] = FALLBACK
    for i in reversed(at):
        del meta[i]
    return FALLBACK.find_spec(fullname, path, target)


_STAND_IN_MODULE = "nkidev_shim"  # the __module__ the .pth line gives its stand-in's class


def install_from_env() -> None:
    """Startup hook (nkidev_shim.pth): force emulation with NKIDEV_EMULATE=1, else install the fallback."""
    if os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on"):
        if FORCED not in sys.meta_path:
            sys.meta_path.insert(0, FORCED)
    else:
        install_fallback()
