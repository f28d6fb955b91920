"""On-chip tensors at an explicit address (`address=` of nl.ndarray, nl.empty_like, nl.alloc_tiles, nl.alloc_blocks).

The docs give SBUF/PSUM addresses as (partition_offset, free_offset) and HBM addresses as (free_offset,)
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.language.ndarray.html); alloc_tiles
and alloc_blocks take "the same contract as nki.language.ndarray()" (latest/.../nki.language.alloc_tiles.html,
nki.language.alloc_blocks.html). nkidev's model: a new on-chip tensor at the address of a live one of the same
shape and dtype is that memory (kernels rotate PSUM tiles over banks this way), starting a new accumulation group;
anything else at an address is fresh memory. HBM addresses are not modelled (the tensor is allocated as usual).

Imports context, dtypes, location and tensor only: language.py and grids.py both place through it.
"""

from __future__ import annotations

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator.dtypes import to_nki_dtype
from nkidev.emulator.location import rule_error
from nkidev.emulator.tensor import MemoryRegion, NkiTensor, allocate

ON_CHIP = (MemoryRegion.sbuf, MemoryRegion.psum)


def placed(shape, dtype, buffer: MemoryRegion, name: str, address) -> NkiTensor:
    """The tensor at `address` of an on-chip buffer, after the address rules (err_invalid_argument)."""
    ctx = _ctx.current()
    if buffer == MemoryRegion.psum:
        _check_psum_bank(address, ctx.target.psum.bank_bytes)
    parts = address if isinstance(address, tuple | list) else (address,)
    if not all(isinstance(a, int | np.integer) and not isinstance(a, bool) and a >= 0 for a in parts):
        raise rule_error("err_invalid_argument", f"address={address!r}", "pass address as non-negative ints, e.g. (0, 0)")
    key = (buffer.value, tuple(int(a) for a in address) if isinstance(address, tuple | list) else int(address))
    dt = to_nki_dtype(dtype)
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    old = ctx.placed.get(key)
    if old is not None and tuple(old.array.shape) == shape and old.dtype == dt:
        old.flush()
        old.acc = None
        return NkiTensor(old.array, old, dt)
    t = allocate(shape, dt, buffer, name)
    ctx.placed[key] = t.storage
    return t


def _check_psum_bank(address, bank: int) -> None:
    """A PSUM address is (partition_offset, free byte offset) on a bank boundary."""
    if (
        not isinstance(address, tuple | list)
        or len(address) != 2
        or not all(isinstance(v, int | np.integer) for v in address)
        or int(address[1]) % bank
    ):
        raise rule_error(
            "err_invalid_argument",
            f"PSUM address {address} does not start on a bank boundary",
            f"use address=(partition_offset, bank_id * {bank})",
        )
