"""Benchmark: `--no-compute` profile of the fully optimized 4096x8192x8192 bf16 matmul (target: <= 10 s on 2 cores).

    python bench/profile_large.py [--target trn1] [--out DIR] [--repeat 3] [--cprofile]

Prints the wall time of each stage (emulator trace, dependency analysis + scheduling, tables, Parquet +
trace.json) and the total, the same work `nkidev profile bench/matmul_tutorial.py::matmul_fully_optimized
--case 1 --no-compute` does.
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

from nkidev.costmodel import schedule  # noqa: E402
from nkidev.emulator.context import EmulatorOptions  # noqa: E402
from nkidev.emulator.jit import run  # noqa: E402
from nkidev.profile.writer import build_tables, write_profile  # noqa: E402


def once(target: str, out: Path) -> dict[str, float]:
    lhsT, rhs = mt.inputs()
    t = [time.perf_counter()]
    result = run(mt.matmul_fully_optimized, (lhsT, rhs), {}, options=EmulatorOptions(target=target, compute=False))
    t.append(time.perf_counter())
    timeline = schedule(result.trace, target)
    t.append(time.perf_counter())
    tables = build_tables(timeline)
    t.append(time.perf_counter())
    write_profile(out, tables, "profile_large", force=True, target=timeline.target)
    t.append(time.perf_counter())
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
                stats = prof.runcall(once, args.target, out)
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            else:
                stats = once(args.target, out)
            print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items()))
        ok = stats["total_s"] <= 10.0
        print(f"{'OK' if ok else 'SLOW'}: {stats['total_s']:.2f} s (budget 10 s) for {stats['instructions']} instructions -> {out}")
        return 0 if ok else 1
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
