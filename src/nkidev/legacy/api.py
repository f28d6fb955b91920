"""`neuronxcc.nki` (NKI Beta 1): the decorators, the harness entry points, `nki.typing` and `nki.compiler`.

Under the shim, `from neuronxcc import nki`, `import neuronxcc.nki.language as nl`, `neuronxcc.nki.isa` and
`neuronxcc.nki.typing` resolve here. Every way the legacy docs run a kernel runs it on the emulator, NumPy
(or torch CPU tensors) in, NumPy out: `@nki.jit` (any mode), `@nki.baremetal`, `nki.simulate_kernel(k, *args)`,
`kernel[grid](...)`; `@nki.benchmark` reports the cost model's latency through the legacy
`benchmark_result.nc_latency.get_latency_percentile(p)` (microseconds), `@nki.profile` writes an nkidev profile
into its `working_directory`. Kernels that wrote outputs passed as arguments (SDK 2.20) work too: written
inputs are copied back.

Sources: SDK 2.26 general/nki/api/nki/__init__.py (jit, baremetal, benchmark, profile, simulate_kernel),
general/nki/api/nki/compiler/*.py, general/nki/getting_started.rst
(https://github.com/aws-neuron/aws-neuron-sdk/tree/49ee15c58418d5f19b2407bc7057a7beb77ab24a/general/nki).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
import types
from pathlib import Path

import numpy as np

from nkidev.costmodel import schedule
from nkidev.emulator import context as _ctx
from nkidev.emulator.context import warn
from nkidev.emulator.dtypes import to_nki_dtype
from nkidev.emulator.jit import Kernel, run
from nkidev.emulator.location import strip_internal_frames
from nkidev.emulator.memory import raw
from nkidev.emulator.tensor import MemoryRegion, NkiTensor
from nkidev.errors import NkiError, NkiUsageError
from nkidev.hardware import get_target
from nkidev.legacy import isa, language
from nkidev.legacy.tile import LegacyTensor, new_tile, tile_of, wrap_args

__version__ = "beta1+nkidev"
tensor = LegacyTensor


def _outputs_shared(value):
    """Legacy kernels may return nl.hbm (private) tensors they created, and the legacy simulator returned on-chip
    tiles too; the current launcher wants shared_hbm outputs, so those are moved there (with a warning)."""
    if isinstance(value, NkiTensor):
        st = value.storage
        if st.kind == "hbm" and st.role == "internal" and st.region is MemoryRegion.private_hbm:
            st.region = MemoryRegion.shared_hbm
        elif st.kind != "hbm":
            warn("warn_legacy_returns_on_chip", f"the kernel returns {st.kind.upper()} tile {st.name!r}; nkidev copies it to HBM")
            out = new_tile(value.shape, value.dtype, MemoryRegion.shared_hbm, st.name)
            language.store(out, value)
            return out
        return value
    if isinstance(value, tuple):
        return tuple(_outputs_shared(v) for v in value)
    if isinstance(value, list):
        return [_outputs_shared(v) for v in value]
    return value


# The program whose top-level legacy kernel is running (its return value follows the legacy conventions).
_ENTERED: contextvars.ContextVar = contextvars.ContextVar("nkidev_legacy_entered", default=None)


def legacy_entry(fn):
    """The kernel function with legacy tensors for its arguments and legacy return conventions."""
    if getattr(fn, "__nki_legacy__", False):
        return fn

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        ctx = _ctx.current()
        top = ctx.in_kernel and _ENTERED.get() is not ctx  # the launched kernel, not a sub-kernel it calls
        token = _ENTERED.set(ctx) if top else None
        try:
            out = fn(*wrap_args(args), **{k: wrap_args(v) for k, v in kwargs.items()})
        finally:
            if token is not None:
                _ENTERED.reset(token)
        return _outputs_shared(out) if top else out

    entry.__nki_legacy__ = True
    return entry


class LegacyKernel(Kernel):
    """A legacy kernel: `kernel(*arrays)` and `kernel[grid](*arrays)` run on the emulator, NumPy out."""

    def __init__(self, fn, grid=None, **options):
        super().__init__(legacy_entry(fn), grid, **options)

    def __getitem__(self, grid) -> LegacyKernel:
        return LegacyKernel(self.fn, grid, **self.jit_options)


def _as_kernel(kernel) -> LegacyKernel:
    if isinstance(kernel, LegacyKernel):
        return kernel
    if isinstance(kernel, Kernel):
        return LegacyKernel(kernel.fn, kernel.grid, **kernel.jit_options)
    if isinstance(kernel, _Benchmark):
        return kernel.kernel
    return LegacyKernel(kernel)


def _decorator(kernel, options, make):
    """Usable as @deco, @deco(...), deco(kernel, **opts) and deco(**opts)(kernel)."""
    if kernel is None:
        return lambda k: make(k, options)
    return make(kernel, options)


def jit(func=None, mode: str = "auto", **kwargs):
    """@nki.jit (modes jax/torchxla/baremetal/benchmark/simulation/auto all run on the emulator); mode='trace'
    marks a sub-kernel, a plain function called from a kernel."""

    def make(fn, options):
        if mode == "trace":
            return legacy_entry(fn)
        if mode == "benchmark":
            return _Benchmark(_as_kernel(fn), **options)
        return LegacyKernel(fn.fn if isinstance(fn, Kernel) else fn, mode=mode, **options)

    return _decorator(func, kwargs, make)


def trace(func=None, **kwargs):
    """SDK 2.20's sub-kernel decorator."""
    return _decorator(func, kwargs, lambda fn, options: legacy_entry(fn))


