"""Run the corpus: nki-library's own simulation-mode tests and standalone kernels, each in a subprocess.

Two corpora:
  nkilib      nki-library's own simulation-mode tests (test/integration, -m fast, --test-mode simulation),
              run unchanged with pytest; `nki_cpu_simulator` (the official simulator package they import)
              is provided by shims/nki_cpu_simulator over nkidev's public `nkidev.emulate()`; the
              private `neuron_dtypes`/`neuronxcc` names they import by shims/ stand-ins.
  standalone  kernels from nki-samples, aws-neuron-sdk and nki-autotune: specs in standalone_specs.py build
              inputs, call the kernel via nki.simulate and compare with the repo's own reference where it has one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from repos import nki_version_for

HERE = Path(__file__).resolve().parent
SHIMS = HERE / "shims"
ROOT = HERE.parent.parent  # the nkidev checkout this harness belongs to

# "simple" kernels: single-kernel subkernels/utilities (no attention/MLP/MoE/QKV/projection/transformer
# blocks, no collectives); they run first.
SIMPLE_DIRS = (
    "core/cumsum/",
    "core/embeddings/",
    "core/max/",
    "core/subkernels/",
    "core/utils/",
    "core/topk/",
    "core/rmsnorm/",
    "core/attention/test_gen_mask",
    "experimental/conv/",
    "experimental/dynamic_shapes/",
    "experimental/loss/",
    "experimental/benchmark/",
    "experimental/mxfp_subkernels/",
)
STATUSES = ("PASS", "FAIL-numeric", "ERROR", "TIMEOUT", "SKIP")
NKI_VERSION_VAR = "NKIDEV_NKI_VERSION"  # nkidev's per-process NKI version (nkidev.emulator.versions.ENV_VAR)


def checkout_env(src: Path) -> dict[str, str]:
    """Environment of every child: this checkout's src/ first (so its nkidev is the one tested), then the shims."""
    env = dict(os.environ)
    env.pop("NKIDEV_EMULATE", None)
    env.pop(NKI_VERSION_VAR, None)  # set per repository by with_nki_version, never inherited by accident
    paths = [str(ROOT / "src"), str(SHIMS)] + [x for x in [env.get("PYTHONPATH")] if x]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["CORPUS_SRC"] = str(src)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def with_nki_version(env: dict[str, str], nki_version: str | None) -> dict[str, str]:
    """A copy of `env` whose children emulate `nki_version` (None: nkidev's default, the newest)."""
    out = {k: v for k, v in env.items() if k != NKI_VERSION_VAR}
    if nki_version:
        out[NKI_VERSION_VAR] = nki_version
    return out


def effective_nki_version(env: dict[str, str]) -> str:
    """The NKI version a child started with `env` emulates, as nkidev resolves it; "error: ..." when nkidev refuses it
    (e.g. err_unknown_nki_version for a version it does not emulate)."""
    code = "from nkidev.emulator import versions; print(versions.default())"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"error: {last}"
    return proc.stdout.strip()


def nkidev_version(env: dict[str, str]) -> str:
    code = "import nkidev, os; print(getattr(nkidev, '__version__', '?'), os.path.dirname(nkidev.__file__))"
    try:
        return subprocess.check_output([sys.executable, "-c", code], env=env, text=True, timeout=120).strip()
    except (subprocess.SubprocessError, OSError) as e:
        return f"unavailable: {e}"


def is_simple(f: str) -> bool:
    return any(d in f for d in SIMPLE_DIRS)


def nkilib_test_files(nkilib: Path) -> list[str]:
    files = sorted(str(p.relative_to(nkilib)) for p in (nkilib / "test" / "integration").rglob("test_*.py"))
    return sorted(files, key=lambda f: (not is_simple(f), f))


def junit_cases(xml_path: Path) -> list[dict]:
    if not xml_path.exists():
        return []
    root = ET.parse(xml_path).getroot()
    out = []
    for tc in root.iter("testcase"):
        status, msg = "PASS", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                status = "FAIL"
                text = child.text or ""
                if len(text) > 8000:
                    text = text[:3000] + "\n...\n" + text[-5000:]
                msg = (child.get("message") or "") + "\n" + text
            elif child.tag == "skipped":
                status = "SKIP"
                msg = child.get("message") or ""
        if status == "FAIL" and "Timeout" in msg and ("pytest-timeout" in msg or "Timeout >" in msg):
            status = "TIMEOUT"
        cid = f"{tc.get('classname', '')}::{tc.get('name')}"
        rec = {"id": cid, "status": status, "message": msg, "time": float(tc.get("time", 0))}
        skipped = [p.get("value", "") for p in tc.iter("property") if p.get("name") == "corpus_validation_skipped"]
        if skipped and status == "PASS":  # the orchestrator compared nothing (shims/corpus_nkilib_plugin.py)
            rec.update(unvalidated=True, message=skipped[0])
        out.append(rec)
    return out


