"""Wheel build hook: ship compiled bytecode (nkidev/**/__pycache__/*.pyc) for the Python that builds the wheel.

pip compiles at install time by default, but `pip install --no-compile`, read-only site-packages and some
container layers skip that, and then every `nkidev` start and every Python process running the startup hook
compiles the modules it imports. The .pyc files are checked-hash (PEP 552): Python validates them against the
installed source's hash, not its mtime (which installers reset), so an edited source is still recompiled.
Other Python versions ignore these files (their cache tag differs) and compile as usual.
"""

from __future__ import annotations

import importlib.util
import py_compile
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = Path("src") / "nkidev"


class BytecodeHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        self._out = tempfile.TemporaryDirectory(prefix="nkidev-pyc-")
        root = Path(self.root)
        for source in sorted((root / PACKAGE).rglob("*.py")):
            rel = source.relative_to(root / "src")  # nkidev/...
            target = Path(importlib.util.cache_from_source(str(rel)))  # nkidev/.../__pycache__/x.cpython-3XX.pyc
            compiled = Path(self._out.name) / target
            compiled.parent.mkdir(parents=True, exist_ok=True)
            py_compile.compile(
                str(source),
                cfile=str(compiled),
                dfile=str(rel),
                doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
            )
            build_data["force_include"][str(compiled)] = str(target)

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        out = getattr(self, "_out", None)
        if out is not None:
            out.cleanup()
