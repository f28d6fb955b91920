"""nkidev: write, debug, profile and optimize NKI kernels for AWS Trainium on any machine.

Library entry points (the CLI is a thin layer over these):
    simulate(kernel)(*arrays)  run a kernel on the CPU emulator (mirrors nki.simulate)
    emulate()                  make `import nki` resolve to the emulator
    run(kernel, args)          outputs plus the instruction trace
    Case(x, eps=1e-6)          a task-file case with keyword arguments (cases() items: tuples or Case)

Attributes load lazily so that `import nkidev` (and the startup hook) stays cheap.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "simulate": "nkidev.emulator.jit",
    "run": "nkidev.emulator.jit",
    "jit": "nkidev.emulator.jit",
    "Kernel": "nkidev.emulator.jit",
    "EmulatorOptions": "nkidev.emulator.context",
    "NkiError": "nkidev.errors",
    "NkiUsageError": "nkidev.errors",
    "emulate": "nkidev.shim",
    "analyze": "nkidev.analysis.api",
    "profile": "nkidev.profile",  # a callable package: nkidev.profile(kernel, *args, ...)
    "validate": "nkidev.validate",  # a callable package: nkidev.validate(kernel, reference, cases, ...)
    "query": "nkidev.analysis.api",
    "Case": "nkidev.case",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nkidev' has no attribute {name!r}")
    import importlib  # here, not at the top: the startup hook imports this package in every process

    imported = importlib.import_module(module)
    # nkidev.profile / nkidev.validate are callable packages (not functions) so their submodules stay reachable
    value = imported if module == f"nkidev.{name}" else getattr(imported, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
