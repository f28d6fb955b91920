"""Per-program emulator state: target, trace, engine accumulators and on-chip occupancy.

Each SPMD program (NeuronCore) runs with its own Context; `current()` finds it through a
thread-local, so NKI calls made outside any kernel still work against a default context.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from dataclasses import dataclass, field

try:
    import resource
except ImportError:  # not on Windows: the budget then follows the machine's RAM alone
    resource = None

import numpy as np

from nkidev.emulator import versions
from nkidev.emulator.liveness import Occupancy
from nkidev.emulator.location import kernel_frame, rule_error
from nkidev.errors import NkiWarning
from nkidev.hardware import Target, get_target


@dataclass(frozen=True)
class EmulatorOptions:
    """How strictly the emulator runs (documented in the README; every field has a sane default)."""

    target: Target | str | None = None  # a Target, or its name/alias (resolved here); None: the default at run time
    compute: bool = True  # False: check rules and build the trace, skip the NumPy math (large profiles)
    check_capacity: bool = True  # SBUF/PSUM occupancy from access intervals: spills recorded, impossible tiles rejected
    record: bool = True  # build the instruction trace
    fill: float | None = None  # value of fresh allocations instead of NaN / 4 (validate uses it to find unwritten reads)
    memory_budget: int | None = None  # bytes of live emulated tensors per program; None: 80% of the address-space limit or RAM
    nki_version: str | None = None  # "0.6" | "0.7" (or "0.7.0"); None: the default at run time (versions.default())
    # run the GEMMs of deferred matmul groups, and the copies that read them, on a worker thread while the
    # kernel's Python goes on (deferred.py; the same bits either way)
    overlap: bool = True

    def __post_init__(self):
        if self.target is not None:
            object.__setattr__(self, "target", get_target(self.target))  # resolved once; err_unknown_target early
        if self.nki_version is not None:
            object.__setattr__(self, "nki_version", versions.resolve(self.nki_version))  # err_unknown_nki_version early


_BUDGET: list[int] = []  # the default emulator memory budget, computed once per process


def default_memory_budget() -> int:
    """80% of the address-space limit (the sandbox's --memory) or else of the RAM: what the emulator may hold live."""
    if not _BUDGET:
        limits = []
        if resource is not None:
            soft = resource.getrlimit(resource.RLIMIT_AS)[0]
            if soft not in (resource.RLIM_INFINITY, -1):
                limits.append(soft)
        try:
            limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            limits.append(16 << 30)
        _BUDGET.append(int(0.8 * min(limits)))
    return _BUDGET[0]


class Memory:
    """Bytes this program's emulation holds (every live storage, as Python holds it) and live HBM bytes; storages
    release their bytes when Python frees them. On-chip SBUF/PSUM occupancy is not Python's business: it follows
    access intervals (liveness.Occupancy). Every limit is checked from the shape *before* the array exists."""

    def __init__(self, check: bool, budget: int | None = None):
        self.check = check
        self.budget = budget if budget is not None else default_memory_budget()
        self.hbm = 0
        self.total = 0  # bytes of every live storage (what the process actually holds)

    def check_fits(self, kind: str, shape: tuple, dtype, nbytes: int, target: Target) -> None:
        """Raise the named error an allocation of `shape` would hit, before allocating anything."""
        if self.total + nbytes > self.budget:
            raise rule_error(
                "err_memory_limit",
                f"allocating {shape} {dtype} ({nbytes:,} bytes) would take the emulator past its memory budget of "
                f"{self.budget:,} bytes ({self.total:,} live)",
                "use smaller shapes, or raise the budget (--memory, EmulatorOptions.memory_budget)",
            )
        if kind == "hbm":
            cap = target.hbm_bytes_per_nc
            if self.check and self.hbm + nbytes > cap:
                raise rule_error(
                    "err_hbm_capacity_exceeded",
                    f"allocating {shape} {dtype} in HBM needs {nbytes:,} bytes but {self.hbm:,} of one NeuronCore's "
                    f"{cap:,} are already live on {target.name}",
                    None,
                )

    def claim(self, storage) -> None:
        """Count a new storage's bytes (its size was checked with check_fits before it was allocated)."""
        if storage.kind == "hbm":
            self.hbm += storage.nbytes
        self.total += storage.nbytes
        storage._usage = self  # Storage.__del__ takes its bytes back off


@dataclass
class Context:
    target: Target
    options: EmulatorOptions
    trace: object | None = None  # Trace
    program_id: tuple[int, ...] = (0,)
    grid: tuple[int, ...] = (1,)
    in_kernel: bool = False
    usage: Occupancy = None  # on-chip lifetimes of this program (liveness.py)
    memory: Memory = None  # bytes the emulation of this program holds, and its live HBM
    # engine accumulator registers, one fp32 per lane, persistent across instructions
    act_acc: np.ndarray = field(default_factory=lambda: np.zeros(128, np.float32))
    vec_acc: np.ndarray = field(default_factory=lambda: np.zeros(128, np.float32))
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    rng_states: dict = field(default_factory=dict)  # engine -> per-lane PRNG state words (rand_set_state / rand_get_state)
    barrier: object | None = None  # SPMD scheduler for core_barrier/sendrecv
    counter: list = field(default_factory=lambda: [0])  # shared instruction id counter
    shared_hbm: list | None = None  # shared_hbm storages of a multi-program launch, in allocation order
    shared_count: int = 0
    placed: weakref.WeakValueDictionary = field(default_factory=weakref.WeakValueDictionary)  # (buffer, address=) -> Storage
    deferred_views: int = 0  # views made out of bounds or empty so far: dispatch checks operands once there are any
    nki_version: str | None = None  # the NKI version the kernel is checked against; None: versions.default()
    kernel: object | None = None  # the top-level Kernel being run (its compile/specialization configs)
    overlap: bool = False  # this program may queue instructions on a worker thread (launch.py; deferred.py)
    worker: object | None = None  # deferred.Worker, from the first queued instruction to the end of the program
    pending_prepare: object | None = None  # the split *_v collective prepared and not yet triggered (one slot)
    prepared_metadata: object | None = None  # while its trigger runs: the metadata values read at the prepare

    @property
    def compute(self) -> bool:
        return self.options.compute

    @property
    def version(self) -> str:
        """The NKI version this program runs under (resolved once per launch; outside kernels, the thread's default)."""
        return self.nki_version or self.options.nki_version or versions.default()

    def __post_init__(self):
        self.target_code = target_code(self.target)  # the target's identity in opdef's rule cache
        if self.usage is None:
            self.usage = Occupancy(self.options.check_capacity)
        if self.memory is None:
            self.memory = Memory(self.options.check_capacity, self.options.memory_budget)
        linear = 0
        for pid, n in zip(self.program_id, self.grid):
            linear = linear * n + pid
        self.program = linear  # linear SPMD program id, recorded on every instruction


_TARGETS: list[Target] = []  # every target a context has used (kept alive, so codes are never reused)


def target_code(target: Target) -> int:
    """A small int naming this Target object (by identity: hashing a Target hashes every field)."""
    for i, t in enumerate(_TARGETS):
        if t is target:
            return i
    _TARGETS.append(target)
    return len(_TARGETS) - 1


thread_state = threading.local()  # .ctx: the thread's current Context (read it with current())


def current() -> Context:
    ctx = getattr(thread_state, "ctx", None)
    if ctx is None:
        ctx = thread_state.ctx = Context(get_target(None), EmulatorOptions())
    return ctx


def set_current(ctx: Context | None) -> Context | None:
    previous = getattr(thread_state, "ctx", None)
    thread_state.ctx = ctx
    return previous


def warn(name: str, message: str) -> None:
    """Emit an NkiWarning attributed to the kernel line, and record it in the trace."""
    frame = kernel_frame(2)
    location = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame else None
    text = f"{name}: {message}"
    if frame is not None:
        registry = frame.f_globals.setdefault("__warningregistry__", {})
        warnings.warn_explicit(
            text, NkiWarning, frame.f_code.co_filename, frame.f_lineno, module=frame.f_globals.get("__name__"), registry=registry
        )
    else:
        warnings.warn(text, NkiWarning, stacklevel=2)
    trace = current().trace
    if trace is not None:
        trace.add_warning(name, message, location)


def warn_at(name: str, message: str, location: str | None, trace=None) -> None:
    """An NkiWarning attributed to a kernel line known from the trace (after the instruction ran)."""
    text = f"{name}: {message}"
    path, _, line = (location or "").rpartition(":")
    if path and line.isdigit():
        warnings.warn_explicit(text, NkiWarning, path, int(line))
    else:
        warnings.warn(text, NkiWarning, stacklevel=2)
    if trace is not None:
        trace.add_warning(name, message, location)
