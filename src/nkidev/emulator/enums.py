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
    """NeuronCore version."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(Enum):  # noqa: N801
    """DMA transfer engine for sendrecv."""

    dma = 1
    gpsimd_dma = 2
