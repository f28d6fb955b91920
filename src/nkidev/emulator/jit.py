"""`nki.jit` kernels and the `simulate` entry point mirroring the official `nki.simulate`."""

from __future__ import annotations

import functools
import os

from nkidev.emulator import context as _ctx
from nkidev.emulator import versions
from nkidev.emulator.compiler_config import check_config_types, configs_agree
from nkidev.emulator.context import EmulatorOptions, warn
from nkidev.emulator.launch import RunResult, normalize_grid, run_kernel
from nkidev.emulator.location import kernel_location, rule_error, strip_internal_frames
from nkidev.errors import KernelRuleError, NkiError, NkiUsageError, NkiVersionError

LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"  # NKI 0.7: the LNC degree kernels are launched with (1 or 2)


class Kernel:
    """A `@nki.jit` function. Calling it runs the emulator; `kernel[grid]` sets the SPMD/LNC launch grid.

    Keeps the wrapped function's `__name__`, `__doc__` and signature (via `__wrapped__`).
    """

    def __init__(self, fn, grid=None, compile_config=None, specialization_config=None, **options):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.grid = normalize_grid(grid) if grid is not None else None
        check_config_types(compile_config, specialization_config)
        self.compile_config = compile_config  # NKI 0.7 nki.compiler.CompileConfig
        self.specialization_config = specialization_config  # NKI 0.7 nki.compiler.SpecializationConfig
        self.jit_options = options  # accepted for compatibility (mode=, platform_target= are ignored)

    def __getitem__(self, grid) -> Kernel:
        return Kernel(self.fn, grid, self.compile_config, self.specialization_config, **self.jit_options)

    def __call__(self, *args, **kwargs):
        ctx = _ctx.current()
        if ctx.in_kernel:
            if self.grid is not None:
                raise rule_error(
                    "err_nested_kernel_with_spmd_grid",
                    f"kernel {self.__name__} is launched with grid {list(self.grid)} from inside another kernel",
                    "call it without [grid] (inline), or launch it from the host",
                )
            _check_nested_config(self, ctx)
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


def _check_nested_config(sub: Kernel, ctx) -> None:
    """NKI 0.7: a nested kernel's compile_config must agree with the top-level kernel's (SpecializationConfig docs)."""
    top = ctx.kernel
    if top is None or sub is top or sub.compile_config is None or configs_agree(sub.compile_config, top.compile_config):
        return
    spec = top.specialization_config
    if spec is not None and spec.allow_nested_config_override:
        warn(
            "warn_nested_config_override",
            f"nested kernel {sub.__name__} has a compile_config that differs from {top.__name__}'s; it runs inlined "
            "under the top-level config (allow_nested_config_override=True)",
        )
        return
    raise rule_error(
        "err_nested_kernel_config_mismatch",
        f"nested kernel {sub.__name__} is compiled with {sub.compile_config} but the top-level kernel {top.__name__} "
        f"with {top.compile_config}",
        "give both kernels the same CompileConfig, or allow the override in the top-level kernel's SpecializationConfig",
    )


def _version_checks(k: Kernel, version: str) -> None:
    for param, value in (("compile_config", k.compile_config), ("specialization_config", k.specialization_config)):
        entry = versions.API[f"nki.jit({param}=)"]
        if value is not None and not entry.available(version):
            raise NkiVersionError(
                "err_requires_nki_version",
                f"@nki.jit({param}=...) of kernel {k.__name__} is new in NKI {entry.added} (checked against NKI {version})",
                f"check it against NKI {entry.added}: --nki-version {entry.added}",
                kernel_location(),
            )


def _lnc_grid(k: Kernel, grid, version: str):
    """NKI 0.7 launches kernels with the LNC degree of NEURON_LOGICAL_NC_CONFIG; a kernel[n] bracket that
    disagrees with it is NCC_EVRF066 (latest/compiler/error-codes/EVRF066.html)."""
    raw = os.environ.get(LNC_ENV, "").strip()
    if not raw or not versions.API["NEURON_LOGICAL_NC_CONFIG (kernel LNC degree)"].available(version):
        return grid
    if raw not in ("1", "2"):
        raise NkiUsageError("err_invalid_argument", f"{LNC_ENV}={raw!r}", f"set {LNC_ENV} to 1 or 2")
    lnc = int(raw)
    if grid is None:
        return (lnc,) if lnc > 1 else None
    g = normalize_grid(grid)
    if len(g) == 1 and g[0] in (1, 2) and g[0] != lnc:
        raise KernelRuleError(
            "err_lnc_mismatch",
            f"NKI kernel '{k.__name__}' is configured with LNC={g[0]}, but neuronx-cc is using LNC={lnc} (NCC_EVRF066)",
            f"drop the kernel[{g[0]}] bracket (NKI 0.7 takes the LNC degree from {LNC_ENV}) or set {LNC_ENV}={g[0]}",
            kernel_location(),
        )
    return grid


def run(kernel, args: tuple = (), kwargs: dict | None = None, options: EmulatorOptions | None = None, grid=None) -> RunResult:
    """Run a kernel and return its outputs and instruction trace."""
    k = as_kernel(kernel)
    options = options or EmulatorOptions()
    version = options.nki_version or versions.default()
    _version_checks(k, version)
    grid = _lnc_grid(k, grid if grid is not None else k.grid, version)
    return run_kernel(k.fn, tuple(args), dict(kwargs or {}), options, grid, kernel_name=k.__name__, kernel=k)


class Simulated:
    """The callable `simulate(kernel)` returns; `simulate(kernel)[2](...)` launches LNC=2."""

    def __init__(self, kernel, target: str | None = None, grid=None, nki_version: str | None = None, **options):
        self.kernel = as_kernel(kernel)
        self.grid = grid
        self.options = EmulatorOptions(target=target, nki_version=nki_version, **options)
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


def simulate(kernel, target: str | None = None, nki_version: str | None = None, **options) -> Simulated:
    """Run a kernel on the CPU: `simulate(kernel)(*arrays, **kwargs)` returns NumPy outputs.

    `target` is trn1 | trn2 | trn3 (default: NEURON_PLATFORM_TARGET_OVERRIDE, else trn2); `nki_version` is the NKI
    version the kernel is checked against, "0.6" | "0.7" (default: NKIDEV_NKI_VERSION, else the newest); other
    options are `EmulatorOptions` fields (compute, check_capacity, record).
    """
    return Simulated(kernel, target=target, nki_version=nki_version, **options)
