"""ISA op declarations, one module per family; importing the package registers them all."""

from nkidev.emulator.ops import dma, gpsimd, misc, scalar, select, tensor_engine, vector  # noqa: F401
