"""`nki.jit` kernels and the `simulate` entry point mirroring the official `nki.simulate`."""

from __future__ import annotations

import functools

from nkidev.emulator import context as _ctx
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.launch import RunResult, normalize_grid, run_kernel
from nkidev.emulator.location import rule_error, strip_internal_frames
from nkidev.errors import NkiError


class Kernel:
    """A `@nki.jit` function. Calling it runs the emulator; `kernel[grid]` sets the SPMD/LNC launch grid.

    Keeps the wrapped function's `__name__`, `__doc__` and signature (via `__wrapped__`).
    """

    def __init__(self, fn, grid=None, **options):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.grid = normalize_grid(grid) if grid is not None else None
        self.jit_options = options  # accepted for compatibility (mode=, platform_target= are ignored)

    def __getitem__(self, grid) -> Kernel:
        return Kernel(self.fn, grid, **self.jit_options)

    def __call__(self, *args, **kwargs):
        ctx = _ctx.current()
        if ctx.in_kernel:
            if self.grid is not None:
                raise rule_error(
                    "err_nested_kernel_with_spmd_grid",
                    f"kernel {self.__name__} is launched with grid {list(self.grid)} from inside another kernel",
                    "call it without [grid] (inline), or launch it from the host",
                )
            return self.fn(*args, **kwargs)  # a sub-kernel call inside a kernel runs inline
        try:
            return run(self, args, kwargs).outputs
        except NkiError as e:
            raise e.with_traceback(strip_internal_frames(e.__traceback__)) from None

    def __repr__(self) -> str:
        return f"<nki.jit kernel {self.__name__}{'' if self.grid is None else list(self.grid)}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self.__call__, obj)


def jit(fn=None, **kwargs):
    """Decorator: `@nki.jit` or `@nki.jit(mode=...)`."""
    if fn is None:
        return lambda f: Kernel(f, **kwargs)
    if isinstance(fn, Kernel):
        return fn
    return Kernel(fn, **kwargs)


def as_kernel(kernel) -> Kernel:
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


def run(kernel, args: tuple = (), kwargs: dict | None = None, options: EmulatorOptions | None = None, grid=None) -> RunResult:
    """Run a kernel and return its outputs and instruction trace."""
    k = as_kernel(kernel)
    return run_kernel(k.fn, tuple(args), dict(kwargs or {}), options, grid if grid is not None else k.grid, kernel_name=k.__name__)


class Simulated:
    """The callable `simulate(kernel)` returns; `simulate(kernel)[2](...)` launches LNC=2."""

    def __init__(self, kernel, target: str | None = None, grid=None, **options):
        self.kernel = as_kernel(kernel)
        self.grid = grid
        self.options = EmulatorOptions(target=target, **options)
        functools.update_wrapper(self, self.kernel.fn)

    def __getitem__(self, grid) -> Simulated:
        out = Simulated(self.kernel, grid=grid)
        out.options = self.options
        return out

    def __call__(self, *args, **kwargs):
        try:
            return run(self.kernel, args, kwargs, self.options, self.grid).outputs
        except NkiError as e:
            raise e.with_traceback(strip_internal_frames(e.__traceback__)) from None


def simulate(kernel, target: str | None = None, **options) -> Simulated:
    """Run a kernel on the CPU: `simulate(kernel)(*arrays, **kwargs)` returns NumPy outputs.

    `target` is trn1 | trn2 | trn3 (default: NEURON_PLATFORM_TARGET_OVERRIDE, else trn2); other options are
    `EmulatorOptions` fields (compute, check_capacity, record).
    """
    return Simulated(kernel, target=target, **options)
