"""NKI 0.7 tiled and blocked layouts: `nl.alloc_tiles` / `nl.alloc_blocks` allocate one backing tensor and
return a grid of tiles (or of blocks of tiles); `nl.tiles` / `nl.blocks` are pure views of an existing tensor
or grid. Indexing a grid selects tiles and keeps the grid type (`g[i, j]` is a one-tile grid, `g[i, :]` a row);
`.data` is the exact NkiTensor of a selection, for passing to `nisa.*`.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/ nki.language.alloc_tiles.html,
nki.language.alloc_blocks.html, nki.language.tiles.html, nki.language.blocks.html, nki.language.NkiTileGrid.html,
nki.language.NkiBlockGrid.html (and v2.33.0/.../nki.language.empty_like.html).

Layout. The docs fix HBM backing storage to the compact logical extent and call the SBUF/PSUM layout a
"dense rank-two capacity layout" without giving the mapping; nkidev's model of it: the backing tile has
`tile_shape[0]` partitions and one *slot* of `prod(tile_shape[1:])` free elements per tile (untiled leading
dims count as coordinates too), slots in row-major coordinate order. A tile is one contiguous run of free
elements on its partitions, clamped at remainders; a row of tiles along the last axis of a rank-2 tile shape is
one contiguous view, other multi-tile on-chip selections have no single access pattern (`is_data_representable`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nkidev.emulator.dtypes import to_nki_dtype
from nkidev.emulator.location import kernel_location
from nkidev.emulator.placement import ON_CHIP, placed
from nkidev.emulator.tensor import MemoryRegion, NkiTensor, allocate
from nkidev.errors import KernelRuleError, KernelTypeError, KernelValueError


def _type_error(message: str, fix: str = "") -> KernelTypeError:
    return KernelTypeError("err_tile_grid_invalid", message, fix or None, kernel_location())


def _value_error(message: str, fix: str = "") -> KernelValueError:
    return KernelValueError("err_tile_grid_invalid", message, fix or None, kernel_location())


def _shape(value, what: str, min_rank: int = 1) -> tuple[int, ...]:
    """A tuple of exact Python ints (TypeError otherwise), each positive (ValueError otherwise)."""
    if not isinstance(value, tuple) or not all(type(v) is int for v in value):
        raise _type_error(f"{what}={value!r} is not a tuple of Python ints", f"pass {what} as a tuple such as (128, 512)")
    if len(value) < min_rank:
        raise _value_error(f"{what}={value} has {len(value)} dims; at least {min_rank} are needed", f"give {what} {min_rank} or more dims")
    if any(v <= 0 for v in value):
        raise _value_error(f"{what}={value} has a zero or negative entry", "every entry must be a positive int")
    return value


@dataclass(frozen=True)
class _Layout:
    """The backing storage one family of grids shares, and how tile coordinates map onto it."""

    tensor: NkiTensor  # logical: the tensor the tiles are slices of; dense: the (P, slots * F) on-chip backing tile
    element_shape: tuple[int, ...]
    tile_shape: tuple[int, ...]
    dense: bool

    @property
    def prefix(self) -> int:
        return len(self.element_shape) - len(self.tile_shape)

    @property
    def counts(self) -> tuple[int, ...]:
        """Tile coordinates per axis: untiled leading dims one per element, tiled dims ceil(extent / tile)."""
        e, t, k = self.element_shape, self.tile_shape, self.prefix
        return e[:k] + tuple(math.ceil(e[k + d] / t[d]) for d in range(len(t)))

    def nominal(self, axis: int) -> int:
        return 1 if axis < self.prefix else self.tile_shape[axis - self.prefix]

    def extent(self, axis: int, lo: int, hi: int) -> int:
        """Elements covered by tile coordinates [lo, hi) of an axis (clamped at the remainder)."""
        size = self.nominal(axis)
        return min(hi * size, self.element_shape[axis]) - lo * size

    def slot_width(self) -> int:
        return math.prod(self.tile_shape[1:])


@dataclass(frozen=True)
class _Axis:
    units: tuple[tuple[int, int], ...]  # the selected units, each a range [lo, hi) of tile coordinates
    consumed: bool = False  # integer-indexed: gone from the grid's shape, still part of the selection

    def contiguous(self) -> bool:
        return all(a[1] == b[0] for a, b in zip(self.units, self.units[1:]))


class NkiGrid:
    """A selection of tiles (NkiTileGrid) or of blocks of tiles (NkiBlockGrid) of one backing allocation.

    Attributes (as documented): shape, tile_shape, element_shape, buffer, dtype, data, index_step_elements,
    is_data_representable, is_remainder; NkiBlockGrid adds block_shape.
    """

    def __init__(self, *, layout: _Layout, axes: tuple[_Axis, ...], block_shape: tuple[int, ...] | None = None):
        self._layout = layout
        self._axes = axes
        self._block = block_shape

    # ---------------------------------------------------------------- documented attributes
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.units) for a in self._axes if not a.consumed)

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return self._layout.tile_shape

    @property
    def buffer(self) -> MemoryRegion:
        return self._layout.tensor.buffer

    @property
    def dtype(self):
        return self._layout.tensor.dtype

    @property
    def element_shape(self) -> tuple[int, ...]:
        """Exact extents of the selection (clamped at remainders; consumed untiled dims dropped)."""
        lay = self._layout
        out = []
        for i, a in enumerate(self._axes):
            if i < lay.prefix and a.consumed:
                continue
            out.append(sum(lay.extent(i, lo, hi) for lo, hi in a.units))
        return tuple(out)

    @property
    def index_step_elements(self) -> tuple[int, ...]:
        """How far one grid coordinate moves in source elements, per grid axis."""
        lay = self._layout
        out = []
        for i, a in enumerate(self._axes):
            if a.consumed:
                continue
            step = a.units[1][0] - a.units[0][0] if len(a.units) > 1 else a.units[0][1] - a.units[0][0]
            out.append(step * lay.nominal(i))
        return tuple(out)

    @property
    def is_remainder(self) -> bool:
        """Whether the selection includes a tile clamped at the end of its axis."""
        lay = self._layout
        return any(
            lay.extent(i, hi - 1, hi) < lay.nominal(i) for i, a in enumerate(self._axes) if i >= lay.prefix for _, hi in a.units[-1:]
        )

    @property
    def is_data_representable(self) -> bool:
        """Whether one native access pattern covers the selection exactly (so `.data` works)."""
        return self._data_view() is not None

    @property
    def data(self) -> NkiTensor:
        view = self._data_view()
        if view is None:
            raise KernelRuleError(
                "err_tile_grid_invalid",
                f"the selection {self.shape} of a {type(self).__name__} on {self.buffer.value} has no single access pattern",
                "select one tile (or a contiguous row of tiles) and use its .data, or loop over the tiles",
                kernel_location(),
            )
        return view

    # ---------------------------------------------------------------- selection
    def __getitem__(self, key) -> NkiGrid:
        key = key if isinstance(key, tuple) else (key,)
        free = [i for i, a in enumerate(self._axes) if not a.consumed]
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (len(free) - len(key) + 1) + key[at + 1 :]
        if len(key) > len(free):
            raise _value_error(f"{len(key)} indices for a grid of shape {self.shape}", "index each grid axis at most once")
        axes = list(self._axes)
        for i, k in zip(free, key):
            axes[i] = _select(axes[i], k, len(free), self.shape)
        return type(self)(layout=self._layout, axes=tuple(axes), block_shape=self._block)

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(shape={self.shape}, tile_shape={self.tile_shape}, element_shape={self.element_shape}, buffer={self.buffer.value})"

    # ---------------------------------------------------------------- the operand of a selection
    def _data_view(self) -> NkiTensor | None:
        return self._dense_view() if self._layout.dense else self._logical_view()

    def _logical_view(self) -> NkiTensor | None:
        lay = self._layout
        if not all(a.contiguous() for a in self._axes):
            return None
        key = []
        for i, a in enumerate(self._axes):
            lo, hi = a.units[0][0], a.units[-1][1]
            if i < lay.prefix:
                key.append(lo if a.consumed else slice(lo, hi))
            else:
                size = lay.nominal(i)
                key.append(slice(lo * size, min(hi * size, lay.element_shape[i])))
        return lay.tensor[tuple(key)]

    def _dense_view(self) -> NkiTensor | None:
        lay = self._layout
        tiles = [a.units[0][0] if len(a.units) == 1 and a.units[0][1] - a.units[0][0] == 1 else None for a in self._axes]
        last = len(self._axes) - 1
        row = self._axes[last]
        if any(t is None for t in tiles[:last]) or not row.contiguous():
            return None  # several tiles on one partition range are several slots, not one pattern
        lo, hi = row.units[0][0], row.units[-1][1]
        if hi - lo > 1 and len(lay.tile_shape) > 2 and math.prod(lay.tile_shape[1:-1]) != 1:
            return None
        coords = [*tiles[:last], lo]
        slot = 0
        for n, c in zip(lay.counts, coords):
            slot = slot * n + c
        width = lay.slot_width()
        rows = lay.extent(lay.prefix, tiles[lay.prefix], tiles[lay.prefix] + 1)
        start = slot * width
        backing = lay.tensor
        if hi - lo > 1 or len(lay.tile_shape) == 2:
            cols = (hi - lo - 1) * width + lay.extent(last, hi - 1, hi) * (width // lay.tile_shape[-1])
            view = backing[0:rows, start : start + cols]
            return view if len(lay.tile_shape) == 2 else view.reshape((rows, *([1] * (len(lay.tile_shape) - 2)), cols))
        tile = backing[0:rows, start : start + width].reshape((rows, *lay.tile_shape[1:]))
        exact = tuple(
            slice(0, lay.extent(lay.prefix + d, tiles[lay.prefix + d], tiles[lay.prefix + d] + 1)) for d in range(1, len(lay.tile_shape))
        )
        return tile[(slice(None), *exact)]


class NkiTileGrid(NkiGrid):
    """A grid of tiles: `shape` counts tiles; `g[i, j]` is a one-tile grid; `.data` its operand."""


class NkiBlockGrid(NkiGrid):
    """A grid of blocks of `block_shape` tiles; `nl.tiles(block)` gives the tiles of a selected block."""

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self._block


def _select(axis: _Axis, k, rank: int, shape) -> _Axis:
    n = len(axis.units)
    if isinstance(k, bool) or not isinstance(k, int | slice):
        raise _type_error(f"grid index {k!r}", "index grids with ints and slices")
    if isinstance(k, int):
        i = k + n if k < 0 else k
        if not 0 <= i < n:
            raise _value_error(f"grid index {k} is out of range for an axis of {n}", f"use an index in [0, {n})")
        return _Axis((axis.units[i],), consumed=True)
    start, stop, step = k.indices(n)
    if step <= 0:
        raise _value_error(f"grid slice step {step}", "use a positive step")
    picked = axis.units[start:stop:step]
    if not picked:
        raise _value_error(f"grid slice {k} of an axis of {n} is empty", "select at least one tile")
    return _Axis(picked)


def _tile_axes(lay: _Layout) -> tuple[_Axis, ...]:
    return tuple(_Axis(tuple((c, c + 1) for c in range(n))) for n in lay.counts)


def _block_axes(lay: _Layout, tile_axes: tuple[_Axis, ...], block_shape: tuple[int, ...]) -> tuple[_Axis, ...]:
    out = list(tile_axes[: lay.prefix])
    for d, b in enumerate(block_shape):
        a = tile_axes[lay.prefix + d]
        if not a.contiguous():
            raise _value_error("blocks of a grid selection with gaps", "block a contiguous selection of tiles")
        units = a.units
        out.append(_Axis(tuple((units[i][0], units[min(i + b, len(units)) - 1][1]) for i in range(0, len(units), b)), a.consumed))
    return tuple(out)


def _check_tile_shape(tile_shape, element_shape) -> None:
    if len(tile_shape) > len(element_shape):
        raise _value_error(
            f"tile_shape {tile_shape} has more dims than element_shape {element_shape}", "tile_shape applies to the trailing dims"
        )


def _region(buffer) -> MemoryRegion:
    if not isinstance(buffer, MemoryRegion):
        raise _type_error(f"buffer={buffer!r} is not an NKI memory region", "pass nl.sbuf, nl.psum or nl.shared_hbm")
    return buffer


def _layout(tile_shape, element_shape, buffer, dtype, name: str, address=None) -> _Layout:
    """The backing of a new grid; `address` places an on-chip backing as nl.ndarray(address=) places a tensor
    (placement.py: same rules, and a grid at the address of a live backing of its shape and dtype is that memory)."""
    tile_shape = _shape(tile_shape, "tile_shape", 2)
    element_shape = _shape(element_shape, "element_shape")
    _check_tile_shape(tile_shape, element_shape)
    region = _region(buffer)
    dt = to_nki_dtype(dtype)
    if region in ON_CHIP:
        probe = _Layout(None, element_shape, tile_shape, True)
        slots = math.prod(probe.counts)
        shape = (tile_shape[0], slots * probe.slot_width())
        backing = allocate(shape, dt, region, name) if address is None else placed(shape, dt, region, name, address)
        return _Layout(backing, element_shape, tile_shape, True)
    return _Layout(allocate(element_shape, dt, region, name), element_shape, tile_shape, False)  # HBM: as nl.ndarray, unplaced


def alloc_tiles(*, tile_shape, element_shape, buffer, dtype, address=None, name: str = "") -> NkiTileGrid:
    """One uninitialized allocation of `element_shape` elements, returned as a grid of `tile_shape` tiles
    (tile_shape covers the trailing dims; partial final tiles are clamped); `address` as nl.ndarray's."""
    lay = _layout(tile_shape, element_shape, buffer, dtype, name or "tile_grid", address)
    return NkiTileGrid(layout=lay, axes=_tile_axes(lay))


