"""The top-level `nki` module as the emulator provides it (`import nki` under the shim)."""

from __future__ import annotations

import sys
import types

import numpy as np

from nkidev.emulator import compiler_config, gate, isa, language, nki_typing, versions
from nkidev.emulator import context as _ctx
from nkidev.emulator import isa_constants as _constants
from nkidev.emulator.instruction import NkiInstruction
from nkidev.emulator.jit import Kernel, jit, simulate
from nkidev.emulator.location import kernel_location, rule_error
from nkidev.emulator.memory import raw
from nkidev.emulator.opdef import OPS, ops_where, public_function
from nkidev.emulator.ops.collectives import ReplicaGroup, current_processing_rank, rg_partition_op
from nkidev.emulator.registers import VirtualRegister
from nkidev.emulator.tensor import NkiTensor
from nkidev.errors import NkiNotSupportedError

__version__ = f"{versions.NEWEST}.0+nkidev"  # the newest emulated version; the one a kernel is checked against is selectable
typing = nki_typing
cpu_simulate = simulate  # the name nki-library's test harness uses


def simulate_kernel(kernel, *args, **kwargs):
    """Legacy `nki.simulate_kernel(kernel, *args)`: run once, return the outputs."""
    return simulate(kernel)(*args, **kwargs)


def baremetal(kernel=None, **kwargs):
    """Legacy decorator; under the emulator the kernel simply runs on the CPU."""
    return jit(kernel) if kernel is not None else (lambda k: jit(k))


def _removed(name: str):
    def fn(*args, **kwargs):
        raise NkiNotSupportedError(
            "err_not_supported_yet",
            f"nki.{name} was removed from NKI; nkidev does not emulate it",
            "use `nkidev profile` for timing and `nki.simulate` for numerics",
            kernel_location(),
        )

    fn.__name__ = name
    return fn


benchmark = _removed("benchmark")
profile = _removed("profile")


def _module(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, doc)
    mod.__dict__.update(attrs)
    return mod


def _no_attribute(module: str, name: str):
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


def _collectives_getattr(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    qualified = f"nki.collectives.{name}"

    def fn(*args, **kwargs):
        if qualified in versions.API:
            gate.require(qualified)
        raise NkiNotSupportedError(
            "err_not_supported_yet", f"nki.collectives.{name} is not emulated by nkidev yet", None, kernel_location()
        )

    return fn


def rank_id(name=None) -> VirtualRegister:
    """This rank's id: the program's linear id in the launch (nkidev emulates collectives across one launch)."""
    return VirtualRegister(_ctx.current().program)


def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group, channel_id=0, name=None) -> VirtualRegister:
    """The rank whose data this ring member processes at `iteration_id`: itself at 0, then its predecessors."""
    it = iteration_id.value if isinstance(iteration_id, VirtualRegister) else int(iteration_id)
    return VirtualRegister(current_processing_rank(replica_group, _ctx.current().program, it))


class PreparedCollective(NkiInstruction):
    """What `all_gather_v_prepare` / `all_to_all_v_prepare` return: the collective and its arguments, which the
    paired trigger runs (NKI 0.7 split collectives)."""

    __slots__ = ("collective", "arguments", "metadata")

    def __init__(self, collective: str, arguments: dict, metadata: np.ndarray | None):
        super().__init__(None)
        self.collective, self.arguments = collective, arguments
        self.metadata = metadata  # the metadata_tensor's values when prepared: the trigger exchanges by these


_COLLECTIVES = {op_name: public_function(op, {}) for op_name, op in OPS.items() if op.namespace == "collectives"}


