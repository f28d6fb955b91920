"""The instruction trace: one record per executed ISA op, the input of the cost model, stored as columns.

An instruction is split into its *form* and the rest. The form (`Form`) is everything the cost model and
the profile need that does not depend on which storages were touched: opcode, engine, partitions, free
size, flops, attributes and the layout of every operand (buffer, role, shape, dtype, byte ranges). A loop
issues the same few forms over and over, so forms are interned once and the trace keeps, per instruction,
only its id, form code, source-location code and program (typed `array` columns), plus one storage id per
operand. That is ~50 bytes an instruction instead of ~1 KB of objects, and no garbage for the cyclic GC.

Two ways to read it:
- rows, for every consumer that wants objects: `trace.instructions[i]` is an `Instruction` with `Access`
  operands, built on demand (`len(trace)`, iteration, `trace.instructions.append(Instruction(...))` work);
- columns, for the hot consumers (scheduler, dependencies, profile tables): `trace.columns()` (NumPy arrays)
  and `trace.forms`; per-form facts are computed once per form and gathered with `forms_column`.

Records hold ids and byte ranges, never tensor objects, so tiles are freed as soon as the kernel
drops them and the trace stays cheap to build and keep. Rows are snapshots: change a trace through its
methods (`append`, `tensors[id] = record`, `tensors.set_kind`), never by mutating a row.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import NamedTuple

import numpy as np


class Layout(NamedTuple):
    """Where and how an operand is accessed, without the storage: an `Access` is (tensor, *layout)."""

    buffer: str  # "sbuf" | "psum" | "hbm"
    role: str  # argument name: "dst", "data", "stationary", ...
    shape: tuple[int, ...]
    dtype: str
    nbytes: int  # bytes actually touched
    partition_start: int
    partitions: int
    byte_start: int
    byte_stop: int
    contiguous_bytes: int  # length of the innermost contiguous run (DMA descriptor size)


@dataclass(slots=True)
class Access:
    """One operand region an instruction reads or writes.

    On-chip (sbuf/psum): partitions [partition_start, partition_start + partitions) and bytes
    [byte_start, byte_stop) within each partition. HBM: bytes [byte_start, byte_stop) of the tensor,
    partitions = number of rows the access spans (the DMA descriptor count).
    """

    tensor: int  # storage id (see Trace.tensors)
    buffer: str  # "sbuf" | "psum" | "hbm"
    role: str  # argument name: "dst", "data", "stationary", ...
    shape: tuple[int, ...]
    dtype: str
    nbytes: int  # bytes actually touched
    partition_start: int
    partitions: int
    byte_start: int
    byte_stop: int
    contiguous_bytes: int  # length of the innermost contiguous run (DMA descriptor size)

    def layout(self) -> Layout:
        return Layout(
            self.buffer,
            self.role,
            tuple(self.shape),
            self.dtype,
            self.nbytes,
            self.partition_start,
            self.partitions,
            self.byte_start,
            self.byte_stop,
            self.contiguous_bytes,
        )


@dataclass(slots=True)
class Instruction:
    id: int
    opcode: str  # the nki.isa name: "nc_matmul", "dma_copy", "activation", ...
    engine: str  # "tensor" | "vector" | "scalar" | "gpsimd" | "dma"
    location: str | None  # "/path/kernel.py:42", the kernel line that issued it
    reads: list[Access]
    writes: list[Access]
    partitions: int  # P: lanes used
    free_elems: int  # N: elements per partition of the largest operand (cost formulas use it)
    flops: int  # matmul/transpose: 2*K*M*N; elementwise: elements processed
    program: int = 0  # linear SPMD program id (NeuronCore for LNC)
    attrs: dict = field(default_factory=dict)  # op details: K/M/N, dtypes, activation func, alu ops, dge mode ... (read only)


@dataclass(slots=True, eq=False)  # eq=False: hashed by identity, the trace interns forms by object
class Form:
    """An instruction without its storages, program and source line; cost expressions evaluate on it
    (it has the `engine`, `partitions`, `free_elems`, `attrs`, `reads` and `writes` they read)."""

    opcode: str
    engine: str
    partitions: int
    free_elems: int
    flops: int
    attrs: dict  # shared by every instruction of this form: read only
    reads: tuple[Layout, ...]
    writes: tuple[Layout, ...]

    def content(self) -> tuple | None:
        """A hashable value equal for equal forms (None when an attribute value is unhashable)."""
        key = (self.opcode, self.engine, self.partitions, self.free_elems, self.flops, tuple(self.attrs.items()), self.reads, self.writes)
        try:
            hash(key)
        except TypeError:
            return None
        return key


_FORMS: dict[tuple, Form] = {}  # content -> the one Form object with that content (process-wide)
MAX_FORMS = 200_000  # forget them all past this (a long-lived server running many kernels)


def intern_form(form: Form) -> Form:
    """The process-wide Form equal to `form` (or `form` itself, now interned)."""
    key = form.content()
    if key is None:
        return form
    found = _FORMS.get(key)
    if found is not None:
        return found
    if len(_FORMS) >= MAX_FORMS:
        _FORMS.clear()
    _FORMS[key] = form
    return form


def form_of(ins: Instruction) -> Form:
    return intern_form(
        Form(
            ins.opcode,
            ins.engine,
            ins.partitions,
            ins.free_elems,
            ins.flops,
            ins.attrs,
            tuple(a.layout() for a in ins.reads),
            tuple(a.layout() for a in ins.writes),
        )
    )


class _Interned:
    """Values <-> small int codes (locations, names, shapes, ...)."""

    __slots__ = ("values", "codes")

    def __init__(self):
        self.values: list = []
        self.codes: dict = {}

    def code(self, value) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.values)
            self.values.append(value)
        return c


@dataclass(slots=True)
class TensorRecord:
    id: int
    name: str
    buffer: str  # "sbuf" | "psum" | "hbm"
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    kind: str  # "input" | "output" | "internal"
    location: str | None = None  # where it was allocated


@dataclass(slots=True)
class Spill:
    """On-chip demand above capacity that the compiler resolves by spilling (see emulator/liveness.py).

    `tensor` leaves `buffer` for `to` after instruction `store_after` (its last access before the gap) and is
    reloaded before instruction `reload_before` (its next access): `nbytes` are stored and later reloaded.
    `instruction` / `location` are where the demand peaked (the kernel line the warning names);
    `tensor_location` is where the tensor was allocated. `reload_after` is the last instruction before the reload
    during which the space the tensor returns to is still taken (the reload may start once it ends: a prefetch).
    Instruction ids are None when no trace was recorded.
    """

    tensor: int  # storage id (see Trace.tensors)
    name: str
    buffer: str  # "sbuf" | "psum"
    to: str  # where it goes: "hbm" for SBUF tiles, "sbuf" for PSUM tiles
    bytes_per_partition: int
    partitions: int
    nbytes: int  # bytes moved each way
    store_after: int | None
    reload_before: int | None
    instruction: int | None
    location: str | None
    tensor_location: str | None
    reload_after: int | None = None


_table_serials = count()


class TensorTable:
    """Storage id -> TensorRecord, as columns (a big kernel allocates a tile per loop iteration).

    A mapping: `tensors[id]` (a fresh record, a snapshot), `get`, `in`, `keys/values/items`, `len`;
    `tensors[id] = record` adds or replaces; `set_kind(id, kind)` marks outputs.

    A row is its id and a site code: a loop allocates the same tile (name, buffer, shape, dtype, nbytes, kind,
    location) again and again, so each distinct one is kept once, as codes, in `_site_codes`."""

    def __init__(self):
        self._id = array("q")
        self._site = array("i")  # per row: index into _site_codes
        self._sites: dict[tuple, int] = {}  # (name, buffer, shape, dtype, nbytes, kind, location) -> site code
        self._site_codes: list[tuple] = []  # site code -> (name, buffer, shape, dtype, kind, location codes, nbytes)
        self._strings = _Interned()  # names, buffers, dtypes, kinds, locations
        self._shapes = _Interned()
        self._index: dict[int, int] | None = None  # only when ids arrive out of order
        self.serial = next(_table_serials)  # names this table among all (an allocator caches site codes per table)

    def site_code(self, name: str, buffer: str, shape: tuple, dtype: str, nbytes: int, kind: str, location: str | None) -> int:
        """The code of one distinct (name, buffer, shape, dtype, nbytes, kind, location) in this table."""
        site = (name, buffer, shape, dtype, nbytes, kind, location)
        code = self._sites.get(site)
        if code is None:
            s = self._strings.code
            code = self._sites[site] = len(self._site_codes)
            self._site_codes.append((s(name), s(buffer), self._shapes.code(shape), s(dtype), s(kind), s(location), nbytes))
        return code

    def add(self, id: int, name: str, buffer: str, shape: tuple, dtype: str, nbytes: int, kind: str, location: str | None) -> None:
        self.add_row(id, self.site_code(name, buffer, shape, dtype, nbytes, kind, location))

    def add_row(self, id: int, code: int) -> None:
        """add, given the site code of the record (site_code)."""
        ids = self._id
        if self._index is None and (not ids or id > ids[-1]):  # the emulator's case: a new, larger id
            ids.append(id)
            self._site.append(code)
            return
        row = self._row(id)
        if row is not None:
            self._site[row] = code
            return
        if self._index is None and self._id and id < self._id[-1]:
            self._index = {t: k for k, t in enumerate(self._id)}
        if self._index is not None:
            self._index[id] = len(self._id)
        self._id.append(id)
        self._site.append(code)

    def _row(self, id) -> int | None:
        if self._index is not None:
            return self._index.get(id)
        k = bisect.bisect_left(self._id, id)
        return k if k < len(self._id) and self._id[k] == id else None

    def _record(self, k: int) -> TensorRecord:
        v = self._strings.values
        name, buffer, shape, dtype, kind, loc, nbytes = self._site_codes[self._site[k]]
        return TensorRecord(self._id[k], v[name], v[buffer], self._shapes.values[shape], v[dtype], nbytes, v[kind], v[loc])

    def set_kind(self, id: int, kind: str) -> None:
        row = self._row(id)
        if row is None:
            raise KeyError(id)
        rec = self._record(row)
        self._site[row] = self.site_code(rec.name, rec.buffer, rec.shape, rec.dtype, rec.nbytes, kind, rec.location)

    def pop(self, id: int, default=None):
        """Remove a storage's row (the legacy front end drops a fresh tile it retargeted); its record or `default`."""
        row = self._row(id)
        if row is None:
            return default
        rec = self._record(row)
        del self._id[row]
        del self._site[row]
        if self._index is not None:
            self._index = {t: k for k, t in enumerate(self._id)}
        return rec

    def __setitem__(self, id: int, rec: TensorRecord) -> None:
        self.add(id, rec.name, rec.buffer, tuple(rec.shape), rec.dtype, rec.nbytes, rec.kind, rec.location)

    def __getitem__(self, id: int) -> TensorRecord:
        row = self._row(id)
        if row is None:
            raise KeyError(id)
        return self._record(row)

    def get(self, id: int, default=None):
        row = self._row(id)
        return default if row is None else self._record(row)

    def __contains__(self, id) -> bool:
        return self._row(id) is not None

    def __len__(self) -> int:
        return len(self._id)

    def __iter__(self) -> Iterator[int]:
        return iter(self._id)

    def keys(self):
        return list(self._id)

    def values(self) -> Iterator[TensorRecord]:
        return (self._record(k) for k in range(len(self._id)))

    def items(self) -> Iterator[tuple[int, TensorRecord]]:
        return ((self._id[k], self._record(k)) for k in range(len(self._id)))

    def _codes_of(self, field: str) -> np.ndarray:
        """Per row, the code of one field (nbytes: the value), as int64."""
        j = {"name": 0, "buffer": 1, "shape": 2, "dtype": 3, "kind": 4, "location": 5, "nbytes": 6}[field]
        per_site = np.array([codes[j] for codes in self._site_codes], dtype=np.int64)
        return per_site[np.asarray(self._site, dtype=np.int64)] if len(self._site) else np.zeros(0, dtype=np.int64)

    def column(self, name: str) -> np.ndarray | list:
        """One column by field name: ids and nbytes as int64 arrays, the others as lists of values."""
        if name == "id":
            return np.array(self._id, dtype=np.int64)
        if name == "nbytes":
            return self._codes_of("nbytes")
        codes = self._codes_of(name)  # KeyError for an unknown field
        values = self._shapes.values if name == "shape" else self._strings.values
        return [values[c] for c in codes.tolist()]

    def codes(self, name: str) -> tuple[np.ndarray, list]:
        """(code per row, value per code) of a column: shape, name, buffer, dtype, kind or location."""
        if name == "nbytes":
            raise KeyError(name)
        return self._codes_of(name), self._shapes.values if name == "shape" else self._strings.values

    def rows_of(self, ids, table: np.ndarray | None = None) -> np.ndarray:
        """Row number in this table of each storage id (-1 where unknown), vectorized (`table`: a cached
        `column("id")`)."""
        table = np.array(self._id, dtype=np.int64) if table is None else table
        ids = np.asarray(ids, dtype=np.int64)
        if table.size == 0:
            return np.full(ids.shape, -1, dtype=np.int64)
        if self._index is not None:
            order = np.argsort(table, kind="stable")
            pos = np.searchsorted(table[order], ids).clip(0, table.size - 1)
            rows = order[pos]
        else:
            rows = np.searchsorted(table, ids).clip(0, table.size - 1)
        return np.where(table[rows] == ids, rows, -1)


