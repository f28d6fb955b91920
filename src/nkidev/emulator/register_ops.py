"""The register instructions of nki.isa: register_alloc, register_move, register_load, register_store."""

from __future__ import annotations

import numpy as np

from nkidev.emulator.dtypes import to_f32
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import raw, store_raw
from nkidev.emulator.registers import VirtualRegister, value_of
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
