"""The top-level `nki` module as the emulator provides it (`import nki` under the shim)."""

from __future__ import annotations

import sys
import types

from nkidev.emulator import isa, language, nki_typing
from nkidev.emulator import isa_constants as _constants
from nkidev.emulator.jit import Kernel, jit, simulate
from nkidev.emulator.location import kernel_location
from nkidev.emulator.tensor import NkiTensor
from nkidev.errors import NkiNotSupportedError

__version__ = "0.6.0+nkidev"
typing = nki_typing
cpu_simulate = simulate  # the name nki-library's test harness uses


def simulate_kernel(kernel, *args, **kwargs):
    """Legacy `nki.simulate_kernel(kernel, *args)`: run once, return the outputs."""
    return simulate(kernel)(*args, **kwargs)


def baremetal(kernel=None, **kwargs):
    """Legacy decorator; under the emulator the kernel simply runs on the CPU."""
    return jit(kernel) if kernel is not None else (lambda k: jit(k))


def _removed(name: str):
    def fn(*args, **kwargs):
        raise NkiNotSupportedError(
            "err_not_supported_yet",
            f"nki.{name} was removed from NKI; nkidev does not emulate it",
            "use `nkidev profile` for timing and `nki.simulate` for numerics",
            kernel_location(),
        )

    fn.__name__ = name
    return fn


benchmark = _removed("benchmark")
profile = _removed("profile")


def _module(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, doc)
    mod.__dict__.update(attrs)
    return mod


def _collectives_getattr(name: str):
    if name.startswith("__"):
        raise AttributeError(name)

    def fn(*args, **kwargs):
        raise NkiNotSupportedError(
            "err_not_supported_yet",
            f"nki.collectives.{name} is not emulated (the official simulator does not implement collectives either)",
            None,
            kernel_location(),
        )

    return fn


collectives = _module(
    "nki.collectives",
    "Collectives (not emulated).",
    __getattr__=_collectives_getattr,
    ReplicaGroup=type("ReplicaGroup", (), {"__init__": lambda self, *a, **k: None}),
)
compiler = _module("nki.compiler", "Compiler options (accepted, ignored by the emulator).")
dtype = _module(
    "nki.dtype",
    "NKI dtypes.",
    **{
        n: getattr(language, n)
        for n in (
            "bool_",
            "int8",
            "int16",
            "int32",
            "uint8",
            "uint16",
            "uint32",
            "float16",
            "float32",
            "bfloat16",
            "tfloat32",
            "float8_e4m3",
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e8m0fnu",
            "float8_e5m2_x4",
            "float8_e4m3fn_x4",
            "float4_e2m1fn_x4",
        )
    },
)
tensor = _module("nki.tensor", "NKI tensors.", NkiTensor=NkiTensor)
isa.constants = _constants

MODULES = {
    "nki": sys.modules[__name__],
    "nki.language": language,
    "nki.isa": isa,
    "nki.isa.constants": _constants,
    "nki.typing": nki_typing,
    "nki.collectives": collectives,
    "nki.compiler": compiler,
    "nki.dtype": dtype,
    "nki.tensor": tensor,
}

__all__ = [
    "jit",
    "simulate",
    "Kernel",
    "language",
    "isa",
    "typing",
    "collectives",
    "cpu_simulate",
    "simulate_kernel",
    "baremetal",
    "benchmark",
    "profile",
]
