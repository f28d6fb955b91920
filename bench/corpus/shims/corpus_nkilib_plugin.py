"""pytest plugin (-p corpus_nkilib_plugin) used by the corpus harness to run nki-library's own tests
unchanged on nkidev: registers stand-ins for modules the public nki-library checkout does not ship
(test/utils/scripts/remote_lock_scripts.py, hardware-lock helpers) or that only the real Neuron
compiler provides (nki.compiler.frontend / ncc_driver, used by trace/compile modes only)."""

import enum
import sys
import types
from dataclasses import dataclass, field


class LockStatus(enum.Enum):
    ALLOCATED = 0
    NO_CORES = 1
    RELEASED = 2
    DRAINED = 3
    UNDRAINED = 4
    DRAINING = 5
    ERROR = 6
    FLOCK_TIMEOUT = 7

    @property
    def exit_code(self):
        return self.value

    @classmethod
    def from_exit_code(cls, rc):
        return cls(rc)


@dataclass
class LockResult:
    status: LockStatus = LockStatus.ERROR
    cores: list = field(default_factory=list)

    @classmethod
    def from_json(cls, s):
        return cls()


_scripts = types.ModuleType("test.utils.scripts")
_scripts.__path__ = []
_rls = types.ModuleType("test.utils.scripts.remote_lock_scripts")
_rls.LockResult, _rls.LockStatus = LockResult, LockStatus
sys.modules.setdefault("test.utils.scripts", _scripts)
sys.modules.setdefault("test.utils.scripts.remote_lock_scripts", _rls)


def _not_available(*a, **k):
    raise RuntimeError("not available in the public nki-library checkout (corpus harness stub)")


# Private modules the public checkout imports but does not ship.
_pap = types.ModuleType("test.utils.perf_analysis_private")
_pap.analyze_trace = _not_available
sys.modules.setdefault("test.utils.perf_analysis_private", _pap)


def _stub_compiler():
    try:
        import nki.compiler as comp
    except ImportError:
        return
    for sub, names in (("frontend", ("NKIFrontend", "ParserFrontend")), ("ncc_driver", ("CompiledKernel", "CompileOptions"))):
        full = "nki.compiler." + sub
        if full in sys.modules:
            continue
        try:
            __import__(full)
            continue
        except ImportError:
            pass
        m = types.ModuleType(full)
        for n in names:
            setattr(m, n, type(n, (), {}))
        sys.modules[full] = m
        setattr(comp, sub, m)


# at import, before nki-library's conftest imports nki.compiler.frontend
_stub_compiler()


def pytest_configure(config):
    # Upstream harness bug at this commit: Orchestrator._rename_neff_outputs_to_python_names reads
    # self._compiled_kernel, which only the compile path sets; simulation mode never compiles.
    try:
        from test.utils.test_orchestrator import Orchestrator

        if not hasattr(Orchestrator, "_compiled_kernel"):
            Orchestrator._compiled_kernel = None
    except ImportError:
        pass


# ---------------------------------------------------------------------------------------------
# Probe mode (CORPUS_WORKAROUNDS=1): work around nkidev bugs already reported (repros/) at run time, to
# see which failures hide behind them. Never used for the headline numbers.
def _apply_workarounds():
    import dataclasses
    import functools

    import nki.isa as nisa

    ncv = nisa.nc_version
    if not hasattr(ncv, "__lt__") or ncv.__lt__ is object.__lt__:

        def _cmp(op):
            def f(a, b):
                if type(a) is not type(b):
                    return NotImplemented
                return op(a.value, b.value)

            return f

        import operator

        for name, op in (("__lt__", operator.lt), ("__le__", operator.le), ("__gt__", operator.gt), ("__ge__", operator.ge)):
            setattr(ncv, name, _cmp(op))

    orig_asdict = dataclasses.asdict

    def _leaf(o):
        return type(o).__module__.startswith("nkidev")

    @functools.wraps(orig_asdict)
    def asdict(obj, *, dict_factory=dict):
        def inner(o):
            if _leaf(o):
                return o
            if dataclasses.is_dataclass(o) and not isinstance(o, type):
                return dict_factory([(f.name, inner(getattr(o, f.name))) for f in dataclasses.fields(o)])
            if isinstance(o, (list, tuple)) and not hasattr(o, "_fields"):
                return type(o)(inner(v) for v in o)
            if isinstance(o, dict):
                return type(o)((inner(k), inner(v)) for k, v in o.items())
            return o

        return inner(obj)

    dataclasses.asdict = asdict

    # tensor_truthiness: a tensor handle is truthy (Optional[tensor] arguments)
    import nki.language as nl

    from nkidev.emulator.tensor import NkiTensor

    NkiTensor.__bool__ = lambda self: True

    # range_select_fp32_min_literal: pass the fp32 value of on_false_value
    import numpy as np

    _rs = nisa.range_select

    @functools.wraps(_rs)
    def range_select(*a, **k):
        if "on_false_value" in k and isinstance(k["on_false_value"], float):
            k["on_false_value"] = float(np.float32(k["on_false_value"]))
        return _rs(*a, **k)

    nisa.range_select = range_select

    # dataclass_nkiobject_unannotated: annotate plain public class attributes of NKIObject subclasses
    def _init_subclass(cls, **kw):
        ann = cls.__dict__.get("__annotations__", {})
        extra = {
            n: "typing.Any"
            for n, v in list(cls.__dict__.items())
            if not n.startswith("_") and n not in ann and not callable(v) and not isinstance(v, (property, staticmethod, classmethod))
        }
        if extra:
            cls.__annotations__ = {**ann, **extra}

    nl.NKIObject.__init_subclass__ = classmethod(_init_subclass)


import os as _os  # noqa: E402

if _os.environ.get("CORPUS_WORKAROUNDS") == "1":
    _apply_workarounds()


# ---------------------------------------------------------------------------------------------
# Unvalidated passes: nki-library's orchestrator skips the output comparison, with only a log warning, when the
# golden is a LazyGoldenGenerator without lazy_golden_generator (output_ndarray only declares the outputs) or
# when the kernel returned nothing. Such a test passes without any numerics checked; the harness records it as
# a junit property so the report can tell these passes apart (harness.junit_cases: "unvalidated").
import logging as _logging  # noqa: E402

import pytest as _pytest  # noqa: E402

_SKIP_MARKERS = ("Validation is disabled", "Skipping output validation")


class _SkipRecorder(_logging.Handler):
    def __init__(self):
        super().__init__(level=_logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        msg = record.getMessage()
        if any(m in msg for m in _SKIP_MARKERS):
            self.messages.append(msg)


@_pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    recorder = _SkipRecorder()
    root = _logging.getLogger()
    root.addHandler(recorder)
    try:
        yield
    finally:
        root.removeHandler(recorder)
        if recorder.messages:
            item.user_properties.append(("corpus_validation_skipped", recorder.messages[0][:300]))
