"""The `nki.isa` enums, with the official member names and values."""

from __future__ import annotations

from enum import Enum


class engine(Enum):  # noqa: N801 - NKI's spelling
    """Neuron Device engines."""

    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


class reduce_cmd(Enum):  # noqa: N801
    """Engine accumulator-register commands."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(Enum):  # noqa: N801
    """Descriptor Generation Engine mode."""

    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(Enum):  # noqa: N801
    """Out-of-bounds access mode for dynamic addresses."""

    error = 0
    skip = 1


class matmul_perf_mode(Enum):  # noqa: N801
    """Tensor Engine performance mode."""

    none = "none"
    double_row = "double_row"


class nc_version(Enum):  # noqa: N801
    """NeuronCore version; ordered (gen2 < gen3 < gen4), as kernels compare `get_nc_version() >= nc_version.gen3`."""

    gen2 = 2
    gen3 = 3
    gen4 = 4

    def _order(self, other):
        return other.value if isinstance(other, nc_version) else NotImplemented

    def __lt__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else self.value < o

    def __le__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else self.value <= o

    def __gt__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else self.value > o

    def __ge__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else self.value >= o


class dma_engine(Enum):  # noqa: N801
    """DMA transfer engine for sendrecv."""

    dma = 1
    gpsimd_dma = 2


class dependency(Enum):  # noqa: N801
    """Kind of a NkiInstruction.depends_on edge (NKI 0.7): a hardware semaphore wait, or scheduler ordering only."""

    runtime = "runtime"
    schedule = "schedule"
