"""`nki.isa` as the emulator provides it: one public function per declared op, plus the enums,
registers and version queries. Imported as `nki.isa` under the shim.
"""

from __future__ import annotations

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator import gate
from nkidev.emulator import ops as _ops  # noqa: F401  (registers every op declaration)
from nkidev.emulator.alu import DEFAULT_SPECS
from nkidev.emulator.enums import dependency as dependency
from nkidev.emulator.enums import dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, oob_mode, reduce_cmd
from nkidev.emulator.instruction import NkiInstruction as NkiInstruction
from nkidev.emulator.opdef import OPS, public_function
from nkidev.emulator.register_ops import register_alloc as register_alloc
from nkidev.emulator.register_ops import register_load as register_load
from nkidev.emulator.register_ops import register_move as register_move
from nkidev.emulator.register_ops import register_store as register_store
from nkidev.emulator.register_ops import scalar_load as scalar_load
from nkidev.emulator.register_ops import scalar_store as scalar_store
from nkidev.emulator.registers import NkiScalar as NkiScalar
from nkidev.emulator.registers import VirtualRegister as VirtualRegister
from nkidev.errors import NkiValidationError as NkiValidationError

# The names op signatures use as defaults (engine=engine.unknown, cmp_op=equal, ...)
_NS = {
    "engine": engine,
    "reduce_cmd": reduce_cmd,
    "dge_mode": dge_mode,
    "oob_mode": oob_mode,
    "matmul_perf_mode": matmul_perf_mode,
    "dma_engine": dma_engine,
    **DEFAULT_SPECS,
    "_FP32_MIN": float(np.finfo(np.float32).min),
}
ISA_OPS = {name: op for name, op in OPS.items() if op.namespace == "isa"}
for _name, _op in ISA_OPS.items():
    globals()[_name] = public_function(_op, _NS)

# Deprecated engine constants (use engine.<name>)
tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


def get_nc_version() -> nc_version:
    """The nc_version of the current target (gen2 = trn1, gen3 = trn2, gen4 = trn3)."""
    return nc_version(_ctx.current().target.nc_version)


def get_nc_sub_version() -> int:
    return 0


__all__ = sorted(
    list(ISA_OPS)
    + [
        "engine",
        "reduce_cmd",
        "dge_mode",
        "oob_mode",
        "matmul_perf_mode",
        "nc_version",
        "dma_engine",
        "NkiValidationError",
        "NkiInstruction",
        "VirtualRegister",
        "register_alloc",
        "register_move",
        "register_load",
        "register_store",
        "get_nc_version",
        "get_nc_sub_version",
        "NkiScalar",
        "scalar_load",
        "scalar_store",
        "dependency",
        "tensor_engine",
        "vector_engine",
        "scalar_engine",
        "gpsimd_engine",
        "unknown_engine",
    ]
)

gate.apply(globals(), "nki.isa")  # names newer or older than the running NKI version raise a named error when used
