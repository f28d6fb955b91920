"""Benchmark: `--no-compute` profiles of large kernels (goals: 100k instructions <= 5 s, 1M <= 60 s and 1 GB).

    python bench/profile_large.py [--kernel matmul_fully_optimized|matmul_tiled|swiglu_1m] [--target trn1]
                                  [--out DIR] [--repeat 3] [--cprofile]

Prints the CPU time of each stage (emulator trace, dependency analysis + scheduling, tables, Parquet +
trace.json) and the total. The default kernel does the same work as `nkidev profile
bench/matmul_tutorial.py::matmul_fully_optimized --case 1 --no-compute` (38,912 instructions);
`matmul_tiled` is the tutorial's first variant, loads in the inner loop (99,328 instructions);
`swiglu_1m` is examples/swiglu_naive.py at T=16384, D=4096, F=24576 (1,001,472 instructions).
A change to the emulator, cost model or writer must keep the profile identical: write one with `--out` before
and after, then `python bench/compare_profiles.py BEFORE AFTER`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import matmul_tutorial as mt  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from nkidev.costmodel import schedule  # noqa: E402
from nkidev.emulator.context import EmulatorOptions  # noqa: E402
from nkidev.emulator.jit import run  # noqa: E402
from nkidev.profile.writer import build_tables, write_profile  # noqa: E402

SWIGLU_1M = (16384, 4096, 24576)  # T, D, F: 128 x 48 output tiles x (32 x 5 + 3) instructions


def kernel_and_inputs(name: str):
    """The kernel and its (all-zero: shape-only profiles never read values) inputs."""
    if name == "swiglu_1m":
        import nkidev

        with nkidev.emulate():
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
            from swiglu_naive import swiglu_naive
        T, D, F = SWIGLU_1M
        bf16 = ml_dtypes.bfloat16
        return swiglu_naive, (np.zeros((D, T), bf16), np.zeros((D, F), bf16), np.zeros((D, F), bf16))
    return getattr(mt, name), mt.inputs()


def once(kernel: str, target: str, out: Path, trace: str = "auto") -> dict[str, float]:
    """Profile `kernel` into `out` and time each stage; `trace` is what trace.json holds ('none': no file)."""
    fn, inputs = kernel_and_inputs(kernel)
    t = [time.process_time()]
    result = run(fn, inputs, {}, options=EmulatorOptions(target=target, compute=False))
    t.append(time.process_time())
    timeline = schedule(result.trace, target)
    t.append(time.process_time())
    tables = build_tables(timeline, trace=trace)
    t.append(time.process_time())
    write_profile(out, tables, "profile_large", force=True, target=timeline.target, trace=trace)
    t.append(time.process_time())
    return {
        "emulate_s": t[1] - t[0],
        "schedule_s": t[2] - t[1],
        "tables_s": t[3] - t[2],
        "write_s": t[4] - t[3],
        "total_s": t[4] - t[0],
        "instructions": len(result.trace),
        "rows": tables["Instruction"].num_rows,
        "packets": tables["DmaPacket"].num_rows,
        "predicted_ms": timeline.total_ns / 1e6,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="matmul_fully_optimized", choices=("matmul_fully_optimized", "matmul_tiled", "swiglu_1m"))
    parser.add_argument("--target", default="trn1")
    parser.add_argument("--out", default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cprofile", action="store_true", help="print the 30 most expensive functions")
    args = parser.parse_args(argv)
    tmp = None
    if args.out is None:
        tmp = Path(tempfile.mkdtemp(prefix="nkidev-bench-"))
    out = Path(args.out) if args.out else tmp / "profile"
    try:
        for _ in range(args.repeat):
            if args.cprofile:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                stats = prof.runcall(once, args.kernel, args.target, out)
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            else:
                stats = once(args.kernel, args.target, out)
            print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items()))
        budget = {"matmul_tiled": 5.0, "swiglu_1m": 60.0}.get(args.kernel, 10.0)
        ok = stats["total_s"] <= budget
        print(f"{'OK' if ok else 'SLOW'}: {stats['total_s']:.2f} s (budget {budget:g} s) for {stats['instructions']} instructions -> {out}")
        return 0 if ok else 1
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
