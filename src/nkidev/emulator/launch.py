"""Running a kernel: argument copy-in, the SPMD/LNC launch loop, output checks and copy-out.

Programs of a grid run in their own threads, one at a time, handing a baton round-robin at every HBM access
and at rendezvous instructions (spmd.py): deterministic traces, and cores that progress together.
"""

from __future__ import annotations

import gc
import inspect
import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from nkidev.emulator import blas, deferred, versions
from nkidev.emulator import context as _ctx
from nkidev.emulator.context import Context, EmulatorOptions, warn_at
from nkidev.emulator.dtypes import lookup
from nkidev.emulator.location import internal_error, raised_at, raised_in_nkidev, strip_internal_frames
from nkidev.emulator.spmd import Baton
from nkidev.emulator.tensor import MemoryRegion, NkiTensor, from_array, recycling
from nkidev.emulator.trace import Trace
from nkidev.errors import KernelRuleError, NkiError, NkiUsageError
from nkidev.hardware import get_target


@dataclass
class RunResult:
    outputs: object  # what the kernel returned, HBM tensors converted to NumPy arrays
    trace: Trace | None
    peak_sbuf_bytes: int = 0
    peak_psum_bytes: int = 0
    warnings: list = field(default_factory=list)


def normalize_grid(grid) -> tuple[int, ...]:
    if grid is None:
        return (1,)
    grid = (grid,) if isinstance(grid, int | np.integer) else tuple(grid)
    if not grid or any(int(g) < 1 for g in grid):
        raise NkiUsageError("err_invalid_argument", f"launch grid {grid}", "use positive ints, e.g. kernel[2] or kernel[4, 2]")
    return tuple(int(g) for g in grid)