@dataclass
class Columns:
    """A NumPy snapshot of the instruction columns (see Trace.columns)."""

    id: np.ndarray  # int64, per instruction
    form: np.ndarray  # int32 code into Trace.forms
    location: np.ndarray  # int32 code into Trace.locations
    program: np.ndarray  # int32
    acc_start: np.ndarray  # int64: the instruction's operands are acc_tensor[acc_start : acc_start + reads + writes]
    acc_tensor: np.ndarray  # int64 storage id per operand, each instruction's reads first, then its writes


_ROW = 5  # ints per recorded row: id, form code, location code, program, number of operands
_BLOCK_ROWS = 4096  # rows recorded before they move into the typed columns


def _int64s(values: list[int]) -> bytes:
    """Python ints as native int64 bytes: struct converts a list 3x faster than np.array or array('q') do."""
    return struct.pack(f"{len(values)}q", *values)


class Trace:
    def __init__(
        self,
        kernel: str,
        target: str,
        instructions: Sequence[Instruction] = (),
        tensors: dict | None = None,
        warnings: list[dict] | None = None,
        programs: int = 1,
        spills: list[Spill] | None = None,
    ):
        self.kernel = kernel
        self.target = target
        self.warnings: list[dict] = list(warnings or [])
        self.programs = programs
        self.spills: list[Spill] = list(spills or [])  # on-chip spills the compiler must insert (liveness.py)
        self.tensors = TensorTable()
        for tid, rec in (tensors or {}).items():
            self.tensors[tid] = rec
        self.forms: list[Form] = []  # code -> Form
        self._form_codes: dict[Form, int] = {}
        self._locations = _Interned()
        self._id, self._form, self._loc, self._program = array("q"), array("i"), array("i"), array("i")
        self._acc_start, self._acc_tensor = array("q"), array("q")
        # Rows recorded but not yet in the columns above (see record): _ROW ints each, and their operands' ids
        self._rows: list[int] = []
        self._row_tensors: list[int] = []
        # Positions k with an ordering fence before instruction k: the compiler keeps source order across a fence
        # (sequential loop iterations, no_reorder blocks), and reorders only within the stretch between two.
        self._fences = array("q")
        self.edges: list[tuple[int, int]] = []  # (producer id, consumer id): NkiInstruction.depends_on
        self._columns: Columns | None = None
        for ins in instructions:
            self.append(ins)

    # --- building --------------------------------------------------------------------------------

    def record(self, id: int, form: Form, location: str | None, program: int, tensors) -> None:
        """Append one instruction: the emulator's fast path (`tensors`: storage id per operand, reads then writes).

        The row is kept as Python ints first and moved into the typed columns a block at a time (`_settle`):
        appending to an `array` converts each int through PyArg_Parse, five times the cost of a list append."""
        code = self._form_codes.get(form)
        if code is None:
            code = self._form_codes[form] = len(self.forms)
            self.forms.append(form)
        loc = self._locations.codes.get(location)
        if loc is None:
            loc = self._locations.code(location)
        rows = self._rows
        rows += (id, code, loc, program, len(tensors))
        operands = self._row_tensors
        operands += tensors
        if len(rows) >= _BLOCK_ROWS * _ROW:
            self._settle()

    def _settle(self) -> None:
        """Move the recorded rows into the typed columns (every reader of the columns calls this first)."""
        rows = self._rows
        if not rows:
            return
        block = np.frombuffer(_int64s(rows), dtype=np.int64).reshape(-1, _ROW)
        counts = block[:, 4]
        self._acc_start.frombytes((np.cumsum(counts) - counts + len(self._acc_tensor)).tobytes())
        self._acc_tensor.frombytes(_int64s(self._row_tensors))
        self._id.frombytes(block[:, 0].tobytes())
        self._form.frombytes(block[:, 1].astype(np.int32).tobytes())
        self._loc.frombytes(block[:, 2].astype(np.int32).tobytes())
        self._program.frombytes(block[:, 3].astype(np.int32).tobytes())
        rows.clear()
        self._row_tensors.clear()

    def append(self, ins: Instruction) -> None:
        """Append an instruction given as a row."""
        self.record(ins.id, form_of(ins), ins.location, ins.program, [a.tensor for a in ins.reads] + [a.tensor for a in ins.writes])

    def pop(self) -> Instruction:
        """Remove the last instruction and return it as a row."""
        self._settle()
        if not self._id:
            raise IndexError("pop from an empty trace")
        ins = self.row(len(self._id) - 1)
        del self._id[-1], self._form[-1], self._loc[-1], self._program[-1]
        del self._acc_tensor[self._acc_start.pop() :]
        while self._fences and self._fences[-1] > len(self._id):
            self._fences.pop()
        self._columns = None
        return ins

    def replace_last(self, ins: Instruction) -> None:
        """Replace the last instruction by a row (rows are snapshots: edit one, then put it back)."""
        self.pop()
        self.append(ins)

    def add_edge(self, producer: int, consumer: int) -> None:
        """An explicit dependency between two recorded instructions (by id)."""
        self.edges.append((producer, consumer))

    # --- ordering fences --------------------------------------------------------------------------

    def fence(self) -> None:
        """No instruction recorded after this point may be scheduled before one recorded earlier on its engine."""
        n = len(self)
        if not self._fences or self._fences[-1] != n:
            self._fences.append(n)

    def fence_each_since(self, start: int) -> None:
        """Keep the instructions recorded from position `start` on in source order (a no_reorder block)."""
        self.fence_positions(range(start, len(self) + 1))

    def fence_positions(self, positions) -> None:
        merged = np.union1d(np.asarray(self._fences, dtype=np.int64), np.asarray(list(positions), dtype=np.int64))
        self._fences = array("q", merged.astype(np.int64).tobytes())

    def epochs(self) -> np.ndarray:
        """Per instruction, the number of fences at or before it (int64): the scheduler may reorder instructions of
        one engine only while they share an epoch."""
        fences = np.asarray(self._fences, dtype=np.int64)
        return np.searchsorted(fences, np.arange(len(self), dtype=np.int64), side="right")

    def order_by_program(self) -> dict[int, int]:
        """List each program's instructions together, each in its own order, with ids renumbered to positions;
        returns old id -> new id."""
        self._settle()
        n = len(self._id)
        order = np.argsort(np.array(self._program, dtype=np.int32), kind="stable")
        epochs = self.epochs()[order]  # monotone within each program; a program boundary is a fence too
        self._fences = array("q", (np.flatnonzero(np.diff(epochs) != 0) + 1).astype(np.int64).tobytes())
        old_ids = np.array(self._id, dtype=np.int64)[order]
        start = np.array(self._acc_start, dtype=np.int64)
        count = np.diff(np.append(start, len(self._acc_tensor)))[order]
        tensors = np.array(self._acc_tensor, dtype=np.int64)
        new_start = np.cumsum(count) - count
        take = np.repeat(start[order] - new_start, count) + np.arange(count.sum(), dtype=np.int64)
        self._id = array("q", range(n))
        self._form = array("i", np.array(self._form, dtype=np.int32)[order].tobytes())
        self._loc = array("i", np.array(self._loc, dtype=np.int32)[order].tobytes())
        self._program = array("i", np.array(self._program, dtype=np.int32)[order].tobytes())
        self._acc_start = array("q", new_start.astype(np.int64).tobytes())
        self._acc_tensor = array("q", tensors[take].astype(np.int64).tobytes())
        self._columns = None
        remap = dict(zip(old_ids.tolist(), range(n)))
        self.edges = [(remap[a], remap[b]) for a, b in self.edges if a in remap and b in remap]
        return remap

    def add_warning(self, name: str, message: str, location: str | None) -> None:
        self.warnings.append({"name": name, "message": message, "location": location})

    # --- rows ------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._id) + len(self._rows) // _ROW

    @property
    def instructions(self) -> InstructionRows:
        return InstructionRows(self)

    @property
    def locations(self) -> list[str | None]:
        """Location code -> "/path/kernel.py:LINE" (or None)."""
        return self._locations.values

    def row(self, i: int) -> Instruction:
        if self._rows:
            self._settle()
        f = self.forms[self._form[i]]
        k = self._acc_start[i]
        ids = self._acc_tensor
        nr = len(f.reads)
        reads = [Access(ids[k + j], *lay) for j, lay in enumerate(f.reads)]
        writes = [Access(ids[k + nr + j], *lay) for j, lay in enumerate(f.writes)]
        return Instruction(
            self._id[i],
            f.opcode,
            f.engine,
            self._locations.values[self._loc[i]],
            reads,
            writes,
            f.partitions,
            f.free_elems,
            f.flops,
            self._program[i],
            f.attrs,
        )

    # --- columns ---------------------------------------------------------------------------------

    def columns(self) -> Columns:
        """The instruction columns as NumPy arrays (a snapshot, cached until the trace grows)."""
        self._settle()
        c = self._columns
        if c is None or len(c.id) != len(self._id) or len(c.acc_tensor) != len(self._acc_tensor):
            c = self._columns = Columns(
                np.array(self._id, dtype=np.int64),
                np.array(self._form, dtype=np.int32),
                np.array(self._loc, dtype=np.int32),
                np.array(self._program, dtype=np.int32),
                np.array(self._acc_start, dtype=np.int64),
                np.array(self._acc_tensor, dtype=np.int64),
            )
        return c

    def forms_column(self, values: Sequence, dtype=None) -> np.ndarray:
        """Per-instruction array of a per-form value: `values[k]` is the value of form k."""
        table = np.asarray(values, dtype=dtype)
        return table[self.columns().form] if len(table) else np.zeros(len(self), dtype=table.dtype)


class InstructionRows(Sequence):
    """`trace.instructions`: the trace as a sequence of `Instruction` rows, built when read."""

    __slots__ = ("trace",)

    def __init__(self, trace: Trace):
        self.trace = trace

    def __len__(self) -> int:
        return len(self.trace)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.trace.row(k) for k in range(*i.indices(len(self.trace)))]
        n = len(self.trace)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("instruction index out of range")
        return self.trace.row(i)

    def __iter__(self) -> Iterator[Instruction]:
        row = self.trace.row
        return (row(i) for i in range(len(self.trace)))

    def append(self, ins: Instruction) -> None:
        self.trace.append(ins)

    def pop(self) -> Instruction:
        return self.trace.pop()