def alloc_blocks(*, tile_shape, block_shape, element_shape, buffer, dtype, address=None, name: str = "") -> NkiBlockGrid:
    """Like alloc_tiles, grouped into blocks of `block_shape` tiles per tiled dim (no extra allocation)."""
    block_shape = _shape(block_shape, "block_shape")
    if len(block_shape) != len(tile_shape if isinstance(tile_shape, tuple) else ()):
        raise _value_error(f"block_shape {block_shape} must have the rank of tile_shape {tile_shape}", "give one block size per tiled dim")
    lay = _layout(tile_shape, element_shape, buffer, dtype, name or "block_grid", address)
    return NkiBlockGrid(layout=lay, axes=_block_axes(lay, _tile_axes(lay), block_shape), block_shape=block_shape)


def _tensor_layout(t: NkiTensor, tile_shape) -> _Layout:
    if tile_shape is None:
        raise _type_error("tile_shape is required when tiling a tensor", "pass tile_shape=(rows, cols)")
    tile_shape = _shape(tile_shape, "tile_shape", 2)
    _check_tile_shape(tile_shape, tuple(t.shape))
    return _Layout(t, tuple(t.shape), tile_shape, False)


def _same_tiles(grid: NkiGrid, tile_shape) -> None:
    if tile_shape is not None and tuple(tile_shape) != grid.tile_shape:
        raise _value_error(f"re-tiling a grid of {grid.tile_shape} tiles as {tile_shape}", "tile the underlying tensor instead")