def _split_collective(collective: str):
    """`<collective>_prepare` and `<collective>_trigger` (v2.33.0 nki.collectives.all_gather_v_prepare /
    all_to_all_v_trigger pages): the prepare takes every argument of the plain call and returns the instruction
    the one trigger that must follow takes; prepares share one slot, so a second prepare before that trigger is
    an error. The prepare reads metadata_tensor ("which must already hold valid data") and not srcs/dsts, so
    nkidev copies the metadata's values at the prepare and runs the exchange at the trigger (the phase that reads
    srcs and writes dsts) by that copy: a kernel that rewrites the metadata between the two calls still sends
    what it had prepared."""
    run = _COLLECTIVES[collective]

    def prepare(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False, has_rdispls=False, priority=None, name=None):
        gate.require(f"nki.collectives.{collective}_prepare")
        ctx = _ctx.current()
        if ctx.pending_prepare is not None:
            raise rule_error(
                "err_invalid_argument",
                f"{collective}_prepare while a {ctx.pending_prepare.collective}_prepare awaits its trigger",
                f"call {ctx.pending_prepare.collective}_trigger first: prepares share one slot",
            )
        arguments = dict(srcs=srcs, dsts=dsts, replica_group=replica_group, metadata_tensor=metadata_tensor)
        arguments.update(recv_counts_known=recv_counts_known, has_rdispls=has_rdispls, priority=priority, name=name)
        metadata = np.array(raw(metadata_tensor)) if isinstance(metadata_tensor, NkiTensor) else None
        ctx.pending_prepare = PreparedCollective(collective, arguments, metadata)
        return ctx.pending_prepare

    def trigger(prepare_instr, name=None):
        gate.require(f"nki.collectives.{collective}_trigger")
        ctx = _ctx.current()
        if not isinstance(prepare_instr, PreparedCollective) or prepare_instr.collective != collective:
            raise rule_error(
                "err_invalid_argument",
                f"{collective}_trigger({type(prepare_instr).__name__}) is not given a {collective}_prepare instruction",
                f"pass the value the paired {collective}_prepare returned",
            )
        if ctx.pending_prepare is not prepare_instr:
            raise rule_error(
                "err_invalid_argument",
                f"{collective}_trigger of a prepare that was already triggered",
                "issue one trigger per prepare",
            )
        ctx.pending_prepare = None
        ctx.prepared_metadata = prepare_instr.metadata
        try:
            return run(**prepare_instr.arguments)
        finally:
            ctx.prepared_metadata = None

    prepare.__name__, trigger.__name__ = f"{collective}_prepare", f"{collective}_trigger"
    return {prepare.__name__: prepare, trigger.__name__: trigger}


collectives = _module(
    "nki.collectives",
    "Collectives across the programs (LNC cores, SPMD grid) of one launch.",
    __getattr__=_collectives_getattr,
    ReplicaGroup=ReplicaGroup,
    rg_partition_op=rg_partition_op,
    rank_id=rank_id,
    collective_permute_implicit_current_processing_rank_id=collective_permute_implicit_current_processing_rank_id,
    **_COLLECTIVES,
    **{name: fn for op in sorted(ops_where(lambda op: op.split)) for name, fn in _split_collective(op).items()},
)
compiler = _module(
    "nki.compiler",
    "Per-kernel compiler configuration (NKI 0.7): CompileConfig, SpecializationConfig, AddressRotation.",
    CompileConfig=gate.gated(compiler_config.CompileConfig, "nki.compiler.CompileConfig"),
    SpecializationConfig=gate.gated(compiler_config.SpecializationConfig, "nki.compiler.SpecializationConfig"),
    AddressRotation=compiler_config.AddressRotation,
)
dtype = _module(
    "nki.dtype",
    "NKI dtypes.",
    **{
        n: getattr(language, n)
        for n in (
            "bool_",
            "int8",
            "int16",
            "int32",
            "uint8",
            "uint16",
            "uint32",
            "float16",
            "float32",
            "bfloat16",
            "tfloat32",
            "float8_e4m3",
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e8m0fnu",
            "float8_e5m2_x4",
            "float8_e4m3fn_x4",
            "float4_e2m1fn_x4",
        )
    },
    # the 64-bit dtypes through nki.language's version check (NKI 0.7 names)
    __getattr__=lambda name: getattr(language, name) if name in ("int64", "uint64") else _no_attribute("nki.dtype", name),
)
tensor = _module("nki.tensor", "NKI tensors.", NkiTensor=NkiTensor)
isa.constants = _constants

MODULES = {
    "nki": sys.modules[__name__],
    "nki.language": language,
    "nki.isa": isa,
    "nki.isa.constants": _constants,
    "nki.typing": nki_typing,
    "nki.collectives": collectives,
    "nki.compiler": compiler,
    "nki.dtype": dtype,
    "nki.tensor": tensor,
}

__all__ = [
    "jit",
    "simulate",
    "Kernel",
    "language",
    "isa",
    "typing",
    "collectives",
    "cpu_simulate",
    "simulate_kernel",
    "baremetal",
    "benchmark",
    "profile",
]
