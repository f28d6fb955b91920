"""NKI versions as data: which public names each version of the current API (`import nki`) has.

A kernel is checked against the version its user deploys: `--nki-version 0.6|0.7` on the CLI,
`nkidev.emulate(nki_version=...)`, `simulate(kernel, nki_version=...)`, `NKIDEV_NKI_VERSION` for a whole
process, else the newest. `API` lists every name whose availability differs between the versions
(everything else exists in all of them); the emulator's modules gate those names with it (`gate.py`) and
the docs print it. The legacy Beta-1 API (`neuronxcc.nki`) is selected by its import path, not here.

Sources: NKI 0.7.0 release notes and "Migrating from NKI 0.6.0 to NKI 0.7.0"
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.1/nki/migration/index.html), the 0.7 API
reference pages (v2.33.0/.../nki/api/generated/*.html) and the 0.6 migration guide
(".../nki/migration/index.html", "Migrating from NKI 0.5.0 to NKI 0.6.0").

Layer 1: imports only the standard library and nkidev.errors.
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from dataclasses import dataclass

from nkidev.errors import NkiUsageError

VERSIONS = ("0.6", "0.7")  # oldest first
NEWEST = VERSIONS[-1]
ENV_VAR = "NKIDEV_NKI_VERSION"

# `emulate(nki_version=...)` / `--nki-version`: the version for the calling thread (a context variable, never os.environ).
nki_version_override: ContextVar[str | None] = ContextVar("nkidev_nki_version_override", default=None)


@dataclass(frozen=True)
class Entry:
    """A public name whose availability depends on the version: `added` is the first version that has it,
    `removed` the first that no longer does (with what to use instead)."""

    name: str  # "nki.language.alloc_tiles"; a parameter is "nki.jit(compile_config=)"; a construct is "while <register>:"
    added: str | None = None
    removed: str | None = None
    replacement: str = ""
    deprecated: str | None = None  # first version whose docs deprecate it (still works)
    source: str = ""  # the doc page (under https://awsdocs-neuron.readthedocs-hosted.com/en/) that says so

    def available(self, version: str) -> bool:
        v = _key(version)
        return (self.added is None or v >= _key(self.added)) and (self.removed is None or v < _key(self.removed))

    def versions(self) -> tuple[str, ...]:
        return tuple(v for v in VERSIONS if self.available(v))


_MIG07 = "v2.33.1/nki/migration/index.html (Migrating from NKI 0.6.0 to NKI 0.7.0)"
_RN07 = "v2.33.0/release-notes/components/nki.html (NKI 0.7.0, New Features)"
_REF07 = "v2.33.0/nki/api/generated/"

API: dict[str, Entry] = {
    e.name: e
    for e in (
        # removed in 0.7 (deprecated in 0.6)
        Entry("nki.language.dynamic_range", removed="0.7", replacement="nl.fori_loop(lower, upper, body_fun, step=1)", source=_MIG07),
        Entry("while <register>:", removed="0.7", replacement="nl.while_loop(register, body_fun)", source=_MIG07),
        # deprecated in 0.7: they now behave as Python range
        Entry("nki.language.affine_range", deprecated="0.7", replacement="range", source="latest/nki/deep-dives/nki-loops.html"),
        Entry("nki.language.sequential_range", deprecated="0.7", replacement="range", source="latest/nki/deep-dives/nki-loops.html"),
        Entry("nki.language.static_range", deprecated="0.7", replacement="range", source="latest/nki/deep-dives/nki-loops.html"),
        Entry(
            "nki.isa.NkiInstruction.depends_on(kind=None)",
            deprecated="0.7",
            replacement="depends_on(..., kind=nisa.dependency.runtime | .schedule)",
            source=_REF07 + "nki.isa.NkiInstruction.html",
        ),
        # The tracer front end (specialization by running the kernel as Python): a VirtualRegister has no Python
        # value there, so int()/range()/truth-testing one is a TypeError (v2.32.0/nki/api/generated/nki.isa.VirtualRegister.html)
        Entry(
            "tracer front end", added="0.7", source="latest/about-neuron/announcements/neuron2.x/announce-nki-specialization-change.html"
        ),
        # scalars
        Entry("nki.isa.NkiScalar", added="0.7", source=_REF07 + "nki.isa.NkiScalar.html"),
        Entry("nki.isa.scalar_load", added="0.7", source=_REF07 + "nki.isa.scalar_load.html"),
        Entry("nki.isa.scalar_store", added="0.7", source=_REF07 + "nki.isa.scalar_store.html"),
        Entry("nki.isa.dependency", added="0.7", source="latest/nki/api/generated/nki.isa.dependency.html"),
        Entry("nki.isa.NkiInstruction.depends_on(kind=)", added="0.7", source=_REF07 + "nki.isa.NkiInstruction.html"),
        # no v2.32.0 (0.6) page; NKI 0.8 deprecates it for nki.lnc.sendrecv_compute
        # (latest/about-neuron/announcements/neuron2.x/announce-intent-eos-nki-virtualregister-lnc-apis.html), so it is 0.7's
        Entry("nki.isa.sendrecv_compute", added="0.7", source="latest/nki/api/generated/nki.isa.sendrecv_compute.html"),
        # 64-bit dtypes: the 0.7 nki.language stub defines int64 and uint64 (v2.33.0/_modules/nki/language.html); the 0.6
        # dtype lists (v2.32.0 nki.language "Data Types", nki.api.shared "Supported Data Types") have neither
        Entry("nki.language.int64", added="0.7", source="v2.33.0/_modules/nki/language.html (int64: DType)"),
        Entry("nki.language.uint64", added="0.7", source="v2.33.0/_modules/nki/language.html (uint64: DType)"),
        # NkiTensor.data: the 0.7 grid pages pass `.data` of a plain nl.ndarray tensor to nisa calls (the NkiTileGrid
        # example: `tile = nl.ndarray(...)`, `nisa.dma_copy(dst=tile.data, ...)`); the 0.6 NkiTensor attribute list
        # (v2.32.0/_sources/nki/api/generated/nki.language.NkiTensor.rst) has no `data`
        Entry("nki.language.NkiTensor.data", added="0.7", source=_REF07 + "nki.language.NkiTileGrid.html (example)"),
        Entry("nki.isa.topk(sorted=)", added="0.7", source=_REF07 + "nki.isa.topk.html"),
        Entry("nki.language.empty_like(address=)", added="0.7", source=_REF07 + "nki.language.empty_like.html"),
        # tiled / blocked on-chip layouts
        Entry("nki.language.alloc_tiles", added="0.7", source=_REF07 + "nki.language.alloc_tiles.html"),
        Entry("nki.language.alloc_blocks", added="0.7", source=_REF07 + "nki.language.alloc_blocks.html"),
        Entry("nki.language.tiles", added="0.7", source=_REF07 + "nki.language.tiles.html"),
        Entry("nki.language.blocks", added="0.7", source=_REF07 + "nki.language.blocks.html"),
        Entry("nki.language.NkiGrid", added="0.7", source=_REF07 + "nki.language.NkiGrid.html"),
        Entry("nki.language.NkiTileGrid", added="0.7", source=_REF07 + "nki.language.NkiTileGrid.html"),
        Entry("nki.language.NkiBlockGrid", added="0.7", source=_REF07 + "nki.language.NkiBlockGrid.html"),
        Entry("nki.language.empty_like(transpose_axes=)", added="0.7", source=_REF07 + "nki.language.empty_like.html"),
        # per-kernel compiler configuration
        Entry("nki.jit(compile_config=)", added="0.7", source="v2.33.1/nki/api/generated/nki.jit.html"),
        Entry("nki.jit(specialization_config=)", added="0.7", source="v2.33.1/nki/api/generated/nki.jit.html"),
        Entry("nki.compiler.CompileConfig", added="0.7", source="v2.33.1/nki/api/nki.compiler.html"),
        Entry("nki.compiler.SpecializationConfig", added="0.7", source="v2.33.1/nki/api/nki.compiler.html"),
        Entry("nki.compiler.AddressRotation", added="0.7", source="v2.33.1/nki/api/nki.compiler.html"),
        Entry("NEURON_LOGICAL_NC_CONFIG (kernel LNC degree)", added="0.7", source="v2.33.1/nki/get-started/about/lnc.html"),
        # split variable-length collectives
        Entry("nki.collectives.all_gather_v_prepare", added="0.7", source=_REF07 + "nki.collectives.all_gather_v_prepare.html"),
        Entry("nki.collectives.all_gather_v_trigger", added="0.7", source=_REF07 + "nki.collectives.all_gather_v_prepare.html"),
        Entry("nki.collectives.all_to_all_v_prepare", added="0.7", source=_REF07 + "nki.collectives.all_to_all_v_prepare.html"),
        Entry("nki.collectives.all_to_all_v_trigger", added="0.7", source=_REF07 + "nki.collectives.all_to_all_v_trigger.html"),
        Entry("nki.collectives.rg_partition_op", added="0.7", source=_REF07 + "nki.collectives.ReplicaGroup.html"),
        # NKI 0.8 (Neuron 2.34): documented only after 0.7 (latest/nki/deep-dives/nki-control-flow.html, dated
        # 11/13/2026; the v2.33.0 fori_loop page has no `unroll`). nkidev emulates up to 0.7, so these are newer than
        # every selectable version: a kernel using them gets err_requires_nki_version naming 0.8 and the 0.7 spelling.
        Entry(
            "nki.language.if_else",
            added="0.8",
            replacement="a Python `if` (a bool/int condition is resolved at compile time, as nl.if_else does); a condition "
            "held in an NkiScalar has no 0.7 form",
            source="latest/nki/api/generated/nki.language.if_else.html",
        ),
        Entry(
            "nki.language.fori_loop(unroll=)",
            added="0.8",
            replacement="a Python `for` loop over range() (unrolled at specialization), or nl.fori_loop without unroll=",
            source="latest/nki/deep-dives/nki-control-flow.html",
        ),
    )
}

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


def _key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def at_least(version: str, other: str) -> bool:
    """Whether `version` is `other` or newer."""
    return _key(version) >= _key(other)


def resolve(spec: str | None) -> str:
    """'0.7', '0.7.0' (or None: the default) -> the canonical '0.7'; an unknown version is err_unknown_nki_version."""
    if spec is None:
        return default()
    m = _VERSION.match(str(spec).strip())
    version = f"{m.group(1)}.{m.group(2)}" if m else None
    if version not in VERSIONS or (m.group(3) not in (None, "0")):
        raise NkiUsageError(
            "err_unknown_nki_version",
            f"NKI version {spec!r} is not emulated",
            f"use one of {', '.join(VERSIONS)} (or {', '.join(v + '.0' for v in VERSIONS)}); the default is the newest, {NEWEST}",
        )
    return version


def default() -> str:
    """The version of this thread: `emulate(nki_version=)` / `--nki-version`, else $NKIDEV_NKI_VERSION, else the newest."""
    override = nki_version_override.get()
    if override is not None:
        return override
    env = os.environ.get(ENV_VAR, "").strip()
    return resolve(env) if env else NEWEST


class scope:  # noqa: N801 - used like a function: `with versions.scope("0.6"):`
    """Make `version` the default of the calling thread for a block (None: leave the default alone)."""

    def __init__(self, version: str | None):
        self._token = nki_version_override.set(resolve(version)) if version is not None else None

    def __enter__(self) -> scope:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._token is not None:
            try:
                nki_version_override.reset(self._token)
            except ValueError:  # closed from another context: clear this one's override
                nki_version_override.set(None)
            self._token = None


def entry(name: str) -> Entry:
    return API[name]


def availability(name: str) -> tuple[str, ...]:
    """The versions that have a public name (every version when the table does not list it)."""
    found = API.get(name)
    return found.versions() if found is not None else VERSIONS


def entries_of(module: str) -> list[Entry]:
    """The table's plain names of one module ("nki.language" -> nki.language.alloc_tiles, ...)."""
    prefix = module + "."
    return [e for e in API.values() if e.name.startswith(prefix) and e.name[len(prefix) :].isidentifier()]


def availability_text(name: str) -> str:
    """One line for the docs: which versions have a name, and what replaces it when it was removed."""
    found = API.get(name)
    if found is None:
        return f"NKI versions: {', '.join(VERSIONS)}."
    text = f"NKI versions: {', '.join(found.versions()) or 'none'}"
    if found.added is not None:
        text += f" (new in {found.added})"
    if found.removed is not None:
        text += f" (removed in {found.removed}; use {found.replacement})"
    if found.deprecated is not None:
        text += f" (deprecated in {found.deprecated}; use {found.replacement})"
    return text + "."
