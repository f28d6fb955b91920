"""Version gates: the names of `versions.API` raise a named error when the running kernel's NKI version lacks them.

Modules opt in at their end with `gate.apply(globals(), "nki.language")`: each listed name found there is
wrapped so a call (or, for a class, a construction) first checks the version the running program is checked
against. Names stay importable under every version, so `hasattr` and the docs see them; only using one fails.

Layer 2: imports context, versions, location and errors.
"""

from __future__ import annotations

import functools
from enum import EnumMeta

from nkidev.emulator import context as _ctx
from nkidev.emulator import versions
from nkidev.emulator.location import kernel_location
from nkidev.errors import NkiVersionAttributeError, NkiVersionError

_SHORT = (("nki.language.", "nl."), ("nki.isa.", "nisa."), ("nki.collectives.", "nki.collectives."), ("nki.compiler.", "nki.compiler."))


def short_name(name: str) -> str:
    """The spelling kernels use: nki.language.alloc_tiles -> nl.alloc_tiles."""
    for long, short in _SHORT:
        if name.startswith(long):
            return short + name[len(long) :]
    return name


def version_error(entry: versions.Entry, version: str, lookup: bool = False) -> NkiVersionError:
    """The error for using `entry` under `version` (which lacks it); `lookup`: the name was looked up on its module
    (the error is then also an AttributeError, so feature tests with hasattr() see the name missing)."""
    error = NkiVersionAttributeError if lookup else NkiVersionError
    name = short_name(entry.name)
    if entry.removed is not None and versions.at_least(version, entry.removed):
        return error(
            "err_removed_in_nki_version",
            f"{name} was removed in NKI {entry.removed} (this kernel is checked against NKI {version})",
            f"use {entry.replacement} (`nkidev migrate FILE` rewrites it), or check the kernel against the version it was "
            f"written for: --nki-version {versions.VERSIONS[0]}",
            kernel_location(),
        )
    if not versions.at_least(versions.NEWEST, entry.added):
        # newer than every version nkidev emulates: no --nki-version can select it, so name what 0.7 code does instead
        return error(
            "err_requires_nki_version",
            f"{name} is new in NKI {entry.added} (this kernel is checked against NKI {version}; nkidev emulates NKI "
            f"{versions.VERSIONS[0]} to {versions.NEWEST})",
            f"write it for NKI {versions.NEWEST}: {entry.replacement}" if entry.replacement else f"avoid it under NKI {version}",
            kernel_location(),
        )
    return error(
        "err_requires_nki_version",
        f"{name} is new in NKI {entry.added} (this kernel is checked against NKI {version})",
        f"check it against NKI {entry.added} or newer: --nki-version {entry.added}, nki_version={entry.added!r} or "
        f"{versions.ENV_VAR}={entry.added}",
        kernel_location(),
    )


def current_version() -> str:
    return _ctx.current().version


def require(name: str) -> None:
    """Raise the named version error unless the running version has `name` (a key of versions.API)."""
    entry = versions.API[name]
    version = current_version()
    if not entry.available(version):
        raise version_error(entry, version)


def missing_name(module: str, attr: str) -> NkiVersionAttributeError | None:
    """For a module's `__getattr__`: the error for `module.attr` when versions.API lists it and the running version
    lacks it (None: not a versioned name, so the module's plain AttributeError applies)."""
    entry = versions.API.get(f"{module}.{attr}")
    if entry is None or entry.available(current_version()):
        return None
    return version_error(entry, current_version(), lookup=True)


def has(name: str) -> bool:
    return versions.API[name].available(current_version())


def gated(obj, name: str):
    """`obj` (a function or class) checking the running version before each use."""
    entry = versions.API[name]
    if isinstance(obj, type):
        init = obj.__init__

        @functools.wraps(init)
        def checked_init(self, *args, **kwargs):
            version = current_version()
            if not entry.available(version):
                raise version_error(entry, version)
            init(self, *args, **kwargs)

        obj.__init__ = checked_init
        return obj

    @functools.wraps(obj)
    def checked(*args, **kwargs):
        version = current_version()
        if not entry.available(version):
            raise version_error(entry, version)
        return obj(*args, **kwargs)

    checked.__nki_gate__ = entry
    return checked


def apply(namespace: dict, module: str) -> None:
    """Gate every callable name of `module` that versions.API lists and `namespace` defines."""
    for entry in versions.entries_of(module):
        attr = entry.name[len(module) + 1 :]
        obj = namespace.get(attr)
        # enums stay plain (their members are data); what uses them checks the version
        if obj is not None and callable(obj) and not isinstance(obj, EnumMeta) and (entry.added is not None or entry.removed is not None):
            namespace[attr] = gated(obj, entry.name)
