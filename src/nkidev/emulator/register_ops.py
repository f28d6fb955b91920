"""The register instructions of nki.isa: register_alloc, register_move, register_load, register_store (NKI 0.6)
and scalar_load, scalar_store (NKI 0.7, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/
nki.isa.scalar_load.html and .../nki.isa.scalar_store.html)."""

from __future__ import annotations

import numpy as np

from nkidev.emulator.dtypes import to_f32
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import raw, store_raw
from nkidev.emulator.registers import NkiScalar, VirtualRegister, value_of
from nkidev.emulator.tensor import NkiTensor, check_access


def _scalar_of(t: NkiTensor) -> int:
    check_access(t, "src")
    if t.size != 1:
        raise rule_error("err_shape_mismatch", f"register_load needs a 1-element tensor, got {t.shape}", "pass a [1, 1] tile")
    values = np.asarray(raw(t)).reshape(-1)
    return int(values[0]) if t.dtype.is_int else int(to_f32(values, t.dtype)[0])


def register_alloc(x=None) -> VirtualRegister:
    return VirtualRegister(x)


def register_move(dst: VirtualRegister, src) -> None:
    dst.value = value_of(src)


def register_load(dst: VirtualRegister, src: NkiTensor) -> None:
    dst.value = _scalar_of(src)


def register_store(dst: NkiTensor, src) -> None:
    check_access(dst, "dst")
    value = value_of(src)
    store_raw(
        dst,
        np.full(dst.shape, value, dtype=np.int64).astype(dst.dtype.storage)
        if dst.dtype.is_int
        else np.full(dst.shape, value, dtype=np.float32).astype(dst.dtype.storage),
    )
    dst.storage.written = True


# ---------------------------------------------------------------- NKI 0.7 scalars

_SCALAR_DTYPES = ("int32", "int64")


def _scalar_tile(t, what: str) -> None:
    """A 1x1 int32/int64 tensor in SBUF or HBM (unsigned dtypes are refused: use the signed type of that width)."""
    if not isinstance(t, NkiTensor):
        raise rule_error("err_nki_scalar_invalid", f"{what} is a {type(t).__name__}, not a tensor", "pass a (1, 1) nl.int32 tile")
    if t.shape != (1, 1):
        raise rule_error("err_nki_scalar_invalid", f"{what} {t.name!r} has shape {t.shape}", "pass a (1, 1) tile, e.g. t[0:1, 0:1]")
    if t.dtype.name not in _SCALAR_DTYPES:
        hint = f"use nl.int{t.dtype.itemsize * 8}" if t.dtype.kind == "uint" else "use nl.int32 or nl.int64"
        raise rule_error("err_nki_scalar_invalid", f"{what} {t.name!r} is {t.dtype}; scalars are int32 or int64", hint)
    if t.storage.kind == "psum":
        raise rule_error("err_nki_scalar_invalid", f"{what} {t.name!r} is in PSUM", "copy it to SBUF (or HBM) first")


def scalar_load(src: NkiTensor) -> NkiScalar:
    """Load the value of a (1, 1) int32/int64 tile in SBUF or HBM into a device scalar of the same width."""
    _scalar_tile(src, "scalar_load src")
    return NkiScalar(int(np.asarray(raw(src)).reshape(-1)[0]), src.dtype)


def scalar_store(dst: NkiTensor, value: NkiScalar) -> None:
    """Store a device scalar into a (1, 1) tile of exactly its width (a Python int is refused: use nisa.memset)."""
    _scalar_tile(dst, "scalar_store dst")
    if not isinstance(value, NkiScalar):
        raise rule_error(
            "err_nki_scalar_invalid",
            f"scalar_store value is a {type(value).__name__}, not an NkiScalar (on device it would store nothing)",
            "store constants with nisa.memset(dst=t, value=...)",
        )
    if str(value.dtype) != dst.dtype.name:
        raise rule_error(
            "err_nki_scalar_invalid",
            f"scalar_store of an {value.dtype} scalar into {dst.dtype} tile {dst.name!r}; widths must match",
            f"store into an nl.{value.dtype} tile",
        )
    store_raw(dst, np.array([[value.usable("the value of scalar_store")]], dtype=dst.dtype.storage))
    dst.storage.written = True
