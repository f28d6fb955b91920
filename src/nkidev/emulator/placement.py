"""On-chip tensors at an explicit address (`address=` of nl.ndarray, nl.empty_like, nl.alloc_tiles, nl.alloc_blocks).

The docs give SBUF/PSUM addresses as (partition_offset, free_offset) and HBM addresses as (free_offset,)
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.language.ndarray.html); alloc_tiles
and alloc_blocks take "the same contract as nki.language.ndarray()" (latest/.../nki.language.alloc_tiles.html,
nki.language.alloc_blocks.html). nkidev's model: a new on-chip tensor at the address of a live one of the same
shape and dtype is that memory (kernels rotate PSUM tiles over banks this way), starting a new accumulation group;
anything else at an address is fresh memory. HBM addresses are not modelled (the tensor is allocated as usual).

The free offset is in bytes. The migration guide (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.1/nki/
migration/index.html, "Improved allocation API") places PSUM tiles at bank_id * 2048 and computes its SBUF
addresses as byte offsets (n_k * 2 for bfloat16), though its prose calls the free offset an element offset; for
dtypes of one byte or more that reading only places a tile higher, so checking bytes never refuses a placement
the other reading accepts. nki-library's allocators (core/utils/allocator.py, modular_allocator.py) use byte
offsets too. A placed tile lies inside its memory: partitions [p, p + P) within the 128 partitions, and bytes
[f, f + bytes per partition) within one partition, whose size is the target's physical SBUF bytes_per_partition
(not the smaller usable share left to the compiler's allocator) or the PSUM's 16 KiB of 8 banks (same page).

Imports context, dtypes, location and tensor only: language.py and grids.py both place through it.
"""

from __future__ import annotations

import math

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
    t = allocate(shape, dt, buffer, name)  # first: a tile that fits no address is the shape's error, not the address's
    if isinstance(address, tuple | list) and len(address) == 2:
        _check_inside(buffer, key[1], tuple(t.shape), dt, ctx.target)
    ctx.placed[key] = t.storage
    return t


def _check_inside(buffer: MemoryRegion, address: tuple[int, int], shape: tuple, dtype, target) -> None:
    """The placed tile's partitions and bytes lie inside the buffer (err_address_out_of_range, with the limit)."""
    partition, offset = address
    partitions, limit = target.sbuf.partitions, _capacity(buffer, target)
    rows = shape[0] if shape else 1
    per_partition = (math.prod(shape[1:]) if len(shape) > 1 else 1) * dtype.itemsize
    where = f"{buffer.name.upper()} address ({partition}, {offset})"
    if partition + rows > partitions:
        raise rule_error(
            "err_address_out_of_range",
            f"{where}: the tile's {rows} partitions end at partition {partition + rows}, past the {partitions} of {target.name}",
            f"use a partition offset of at most {partitions - rows} for {rows} partitions",
        )
    if offset + per_partition > limit:
        raise rule_error(
            "err_address_out_of_range",
            f"{where}: the tile's {per_partition} bytes per partition end at byte {offset + per_partition}, past the "
            f"{limit} bytes of one {buffer.name.upper()} partition on {target.name}",
            f"use a byte offset of at most {limit - per_partition} for this tile, or a smaller tile",
        )


def _capacity(buffer: MemoryRegion, target) -> int:
    return target.psum.bytes_per_partition if buffer == MemoryRegion.psum else target.sbuf.bytes_per_partition


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
