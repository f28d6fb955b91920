"""Emulator speed: Python overhead per emulated instruction, and emulation time vs plain NumPy.

    python bench/emulator_overhead.py [--size 2048] [--repeat 3]

1. Overhead: a kernel of many tiny instructions ((128, 8) tiles, so NumPy work is negligible);
   reports microseconds per instruction with the trace on (the default) and off.
2. Ratio: examples/matmul.py on an NxNxN bf16 problem vs NumPy doing the same math
   (bf16 -> fp32 conversion and one fp32 matmul), best of --repeat runs each.
3. With --ab: the same matmul alternately with and without overlapped GEMMs (EmulatorOptions(overlap=)),
   with its CPU split into the kernel's thread, the group GEMMs and the rest, and the GEMMs' shapes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import nkidev  # noqa: E402
from nkidev.emulator.context import EmulatorOptions  # noqa: E402

with nkidev.emulate():
    import nki
    import nki.isa as nisa
    import nki.language as nl
    from matmul import matmul_kernel


@nki.jit
def tiny_ops(x, n_ops):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    for _ in range(n_ops // 2):
        nisa.tensor_tensor(dst=b, data1=a, data2=a, op=nl.add)
        nisa.tensor_scalar(dst=a, data=b, op0=nl.multiply, operand0=0.5)
    nisa.dma_copy(dst=out, src=a)
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def overhead(n_ops: int, repeat: int) -> None:
    x = np.ones((128, 8), np.float32)
    for record in (True, False):
        opts = EmulatorOptions(record=record)
        t = best(lambda opts=opts: nkidev.run(tiny_ops, (x, n_ops), options=opts), repeat)
        print(f"overhead: {n_ops + 2} instructions, trace {'on ' if record else 'off'}: {t * 1e6 / (n_ops + 2):.1f} us per instruction")


def timed(fn, repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (every thread of the process) of each of `repeat` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return walls, cpus


def ratio(size: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((size, size)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((size, size)).astype(ml_dtypes.bfloat16)
    emu_w, emu_c, ref_w, ref_c = [], [], [], []
    for _ in range(repeat):  # interleaved, so both see the same load
        w, c = timed(lambda: nkidev.simulate(matmul_kernel)(lhsT, rhs), 1)
        emu_w += w
        emu_c += c
        w, c = timed(lambda: (lhsT.astype(np.float32).T @ rhs.astype(np.float32)).astype(ml_dtypes.bfloat16), 1)
        ref_w += w
        ref_c += c
    emu, ref = min(emu_w), min(ref_w)
    n_ins = len(nkidev.run(matmul_kernel, (lhsT, rhs), options=EmulatorOptions(compute=False)).trace)
    print(f"matmul {size}^3 bf16: emulator {emu:.3f} s ({n_ins} instructions), NumPy {ref:.3f} s, ratio {emu / ref:.2f}x")
    med = statistics.median
    print(
        f"  wall min/median: emulator {emu:.3f}/{med(emu_w):.3f} s, NumPy {ref:.3f}/{med(ref_w):.3f} s;"
        f" CPU min/median: emulator {min(emu_c):.3f}/{med(emu_c):.3f} s, NumPy {min(ref_c):.3f}/{med(ref_c):.3f} s"
    )


def overlap_ab(size: int, repeat: int) -> None:
    """The matmul with and without overlapped GEMMs, and where its CPU goes: the kernel's own thread, the group
    GEMMs (CPU of the thread running each, so a GEMM descheduled on a busy machine counts what it ran, not what
    it waited), and the rest (the worker thread that runs the queued PSUM reads, thread hand-offs). On a shared
    machine the wall times swing with the load; the CPU split is what a change to the emulator moves."""
    from collections import Counter

    from nkidev.emulator import psum

    rng = np.random.default_rng(0)
    args = tuple(rng.standard_normal((size, size)).astype(ml_dtypes.bfloat16) for _ in range(2))
    compute, spent, shapes = psum.Group.compute, [0.0, 0.0], Counter()

    def timed_compute(group) -> None:
        shapes[(group.s.width, group.s.k, group.mv.width)] += 1  # M, K, N of the group's one GEMM
        t0, c0 = time.perf_counter(), time.thread_time()
        compute(group)
        spent[0] += time.perf_counter() - t0
        spent[1] += time.thread_time() - c0

    psum.Group.compute = timed_compute
    try:
        for _ in range(repeat):
            for overlap in (False, True):
                spent[0] = spent[1] = 0.0
                shapes.clear()
                main0 = time.thread_time()
                (wall,), (cpu,) = timed(lambda o=overlap: nkidev.run(matmul_kernel, args, options=EmulatorOptions(overlap=o)), 1)
                main = time.thread_time() - main0
                mode = "on " if overlap else "off"
                # in line, the GEMMs run on the kernel's thread: its CPU without them is the Python and the copies
                kernel = main - spent[1] if not overlap else main
                print(
                    f"  overlap {mode}: wall {wall:.3f} s, CPU {cpu:.3f} s = kernel thread {kernel:.3f}"
                    f" + group GEMMs {spent[1]:.3f} (wall inside them {spent[0]:.3f}) + rest {cpu - kernel - spent[1]:.3f}"
                )
        print("  group GEMMs (M x K x N: count):", ", ".join(f"{m}x{k}x{n}: {c}" for (m, k, n), c in sorted(shapes.items())))
    finally:
        psum.Group.compute = compute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ab", action="store_true", help="also time the matmul with and without overlapped GEMMs")
    args = parser.parse_args()
    if args.size <= 0 or args.size % 512:
        parser.error(f"--size {args.size}: examples/matmul.py tiles N by 512, so pass a positive multiple of 512")
    overhead(args.ops, args.repeat)
    ratio(args.size, args.repeat)
    if args.ab:
        overlap_ab(args.size, args.repeat)


if __name__ == "__main__":
    main()