def classify_status(msg: str) -> str:
    if "Timeout >" in msg or "pytest-timeout" in msg:
        return "TIMEOUT"
    numeric = re.search(r"COMPARISON: .* FAILED|ValidationException|allclose|Mismatch|not close", msg)
    # nki-library wraps any exception of its output check in ValidationException, an allocation failure included:
    # that compared nothing, so it is an error, not a numeric failure
    out_of_memory = re.search(r"can't allocate memory|Unable to allocate|MemoryError", msg)
    if numeric and not out_of_memory and not re.search(r"InferenceException|Error\b.*err_", msg):
        return "FAIL-numeric"
    return "ERROR"


def _collection_error(f: str, log: Path, elapsed: float) -> dict:
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = re.findall(r"^E\s+(.*)$", text, re.M)
    return {"id": f"{f}::<collection>", "status": "ERROR", "message": "\n".join(lines[-8:]) or text[-4000:], "time": elapsed}


def run_nkilib(
    src: Path, env: dict[str, str], timeout: int, file_filter: list[str] | None, all_tests: bool, out_dir: Path, select: str | None = None
) -> list[dict]:
    """nki-library's test files (those containing a `file_filter` substring), each in one pytest; `select` is a pytest -k
    expression (e.g. one test's parameters, to re-run it with another --timeout)."""
    nkilib = src / "nki-library"
    outdir = out_dir / "nkilib"
    outdir.mkdir(parents=True, exist_ok=True)
    files = nkilib_test_files(nkilib)
    if file_filter:
        files = [f for f in files if any(s in f for s in file_filter)]
    results = []
    for f in files:
        tag = f.replace("/", "_").removesuffix(".py") + ("_probe" if env.get("CORPUS_WORKAROUNDS") else "") + ("_k" if select else "")
        xml = outdir / f"{tag}.xml"
        log = outdir / f"{tag}.log"
        xml.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pytest", "-p", "corpus_nkilib_plugin", f, "--test-mode", "simulation", "-q"]
        cmd += ["-p", "no:cacheprovider", "--junitxml", str(xml), f"--timeout={timeout}", "-o", "junit_logging=no"]
        cmd += ["--output-directory", str(outdir / "artifacts" / tag), "--force-local-cleanup"]
        cmd += ["-n", os.environ.get("CORPUS_XDIST", "2")]
        if not all_tests:
            cmd += ["-m", "fast"]
        if select:
            cmd += ["-k", select]
        fenv = dict(env, PYTHONPATH=os.pathsep.join([env["PYTHONPATH"], str(nkilib), str(nkilib / "src")]))
        t0 = time.time()
        try:
            with open(log, "w") as lf:
                file_timeout = int(os.environ.get("CORPUS_FILE_TIMEOUT", "7200"))
                rc = subprocess.run(cmd, cwd=nkilib, env=fenv, stdout=lf, stderr=subprocess.STDOUT, timeout=file_timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "file-timeout"
        cases = junit_cases(xml)
        if not cases and rc not in (0, 5):  # collection error: one record for the whole file
            cases = [_collection_error(f, log, time.time() - t0)]
        for c in cases:
            c.update(corpus="nki-library", file=f, simple=is_simple(f), nki_version=env.get(NKI_VERSION_VAR, "default"))
            if c["status"] == "FAIL":
                c["status"] = classify_status(c["message"])
            results.append(c)
        n = {s: sum(1 for c in cases if c["status"] == s) for s in STATUSES}
        print(f"[nkilib] {f}: {n} rc={rc} {time.time() - t0:.0f}s", flush=True)
    return results


def run_standalone(env: dict[str, str], timeout: int, name_filter: list[str] | None, nki_version: str | None = None) -> list[dict]:
    """Each spec runs under its repository's NKI version (`nki_version`, run.py --nki-version, overrides it)."""
    from standalone_specs import SPECS

    results = []
    for spec in SPECS:
        if name_filter and not any(s in spec["name"] for s in name_filter):
            continue
        t0 = time.time()
        cmd = [sys.executable, str(HERE / "standalone_runner.py"), spec["name"]]
        version = nki_version_for(spec["repo"], nki_version)
        try:
            sp_env = with_nki_version(env, version)
            proc = subprocess.run(cmd, cwd=HERE, env=sp_env, capture_output=True, text=True, timeout=timeout)
            lines = [line for line in proc.stdout.splitlines() if line.startswith("CORPUS_RESULT ")]
            if lines:
                rec = json.loads(lines[-1].removeprefix("CORPUS_RESULT "))
            else:
                rec = {"status": "ERROR", "message": "runner crashed: " + (proc.stderr or proc.stdout)[-3000:]}
        except subprocess.TimeoutExpired:
            rec = {"status": "TIMEOUT", "message": f"no result within {timeout} s"}
        rec.update(id=spec["name"], corpus=spec["repo"], file=spec["file"], time=time.time() - t0, nki_version=version or "default")
        results.append(rec)
        print(f"[standalone] {spec['name']}: {rec['status']} {rec.get('message', '')[:160]!r}", flush=True)
    return results
