"""Every performance goal of nkidev, measured: one table with min / median over repeated runs.

    python bench/run_all.py [--repeat 3] [--only NAME,...] [--skip NAME,...] [--json] [--markdown]

Each repeat of each goal runs in a fresh Python process (`python bench/run_all.py --measure NAME`), so
imports, caches and peak memory are measured cold and one goal cannot slow another. Times are CPU
seconds of that process (`time.process_time`, steadier than wall time on a shared machine) unless the
row says wall; the matmul ratio is wall time, as a user sees it (BLAS threads run in parallel).
The README's Performance section is this table (`--markdown`).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))


@dataclass(frozen=True)
class Metric:
    key: str  # field of the measurement's JSON
    what: str
    unit: str
    goal: float | None = None  # upper bound (None: reported only)
    digits: int = 2


@dataclass(frozen=True)
class Goal:
    name: str
    command: str  # what reproduces it by hand
    metrics: tuple[Metric, ...]


GOALS = (
    Goal(
        "matmul_ratio",
        "python bench/emulator_overhead.py",
        (
            Metric("emulator_s", "2048^3 bf16 matmul (examples/matmul.py), emulator, wall", "s", None, 3),
            Metric("numpy_s", "same math in NumPy (bf16 -> fp32, one GEMM), wall", "s", None, 3),
            Metric("ratio", "emulator / NumPy", "x", 1.5),
        ),
    ),
    Goal(
        "overhead",
        "python bench/emulator_overhead.py",
        (
            Metric("us_trace_on", "per-instruction CPU overhead, trace on ((128, 8) tiles)", "us", 20.0, 1),
            Metric("us_trace_off", "per-instruction CPU overhead, trace off", "us", None, 1),
            Metric("trace_bytes", "trace memory per instruction", "B", 300.0, 0),
        ),
    ),
    Goal(
        "elementwise",
        "python bench/run_all.py --only elementwise",
        (
            Metric("softmax_ratio", "softmax (4, 2048, 4096) bf16: emulator / NumPy (CPU)", "x", None),
            Metric("layernorm_ratio", "layernorm (4096, 4096) fp32: emulator / NumPy (CPU)", "x", None),
        ),
    ),
    Goal(
        "profile_tiled",
        "python bench/profile_large.py --kernel matmul_tiled",
        (
            Metric("total_s", "shape-only profile, tutorial matmul with loads in the inner loop (4096x8192x8192)", "s", 5.0),
            Metric("instructions", "  instructions", "", None, 0),
            Metric("emulate_s", "  emulate", "s", None),
            Metric("schedule_s", "  schedule", "s", None),
            Metric("write_s", "  tables + Parquet + trace.json", "s", None),
        ),
    ),
    Goal(
        "profile_optimized",
        "python bench/profile_large.py",
        (
            Metric("total_s", "shape-only profile, fully optimized tutorial matmul (4096x8192x8192)", "s", 10.0),
            Metric("instructions", "  instructions", "", None, 0),
        ),
    ),
    Goal(
        "profile_1m",
        "python bench/profile_large.py --kernel swiglu_1m",
        (
            Metric("total_s", "shape-only profile of a 1M-instruction kernel (swiglu_naive, T=16384 D=4096 F=24576)", "s", 60.0, 1),
            Metric("instructions", "  instructions", "", None, 0),
            Metric("peak_mb", "  peak memory (max RSS)", "MB", 1024.0, 0),
        ),
    ),
    Goal(
        "validate_softmax",
        "nkidev validate examples/softmax.py::softmax_kernel",
        (
            Metric("wall_s", "bundled softmax validate (4 cases x 3 seeds), in process, wall", "s", 1.0),
            Metric("cli_s", "  the same as `nkidev validate` (an isolated child), wall", "s", None),
            Metric("cli_workers2_s", "  with `--workers 2` (two children)", "s", None),
        ),
    ),
    Goal(
        "analyze_1m",
        "python bench/analyze_large.py",
        (Metric("analyze_s", "analysis of a 1M-instruction profile (CPU)", "s", 1.5),),
    ),
    Goal(
        "analyze_swiglu_1m",
        "python bench/analyze_large.py --profile DIR",  # DIR: python bench/profile_large.py --kernel swiglu_1m --out DIR
        (
            Metric("analyze_s", "analysis of the simulated 1M-instruction swiglu_naive profile (9.5M DMA packets), CPU", "s", 1.5),
            Metric("wall_s", "  the same, wall", "s", None),
        ),
    ),
    Goal(
        "startup",
        "python -X importtime -c pass",
        (
            Metric("hook_ms", "startup hook: `python -c pass` minus the same with NKIDEV_DISABLE_SHIM=1 (wall)", "ms", 5.0, 1),
            Metric("hook_no_bytecode_ms", "  the same without .pyc files (PYTHONDONTWRITEBYTECODE=1, empty cache)", "ms", None, 1),
            Metric("help_s", "`nkidev --help` (wall)", "s", 0.2),
            Metric("import_s", "`import nkidev.validate.api` (wall)", "s", None),
        ),
    ),
)


# ---------------------------------------------------------------- measurements (run in a child process)


def _cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def _wall(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure_matmul_ratio() -> dict:
    import ml_dtypes
    import numpy as np

    import nkidev

    sys.path.insert(0, str(ROOT / "examples"))
    with nkidev.emulate():
        from matmul import matmul_kernel
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((2048, 2048)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((2048, 2048)).astype(ml_dtypes.bfloat16)
    emu, ref = [], []
    for _ in range(3):  # back to back, so both see the same machine load
        emu.append(_wall(lambda: nkidev.simulate(matmul_kernel)(lhsT, rhs)))
        ref.append(_wall(lambda: (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(ml_dtypes.bfloat16)))
    return {"emulator_s": min(emu), "numpy_s": min(ref), "ratio": min(emu) / min(ref)}


def measure_overhead() -> dict:
    import tracemalloc

    import numpy as np
    from emulator_overhead import tiny_ops

    import nkidev
    from nkidev.emulator.context import EmulatorOptions

    n = 20000
    x = np.ones((128, 8), np.float32)
    nkidev.run(tiny_ops, (x, 200))  # warm up: imports, caches
    out = {}
    for record in (True, False):
        opts = EmulatorOptions(record=record)
        t = min(_cpu(lambda opts=opts: nkidev.run(tiny_ops, (x, n), options=opts)) for _ in range(3))
        out["us_trace_on" if record else "us_trace_off"] = t * 1e6 / (n + 2)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = nkidev.run(tiny_ops, (x, n))
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    out["trace_bytes"] = (after - before) / len(result.trace)
    return out


def measure_elementwise() -> dict:
    import ml_dtypes
    import numpy as np

    import nkidev

    sys.path.insert(0, str(ROOT / "examples"))
    with nkidev.emulate():
        from layernorm import layernorm_kernel
        from softmax import softmax_kernel
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 2048, 4096)).astype(ml_dtypes.bfloat16)

    def np_softmax():
        z = x.astype(np.float32)
        neg = -z.max(axis=-1, keepdims=True) * np.float32(0.125)
        e = np.exp(z * np.float32(0.125) + neg)
        return (e * (np.float32(1) / e.sum(axis=-1, keepdims=True))).astype(ml_dtypes.bfloat16)

    y = rng.standard_normal((4096, 4096)).astype(np.float32)
    g, b = rng.uniform(0.5, 1.5, 4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)

    def np_layernorm():
        mu = y.mean(axis=-1, keepdims=True)
        inv = np.float32(1) / np.sqrt(y.var(axis=-1, keepdims=True) + np.float32(1e-5))
        return (y - mu) * inv * g + b

    sim_s, sim_l = nkidev.simulate(softmax_kernel), nkidev.simulate(layernorm_kernel)
    emu_s = min(_cpu(lambda: sim_s(x, 0.125)) for _ in range(3))
    ref_s = min(_cpu(np_softmax) for _ in range(3))
    emu_l = min(_cpu(lambda: sim_l(y, g, b)) for _ in range(3))
    ref_l = min(_cpu(np_layernorm) for _ in range(3))
    return {"softmax_ratio": emu_s / ref_s, "layernorm_ratio": emu_l / ref_l}


def _profile(kernel: str) -> dict:
    import profile_large

    with tempfile.TemporaryDirectory() as tmp:
        t = time.process_time()
        stats = profile_large.once(kernel, "trn1", Path(tmp) / "profile")
        stats["total_s"] = time.process_time() - t  # CPU seconds of every stage
    stats["write_s"] = stats["tables_s"] + stats["write_s"]
    stats["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return stats


def measure_profile_tiled() -> dict:
    return _profile("matmul_tiled")


def measure_profile_optimized() -> dict:
    return _profile("matmul_fully_optimized")


def measure_profile_1m() -> dict:
    return _profile("swiglu_1m")


def measure_validate_softmax() -> dict:
    from nkidev.validate.api import validate_task

    spec = f"{ROOT / 'examples' / 'softmax.py'}::softmax_kernel"
    t = time.perf_counter()
    result = validate_task(spec)
    wall = time.perf_counter() - t
    assert result.passed, "softmax must validate"
    nkidev = str(Path(sys.executable).with_name("nkidev"))
    cli = [nkidev, "validate", spec, "--json"]
    return {
        "wall_s": wall,
        "cli_s": _min_wall(cli, dict(os.environ), 1),
        "cli_workers2_s": _min_wall([*cli, "--workers", "2"], dict(os.environ), 1),
    }


def measure_analyze_1m() -> dict:
    import analyze_large

    from nkidev.analysis.api import analyze

    cache = Path(tempfile.gettempdir()) / "nkidev-bench-analyze-1m"
    if not (cache / "Instruction").exists() and not (cache / "Instruction.parquet").exists():
        analyze_large.write_tables(str(cache), analyze_large.build(1_000_000, 4), split={"Instruction": 4, "DmaPacket": 4})
    analyze(str(cache))  # warm: imports, DuckDB extension loading, OS file cache
    return {"analyze_s": min(_cpu(lambda: analyze(str(cache))) for _ in range(3))}


def measure_analyze_swiglu_1m() -> dict:
    import profile_large

    from nkidev.analysis.api import analyze

    cache = Path(tempfile.gettempdir()) / "nkidev-bench-analyze-swiglu-1m"
    # built once (~30 s; no trace.json: 0.36 GB the analysis never reads); delete it after a change to the profile writer
    if not (cache / "Instruction.parquet").exists():
        profile_large.once("swiglu_1m", "trn1", cache, trace="none")
    analyze(str(cache))  # warm: imports, OS file cache
    return {
        "analyze_s": min(_cpu(lambda: analyze(str(cache))) for _ in range(3)),
        "wall_s": min(_wall(lambda: analyze(str(cache))) for _ in range(3)),
    }


def _min_wall(cmd: list[str], env: dict, n: int = 15) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t)
    return best


def measure_startup() -> dict:
    # As a user's environment runs: bytecode is cached (a wheel ships it; a checkout writes it on first import).
    # Some machines set PYTHONDONTWRITEBYTECODE=1 (this project's does), which makes every process compile
    # nkidev/__init__.py and startup.py from source: reported on its own row, not as the hook's cost.
    env = dict(os.environ)
    env.pop("NKIDEV_DISABLE_SHIM", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    off = dict(env, NKIDEV_DISABLE_SHIM="1")
    py = [sys.executable, "-c", "pass"]
    subprocess.run([sys.executable, "-c", "import nkidev.cli, nkidev.validate.api"], env=env, check=True)  # writes the .pyc files
    hook = _min_wall(py, env, 30) - _min_wall(py, off, 30)
    with tempfile.TemporaryDirectory(prefix="nkidev-no-pycache-") as empty:  # no .pyc there: compiled each time
        no_bytecode = dict(env, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=empty)
        hook_no_bytecode = _min_wall(py, no_bytecode, 30) - _min_wall(py, dict(no_bytecode, NKIDEV_DISABLE_SHIM="1"), 30)
    nkidev = str(Path(sys.executable).with_name("nkidev"))
    return {
        "hook_ms": max(0.0, hook * 1e3),
        "hook_no_bytecode_ms": max(0.0, hook_no_bytecode * 1e3),
        "help_s": _min_wall([nkidev, "--help"], env),
        "import_s": _min_wall([sys.executable, "-c", "import nkidev.validate.api"], env) - _min_wall(py, env),
    }


# ---------------------------------------------------------------- the table


def write_bytecode() -> None:
    """Cache the bytecode of every nkidev module, as a user's install has it (a wheel ships it; a checkout
    writes it on first import). Under PYTHONDONTWRITEBYTECODE=1 (this project's machine sets it) no process
    writes it, so each measured child compiled the emulator's modules from source when it first ran a kernel:
    ~0.06 s of the in-process softmax validate, which measure_startup's .pyc files (the CLI's import) leave out."""
    spec = importlib.util.find_spec("nkidev")
    for folder in spec.submodule_search_locations if spec is not None else ():
        compileall.compile_dir(folder, quiet=1)


def run_child(name: str) -> dict:
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", name], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(x: float, digits: int) -> str:
    return f"{x:,.{digits}f}"


def table(results: dict[str, list[dict]], markdown: bool) -> str:
    lines = []
    if markdown:
        lines += ["| what | command | min | median | goal |", "|---|---|---|---|---|"]
    else:
        lines.append(f"{'what':96} {'min':>10} {'median':>10} {'goal':>8}  unit")
    for goal in GOALS:
        runs = results.get(goal.name)
        if not runs:
            continue
        for m in goal.metrics:
            values = [r[m.key] for r in runs if m.key in r]
            if not values:
                continue
            lo, med = min(values), statistics.median(values)
            target = "" if m.goal is None else f"<= {_fmt(m.goal, m.digits)}"
            flag = "" if m.goal is None else (" ok" if med <= m.goal else " MISSED")
            if markdown:
                cmd = f"`{goal.command}`" if not m.what.startswith("  ") else ""
                unit = f" {m.unit}" if m.unit else ""
                verdict = f"{target}{flag}" if target else ""
                lines.append(f"| {m.what.strip()} | {cmd} | {_fmt(lo, m.digits)}{unit} | {_fmt(med, m.digits)}{unit} | {verdict} |")
            else:
                lines.append(f"{m.what:96} {_fmt(lo, m.digits):>10} {_fmt(med, m.digits):>10} {target:>8}  {m.unit}{flag}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated goal names")
    parser.add_argument("--skip", default="", help="comma-separated goal names")
    parser.add_argument("--json", action="store_true", help="print every run's raw numbers as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown (the README's section)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one measurement, JSON on stdout
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(globals()[f"measure_{args.measure}"]()))
        return 0
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    names = [g.name for g in GOALS if (not only or g.name in only) and g.name not in skip]
    write_bytecode()
    results: dict[str, list[dict]] = {}
    for name in names:
        results[name] = []
        for _ in range(args.repeat):
            results[name].append(run_child(name))
            print(f"# {name}: {results[name][-1]}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(results, indent=1))
    print(f"# {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}, {args.repeat} runs each")
    print(table(results, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