def baremetal(kernel=None, **kwargs):
    """Run on the emulator with NumPy arrays in and out (artifacts_dir, save_neff_name, ... are accepted)."""
    return _decorator(kernel, kwargs, lambda fn, options: _as_kernel(fn))


def simulate_kernel(kernel, *args, **kwargs):
    """Run once on the CPU and return the outputs (NumPy)."""
    return _as_kernel(kernel)(*args, **kwargs)


# ---------------------------------------------------------------- benchmark / profile on the cost model


class _Latency:
    """benchmark_result.nc_latency: percentiles of the predicted latency (all equal: the model is deterministic)."""

    def __init__(self, us: float):
        self.us = us

    def get_latency_percentile(self, p) -> float:
        if p not in (0, 1, 10, 25, 50, 90, 99, 100):
            raise NkiUsageError("err_invalid_argument", f"percentile {p}", "use 0, 1, 10, 25, 50, 90, 99 or 100")
        return self.us


class _BenchmarkResult:
    def __init__(self, us: float):
        self.nc_latency = _Latency(us)


def _placeholder(arg):
    """`nt.tensor[[shape], dtype]` placeholders become random inputs of that shape (benchmark inputs are unused)."""
    if isinstance(arg, type) and issubclass(arg, typing_tensor) and arg.spec is not None:
        shape, dtype = arg.spec
        rng = np.random.default_rng(0)
        return rng.standard_normal(shape).astype(to_nki_dtype(dtype).storage)
    return arg


class _Benchmark:
    """@nki.benchmark(warmup=, iters=, ...): runs the kernel, predicts its latency with the cost model."""

    def __init__(self, kernel: LegacyKernel, grid=None, **options):
        self.kernel = kernel if grid is None else kernel[grid]
        self.options = options
        self.benchmark_result = None
        functools.update_wrapper(self, kernel.fn)

    def __getitem__(self, grid) -> _Benchmark:
        return _Benchmark(self.kernel, grid, **self.options)

    def __call__(self, *args, **kwargs):
        args = tuple(_placeholder(a) for a in args)
        try:
            result = run(self.kernel, args, kwargs)
        except NkiError as e:
            raise e.with_traceback(strip_internal_frames(e.__traceback__)) from None
        timeline = schedule(result.trace, get_target(result.trace.target))
        self.benchmark_result = _BenchmarkResult(timeline.total_ns / 1e3)
        return result.outputs


def benchmark(kernel=None, **kwargs):
    return _decorator(kernel, kwargs, lambda fn, options: _Benchmark(_as_kernel(fn), **options))


class _Profile:
    """@nki.profile(working_directory=...): run the kernel and write an nkidev profile into working_directory."""

    def __init__(self, kernel: LegacyKernel, working_directory=None, overwrite: bool = False, **options):
        self.kernel, self.directory, self.overwrite = kernel, working_directory, overwrite
        functools.update_wrapper(self, kernel.fn)

    def __getitem__(self, grid) -> _Profile:
        return _Profile(self.kernel[grid], self.directory, self.overwrite)

    def __call__(self, *args, **kwargs):
        from nkidev.profile.api import profile as write_profile  # imported when used: it loads pyarrow

        if self.directory is None:
            raise NkiUsageError("err_invalid_argument", "nki.profile needs working_directory=", "pass an absolute directory")
        out = Path(self.directory) / f"{self.kernel.__name__}_nkidev_profile"
        args = tuple(_placeholder(a) for a in args)
        result = write_profile(self.kernel, *args, out=out, force=self.overwrite, **kwargs)
        self.profile_dir = result.profile_dir
        return None


