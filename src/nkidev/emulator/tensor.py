"""Tensors: storages (one per allocation) and NkiTensor views over them.

A view wraps a NumPy view of its storage, so slicing, reshaping and `.ap()` patterns cost one
NumPy call and writes through a view land in the storage. On-chip storages have the partition
dim first; the byte range of any view (for the trace and the cost model's dependencies) comes
from its data pointer and strides.

Layer: this module imports only the layers below it (dtypes, context, location, registers, trace).
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from enum import Enum
from itertools import count

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator.context import thread_state as _thread
from nkidev.emulator.dtypes import NkiDType, fill_uninitialized, fill_value, scratch_runs, to_f32, to_nki_dtype
from nkidev.emulator.location import assigned_name, kernel_location, kernel_site, rule_error, site_name
from nkidev.emulator.registers import NkiScalar, VirtualRegister
from nkidev.emulator.trace import Access, Layout
from nkidev.errors import NkiNotSupportedError


class MemoryRegion(Enum):
    """Memory region constants for NKI tensors (nl.sbuf, nl.psum, nl.hbm, nl.private_hbm, nl.shared_hbm)."""

    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"
    hbm = "private_hbm"  # alias of private_hbm, as in NKI


_KIND = {MemoryRegion.sbuf: "sbuf", MemoryRegion.psum: "psum", MemoryRegion.private_hbm: "hbm", MemoryRegion.shared_hbm: "hbm"}
_KIND_OF = {id(region): kind for region, kind in _KIND.items()}  # by identity: Enum.__hash__ is Python code
_SHARED_HBM = MemoryRegion.shared_hbm  # attribute reads on an Enum class go through EnumType.__getattr__


def shared_storage(st: Storage) -> bool:
    """HBM every program of a launch sees: kernel arguments and shared_hbm tensors (the rest of HBM is private to
    its program)."""
    return st.kind == "hbm" and (st.role == "input" or st.region is _SHARED_HBM)


def to_region(buffer) -> MemoryRegion:
    if isinstance(buffer, MemoryRegion):
        return buffer
    if buffer is None:
        return MemoryRegion.sbuf
    raise rule_error(
        "err_invalid_argument",
        f"buffer={buffer!r} is not a memory region",
        "pass nl.sbuf, nl.psum, nl.hbm, nl.private_hbm or nl.shared_hbm (string names are rejected)",
    )


_ids = count(1)


class Storage:
    """One allocation: a contiguous NumPy array plus what the rules and the trace need to know."""

    __slots__ = (
        "id",
        "region",
        "kind",
        "array",
        "dtype",
        "name",
        "role",
        "location",
        "_ptr",
        "pstride",
        "pp_bytes",
        "nbytes",
        "written",
        "version",
        "origin",
        "acc",
        "pending",
        "life",
        "stamped",
        "handed_out",
        "_usage",
        "unfilled",
        "spans",
        "recyclable",
        "borrowed",
        "saved",
        "copies",
        "__weakref__",
    )

    def __init__(
        self,
        array: np.ndarray,
        dtype: NkiDType,
        region: MemoryRegion,
        name: str,
        role: str,
        location: str | None,
        checked: _Checked | None = None,
    ):
        self.id = next(_ids)
        self.region = region
        self.array = array
        self.dtype = dtype
        self.name = name or f"t{self.id}"
        self.role = role  # "input" | "output" | "internal"
        self.location = location
        self._ptr = None  # the data address, computed when first needed (views mostly know their offset)
        if checked is not None:  # a fresh C-order array of checked.shape: its layout is known
            self.kind, self.pstride, self.pp_bytes, self.nbytes = checked.kind, checked.pstride, checked.pp_bytes, checked.nbytes
        else:
            self.kind = _KIND_OF[id(region)]
            self.pstride = array.strides[0] if array.ndim else array.itemsize  # bytes per partition (on-chip)
            self.pp_bytes = (math.prod(array.shape[1:]) if array.ndim > 1 else 1) * dtype.itemsize
            self.nbytes = array.nbytes
        self.written = False
        # What determines its values (psum.identity keys converted matmul operands by it): (id, version), the
        # version counting the instructions that wrote it, or `origin` while it holds a whole copy of another
        # storage's view (the DMA that loaded it sets it; any later write clears it)
        self.version = 0
        self.origin = None
        self.acc = None  # PSUM: elements whose last writer was a matmul (accumulation group open)
        # values not yet computed, settled by flush() before any other access: PSUM's deferred matmul groups (a
        # dict, psum.py), or the last instruction queued on the run's worker thread that accesses it (deferred.py)
        self.pending = None
        self.life = None  # on-chip: its index in the program's Occupancy, whose columns hold its accesses (liveness.py)
        self.stamped = 0  # the last clock tick that stamped it (ticks start at 1)
        self.handed_out = False  # the run returned this array to the caller (launch: outputs without a copy)
        self._usage = None  # the Memory that counts its bytes while Python holds it
        # A fresh allocation's fill, not yet done (see "Lazily filled allocations" below): what it holds until
        # written (a Fill), and the byte ranges instructions wrote in full since (sorted, merged, or None)
        self.unfilled = None
        self.spans = None
        self.recyclable = False  # its memory came from the recycler and may go back to it (see "Recycled memory")
        # An input whose memory is the caller's own array (see from_array), and that array's values as they were
        # before the run's first write to it (restored if the run fails)
        self.borrowed = False
        self.saved = None
        self.copies = None  # weak references to the storages that copy it lazily (see "Lazy copies")

    @property
    def ptr(self) -> int:
        if self._ptr is None:
            self._ptr = self.array.__array_interface__["data"][0]
        return self._ptr

    def flush(self) -> None:
        """Settle the values of this storage before anything touches it: compute its deferred matmul groups
        (psum.py), or wait for the worker thread's instructions that access it (deferred.py); then fill what
        no write covered of a fresh allocation (fill_rest)."""
        pending = self.pending
        if pending.__class__ is dict:
            self.pending = None
            for group in pending.values():
                group.compute()
        elif pending is not None and pending is not UNFILLED:
            # on the main thread: waits and clears the mark; on the worker: already in order, and the fill is
            # the main thread's (it alone changes `unfilled`)
            if not pending.settle():
                return
        if self.unfilled is not None:
            self.fill_rest()

    def keep_original(self) -> None:
        """A write to a borrowed input's memory is about to begin: keep the caller's values first, once."""
        if self.saved is None:
            self.saved = self.array.copy()

    def restore_original(self) -> None:
        """The run failed: the caller's array gets back the values it had (as if the run worked on a copy)."""
        if self.saved is not None:
            np.copyto(self.array, self.saved)
            self.saved = None

    def fill_rest(self) -> None:
        """Fill the bytes of a fresh allocation that no write covered with what it holds until written (the
        uninitialized sentinel or EmulatorOptions.fill): its values are then what filling it when allocated
        would have left. Nothing else reads or writes those bytes meanwhile (they are no write's)."""
        fill = self.unfilled
        if fill is None:
            return
        spans = self.spans
        self.unfilled = self.spans = None
        if self.pending is UNFILLED:
            self.pending = None
        (COPIES if fill.__class__ is CopyFill else FILLS)[0] += 1
        if spans is None:
            fill.into(self.array)
            return
        flat = self.array.reshape(-1)  # a fresh storage is one C-order array: a view
        item = flat.itemsize
        at = 0
        for lo, hi in spans:
            if lo > at:
                fill.part(flat, at // item, lo // item)
            at = hi
        if at < self.nbytes:
            fill.part(flat, at // item, flat.size)

    def wrote(self, lo: int, hi: int) -> None:
        """An instruction is about to overwrite bytes [lo, hi) of this fresh allocation in full (each byte, no
        read of the old values): they need no fill. All of it written: no fill at all."""
        if lo <= 0 and hi >= self.nbytes:
            self.unfilled = self.spans = None
            if self.pending is UNFILLED:
                self.pending = None
            return
        item = self.array.itemsize
        spans = self.spans
        if lo % item or hi % item or (spans is not None and len(spans) >= _MAX_SPANS):
            self.fill_rest()  # part of an element (a narrower view), or too scattered to track: fill now
            return
        if spans is None:
            self.spans = [(lo, hi)]
            return
        merged = []
        for a, b in spans:  # few spans (a loop writes a tensor's rows in order: one, growing)
            if b < lo or a > hi:
                merged.append((a, b))
            else:
                lo, hi = min(a, lo), max(b, hi)
        merged.append((lo, hi))
        merged.sort()
        if merged[0][0] <= 0 and merged[0][1] >= self.nbytes:
            self.wrote(0, self.nbytes)
            return
        self.spans = merged

    def written_within(self, lo: int, hi: int) -> bool:
        """Whether bytes [lo, hi) were all written since this fresh allocation was made (reading them needs no fill)."""
        spans = self.spans
        if spans is not None:
            for a, b in spans:
                if a <= lo and hi <= b:
                    return True
        return False

    def overwrite_all(self) -> None:
        """Code outside an instruction is about to write every element (nl.full of an HBM tensor): no fill."""
        if self.unfilled is not None:
            self.wrote(0, self.nbytes)

    def __del__(self):
        memory = self._usage
        if memory is not None:  # Memory.release, inlined: this runs per allocation
            if self.kind == "hbm":
                memory.hbm -= self.nbytes
            memory.total -= self.nbytes
        if self.recyclable and not self.handed_out:
            _recycle(self.array)

    def record_in(self, trace) -> None:
        """Add this storage to a trace's tensor table."""
        nbytes = self.array.size * self.dtype.itemsize
        trace.tensors.add(self.id, self.name, self.kind, tuple(self.array.shape), self.dtype.name, nbytes, self.role, self.location)


# ---------------------------------------------------------------- lazily filled allocations
#
# A fresh allocation holds the uninitialized sentinel (NaN, 4 for ints; EmulatorOptions.fill instead when set)
# until written: that is how a plain run shows a read of memory the kernel never wrote, and what validate's
# alternative-fill run changes. Filling a large tile that the next instruction overwrites anyway is a pass over
# its memory for nothing (a tenth of an elementwise kernel's run), so a large fresh storage is filled lazily:
# - it is allocated empty and marked (`unfilled`; `pending` = UNFILLED, so every path that settles a storage
#   before touching its values, Storage.flush, fills it first: stored_values, store, the DMA fast path, ...);
# - dispatch (opdef.define_operands) looks at an instruction's marked operands before its semantics run: bytes
#   an op declared to overwrite in full (`declare(overwrites=...)`) and that a view covers densely are recorded
#   as written (`spans`) and need no fill; a read of bytes not all written, or any other access, fills the rest
#   first. Once writes cover the whole storage the mark goes, never filled;
# - the run's outputs, and anything settling the storage outside an instruction, fill the rest first.
# So the values every reader sees are those an eager fill would have left, bit for bit. A path that reaches
# the array without settling it is the one way to see the empty memory: values are only read through
# stored_values / flush (the deferred worker's contract, deferred.py), which tests check with a poisoned
# allocator (`_fresh_array`).

LAZY_BYTES = 1 << 16  # smaller tiles are filled when allocated: a fill costs less than tracking them
_MAX_SPANS = 64  # disjoint written ranges tracked per storage; more are filled
FILLS = [0]  # lazy fills done (tests assert that a fully overwritten tile is never filled)
COPIES = [0]  # lazy copies taken (see "Lazy copies")


class Fill:
    """What a fresh allocation holds until written: its dtype's uninitialized sentinel, or a value."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype: NkiDType, value: np.ndarray | None):
        self.dtype, self.value = dtype, value

    def into(self, array: np.ndarray) -> None:
        if self.value is None:
            fill_uninitialized(array, self.dtype)
        else:
            array[...] = self.value

    def part(self, flat: np.ndarray, lo: int, hi: int) -> None:
        """Elements [lo, hi) of the storage's flat array (the bytes no write covered: Storage.fill_rest)."""
        self.into(flat[lo:hi])


class _Unfilled:
    """Storage.pending of a lazily filled storage with nothing else pending (Storage.flush fills it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNFILLED"


UNFILLED = _Unfilled()
_FILLS: dict[tuple, Fill] = {}


def _fill_of(dt: NkiDType, value) -> Fill:
    """The Fill of dtype dt under EmulatorOptions.fill = value (None: the sentinel), as an eager fill writes it."""
    key = (dt.name, value)
    found = _FILLS.get(key)
    if found is None:
        found = _FILLS[key] = Fill(dt, None if value is None else fill_value(dt, value))
    return found


def _fresh_array(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """The memory of a lazily filled storage (its contents are never read before fill_rest or a full write):
    recycled memory of a dead storage of the same size, or new."""
    nbytes = math.prod(shape) * dtype.itemsize
    buf = _take(nbytes)
    if buf is None:
        buf = np.empty(nbytes, np.uint8)
    return buf.view(dtype).reshape(shape)


# ---------------------------------------------------------------- lazy copies
#
# A tiled kernel loads every operand tile from HBM with a DMA, and a matmul whose converted operand is cached
# (psum.py: the cache knows the tile by the view it was copied from, Storage.origin) never reads the bytes: the
# 2048^3 example copies 128 MiB of moving tiles that nothing reads, a fifth of its kernel thread's CPU. So a
# whole-tile DMA from HBM into a fresh SBUF tile of the same dtype and shape copies lazily: the tile is marked
# like a lazily filled allocation, its fill being the copy (`CopyFill`). Every access that settles a storage
# (Storage.flush, dispatch's define_operands) takes the copy first, except the operands an op declares it reads
# through `loaded` only when it needs their bytes (`declare(lazy_reads=...)`: nc_matmul's). The source's values
# must not change before: every write to it (new_versions, memory's store) first settles the storages copying
# it (`Storage.copies`). So every reader sees the bytes the eager copy would have left. Only on the kernel's
# thread of a single-program run, from a storage nothing is pending on (the DMA fast path's conditions).


class CopyFill:
    """The fill of a tile a DMA copies lazily: the source view (same dtype and shape as the tile's data)."""

    __slots__ = ("src", "source", "_flat")

    def __init__(self, src: np.ndarray, source: Storage):
        self.src, self.source, self._flat = src, source, None

    def into(self, array: np.ndarray) -> None:
        """Copy the whole source into the tile's array (nothing written since)."""
        array.reshape(self.src.shape)[...] = self.src

    def part(self, flat: np.ndarray, lo: int, hi: int) -> None:
        """Copy elements [lo, hi) of the source, flat, into the tile's flat array (Storage.fill_rest: the bytes no
        write covered since the DMA)."""
        if self._flat is None:
            self._flat = self.src.reshape(-1)  # a copy when strided: rare (a lazily copied tile written in part)
        flat[lo:hi] = self._flat[lo:hi]


def copy_lazily(dst: Storage, src: np.ndarray, source: Storage) -> None:
    """A DMA fills all of `dst` (a fresh, settled storage) with view `src` of `source`: copy when first read."""
    dst.unfilled = CopyFill(src, source)
    dst.spans = None
    dst.pending = UNFILLED
    copies = source.copies
    if copies is None:
        copies = source.copies = []
    elif len(copies) >= 32 and len(copies) & 31 == 0:  # forget the dead ones now and then (a loop's tiles die)
        copies[:] = [r for r in copies if r() is not None]
    copies.append(weakref.ref(dst))


def settle_copies(source: Storage) -> None:
    """`source` is about to be written: the storages still copying it lazily take their copy now."""
    copies, source.copies = source.copies, None
    for ref in copies:
        st = ref()
        if st is not None and st.unfilled.__class__ is CopyFill and st.unfilled.source is source:
            st.fill_rest()


def loaded(t: NkiTensor) -> np.ndarray:
    """The stored values of an operand an op reads lazily (declare(lazy_reads=...)): the copy taken now."""
    return stored_values(t)


def copying(t: NkiTensor) -> bool:
    """Whether t's storage holds a lazy copy not yet taken (its bytes are not there: read them with `loaded`)."""
    return t.storage.unfilled.__class__ is CopyFill


# ---------------------------------------------------------------- recycled memory
#
# A kernel's loop allocates the same large tiles every iteration. Memory new from the OS costs a page fault per
# 4 KiB on first touch, and malloc gives freed large blocks back to the OS, so every iteration faults its tiles
# in again (a third of an elementwise kernel's run on the 2-core machine). The memory of a lazily filled
# storage goes back to a small pool when the storage dies with nothing else viewing it, and the next lazily
# filled storage of that size takes it: its old contents are never read (the lazy fill protocol fills or
# overwrites bytes before any read). The pool exists while a run is (launch.run_kernel: `recycling`).

_RECYCLE_BYTES = 256 << 20  # memory the pool holds at most
_RECYCLE_PER_SIZE = 4  # buffers kept per size (a loop's tile and the one of the iteration before, a few sites)
_pool_lock = threading.Lock()
_pool: dict[int, list[np.ndarray]] = {}
_pool_state = [0, 0]  # runs in progress, bytes held


def _take(nbytes: int) -> np.ndarray | None:
    with _pool_lock:
        free = _pool.get(nbytes)
        if not free:
            return None
        _pool_state[1] -= nbytes
        return free.pop()


def _recycle(array: np.ndarray, probe: list | None = None) -> None:
    """Storage.__del__ of a recyclable storage: its buffer back to the pool, unless something still views it (a
    view's base is the buffer, so the references are exactly the storage's array's and those counted here)."""
    buf = array.base
    if buf is None:
        return
    counts = [sys.getrefcount(array), sys.getrefcount(buf)]
    if probe is not None:
        probe.extend(counts)
        return
    if counts != _REFS:
        return
    nbytes = buf.nbytes
    with _pool_lock:
        if not _pool_state[0] or _pool_state[1] + nbytes > _RECYCLE_BYTES:
            return
        free = _pool.setdefault(nbytes, [])
        if len(free) < _RECYCLE_PER_SIZE:
            free.append(buf)
            _pool_state[1] += nbytes


class recycling:
    """While a run is in progress: the pool takes buffers; when the last run ends, its memory is released."""

    def __enter__(self):
        with _pool_lock:
            _pool_state[0] += 1
        scratch_runs(1)
        return self

    def __exit__(self, *exc):
        scratch_runs(-1)
        with _pool_lock:
            _pool_state[0] -= 1
            if not _pool_state[0]:
                _pool.clear()
                _pool_state[1] = 0
        return False


def _reference_counts() -> list[int]:
    """The reference counts _recycle sees for a storage's array that nothing else references, and its buffer
    (measured the same way, not assumed: they depend on the interpreter)."""

    class Holder:
        __slots__ = ("array",)

    counts: list[int] = []
    holder = Holder()
    holder.array = np.empty(16, np.uint8).view(np.float32).reshape(2, 2)
    _recycle(holder.array, counts)
    return counts


_REFS = _reference_counts()


def dense_span(t: NkiTensor) -> tuple[int, int] | None:
    """The storage bytes [lo, hi) a plain view covers, each byte once with no gap, or None (run-time addressed,
    out of bounds, broadcast, strided): a write through such a view leaves nothing of the old values there."""
    if t.dyn is not None or t.bad is not None:
        return None
    data = t._data
    item = data.itemsize
    dims = sorted((abs(s), n) for s, n in zip(data.strides, data.shape) if n != 1)
    expect = item
    for stride, n in dims:
        if stride != expect:
            return None
        expect *= n
    if any(s < 0 for s in data.strides):
        return None
    lo = t._off if t._off is not None else data.__array_interface__["data"][0] - t.storage.ptr
    return lo, lo + data.size * item


def byte_span(t: NkiTensor) -> tuple[int, int] | None:
    """Storage bytes [lo, hi) that hold every byte a plain view reads (a superset), or None: run-time addressed."""
    if t.dyn is not None:
        return None
    data = t._data
    lo = t._off if t._off is not None else data.__array_interface__["data"][0] - t.storage.ptr
    hi = lo + data.itemsize
    for s, n in zip(data.strides, data.shape):
        if n > 1:
            if s < 0:
                lo += s * (n - 1)
            else:
                hi += s * (n - 1)
    return lo, hi


def new_versions(storages: list) -> None:
    """The storages an instruction is about to write: their values change (psum.identity), so the storages that
    copy them lazily take their copy first."""
    for st in storages:
        st.version += 1
        st.origin = None
        if st.copies is not None:
            settle_copies(st)


def allocate(
    shape,
    dtype,
    buffer=None,
    name: str = "",
    role: str = "internal",
    location: str | None = None,
    fill=None,
    live_bytes: int | None = None,
    skip: int = 0,
) -> NkiTensor:
    """nl.ndarray: a fresh tensor, filled with the uninitialized-memory sentinel unless `fill` is given.

    `live_bytes`: on-chip bytes per partition the allocation keeps live, when less than its size (the legacy
    API's block dimensions, of which the compiler keeps only some copies live). `skip`: how many frames above
    this one are nkidev's own for certain (the caller, its caller, ...): the search for the kernel line starts
    past them (location.kernel_site)."""
    ctx = getattr(_thread, "ctx", None) or _ctx.current()  # current(), inlined: this runs per allocation
    site = None
    if not location:
        site = kernel_site(2 + skip)
        location = site[0] if site is not None else None
    last = site[2] if site is not None else None  # the last allocation at this kernel bytecode offset
    if last is not None and not (
        last.shape == shape
        and last.dtype is dtype
        and last.buffer is buffer
        and last.name == name
        and last.role == role
        and last.target_code == ctx.target_code
        and last.check is ctx.usage.check
        and live_bytes is None
    ):
        last = None
    checked = None
    cacheable = live_bytes is None and dtype.__class__ is NkiDType and buffer.__class__ is MemoryRegion and shape.__class__ is tuple
    if last is not None:
        checked = last.checked
    elif cacheable:
        key = (shape, id(dtype), id(buffer), ctx.target_code, ctx.usage.check)
        checked = _CHECKED.get(key)
        if checked is not None and checked.dtype is not dtype:  # a dtype object freed and another made at its address
            checked = None
    fresh = checked is None
    if fresh:
        checked = _check_arguments(ctx, shape, dtype, buffer)
    requested = shape
    region, dt, shape, kind = checked.region, checked.dtype, checked.shape, checked.kind
    if ctx.shared_hbm is not None and region is _SHARED_HBM and ctx.grid != (1,):
        shared = _shared_allocation(ctx, shape, dt, region, name, location)
        if shared is not None:
            return shared
    memory = ctx.memory
    nbytes = checked.nbytes
    if kind == "hbm" or memory.total + nbytes > memory.budget:  # an on-chip tile within the budget passes check_fits
        memory.check_fits(kind, shape, dt, nbytes, ctx.target)
    if fresh:
        if kind != "hbm":
            per_partition = live_bytes if live_bytes is not None else (math.prod(shape[1:]) if len(shape) > 1 else 1) * dt.itemsize
            ctx.usage.check_tile(kind, shape, dt, per_partition, ctx.target)
        if cacheable:
            if len(_CHECKED) >= 10_000:
                _CHECKED.clear()
            _CHECKED[key] = checked
    lazy = None
    if fill is None and not ctx.options.compute:  # numerics are off: nothing reads the values, and no instruction writes them
        if kind == "hbm":
            array = np.zeros(shape, dtype=dt.storage)
        else:
            array = checked._zeros
            if array is None:
                array = checked.zeros()
    elif fill is None and nbytes >= LAZY_BYTES and ctx.in_kernel:
        # filled when first accessed, and not at all where instructions overwrite it first (see "Lazily filled
        # allocations"); outside a kernel, code may look at the array itself
        array = _fresh_array(shape, dt.storage)
        lazy = _fill_of(dt, ctx.options.fill)
    else:
        array = np.empty(shape, dtype=dt.storage)
        if fill is not None:
            array[...] = np.asarray(fill).astype(dt.storage)
        elif ctx.options.fill is not None:
            array[...] = fill_value(dt, ctx.options.fill)
        else:
            fill_uninitialized(array, dt)
    if last is not None:
        storage_name = last.storage_name
    elif site is not None:
        storage_name = name or site_name(site) or ""
    else:
        storage_name = name or (assigned_name(location) if location else None) or ""
    storage = Storage(array, dt, region, storage_name, role, location, checked)
    if lazy is not None:
        storage.unfilled = lazy
        storage.pending = UNFILLED  # every access that settles a storage first (Storage.flush) fills it
        storage.recyclable = True
    if live_bytes is not None:
        storage.pp_bytes = live_bytes
    memory.claim(storage)
    if kind != "hbm":
        ctx.usage.claim(storage, ctx.target)
    if last is None and site is not None and cacheable:
        last = site[2] = _LastAllocation(requested, dtype, buffer, name, role, ctx, checked, storage_name)
    trace = ctx.trace
    if trace is not None:
        table = trace.tensors
        if last is not None and last.table == table.serial:
            table.add_row(storage.id, last.table_code)
        else:
            code = table.site_code(storage.name, kind, shape, dt.name, checked.device_bytes, role, location)
            table.add_row(storage.id, code)
            if last is not None and storage_name:  # an unnamed storage is t<id>: a new site each time
                last.table, last.table_code = table.serial, code
    if ctx.shared_hbm is not None and region is _SHARED_HBM and ctx.grid != (1,):
        ctx.shared_hbm.append(storage)
        ctx.shared_count += 1
    t = NkiTensor(array, storage, dt, None, None, 0)
    # a fresh storage's whole view has the same facts as every other fresh one of these arguments: one view code
    code = checked.code
    t._code = code if code is not None else _fresh_code(checked, t)
    return t


class _LastAllocation:
    """The arguments of the last allocation at one bytecode offset of kernel code, and what they implied: the
    checked arguments, the storage name, and the tensor table's site code (`table`: the serial of the table it is
    valid in). A loop allocating a tile at that offset with the same arguments reuses them."""

    __slots__ = ("shape", "dtype", "buffer", "name", "role", "target_code", "check", "checked", "storage_name", "table", "table_code")

    def __init__(self, shape: tuple, dtype, buffer, name, role: str, ctx, checked: _Checked, storage_name: str):
        self.shape, self.dtype, self.buffer, self.name, self.role = shape, dtype, buffer, name, role
        self.target_code, self.check = ctx.target_code, ctx.usage.check
        self.checked, self.storage_name = checked, storage_name
        self.table, self.table_code = -1, 0


def _fresh_code(checked: _Checked, t: NkiTensor) -> int:
    code = checked.code = view_code(t)
    return code


class _Checked:
    """An allocation's arguments that passed every check that depends on them alone (not on what is live), with
    what they imply: a loop allocates the same tile again and again, and checks it once per target."""

    __slots__ = ("region", "dtype", "shape", "kind", "nbytes", "pstride", "pp_bytes", "device_bytes", "_zeros", "code")

    def __init__(self, region: MemoryRegion, dtype: NkiDType, shape: tuple[int, ...], kind: str):
        self.region, self.dtype, self.shape, self.kind = region, dtype, shape, kind
        per_partition = math.prod(shape[1:])  # elements (1 for a 1-d shape)
        # the layout of a fresh C-order storage array of this shape (see Storage.__init__)
        self.nbytes = shape[0] * per_partition * dtype.storage.itemsize
        self.pstride = per_partition * dtype.storage.itemsize
        self.pp_bytes = per_partition * dtype.itemsize
        self.device_bytes = shape[0] * self.pp_bytes  # what the trace records
        self._zeros = None
        self.code = None  # view_code of a fresh storage's whole view (set by the first allocation)

    def zeros(self) -> np.ndarray:
        """A read-only zero array of this shape (one object, shared by every shape-only tile of it)."""
        if self._zeros is None:
            self._zeros = _shared_zeros(self.shape, self.dtype.storage)
        return self._zeros


# (shape, id(dtype), id(buffer), target code, capacity checks on) -> _Checked: arguments that passed the argument
# checks and Occupancy.check_tile (which depends on the shape, the target and whether capacity is checked)
_CHECKED: dict[tuple, _Checked] = {}


def _check_arguments(ctx, shape, dtype, buffer) -> _Checked:
    """The checks of an allocation's arguments that come before any limit, in the order they report."""
    region = to_region(buffer)
    dt = to_nki_dtype(dtype)
    shape = _check_shape(shape)
    kind = _KIND_OF[id(region)]
    if kind != "hbm":
        limit = ctx.target.sbuf.partitions
        if shape[0] > limit:
            raise rule_error(
                "err_num_partition_exceed_arch_limit",
                f"{kind.upper()} tile {shape} has {shape[0]} partitions, the limit is {limit}",
                f"split the partition dim into tiles of {limit} (nl.tile_size.pmax) and loop over them",
            )
    return _Checked(region, dt, shape, kind)


# Shape-only runs (compute=False) allocate a tile per loop iteration and never touch its values: a fresh np.zeros
# each time would clear the memory of the tile freed just before (malloc reuses it), which was a third of such a
# run. On-chip tiles are instead read-only views of one zero buffer, as large as the largest tile so far (at most
# one SBUF, so the address space it takes is bounded by the target, not the kernel). Views keep their own strides
# and byte offsets relative to their storage, which is all the trace reads; an impl writing one would fail loudly.
_ZEROS: list[np.ndarray] = []


def _shared_zeros(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    nbytes = math.prod(shape) * dtype.itemsize
    buf = _ZEROS[0] if _ZEROS else None
    if buf is None or buf.size < nbytes:
        # doubling: the buffers cached views keep alive sum to at most twice the last one
        buf = np.zeros(max(nbytes, 1 << 20, 2 * buf.size if buf is not None else 0), np.uint8)  # untouched pages: no resident memory
        buf.flags.writeable = False
        _ZEROS[:] = [buf]  # tiles of the previous buffer keep it alive until they are freed
    return buf[:nbytes].view(dtype).reshape(shape)


def _shared_allocation(ctx, shape, dt, region, name, location) -> NkiTensor | None:
    """Every program of a grid sees the same n-th shared_hbm tensor (one allocation, visible to all)."""
    index = ctx.shared_count
    if index >= len(ctx.shared_hbm):
        return None
    st = ctx.shared_hbm[index]
    if tuple(st.array.shape) != shape or st.dtype != dt:
        raise rule_error(
            "err_shared_hbm_must_in_kernel_level",
            f"program {ctx.program_id} allocates shared_hbm tensor #{index} as {shape} {dt} but program 0 "
            f"allocated {tuple(st.array.shape)} {st.dtype}",
            "allocate shared tensors identically in every program, at the top of the kernel",
        )
    ctx.shared_count += 1
    return NkiTensor(st.array, st, dt, off=0)


def from_array(
    array: np.ndarray, name: str, region: MemoryRegion = MemoryRegion.private_hbm, role: str = "input", borrow: bool = False
) -> NkiTensor:
    """Wrap a kernel argument: copy it into emulated HBM (copy-in; results are copied back). Without numerics
    (compute=False) nothing reads the values: the copy is lazily allocated zeros, never touched.

    `borrow` (the caller's array shares no memory with another argument): an array already laid out as emulated
    HBM (C order, the storage dtype, aligned, writeable) is used in place instead of copied, the one difference
    being when a write reaches it. So that nothing else differs, the first write to it keeps its values
    (Storage.keep_original: every write path calls it), a failed run restores them, and a returned input is
    copied out (handed_out)."""
    dt = to_nki_dtype(array.dtype)
    ctx = _ctx.current()
    borrowed = False
    if not ctx.compute:
        data = np.zeros(array.shape, dtype=dt.storage)
    elif borrow and array.dtype == dt.storage and array.flags.c_contiguous and array.flags.aligned and array.flags.writeable:
        data = array.view()  # its own shape, whatever the caller does to the array object
        borrowed = True
    else:
        data = np.array(array, dtype=dt.storage, copy=True, order="C")
    storage = Storage(data, dt, region, name, role, None)
    if borrowed:
        storage.borrowed = storage.handed_out = True
    if ctx.trace is not None:
        storage.record_in(ctx.trace)
    return NkiTensor(data, storage, dt, off=0)


def _check_shape(shape) -> tuple[int, ...]:
    if shape.__class__ is tuple and shape:  # the common case: a tuple of positive ints, returned as is
        for s in shape:
            if s.__class__ is not int or s <= 0:
                break
        else:
            return shape
    if isinstance(shape, int | np.integer):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise rule_error(
            "err_invalid_argument", f"shape {shape!r} is not a tuple of ints", "pass the shape as a tuple of positive ints, e.g. (128, 512)"
        ) from None
    if not shape or any(s <= 0 for s in shape):
        raise rule_error(
            "err_invalid_argument", f"shape {shape} has a zero, negative or missing dimension", "every dimension must be a positive int"
        )
    return shape


class DynSlice:
    """nl.ds(start, size): a slice of `size` elements from `start`."""

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        self.start, self.size = start, size

    def to_slice(self) -> slice:
        return slice(int(self.start), int(self.start) + int(self.size))

    def __repr__(self) -> str:
        return f"nl.ds({self.start}, {self.size})"


class Indirect:
    """A view whose address depends on data at run time (.ap(scalar_offset/vector_offset), vector_select)."""

    __slots__ = ("mode", "index", "start", "pattern", "row_stride", "flat", "group")

    def __init__(self, mode, index, start, pattern, row_stride, flat):
        self.mode, self.index, self.start = mode, index, start  # mode: "scalar" | "vector" | "ti" (.indirect())
        self.pattern, self.row_stride, self.flat = pattern, row_stride, flat
        self.group = TI_GROUP["vector"]  # .indirect(): partitions per index column, set by the engine that accesses it


# .indirect(): offset i of a view comes from index[i % G, i // G]; G by the accessing engine (NkiTensor.indirect docs)
TI_GROUP = {"tensor": 32, "vector": 16, "scalar": 16, "gpsimd": 16}


def _index_value(index) -> np.ndarray:
    if isinstance(index, VirtualRegister):
        return np.array([[index.value]], dtype=np.int64)  # run-time value: the DMA reads it on device
    if isinstance(index, NkiScalar):
        return np.array([[index.usable("an access-pattern offset")]], dtype=np.int64)
    if isinstance(index, NkiTensor):
        if index.storage.pending is not None:
            index.storage.flush()
        return np.asarray(to_f32(index._data, index.dtype), dtype=np.float64).astype(np.int64)
    return np.array([[int(index)]], dtype=np.int64)


class NkiTensor:
    """A view of an NKI tensor in HBM, SBUF or PSUM (first dim of on-chip tensors = partition dim)."""

    __slots__ = ("_data", "storage", "dtype", "dyn", "_reg", "bad", "_off", "_code")
    __array_priority__ = 100  # make `ndarray + tensor` defer to our operators

    def __init__(
        self,
        data: np.ndarray,
        storage: Storage,
        dtype: NkiDType,
        dyn: Indirect | None = None,
        bad: str | None = None,
        off: int | None = None,
    ):
        self._data = data
        self.storage = storage
        self.dtype = dtype
        self.dyn = dyn  # set for views addressed by run-time data
        self._reg = None  # cached region(): views are immutable, so compute it once
        # Views are bounds-checked when an instruction accesses them, not when created (kernels build views of
        # the next tile and use them only when it exists): `bad` holds the out-of-bounds message until then.
        self.bad = bad
        if bad is not None or data.size == 0:
            _ctx.current().deferred_views += 1  # dispatch checks operands for this only once such a view exists
        # byte offset of the view's first element in its storage, when known without asking NumPy for the data
        # address (slicing computes it; __array_interface__ costs more than the rest of region())
        self._off = off
        self._code = None  # view_code(), computed once

    # --- attributes -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def name(self) -> str:
        return self.storage.name

    @property
    def buffer(self) -> MemoryRegion:
        return self.storage.region

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        item = self._data.itemsize
        return tuple(s // item for s in self._data.strides)

    @property
    def offset(self) -> int:
        return (self._data.__array_interface__["data"][0] - self.storage.ptr) // self._data.itemsize

    @property
    def is_on_chip(self) -> bool:
        return self.storage.kind != "hbm"

    def __repr__(self) -> str:
        return f"NkiTensor(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, buffer={self.storage.kind})"

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        # Kernels compute only through nki.isa / nki.language; NumPy on device data has no hardware meaning.
        raise rule_error(
            "err_numpy_on_kernel_data",
            f"NumPy was called on kernel tensor {self.name!r}",
            "compute with nki.isa / nki.language instructions; tensors are device memory, not arrays",
        )

    # --- indexing -------------------------------------------------------------------------
    def __getitem__(self, key) -> NkiTensor:
        if self.dyn is not None:
            self._static("index")
        key = key if key.__class__ is tuple else (key,)
        # The common case first: non-empty in-bounds slices without a step on the leading dims (a loop's tile of an
        # input). NumPy reads such a key exactly as the normalized one, so it gets the key itself; the view keeps
        # the strides, and its offset and view code follow from this view's. Anything else takes _index.
        data = self._data
        shape = data.shape
        off = self._off
        if off is not None and len(key) <= len(shape):
            for k, n, stride in zip(key, shape, data.strides):
                if k.__class__ is not slice or k.step is not None:
                    break
                start, stop = k.start, k.stop
                if start is None:
                    start = 0
                if stop is None:
                    stop = n
                if not (start.__class__ is int and stop.__class__ is int and 0 <= start < stop <= n):
                    break
                off += start * stride
            else:
                view = NkiTensor(data[key], self.storage, self.dtype, None, self.bad, off)
                parent = self._code
                if parent is None:
                    parent = view_code(self)
                if parent:
                    view._code = sliced_code(parent, off, view._data.shape)
                return view
        return self._index(key)

    def _index(self, key: tuple) -> NkiTensor:
        """__getitem__ for any key: ints, steps, nl.ds, Ellipsis, out-of-bounds or empty slices."""
        ellipsis = False
        for k in key:  # `Ellipsis in key` would compare with ==, which NkiScalars trace rather than answer
            if k is Ellipsis:
                ellipsis = True
                break
        if ellipsis:
            i = next(n for n, k in enumerate(key) if k is Ellipsis)
            fill = self.ndim - (len(key) - 1 - sum(1 for k in key if k is None))
            key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1 :]
        if len(key) > self._data.ndim:
            raise rule_error(
                "err_tensor_access_out_of_bound",
                f"{len(key)} indices for tensor {self.name!r} of rank {self.ndim}",
                "use one index or slice per dimension",
            )
        shape = self._data.shape
        strides = self._data.strides
        off = self._off
        norm = []
        for dim, k in enumerate(key):
            if k.__class__ is slice and k.step is None:  # the common case, checked inline
                n = shape[dim]
                start = 0 if k.start is None else k.start
                stop = n if k.stop is None else k.stop
                if start.__class__ is int and stop.__class__ is int and 0 <= start < stop <= n:
                    norm.append(k if (k.start is not None and k.stop is not None) else slice(start, stop))
                    if off is not None:
                        off += start * strides[dim]
                    continue
            elif k.__class__ is int and 0 <= k < shape[dim] and dim:  # an in-bounds int on a free dim (t[:, k, :])
                norm.append(k)
                if off is not None:
                    off += k * strides[dim]
                continue
            problems = []
            k = self._norm_index(dim, k, problems)
            if problems:
                return self._indexed(key, problems[0])
            norm.append(k)
            if off is not None:
                off += (k.start if k.__class__ is slice else k) * strides[dim]
        data = self._data[tuple(norm)]
        if data.ndim < 2 and self.is_on_chip and self._data.ndim >= 2:  # rare: checked only when the view lost a dim too many
            data = self._data[self._at_least_2d(norm)]
        return NkiTensor(data, self.storage, self.dtype, None, self.bad, off)  # positional: no kwargs dict

    def _at_least_2d(self, norm: list) -> tuple:
        """On-chip views stay at least 2-D: when integer indices on the free dims would leave fewer than two dims,
        the last free dim is kept at size 1 (NKI language guide, "Tensor indexing": `t[:, 0, 10]` of a (64, 64, 64)
        SBUF tensor is (64, 1)); HBM tensors drop every integer-indexed dim, as in NumPy."""
        kept = sum(1 for k in norm if k.__class__ is slice) + self._data.ndim - len(norm)
        if kept < 2 and self.is_on_chip and self._data.ndim >= 2:
            last = max(d for d, k in enumerate(norm) if k.__class__ is not slice)
            norm[last] = slice(norm[last], norm[last] + 1)
        return tuple(norm)

    def _indexed(self, key, problem: str) -> NkiTensor:
        """An out-of-bounds view: clipped data of the right rank, and the error its first access raises."""
        norm = []
        for dim, k in enumerate(key):
            norm.append(self._norm_index(dim, k, [], clip=True))
        return NkiTensor(self._data[self._at_least_2d(norm)], self.storage, self.dtype, bad=self.bad or _deferred(problem))

    def _norm_index(self, dim: int, k, problems: list, clip: bool = False):
        n = self.shape[dim]
        if isinstance(k, DynSlice):
            k = k.to_slice()
        if isinstance(k, int | np.integer):
            k = int(k)
            if not -n <= k < n:
                if n == 0:
                    raise rule_error("err_tensor_access_out_of_bound", f"index {k} into empty dim {dim} of {self.name!r}", None)
                problems.append(f"index {k} is out of bounds for dim {dim} of {self.name!r} with size {n}")
                k = 0
            k = k % n
            return slice(k, k + 1) if (dim == 0 and self.is_on_chip) else k
        if isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if step < 1:
                raise rule_error("err_invalid_argument", f"slice step {step} on dim {dim} of {self.name!r}", "use a positive step")
            start = 0 if k.start is None else int(k.start)
            stop = n if k.stop is None else int(k.stop)
            start = start + n if start < 0 else start
            stop = stop + n if stop < 0 else stop
            if start >= stop and 0 <= start <= n:
                return slice(start, start)  # empty, as in NumPy: fine until an instruction accesses it
            if not (0 <= start < stop <= n):
                problems.append(f"slice [{k.start}:{k.stop}] of dim {dim} of {self.name!r} (size {n}) is out of bounds")
                start, stop = min(max(start, 0), n), min(max(stop, 0), n)
            return slice(start, stop, step)
        if isinstance(k, NkiScalar):
            k.__index__()  # raises err_nki_scalar_host_value: address through .ap(scalar_offset=...)
        if isinstance(k, NkiTensor):
            raise NkiNotSupportedError(
                "err_not_supported_yet",
                "indexing a tensor with a tensor",
                "use .ap(..., vector_offset=idx) with nisa.dma_copy for gathers",
                kernel_location(),
            )
        raise rule_error(
            "err_invalid_argument",
            f"index {k!r} of type {type(k).__name__} on dim {dim}",
            "index with ints, slices, nl.ds(start, size) or ...",
        )

    def __iter__(self):
        raise rule_error(
            "err_invalid_argument", f"iterating over tensor {self.name!r}", "loop over index ranges and slice the tensor instead"
        )

    def __bool__(self) -> bool:
        if _ctx.current().in_kernel:
            # In a kernel a tensor is a handle: `if bias:` asks whether an optional tensor was given (nki-library
            # writes it for Optional parameters), so it is truthy. A one-element on-chip tile in a condition is
            # the exception: that is an attempt to branch on a value, which exists only at run time.
            if self.storage.kind == "hbm" or self._data.size != 1:
                return True
            raise rule_error(
                "err_dynamic_control_flow_not_supported",
                f"Python control flow (if/while/assert/and/or) on the value of tensor {self.name!r}",
                "use nl.fori_loop/nl.while_loop with registers, or compute both branches and select with nisa.tensor_copy_predicated",
            )
        values = stored_values(self)
        if self.size != 1:  # outside kernels (docs examples, tests): truthy when every element is
            return bool(np.all(values))
        return bool(to_f32(values, self.dtype).reshape(-1)[0])

    # --- views ------------------------------------------------------------------------------
    def _static(self, what: str) -> None:
        if self.dyn is not None:
            raise rule_error(
                "err_invalid_argument",
                f"cannot {what} an indirect view of {self.name!r}",
                "slice the base tensor before adding the dynamic offset",
            )

    def _new(self, data: np.ndarray) -> NkiTensor:
        """A view of the same first element (reshape, permute, broadcast, ...): the offset carries over."""
        return NkiTensor(data, self.storage, self.dtype, bad=self.bad, off=self._off)

    def reshape(self, *shape) -> NkiTensor:
        self._static("reshape")
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        shape = tuple(int(s) for s in shape)
        if self.is_on_chip and shape and shape[0] not in (self.shape[0], -1):
            raise rule_error(
                "err_reshape_incompatible",
                f"reshape of on-chip tensor {self.name!r} {self.shape} -> {shape} changes the partition dim",
                "keep shape[0] equal to the partition count",
            )
        try:
            return self._new(self._data.reshape(shape, copy=False))
        except ValueError as e:
            raise rule_error(
                "err_reshape_incompatible",
                f"cannot reshape {self.name!r} {self.shape} to {shape}: {e}",
                "reshape a contiguous tensor with the same element count",
            ) from None

    def permute(self, dims) -> NkiTensor:
        dims = tuple(int(d) for d in dims)
        if sorted(dims) != list(range(self.ndim)) or (self.is_on_chip and dims[0] != 0):
            raise rule_error(
                "err_invalid_argument",
                f"permute{dims} of {self.name!r} with rank {self.ndim}",
                "pass a permutation of range(ndim); on-chip tensors keep dim 0 first",
            )
        return self._new(self._data.transpose(dims))

    def broadcast(self, dim: int, size: int) -> NkiTensor:
        if self.shape[dim] != 1 or (self.is_on_chip and dim == 0):
            raise rule_error(
                "err_invalid_argument",
                f"broadcast of dim {dim} (size {self.shape[dim]}) of {self.name!r}",
                "broadcast only size-1 free dims",
            )
        shape = list(self.shape)
        shape[dim] = int(size)
        return self._new(np.broadcast_to(self._data, tuple(shape)))

    def expand_dim(self, dim: int) -> NkiTensor:
        if self.is_on_chip and dim == 0:
            raise rule_error("err_invalid_argument", "expand_dim(0) on an on-chip tensor", "insert after dim 0")
        return self._new(np.expand_dims(self._data, dim))

    def squeeze_dim(self, dim: int) -> NkiTensor:
        if self.shape[dim] != 1 or (self.is_on_chip and dim == 0):
            raise rule_error("err_invalid_argument", f"squeeze_dim({dim}) of {self.name!r} {self.shape}", "squeeze only size-1 free dims")
        return self._new(np.squeeze(self._data, axis=dim))

    def reshape_dim(self, dim: int, shape) -> NkiTensor:
        new = self.shape[:dim] + tuple(shape) + self.shape[dim + 1 :]
        return self.reshape(new)

    def flatten_dims(self, start_dim: int, end_dim: int) -> NkiTensor:
        if self.is_on_chip and start_dim == 0:
            raise rule_error("err_invalid_argument", "flatten_dims starting at the partition dim", "use start_dim > 0")
        merged = math.prod(self.shape[start_dim : end_dim + 1])
        return self.reshape(self.shape[:start_dim] + (merged,) + self.shape[end_dim + 1 :])

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> NkiTensor:
        key = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index) -> NkiTensor:
        if isinstance(index, NkiTensor):
            pattern = [[st, n] for i, (st, n) in enumerate(zip(self.strides, self.shape)) if i != dim]
            return self.ap(pattern, offset=0, scalar_offset=index, indirect_dim=dim)
        key = [slice(None)] * self.ndim
        key[dim] = int(index)
        return self[tuple(key)]

    def view(self, dtype) -> NkiTensor:
        self._static("view")
        dt = to_nki_dtype(dtype)
        try:
            return NkiTensor(self._data.view(dt.storage), self.storage, dt, bad=self.bad)
        except ValueError as e:
            raise rule_error(
                "err_invalid_argument",
                f"cannot view {self.name!r} as {dt}: {e}",
                "the last dim must be contiguous and divisible by the size ratio",
            ) from None

    reinterpret_cast = view

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None) -> NkiTensor:
        names, sizes = [], {}
        fixed = dict(fixed_sizes or {})
        split_shape = []
        for dim, part in enumerate(src_pattern):
            group = (part,) if isinstance(part, str) else tuple(part)
            known = math.prod(fixed.get(g, 1) for g in group if g in fixed)
            unknown = [g for g in group if g not in fixed]
            for g in group:
                sizes[g] = fixed[g] if g in fixed else self.shape[dim] // known if len(unknown) == 1 else 1
                names.append(g)
                split_shape.append(sizes[g])
        view = self.reshape(tuple(split_shape))
        flat_dst = [g for part in dst_pattern for g in ((part,) if isinstance(part, str) else part)]
        view = view.permute(tuple(names.index(g) for g in flat_dst))
        out_shape = tuple(math.prod(sizes[g] for g in ((p,) if isinstance(p, str) else p)) for p in dst_pattern)
        if self.is_on_chip:
            return view.reshape(out_shape)
        return NkiTensor(np.reshape(view._data, out_shape), self.storage, self.dtype, bad=self.bad)

    def get_pattern(self) -> list[list[int]]:
        return [[st, n] for st, n in zip(self.strides, self.shape)]

    def is_contiguous(self) -> bool:
        dims = list(zip(self.shape, self.strides))
        if self.is_on_chip:
            dims = dims[1:]
        expected = 1
        for n, st in reversed(dims):
            if n != 1 and st != expected:
                return False
            expected *= n
        return True

    def is_indirect(self) -> bool:
        return self.dyn is not None

    def indirect(self, index, num_elem=None) -> NkiTensor:
        """Tensor indirection (NeuronCore-v4): a (P, num_elem) view of the free-dim offsets listed in `index`,
        read in snake order index[i % G, i // G] (G = 16 on Vector/Scalar/GpSimd, 32 on the Tensor Engine)."""
        ctx = _ctx.current()
        if not ctx.target.features.tensor_indirection:
            raise rule_error(
                "err_unsupported_on_target",
                f".indirect() (tensor indirection) is not available on {ctx.target.name}",
                "use nisa.dma_copy with .ap(vector_offset=...) for gathers, or target trn3",
            )
        self._static("indirect")
        if not isinstance(index, NkiTensor) or index.storage.kind != "sbuf" or not self.is_on_chip:
            raise rule_error(
                "err_invalid_argument", "indirect(index) needs an on-chip tensor and an SBUF index tile", "load the offsets into SBUF first"
            )
        if index.shape[0] != self.shape[0]:
            raise rule_error(
                "err_shape_mismatch",
                f"index {index.shape} must have the partitions of {self.name!r} {self.shape}",
                f"allocate the index as ({self.shape[0]}, K)",
            )
        n = index.size if num_elem is None else int(num_elem)
        free = self._data.strides[1:] if self.ndim > 1 else (self._data.itemsize,)
        if self.ndim > 2 and not self.is_contiguous():
            raise rule_error("err_invalid_argument", f"indirect() of {self.name!r}: its free dims are not contiguous", None)
        st = self.storage
        flat = st.array.reshape(-1)
        if self.dtype.storage != flat.dtype:
            flat = flat.view(self.dtype.storage)
        item = flat.itemsize
        start = (self._data.__array_interface__["data"][0] - st.ptr) // item
        pattern = [(st.pstride // item, self.shape[0]), (free[-1] // item, n)]
        placeholder = np.broadcast_to(np.zeros((), self.dtype.storage), (self.shape[0], n))
        ctx.deferred_views += 1  # dispatch tells the view which engine reads it (the group size)
        return NkiTensor(placeholder, st, self.dtype, Indirect("ti", index, start, pattern, 0, flat), bad=self.bad)

    def vector_select(self, dim: int, vector_offset: NkiTensor) -> NkiTensor:
        if dim != 0 or self.is_on_chip:
            raise rule_error(
                "err_invalid_argument", "vector_select needs dim=0 on an HBM tensor", "call vector_select(0, offsets) on an HBM tensor"
            )
        pattern = [[self.strides[0], vector_offset.shape[0]]] + self.get_pattern()[1:]
        return self.ap(pattern, offset=0, vector_offset=vector_offset, indirect_dim=0)

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0, dtype=None) -> NkiTensor:
        """Explicit access pattern [[step, num], ...] (outermost first) over this tensor's storage."""
        st = self.storage
        dt = self.dtype if dtype is None else to_nki_dtype(dtype)
        flat = st.array.reshape(-1)
        if dt.storage != flat.dtype:
            flat = flat.view(dt.storage)
        try:
            pattern = [(int(s), int(n)) for s, n in pattern]
        except (TypeError, ValueError):
            raise rule_error(
                "err_invalid_argument", f"access pattern {pattern!r}", "pass a list of [step, num] pairs, outermost first"
            ) from None
        if not pattern or any(n < 0 for _, n in pattern):
            raise rule_error("err_invalid_argument", f"access pattern {pattern} has a negative num", "every num must be >= 0")
        base = 0 if self.dyn is not None else (self._data.__array_interface__["data"][0] - st.ptr) // flat.itemsize
        start = base + (0 if offset is None else int(offset))
        if st.kind != "hbm":
            pstep = st.pstride // flat.itemsize
            limit = _ctx.current().target.sbuf.partitions
            if pattern[0][1] > limit:
                raise rule_error(
                    "err_num_partition_exceed_arch_limit",
                    f"access pattern on {self.name!r} spans {pattern[0][1]} partitions, the limit is {limit}",
                    f"keep the first pattern num <= {limit}",
                )
            if pattern[0][1] > 1 and pattern[0][0] != pstep and vector_offset is None:
                raise rule_error(
                    "err_partition_stride_not_supported",
                    f"partition step {pattern[0][0]} on {self.name!r}; partitions hold {pstep} elements",
                    f"make the first pair [{pstep}, P] (on-chip patterns cannot stride across partitions)",
                )
        if scalar_offset is not None or vector_offset is not None:
            if scalar_offset is not None and vector_offset is not None:
                raise rule_error("err_invalid_argument", "scalar_offset and vector_offset are mutually exclusive", "pass only one of them")
            if self.dyn is None and 0 <= indirect_dim < self.ndim:
                # the stride of dimension `indirect_dim` of *this view* (a reshape or strided slice has its own)
                row_stride = self._data.strides[indirect_dim] // flat.itemsize
            else:
                row_stride = math.prod(st.array.shape[indirect_dim + 1 :]) * st.dtype.itemsize // flat.itemsize
            if isinstance(scalar_offset, NkiScalar) and scalar_offset.bits == 64 and st.kind != "hbm":
                raise rule_error(
                    "err_nki_scalar_operation",
                    f"an int64 NkiScalar offsets {st.kind.upper()} tensor {self.name!r}; on-chip access patterns take int32 offsets only",
                    "load the offset from an nl.int32 tile (int64 offsets are for HBM)",
                )
            mode = "scalar" if scalar_offset is not None else "vector"
            index = scalar_offset if scalar_offset is not None else vector_offset
            shape = tuple(n for _, n in pattern)
            placeholder = np.broadcast_to(np.zeros((), dt.storage), shape)
            return NkiTensor(placeholder, st, dt, Indirect(mode, index, start, pattern, row_stride, flat), bad=self.bad)
        shape = tuple(n for _, n in pattern)
        problem = _pattern_bounds(self.name, start, pattern, flat.size)
        if problem is not None:  # raised when an instruction accesses the view; no memory behind it until then
            return NkiTensor(np.broadcast_to(np.zeros((), dt.storage), shape), st, dt, bad=self.bad or _deferred(problem))
        strides = tuple(s * flat.itemsize for s, _ in pattern)
        tail = flat[start:]
        # as_strided rebuilds the array from its typestr, which names no bf16/fp8 (ml_dtypes) type: stride the bits
        data = np.lib.stride_tricks.as_strided(tail.view(f"u{tail.itemsize}"), shape=shape, strides=strides).view(tail.dtype)
        return NkiTensor(data, st, dt, bad=self.bad)

    # Arithmetic operators (+, -, *, /, @, unary -) and item assignment (`t[...] = x`) are nki.language
    # operations: nki.language installs them on this class (language.install_tensor_methods), so this layer
    # never imports the one above it.


def _pattern_bounds(name: str, start: int, pattern, size: int) -> str | None:
    """Why an access pattern leaves its tensor, or None (an empty pattern touches nothing)."""
    if any(n == 0 for _, n in pattern):
        return None if 0 <= start <= size else f"access pattern offset {start} is outside {name!r}, which has {size} elements"
    lo = start + sum(min(0, s * (n - 1)) for s, n in pattern)
    hi = start + sum(max(0, s * (n - 1)) for s, n in pattern)
    if lo < 0 or hi >= size:
        return (
            f"access pattern {[list(p) for p in pattern]} at offset {start} reaches element "
            f"{hi if hi >= size else lo} of {name!r}, which has {size}"
        )
    return None


def _deferred(problem: str) -> str:
    """The message an out-of-bounds view raises when accessed, naming where it was made."""
    where = kernel_location()
    return f"{problem} (view made at {where.rpartition('/')[2]})" if where else problem


def check_access(t: NkiTensor, role: str) -> None:
    """Raise the bounds error of a view an instruction is about to access (out of bounds, or empty)."""
    if t.bad is not None:
        raise rule_error(
            "err_tensor_access_out_of_bound",
            f"{role}: {t.bad}",
            "keep every accessed view inside its tensor; for the last tile use min(start + size, n)",
        )
    if t._data.size == 0:
        raise rule_error(
            "err_tensor_access_out_of_bound",
            f"{role}: view {t.shape} of {t.name!r} is empty",
            "skip the instruction when the tile has no elements (an empty slice is fine until accessed)",
        )


def resolve_indirect(t: NkiTensor, oob_skip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Flat storage and element indices (shape = view shape) of an indirect view; -1 marks skipped rows."""
    ind = t.dyn
    inner = ind.pattern[1:]
    grids = np.zeros([n for _, n in inner] or [1], dtype=np.int64)
    for axis, (step, n) in enumerate(inner):
        shape = [1] * len(inner)
        shape[axis] = n
        grids = grids + (np.arange(n, dtype=np.int64) * step).reshape(shape)
    p = ind.pattern[0][1]
    if ind.mode == "ti":
        return ind.flat, _ti_elements(t, ind, p, oob_skip)
    idx = _index_value(ind.index).reshape(-1)
    if ind.mode == "scalar":
        rows = ind.start + idx[0] * ind.row_stride + np.arange(p, dtype=np.int64) * ind.pattern[0][0]
    else:
        if idx.size < p:
            raise rule_error(
                "err_shape_mismatch",
                f"vector_offset has {idx.size} indices for {p} partitions",
                "pass a (P, 1) index tile with one row per partition",
            )
        rows = ind.start + idx[:p] * ind.row_stride
    elems = rows.reshape((p,) + (1,) * len(inner)) + grids.reshape((1,) + grids.shape[: len(inner)])
    if not inner:
        elems = elems.reshape(p)
    size = ind.flat.size
    bad = (elems < 0) | (elems >= size)
    if bad.any():
        if not oob_skip:
            row = int(np.argmax(bad.reshape(p, -1).any(axis=1)))
            raise rule_error(
                "err_tensor_access_out_of_bound",
                f"dynamic offset {int(idx[min(row, idx.size - 1)])} puts row {row} of {t.name!r} outside its {size} elements",
                "check the index values, or pass oob_mode=nisa.oob_mode.skip to skip such rows",
            )
        bad_rows = bad.reshape(p, -1).any(axis=1)
        elems = np.where(bad_rows.reshape((p,) + (1,) * (elems.ndim - 1)), -1, elems)
    return ind.flat, elems


def _ti_elements(t: NkiTensor, ind: Indirect, p: int, oob_skip: bool) -> np.ndarray:
    values = _index_value(ind.index)
    values = values.reshape(values.shape[0], -1)
    g = min(ind.group, values.shape[0])
    n = ind.pattern[1][1]
    i = np.arange(n)
    if n > values.size or (i // g).max(initial=0) >= values.shape[1]:
        raise rule_error("err_shape_mismatch", f"{n} offsets need index[i % {g}, i // {g}] beyond index {values.shape}", None)
    offsets = values[i % g, i // g]
    (pstep, _), (fstep, _) = ind.pattern
    elems = ind.start + np.arange(p, dtype=np.int64)[:, None] * pstep + offsets[None, :] * fstep
    per_partition = t.storage.pp_bytes // ind.flat.itemsize
    bad = (offsets < 0) | (offsets * fstep >= per_partition)
    if bad.any() and not oob_skip:
        raise rule_error(
            "err_tensor_access_out_of_bound",
            f"indirect offset {int(offsets[bad][0])} is outside the {per_partition} elements of a partition of {t.name!r}",
            "check the offsets in the index tile",
        )
    return np.where(bad[None, :], -1, elems)


def stored_values(t: NkiTensor, oob_skip: bool = False) -> np.ndarray:
    """Stored values of a view (a copy for indirect views; skipped rows read as 0)."""
    if t.storage.pending is not None:
        t.storage.flush()
    if t.dyn is None:
        return t._data
    flat, idx = resolve_indirect(t, oob_skip)
    out = flat[np.where(idx < 0, 0, idx)]
    if oob_skip:
        out = np.where(idx < 0, np.zeros((), out.dtype), out)
    return out


def region(t: NkiTensor) -> tuple[int, int, int, int, int, int]:
    """(partition_start, partitions, byte_start, byte_stop, contiguous_bytes, nbytes) of a view, cached.

    On-chip: partitions and the byte range within each partition. HBM: the byte range of the tensor,
    with `partitions` = number of contiguous chunks (the DMA descriptor count).
    """
    reg = t._reg
    if reg is not None:
        return reg
    st = t.storage
    data = t._data
    item = data.itemsize
    nbytes = data.size * item
    if t.dyn is not None:
        reg = (0, data.shape[0] if data.ndim else 1, 0, st.array.nbytes, item, nbytes)
        t._reg = reg
        return reg
    off = t._off
    if off is None:
        off = t._off = data.__array_interface__["data"][0] - st.ptr
    shape, strides = data.shape, data.strides
    hbm = st.kind == "hbm"
    # A loop takes the same view of fresh tiles (and the same slices of its inputs) again and again: the region
    # depends only on this key, so it is computed once per distinct key.
    key = (off, shape, strides, item, hbm, st.pstride)
    reg = _REGIONS.get(key)
    if reg is not None:
        t._reg = reg
        return reg
    reg = t._reg = _region(off, shape, strides, item, nbytes, hbm, st.pstride)
    if len(_REGIONS) >= 100_000:
        _REGIONS.clear()
    _REGIONS[key] = reg
    return reg


_REGIONS: dict[tuple, tuple[int, int, int, int, int, int]] = {}


def view_code(t: NkiTensor) -> int:
    """A negative int naming everything an instruction's rules and trace record can read of a plain view (its
    memory, dtype, shape, strides and region: equal codes, equal facts), or 0 for a view checked or resolved
    only when accessed (run-time addressed, out of bounds or empty: see check_access). Cached on the view.
    Codes are never reused (the table is forgotten when it grows too large, the counter is not), so a code
    remembered by a rule cache can never name another view's facts."""
    code = t._code
    if code is not None:
        return code
    data = t._data
    if t.dyn is not None or t.bad is not None or not data.size:
        t._code = 0
        return 0
    st = t.storage
    off = t._off
    if off is None:
        off = t._off = data.__array_interface__["data"][0] - st.ptr
    # shared or private HBM (shared_storage, inlined): rules tell them apart (sendrecv_compute takes private HBM only)
    shared = st.kind == "hbm" and (st.role == "input" or st.region is _SHARED_HBM)
    key = (st.kind, shared, t.dtype.name, data.shape, data.strides, data.itemsize, off, st.pstride)
    code = _VIEW_CODES.get(key)  # the key holds every input of region(): one code, one region
    if code is None:
        if len(_VIEW_CODES) >= 100_000:
            _VIEW_CODES.clear()
        code = _VIEW_CODES[key] = next(_view_codes)
    t._code = code
    return code


_VIEW_CODES: dict[tuple, int] = {}
_view_codes = count(-1, -1)


def sliced_code(parent: int, off: int, shape: tuple) -> int:
    """The view code of a slice of a plain view (code `parent`) that keeps its strides: the parent's facts, the
    slice's byte offset in the storage and its shape make every fact view_code names, with a key cheaper to hash
    (a loop slices the same tiles of its inputs again and again). The same facts reached another way may have
    another code; a rule cache then checks them once more, never reuses another view's facts."""
    key = (parent, off, shape)
    code = _SLICED_CODES.get(key)
    if code is None:
        if len(_SLICED_CODES) >= 100_000:
            _SLICED_CODES.clear()
        code = _SLICED_CODES[key] = next(_view_codes)
    return code


_SLICED_CODES: dict[tuple, int] = {}


def _region(off: int, shape: tuple, strides: tuple, item: int, nbytes: int, hbm: bool, pstride: int) -> tuple[int, int, int, int, int, int]:
    first = 0 if hbm else 1
    run = item  # innermost contiguous run in bytes
    contiguous = True
    lo = hi = 0
    for d in range(len(shape) - 1, first - 1, -1):
        n, s = shape[d], strides[d]
        if n == 1:
            continue
        if contiguous and s == run:
            run *= n
        else:
            contiguous = False
        step = s * (n - 1)
        if step < 0:
            lo += step
        else:
            hi += step
    if hbm:
        return (0, max(1, nbytes // run), off + lo, off + hi + item, run, nbytes)
    p0 = off // pstride
    f_off = off - p0 * pstride
    return (p0, shape[0] if shape else 1, f_off + lo, f_off + hi + item, run, nbytes)


def access(t: NkiTensor, role: str) -> Access:
    """The region of storage a view touches, for the trace."""
    return Access(t.storage.id, *layout(t, role))


def layout(t: NkiTensor, role: str) -> Layout:
    """How a view is accessed as operand `role`, without the storage (the trace's per-operand record)."""
    p0, parts, lo, hi, run, nbytes = region(t)
    return Layout(t.storage.kind, role, t._data.shape, t.dtype.name, nbytes, p0, parts, lo, hi, run)


def partition_start(t: NkiTensor) -> int:
    if t.dyn is not None or t.storage.kind == "hbm":
        return 0
    return region(t)[0]


def free_size(t: NkiTensor) -> int:
    """Elements per partition (on-chip: all dims but the first)."""
    shape = t._data.shape
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def partitions(t: NkiTensor) -> int:
    return t._data.shape[0] if t._data.ndim else 1
