"""Where a fidelity row's VectorE time goes: cycles per instruction kind and the largest VectorE idle gaps, each
with the SBUF/PSUM slot reuse (costmodel/buffers.py) its waiting instruction's tiles took, if any.

    python bench/vector_gaps.py [LABEL-SUBSTRING ...]     # default: the trn1 Fused Mamba rows

Documented constants, no calibration file, no numerics. Used for MODEL.md "Why the Fused Mamba rows are slow":
the model's VectorE work per (state, tile) step is the documented 8N cycles, and mamba_v3's idle gaps are each
channel tile's delta/u loads waiting for the previous tile's slots.
"""

from __future__ import annotations

import sys

import numpy as np
from fidelity_components import SET, scheduled  # bench/ is on sys.path when a bench script runs

from nkidev.calibrate import measurements as measured
from nkidev.costmodel.buffers import reuse_edge_arrays


def report(m: measured.Measurement, gaps: int = 3) -> None:
    hw, trace, tl = scheduled(m)
    r = tl.rows
    v = np.flatnonzero(np.array(r.engine) == "vector")
    v = v[np.argsort(r.start[v], kind="stable")]
    busy = float((r.end[v] - r.start[v]).sum())
    ghz = hw.vector_engine.clock_ghz
    share = busy / tl.total_ns
    print(f"{m.label}: measured {m.measured_ns / 1e3:,.1f} us, predicted {tl.total_ns / 1e3:,.1f} us, VectorE busy {share:.1%}")
    kinds: dict[str, list[float]] = {}
    for j in v:
        kinds.setdefault(r.opcode[j], []).append(r.end[j] - r.start[j])
    for op, ns in sorted(kinds.items()):
        print(f"  {op:20} {len(ns):7} x {np.mean(ns) * ghz:8.0f} cycles = {sum(ns) / 1e3:10,.1f} us")
    idle = r.start[v[1:]] - r.end[v[:-1]]
    producers, consumers = reuse_edge_arrays(trace, hw)
    takes = dict(zip(consumers.tolist(), producers.tolist()))
    print(f"  VectorE idle {idle[idle > 0].sum() / 1e3:,.1f} us; largest gaps:")
    for i in np.argsort(-idle)[:gaps]:
        j = v[i + 1]
        # the DMA loads feeding the waiting instruction: trace positions just before it whose slot reuse waited
        ins = int(r.ins[j])
        waits = [(c, takes[c]) for c in range(max(0, ins - 40), ins) if c in takes and takes[c] > c - 40]
        print(f"    {idle[i] / 1e3:8.1f} us before {r.opcode[j]} (trace {ins}); recent slot reuses (first use, old last use): {waits[-3:]}")


def main() -> None:
    wanted = sys.argv[1:] or ["fused mamba"]
    for m in measured.read([SET]):
        if any(w in m.label for w in wanted):
            report(m)


if __name__ == "__main__":
    main()
