"""ISA op declarations, one module per family; importing the package registers them all in `OPS`.

Code that reads op facts imports `OPS` from here, so the table is always complete when it is read.
"""

from nkidev.emulator.opdef import OPS, ops_where
from nkidev.emulator.ops import collectives, dma, gpsimd, misc, mx, scalar, select, tensor_engine, vector  # noqa: F401

__all__ = ["OPS", "ops_where"]
