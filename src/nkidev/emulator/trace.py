"""The instruction trace: one record per executed ISA op, the input of the cost model.

Records hold ids and byte ranges, never tensor objects, so tiles are freed as soon as the kernel
drops them and the trace stays cheap to build and keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    attrs: dict = field(default_factory=dict)  # op details: K/M/N, dtypes, activation func, alu ops, dge mode ...


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
    `tensor_location` is where the tensor was allocated. Instruction ids are None when no trace was recorded.
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


@dataclass
class Trace:
    kernel: str
    target: str
    instructions: list[Instruction] = field(default_factory=list)
    tensors: dict[int, TensorRecord] = field(default_factory=dict)
    warnings: list[dict] = field(default_factory=list)
    programs: int = 1
    spills: list[Spill] = field(default_factory=list)  # on-chip spills the compiler must insert (liveness.py)

    def __len__(self) -> int:
        return len(self.instructions)

    def add_warning(self, name: str, message: str, location: str | None) -> None:
        self.warnings.append({"name": name, "message": message, "location": location})