def _torch_to_numpy(x):
    t = x.detach().cpu()
    if str(t.dtype) == "torch.bfloat16":
        import torch

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _dtype_arg(value):
    """A NumPy / ml_dtypes / torch dtype passed as a kernel parameter, as the nl dtype kernels compare it with."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)) or type(value).__name__ == "dtype":
        return lookup(value)
    return None


def _to_kernel_arg(value, name: str, region: MemoryRegion, inputs: list):
    if isinstance(value, NkiTensor):
        return value
    dt = _dtype_arg(value)
    if dt is not None:
        return dt
    if _is_torch(value):
        value = _torch_to_numpy(value)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value.item()
        try:
            # in place when it shares no memory with another argument: a write through one would change the other
            borrow = not any(np.may_share_memory(value, other) for other, _ in inputs)
            t = from_array(value, name, region, borrow=borrow)
        except NkiError as e:
            raise NkiUsageError(
                "err_bad_argument",
                f"argument {name!r} has dtype {value.dtype}: {e.message}",
                "pass arrays of an NKI dtype (float32, bfloat16, float16, fp8, int8..int32)",
            ) from None
        inputs.append((value, t))
        return t
    if isinstance(value, tuple):
        return tuple(_to_kernel_arg(v, f"{name}[{i}]", region, inputs) for i, v in enumerate(value))
    if isinstance(value, list) and value and any(isinstance(v, np.ndarray) or _is_torch(v) for v in value):
        return [_to_kernel_arg(v, f"{name}[{i}]", region, inputs) for i, v in enumerate(value)]
    return value


def run_kernel(
    fn, args: tuple, kwargs: dict, options: EmulatorOptions | None = None, grid=None, kernel_name: str | None = None, kernel=None
) -> RunResult:
    """Emulate `fn(*args, **kwargs)` over the launch grid; NkiErrors point at the kernel line."""
    with blas.single_thread(), recycling():  # why one BLAS thread: emulator/blas.py; recycling: tensor.py
        return _run_kernel(fn, args, kwargs, options, grid, kernel_name, kernel)


def _run_kernel(fn, args: tuple, kwargs: dict, options: EmulatorOptions | None, grid, kernel_name: str | None, kernel) -> RunResult:
    options = options or EmulatorOptions()
    target = get_target(options.target)
    version = options.nki_version or versions.default()  # resolved here: the programs' threads do not see context variables
    grid = normalize_grid(grid)
    nprog = math.prod(grid)
    name = kernel_name or getattr(fn, "__name__", "kernel")
    trace = Trace(kernel=name, target=target.name, programs=nprog) if options.record else None
    region = MemoryRegion.shared_hbm if nprog > 1 else MemoryRegion.private_hbm
    baton = Baton(nprog) if nprog > 1 else None
    counter = [0]
    shared: list = []
    base = Context(
        target, options, trace=trace, grid=grid, in_kernel=True, counter=counter, barrier=baton, nki_version=version, kernel=kernel
    )
    previous = _ctx.set_current(base)
    # The trace is a long list of small objects: the cyclic GC would rescan it over and over (a third of the
    # run time on big kernels). Tiles are freed by reference counting, which stays on.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    inputs: list = []
    try:
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as e:
            raise NkiUsageError("err_bad_argument", f"{name}: {e}", "pass the arguments the kernel's signature takes") from None
        call_args = {k: _to_kernel_arg(v, k, region, inputs) for k, v in bound.arguments.items()}
        bound.arguments.update(call_args)

        def program(index: int):
            pid = np.unravel_index(index, grid) if nprog > 1 else (0,)
            ctx = Context(
                target,
                options,
                trace=trace,
                program_id=tuple(int(p) for p in pid),
                grid=grid,
                in_kernel=True,
                counter=counter,
                barrier=baton,
                nki_version=version,
                kernel=kernel,
            )
            ctx.shared_hbm = shared
            # one program with numerics: nothing else reads its memory while the worker writes it (deferred.py)
            ctx.overlap = options.overlap and options.compute and nprog == 1
            _ctx.set_current(ctx)
            try:
                # NaN/Inf/overflow inside the emulator's math is the kernel's data, shown by validation, not NumPy warnings
                with np.errstate(all="ignore"):
                    try:
                        returned = fn(*bound.args, **bound.kwargs)
                    finally:
                        # every queued instruction done before anything reads the outputs; no thread outlives the
                        # run, whichever way it ends; an error of queued work comes first, as in line
                        deferred.finish(ctx)
                _settle(ctx, trace)
                return returned, ctx.usage.peak
            finally:
                _ctx.set_current(base)

        base.shared_hbm = shared
        try:
            if baton is None:
                returned, peaks = program(0)
                peak = peaks
            else:
                results = baton.run([lambda i=i: program(i) for i in range(nprog)])
                returned = results[0][0]
                peak = {k: max(r[1][k] for r in results) for k in ("sbuf", "psum")}
            if trace is not None and nprog > 1:
                _program_order(trace)
            outputs = _collect_outputs(returned, trace)
        except NkiError as e:
            raise e.with_traceback(strip_internal_frames(e.__traceback__)) from None
        except Exception as e:
            if isinstance(e, MemoryError) or not raised_in_nkidev(e):
                raise  # the kernel's own exception, raised as the official simulator raises it
            raise internal_error(name, e, raised_at(e, getattr(getattr(fn, "__code__", None), "co_filename", None))) from e
        if options.compute:  # without numerics no value changed
            _copy_back(inputs)
        return RunResult(outputs, trace, peak["sbuf"], peak["psum"], list(trace.warnings) if trace else [])
    except BaseException:
        # every thread of the run is done (each program waited for its worker); the caller's arrays the run
        # wrote in place get their values back, as when the run works on copies
        for _, t in inputs:
            t.storage.restore_original()
        raise
    finally:
        _ctx.set_current(previous)
        if gc_was_enabled:
            gc.enable()


def _program_order(trace: Trace) -> None:
    """Programs ran interleaved; the trace lists each program's instructions together, in its own order, with
    ids renumbered to positions (the layout the cost model and the profile read)."""
    remap = trace.order_by_program()
    for sp in trace.spills:
        sp.store_after, sp.reload_before, sp.instruction = (remap.get(i) for i in (sp.store_after, sp.reload_before, sp.instruction))


def _settle(ctx: Context, trace: Trace | None) -> None:
    """After a program ends: its on-chip peaks, and the spills its demand needs (one warning per tensor)."""
    if not ctx.usage.check:
        return
    spills = ctx.usage.settle(ctx.target)
    if trace is not None:
        trace.spills.extend(spills)
    by_tensor: dict[tuple, list] = {}
    for sp in spills:
        by_tensor.setdefault((sp.buffer, sp.name, sp.tensor_location), []).append(sp)
    limit = {"sbuf": ctx.target.sbuf.usable_bytes_per_partition, "psum": ctx.target.psum.bytes_per_partition}
    for (buffer, name, where), group in by_tensor.items():
        first = group[0]
        times = f"{len(group)} times" if len(group) > 1 else "once"
        made = f" (allocated at {where.rpartition('/')[2]})" if where else ""
        program = f" in program {ctx.program}" if ctx.grid != (1,) else ""
        warn_at(
            f"warn_{buffer}_spill",
            f"{buffer.upper()} demand of {ctx.usage.peak[buffer]} bytes per partition exceeds the {limit[buffer]} of "
            f"{ctx.target.name}{program}: {name!r}{made} is spilled to {first.to.upper()} {times}, {first.nbytes} bytes "
            f"each way (Trace.spills); shorten tile lifetimes or shrink tiles to avoid the traffic",
            first.location,
            trace,
        )


def _collect_outputs(value, trace: Trace | None):
    if isinstance(value, NkiTensor):
        st = value.storage
        if st.kind != "hbm":
            raise KernelRuleError(
                "err_kernel_io_must_be_hbm",
                f"the kernel returns {st.kind.upper()} tensor {st.name!r}",
                "allocate outputs with nl.ndarray(..., buffer=nl.shared_hbm) and nisa.dma_copy into them",
                st.location,
            )
        if st.role != "input":
            if st.region != MemoryRegion.shared_hbm:
                raise KernelRuleError(
                    "err_output_must_be_shared_hbm",
                    f"output {st.name!r} is in {st.region.value}, outputs must be nl.shared_hbm",
                    "allocate it with buffer=nl.shared_hbm",
                    st.location,
                )
            if not st.written:
                raise KernelRuleError(
                    "err_tensor_output_not_written_to",
                    f"output {st.name!r} is never written",
                    "write it with nisa.dma_copy (or nl.store) before returning it",
                    st.location,
                )
            st.role = "output"
            if trace is not None and st.id in trace.tensors:
                trace.tensors.set_kind(st.id, "output")
        if st.unfilled is not None:  # what no instruction wrote holds the fill, as if filled when allocated
            st.fill_rest()
        if value._data is st.array and not st.handed_out:
            # the whole storage, returned once: nothing else can see it after the run, so no copy is needed
            st.handed_out = True
            return st.array
        return np.array(value._data, copy=True)
    if isinstance(value, tuple):
        return tuple(_collect_outputs(v, trace) for v in value)
    if isinstance(value, list):
        return [_collect_outputs(v, trace) for v in value]
    if isinstance(value, dict):
        return {k: _collect_outputs(v, trace) for k, v in value.items()}
    return value


def _copy_back(inputs: list) -> None:
    """Inputs the kernel wrote are updated in place, as the official simulator does (a borrowed input's memory is
    the caller's: written already; its kept values are dropped)."""
    for original, t in inputs:
        st = t.storage
        if st.borrowed:
            st.saved = None
        elif st.written and original.flags.writeable:
            np.copyto(original, st.array.astype(original.dtype, copy=False).reshape(original.shape))
