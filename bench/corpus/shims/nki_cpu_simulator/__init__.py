"""Corpus-harness shim: the `nki_cpu_simulator` package nki-library's simulation mode imports,
mapped onto whatever nkidev is installed (public API only: nkidev.emulate() + `import nki`)."""

import sys
import types

import nkidev

nkidev.emulate()
import nki as _nki  # noqa: E402  (the emulator's nki after emulate())
import nki.isa  # noqa: E402,F401
import nki.isa.constants  # noqa: E402,F401
import nki.language  # noqa: E402,F401
import nki.typing  # noqa: E402,F401

for _sub in ("compiler", "tensor", "dtype", "collectives"):
    try:
        __import__("nki." + _sub)
    except ImportError:
        pass


def _alias(name, mod):
    sys.modules["nki_cpu_simulator." + name] = mod
    return mod


class _NkiProxy(types.ModuleType):
    """`nki_cpu_simulator.nki`: the emulator's `nki` plus the submodule attributes the official package has."""

    def __getattr__(self, name):
        return getattr(_nki, name)


nki = _alias("nki", _NkiProxy("nki_cpu_simulator.nki", _nki.__doc__))
nki.__path__ = []
_real_lang = sys.modules["nki.language"]


class _LangProxy(types.ModuleType):
    def __getattr__(self, name):
        return getattr(_real_lang, name)


_lang = _alias("nki.language", _LangProxy("nki_cpu_simulator.nki.language"))
_lang.__path__ = []
_alias("nki.isa", sys.modules["nki.isa"])
_alias("nki.isa.constants", sys.modules["nki.isa.constants"])
_alias("nki.typing", sys.modules["nki.typing"])
for _sub in ("compiler", "tensor"):
    _alias("nki." + _sub, sys.modules.get("nki." + _sub) or types.ModuleType("nki." + _sub))
_builtin = sys.modules.get("nki.builtin") or types.ModuleType("nki_cpu_simulator.nki.builtin")
_alias("nki.builtin", _builtin)
nki.builtin = _builtin
_dtypes = sys.modules.get("nki.dtype") or types.ModuleType("nki.language.dtypes")
_alias("nki.language.dtypes", _dtypes)
_lang.dtypes = _dtypes
for _n in ("language", "isa", "typing", "compiler", "tensor"):
    setattr(nki, _n, sys.modules["nki_cpu_simulator.nki." + _n])