def tiles(source, *, tile_shape=None) -> NkiTileGrid:
    """A tile-grid view of a tensor, or the tiles of a grid selection (e.g. of one block); no data moves."""
    if isinstance(source, NkiTensor):
        lay = _tensor_layout(source, tile_shape)
        return NkiTileGrid(layout=lay, axes=_tile_axes(lay))
    if isinstance(source, NkiGrid):
        _same_tiles(source, tile_shape)
        lay = source._layout
        axes = []
        for i, a in enumerate(source._axes):
            units = tuple((c, c + 1) for lo, hi in a.units for c in range(lo, hi))
            # A selected block exposes its interior tile coordinates along every tiled dim, even where the block
            # holds one tile (block_shape 1, or a clamped last block): the grid's rank does not depend on remainders.
            block_axis = isinstance(source, NkiBlockGrid) and i >= lay.prefix
            axes.append(_Axis(units, a.consumed and len(units) == 1 and not block_axis))
        return NkiTileGrid(layout=lay, axes=tuple(axes))
    raise _type_error(f"nl.tiles of a {type(source).__name__}", "pass an NkiTensor, NkiTileGrid or NkiBlockGrid")


def blocks(source, *, tile_shape=None, block_shape) -> NkiBlockGrid:
    """A block-grid view: blocks of `block_shape` tiles over a tensor or a tile grid."""
    if isinstance(source, NkiBlockGrid):
        if block_shape is not None and tuple(block_shape) != source.block_shape:
            raise _value_error(f"re-blocking a grid of {source.block_shape} blocks", "block the tile grid instead")
        _same_tiles(source, tile_shape)
        return source
    grid = tiles(source, tile_shape=tile_shape)
    block_shape = _shape(block_shape, "block_shape")
    if len(block_shape) != len(grid.tile_shape):
        raise _value_error(
            f"block_shape {block_shape} must have the rank of tile_shape {grid.tile_shape}", "give one block size per tiled dim"
        )
    return NkiBlockGrid(layout=grid._layout, axes=_block_axes(grid._layout, grid._axes, block_shape), block_shape=block_shape)


def empty_like_grid(grid: NkiGrid, dtype=None, buffer=None, name: str = "", address=None) -> NkiGrid:
    """A new allocation with the grid's kind, navigation shape, tile shape, block grouping and exact extents
    (a selection with gaps is packed densely), placed at `address` when given."""
    lay = grid._layout
    element = []
    for i, a in enumerate(grid._axes):
        if i < lay.prefix and a.consumed:
            continue
        element.append(sum(lay.extent(i, lo, hi) for lo, hi in a.units))
    kept = [a for i, a in enumerate(grid._axes) if not (i < lay.prefix and a.consumed)]
    new_buffer = buffer if buffer is not None else lay.tensor.buffer
    new = _layout(lay.tile_shape, tuple(element), new_buffer, dtype or lay.tensor.dtype, name, address)
    axes = list(_tile_axes(new))
    if isinstance(grid, NkiBlockGrid):
        axes = list(_block_axes(new, tuple(axes), grid.block_shape))
    for i, a in enumerate(kept):
        if a.consumed:
            axes[i] = _Axis(axes[i].units[:1], consumed=True)
    return type(grid)(layout=new, axes=tuple(axes), block_shape=grid._block)
