"""`nki.compiler` of NKI 0.7: the per-kernel configuration `@nki.jit(compile_config=..., specialization_config=...)`.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.1/nki/api/nki.compiler.html and
latest/nki/api/generated/nki.compiler.CompileConfig.html, ...SpecializationConfig.html, ...AddressRotation.html.

The options steer neuronx-cc's backend (address rotation, DCE, prefetch, allocation fallback); the emulator keeps
them on the kernel, checks their types, and applies the one rule the docs give that changes what a kernel may do:
a nested `@nki.jit` kernel whose config disagrees with the top-level kernel's is an error unless the top-level
kernel's SpecializationConfig allows the override (then a warning, and the sub-kernel runs under the top-level
config).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum

from nkidev.emulator.location import rule_error


class AddressRotation(Enum):
    """Backend address-rotation policy: AUTO (rotate only memlocs without a fixed address), ENABLE, DISABLE."""

    AUTO = "AUTO"
    ENABLE = "ENABLE"
    DISABLE = "DISABLE"


def _check_fields(obj) -> None:
    for f in fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        want = AddressRotation if f.name == "address_rotation" else bool
        if not isinstance(value, want):
            raise rule_error(
                "err_invalid_argument",
                f"{type(obj).__name__}.{f.name}={value!r} is not a {want.__name__}",
                f"pass a {want.__name__} (or leave it at its default)",
            )


@dataclass(frozen=True)
class CompileConfig:
    """Per-kernel compiler options (None: the compiler's default, which the docs do not all state)."""

    address_rotation: AddressRotation | None = None  # default AUTO
    non_ssa_legalization: bool | None = None
    dead_code_elim: bool | None = None
    barrier_check: bool | None = None
    prefetch_auto: bool | None = None  # documented default: off
    nki_alloc_fallback: bool | None = None  # documented default: on

    def __post_init__(self):
        _check_fields(self)


@dataclass(frozen=True)
class SpecializationConfig:
    """How a top-level kernel treats nested @nki.jit sub-kernels whose configs disagree with its own."""

    allow_nested_config_override: bool | None = None  # True: warn and inline under the top-level config

    def __post_init__(self):
        _check_fields(self)


def _normalized(config: CompileConfig | None) -> CompileConfig:
    return config if config is not None else CompileConfig()


def configs_agree(a: CompileConfig | None, b: CompileConfig | None) -> bool:
    return _normalized(a) == _normalized(b)


def check_config_types(compile_config, specialization_config) -> None:
    if compile_config is not None and not isinstance(compile_config, CompileConfig):
        raise rule_error("err_invalid_argument", f"compile_config={compile_config!r}", "pass an nki.compiler.CompileConfig")
    if specialization_config is not None and not isinstance(specialization_config, SpecializationConfig):
        raise rule_error(
            "err_invalid_argument", f"specialization_config={specialization_config!r}", "pass an nki.compiler.SpecializationConfig"
        )