def profile(func=None, **kwargs):
    return _decorator(func, kwargs, lambda fn, options: _Profile(_as_kernel(fn), **options))


# ---------------------------------------------------------------- nki.typing


class typing_tensor:  # noqa: N801
    """nt.tensor: `x: tensor[128, 512]` (a shape hint) or `tensor[[shape], dtype]` (a benchmark placeholder)."""

    spec = None

    def __class_getitem__(cls, item):
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], list | tuple):
            return type("tensor", (cls,), {"spec": (tuple(item[0]), item[1])})
        return cls


class mutable_tensor(typing_tensor):  # noqa: N801
    """A kernel parameter the kernel may write."""


def scalar(t):
    """nt.scalar(tile): the value of a (1, 1) tile as a run-time scalar (read by the emulator)."""
    if isinstance(t, int | float):
        return t
    v = np.asarray(raw(tile_of(t))).reshape(-1)[0]
    return int(v) if np.issubdtype(v.dtype, np.integer) else float(v)


typing = types.ModuleType("neuronxcc.nki.typing", "Legacy nki.typing: tensor / mutable_tensor annotations, scalar().")
typing.tensor = typing_tensor
typing.mutable_tensor = mutable_tensor
typing.scalar = scalar

# ---------------------------------------------------------------- nki.compiler (direct allocation: numerically a no-op)


def _passthrough(func=None, **kwargs):
    """A decorator that changes how the compiler allocates, not what the kernel computes."""
    return func if func is not None else (lambda f: f)


class _Allocator:
    """A buffer argument such as ncc.sbuf.mod_alloc(...): the emulator allocates independent storage for each
    block (kernels whose blocks alias on purpose would differ from hardware)."""

    def __init__(self, region: MemoryRegion, **options):
        self.region, self.options = region, options


class _Memory:
    def __init__(self, region: MemoryRegion):
        self.region = region

    def alloc(self, func=None, **kwargs):
        return _Allocator(self.region, func=func, **kwargs)

    def mod_alloc(self, **kwargs):
        return _Allocator(self.region, **kwargs)

    def auto_alloc(self, **kwargs):
        return _Allocator(self.region, **kwargs)


@contextlib.contextmanager
def _scope(*args, **kwargs):
    yield


compiler = types.ModuleType("neuronxcc.nki.compiler", "Legacy nki.compiler: direct allocation (accepted; numerics unchanged).")
compiler.sbuf = _Memory(MemoryRegion.sbuf)
compiler.psum = _Memory(MemoryRegion.psum)
compiler.skip_middle_end_transformations = _passthrough
compiler.enable_stack_allocator = _passthrough
compiler.force_auto_alloc = _passthrough
compiler.no_reorder = language.no_reorder
compiler.allocation_scope = _scope
compiler.multi_buffer = _scope

isa_constants = types.ModuleType("neuronxcc.nki.isa.constants", "Legacy ISA enums.")
for _name in ("engine", "reduce_cmd", "dge_mode", "oob_mode", "nc_version"):
    setattr(isa_constants, _name, getattr(isa, _name))
isa.constants = isa_constants

language_constants = types.ModuleType("neuronxcc.nki.language.constants", "Legacy nl constants: sizeinbytes(dtype).")
language_constants.sizeinbytes = lambda dtype: to_nki_dtype(dtype).itemsize
language.constants = language_constants

language_module = language
isa_module = isa

neuronxcc = types.ModuleType("neuronxcc", "The legacy neuronxcc package as nkidev emulates it (only neuronxcc.nki).")
neuronxcc.__path__ = []

MODULES = {
    "neuronxcc": neuronxcc,
    "neuronxcc.nki": sys.modules[__name__],
    "neuronxcc.nki.language": language,
    "neuronxcc.nki.language.constants": language_constants,
    "neuronxcc.nki.isa": isa,
    "neuronxcc.nki.isa.constants": isa_constants,
    "neuronxcc.nki.typing": typing,
    "neuronxcc.nki.compiler": compiler,
}
neuronxcc.nki = sys.modules[__name__]
