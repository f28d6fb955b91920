"""Where the trn2 fidelity rows' error lives: predicted vs published DMA bytes, DMA active time and TensorE active
time, next to the total the fidelity report compares.

    python bench/fidelity_components.py [--json]

For every trn2 row of examples/fidelity/measurements.toml the kernel is emulated once (no numerics) and scheduled
with the documented constants (no calibration file). The published components are the rows' optional
`dma_active_ns`, `te_active_ns`, `dma_bytes` and `dma_descriptors` (what each source's profile prints; nothing here
is fitted).

"desc ns" is what the published DMA active time implies for the per-descriptor cost on one DMA engine
(16 engines, 8 partitions each, the table rate 23 B/ns): (DMA active - bytes / 16 / 23) / (descriptors / 16),
with the published bytes and descriptors where the source gives them (V0), else the kernel's own. Where no DMA
active time is published (the transposes rows), "<= x" bounds it by the kernel time, assuming the kernel moved the
bytes its source loads. The kernel-optimization rows 3 and 4 moved more than their source loads (their DMA packet
time and MBU say ~1.8x for row 3), so their "desc ns" overstates the cost.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from nkidev.calibrate import measurements as measured
from nkidev.costmodel import schedule
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run
from nkidev.hardware import get_target
from nkidev.taskfile import kernel_spec, load_task

SET = Path(__file__).resolve().parent.parent / "examples" / "fidelity" / "measurements.toml"


def scheduled(m: measured.Measurement):
    """A measurement's kernel emulated once without numerics and scheduled with the documented constants:
    (target, trace, timeline)."""
    hw = get_target(m.target)
    parsed = kernel_spec(m.spec)
    task = load_task(parsed.path)
    case = task.calls()[m.case]
    trace = run(task.launch(parsed), case.args, case.kwargs, options=EmulatorOptions(target=hw, compute=False)).trace
    return hw, trace, schedule(trace, hw)


def components(m: measured.Measurement) -> dict:
    hw, _, tl = scheduled(m)
    busy = tl.busy_ns()
    plans = [tl.transfers.plan[i] for i in range(len(tl.transfers))]
    nbytes = sum(p.transfer_bytes for p in plans)
    descriptors = sum(int(np.ceil(p.transfer_bytes / p.descriptor_bytes)) for p in plans)
    pub = m.profile
    out = {
        "label": m.label,
        "measured_ns": m.measured_ns,
        "predicted_ns": tl.total_ns,
        "dma_transfers": len(plans),
        "dma_bytes": nbytes,
        "descriptors": descriptors,
        "dma_active_ns": busy.get("dma", 0.0),
        "te_active_ns": busy.get("tensor", 0.0),
        "published": pub,
    }
    if pub.get("dma_active_ns"):
        published_bytes = pub.get("dma_bytes") or nbytes
        data_ns = published_bytes / hw.dma.engines / hw.dma.bytes_per_ns_per_engine
        per_engine_desc = pub.get("dma_descriptors", descriptors) / hw.dma.engines
        out["implied_descriptor_ns"] = (pub["dma_active_ns"] - data_ns) / per_engine_desc
    else:  # DMA active <= the kernel time: an upper bound, if the kernel moved the bytes its source loads
        data_ns = nbytes / hw.dma.engines / hw.dma.bytes_per_ns_per_engine
        out["max_descriptor_ns"] = (m.measured_ns - data_ns) / (descriptors / hw.dma.engines)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [components(m) for m in measured.read([SET]) if m.target == "trn2"]
    if args.json:
        print(json.dumps(rows, indent=1))
        return

    def us(x):
        return "-" if x is None else f"{x / 1e3:,.0f}"

    print(f"{'row':58} {'total us':>15} {'DMA active us':>15} {'TE active us':>15} {'DMA MB':>13} {'desc ns':>8}")
    print(f"{'':58} {'pred / pub':>15} {'pred / pub':>15} {'pred / pub':>15} {'pred / pub':>13} {'pub':>8}")
    for r in rows:
        p = r["published"]
        mb = "-" if not p.get("dma_bytes") else f"{p['dma_bytes'] / 1e6:,.0f}"
        desc = f"{r['implied_descriptor_ns']:.1f}" if "implied_descriptor_ns" in r else f"<={r['max_descriptor_ns']:.1f}"
        print(
            f"{r['label']:58} {us(r['predicted_ns']):>7} /{us(r['measured_ns']):>7} "
            f"{us(r['dma_active_ns']):>7} /{us(p.get('dma_active_ns')):>7} {us(r['te_active_ns']):>7} /{us(p.get('te_active_ns')):>7} "
            f"{r['dma_bytes'] / 1e6:>6,.0f} /{mb:>6} {desc:>8}"
        )


if __name__ == "__main__":
    main()
