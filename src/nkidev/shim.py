"""The import shim: make `import nki`, `nki.language`, `nki.isa` resolve to the emulator.

- `nkidev.emulate()` (a call, or a `with` block) puts the emulator's modules in sys.modules,
  shadowing a real `nki` install until the block ends.
- `NKIDEV_EMULATE=1` does the same for a whole process (through the `nkidev_shim.pth` startup hook).
- Without either, a real `nki` package wins; only when none is installed does `import nki` fall
  back to the emulator, so scripts written for the official NKI still run on a laptop.
"""

from __future__ import annotations

import sys
import threading

from nkidev.startup import ENV_VAR, FORCED, _modules, _ours, install_fallback, install_from_env

__all__ = ["ENV_VAR", "emulate", "install_fallback", "install_from_env"]


_lock = threading.Lock()
_depth = 0  # active emulate() blocks, in every thread: the emulator's modules stay until the last one ends
_saved: dict = {}  # the nki* modules that were imported before the first block
_added_finder: list[bool] = []  # whether the first block put the forcing finder on sys.meta_path


def _is_nki(name: str) -> bool:
    """nki.* and the legacy neuronxcc.* (both are the emulator's while a block is active)."""
    return _ours(name)


class emulate:  # noqa: N801 - used like a function: nkidev.emulate() / with nkidev.emulate():
    """Make `import nki` (and nki.language, nki.isa, ...) resolve to the emulator.

    `emulate(target="trn3")` also sets the default target for kernels this thread runs until the block ends
    (a context variable: other threads and os.environ are untouched); `emulate(nki_version="0.6")` likewise sets
    the NKI version kernels are checked against ("0.6" | "0.7", also "0.7.0"; default: the newest). Blocks may nest
    and may run in several threads at once: `sys.modules` is shared, so the emulator's modules are installed by the
    first active block and whatever was imported before is put back when the last one ends.
    """

    def __init__(self, target: str | None = None, nki_version: str | None = None):
        global _depth
        from nkidev.emulator.versions import scope
        from nkidev.hardware import resolve_target_name, target_override

        self._version = scope(nki_version)  # err_unknown_nki_version before anything changes
        self._token = target_override.set(resolve_target_name(target)) if target is not None else None
        with _lock:
            if _depth == 0:
                _saved.clear()
                _saved.update({name: mod for name, mod in sys.modules.items() if _is_nki(name)})
                for name in _saved:
                    del sys.modules[name]
                sys.modules.update(_modules())
                _added_finder[:] = [FORCED not in sys.meta_path]
                if _added_finder[0]:
                    sys.meta_path.insert(0, FORCED)
            _depth += 1
        self.active = True

    def __enter__(self) -> emulate:
        return self

    def __exit__(self, *exc) -> None:
        self.restore()

    def restore(self) -> None:
        """Undo: when no other block is active, remove the emulator's modules and bring back what was there."""
        global _depth
        from nkidev.hardware import target_override

        if not self.active:
            return
        self.active = False
        with _lock:
            _depth -= 1
            if _depth == 0:
                for name in [n for n in sys.modules if _is_nki(n)]:
                    del sys.modules[name]
                sys.modules.update(_saved)
                _saved.clear()
                if _added_finder and _added_finder[0] and FORCED in sys.meta_path:  # NKIDEV_EMULATE=1's finder stays
                    sys.meta_path.remove(FORCED)
        if self._token is not None:
            try:
                target_override.reset(self._token)
            except ValueError:  # restored from another thread or context: clear this one's override
                target_override.set(None)
        self._version.close()
