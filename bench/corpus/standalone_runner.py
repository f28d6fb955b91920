"""Run one standalone corpus kernel (by spec name) on the nkidev emulator; print one CORPUS_RESULT json line.

CORPUS_SRC=WORK/src PYTHONPATH=src:bench/corpus/shims python bench/corpus/standalone_runner.py SPEC_NAME

(harness.run_standalone starts it once per spec, with that environment.)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402


def _result(status, message="", **extra):
    print("CORPUS_RESULT " + json.dumps(dict(status=status, message=message[-4000:], **extra), default=str))
    sys.exit(0)


def _error_record(e: BaseException):
    name = type(e).__name__
    text = str(e)
    m = re.match(r"(err_[a-z0-9_]+|NCC_[A-Z0-9]+)", text)
    tb = traceback.extract_tb(e.__traceback__)
    where = [f"{Path(f.filename).name}:{f.lineno}" for f in tb if "/src/" in f.filename and "nkidev" not in f.filename]
    return dict(
        exception=name,
        error_name=m.group(1) if m else None,
        where=where[-3:],
        message=f"{name}: {text.splitlines()[0] if text else ''}"[:1500],
        traceback="".join(traceback.format_exception(e))[-3000:],
    )


def _compare(out, ref, tol):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    if len(outs) != len(refs):
        return f"kernel returned {len(outs)} outputs, reference {len(refs)}"
    atol, rtol = tol
    for i, (o, r) in enumerate(zip(outs, refs)):
        o = np.asarray(o).astype(np.float32)
        r = np.asarray(r).astype(np.float32)
        if o.shape != r.shape:
            return f"output {i}: shape {o.shape} vs reference {r.shape}"
        if not np.all(np.isfinite(o)):
            return f"output {i}: {int((~np.isfinite(o)).sum())} non-finite values"
        scale = max(1.0, float(np.sqrt(np.mean(r * r))))
        bad = np.abs(o - r) > atol * scale + rtol * np.abs(r)
        if bad.any():
            return (
                f"output {i}: {int(bad.sum())}/{bad.size} elements off, max |diff| "
                f"{float(np.max(np.abs(o - r))):.4g} (atol {atol}*{scale:.3g}, rtol {rtol})"
            )
    return None


def _load(path: Path, name: str):
    import importlib.util

    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def run_mx(spec, path: Path):
    """mxfp-matmul: the repo's own test driver functions (mx_toplevel.py) with its torch_xla device replaced by
    the CPU and each kernel call routed through nki.simulate; the driver's compare is made to record the verdict."""
    import ml_dtypes
    import nki
    import torch
    from standalone_specs import repo_functions

    kernels = _load(path.parent / "mx_kernels.py", "mx_kernels")
    cpu = _load(path.parent / "mx_cpu_utils.py", "mx_cpu_utils")
    verdict = {}

    def wrap(k):
        def call(*args):
            args = [
                a.numpy()
                if isinstance(a, torch.Tensor) and a.dtype != torch.bfloat16
                else (a.float().numpy().astype(ml_dtypes.bfloat16) if isinstance(a, torch.Tensor) else a)
                for a in args
            ]
            out = nki.simulate(k)(*args)
            return torch.from_numpy(np.asarray(out).astype(np.float32))

        return call

    def compare(res, golden, rtol=5e-2, atol=5e-2):
        verdict["msg"] = _compare(res, golden, (atol, rtol))

    g = {
        "torch": torch,
        "np": np,
        "nl": __import__("nki.language", fromlist=["x"]),
        "mld": ml_dtypes,
        "os": os,
        "shutil": __import__("shutil"),
        "device": torch.device("cpu"),
        "cpu": torch.device("cpu"),
        "print_test_header": lambda *a: None,
        "setup_compiler_workdir": lambda *a: None,
        "compare_and_print_results": compare,
    }
    g.update({n: getattr(cpu, n) for n in dir(cpu) if not n.startswith("_")})
    g.update(
        {
            n: wrap(getattr(kernels, n))
            for n in ("kernel_offline_quantized_mx_matmul", "kernel_on_device_quantize_matmul_mx", "kernel_copy_strided_quantize_matmul_mx")
        }
    )
    g["quantized_dtype_to_x4_map"] = {
        ml_dtypes.float8_e5m2: g["nl"].float8_e5m2_x4,
        ml_dtypes.float8_e4m3fn: g["nl"].float8_e4m3fn_x4,
        ml_dtypes.float4_e2m1fn: g["nl"].float4_e2m1fn_x4,
    }
    (fn,) = repo_functions(spec["repo"], spec["file"], [spec["fn"]], g)
    args = [getattr(ml_dtypes, a) if isinstance(a, str) else a for a in spec["args"]]
    fn(*args)
    return verdict.get("msg", "driver never compared")


def main(name):
    from standalone_specs import SPECS, SRC

    spec = next(s for s in SPECS if s["name"] == name)
    path = SRC / spec["repo"] / spec["file"]
    os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", spec.get("target", "trn2"))
    if spec.get("target"):
        os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = spec["target"]
    import nkidev

    nkidev.emulate()
    import nki  # noqa: F401

    rng = np.random.default_rng(0)
    try:
        if spec["mode"] == "script":
            sys.path.insert(0, str(path.parent))
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                sys.argv = [str(path)]
                runpy.run_path(str(path), run_name="__main__")
            _result("PASS", "script ran and its own asserts passed", ref_source="repo: the file's own __main__ check")
        if spec["mode"] == "mx":
            with contextlib.redirect_stdout(io.StringIO()):
                msg = run_mx(spec, path)
            _result("FAIL-numeric" if msg else "PASS", msg or "", ref_source=spec["ref_source"])
        mod = _load(path, "corpus_kernel_" + re.sub(r"\W", "_", name))
        kernel = getattr(mod, spec["kernel"])
        args = spec["inputs"](rng) if "inputs" in spec else ()
        out = nki.simulate(kernel)(*args, **spec.get("kwargs", {}))
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        rec = _error_record(e)
        if spec.get("expect_error") and spec["expect_error"] in str(e):
            _result("PASS", "raised the documented error: " + rec["message"], ref_source=spec.get("ref_source"))
        if isinstance(e, AssertionError) and spec["mode"] == "script" and "nkidev" not in rec["traceback"]:
            _result("FAIL-numeric", rec["message"], **rec, ref_source="repo: the file's own __main__ check")
        _result("ERROR", rec.pop("message"), **rec)
    if spec.get("expect_error"):
        _result("ERROR", f"expected an error containing {spec['expect_error']!r}, kernel ran", ref_source=spec.get("ref_source"))
    ref = spec["ref"](*args)
    msg = _compare(out, ref, spec["tol"])
    _result("FAIL-numeric" if msg else "PASS", msg or "", ref_source=spec.get("ref_source"))


if __name__ == "__main__":
    main(sys.argv[1])
