"""Hand-built profiles whose bounds and findings are worked out in the comments."""

from __future__ import annotations

from tests.analysis.synthetic import ProfileBuilder

KERNEL = "/src/kernels/kern.py"


def line(n: int) -> str:
    return f"{KERNEL}:{n}"


def bounds_profile() -> ProfileBuilder:
    """DMA 100 B/ns, TensorE 128x128 @ 2.5 GHz = 81.92 TFLOP/s.

    DMA: two loads of x overlap on [0, 1500], a store on [3000, 4000]: memory_bound 2500 ns, 120 kB moved
    (ideal 1200 ns), 70 kB necessary (700 ns). An instruction-fetch packet before t0 and a 4-byte
    semaphore write after the store are not kernel traffic: the window stays [0, 4000].
    TensorE: a regular matmul [1500, 2000] (16.78 MFLOP) and a transpose [2000, 2500] (4.19 MFLOP):
    compute_bound 1000 ns, ideal 256 ns, useful 204.8 ns. Vector busy 500 ns, Scalar 300 ns.
    """
    p = ProfileBuilder(dma_bw=100e9, te_clock_ghz=2.5)
    p.tensor("x", "IN", 50_000)
    p.tensor("out", "OUT", 20_000)
    p.dma(0, 1000, 50_000, src=line(10), variable="x")
    p.dma(500, 1500, 50_000, src=line(11), variable="x")
    p.matmul(1500, 2000, K=128, M=128, N=512, src=line(20))
    p.matmul(2000, 2500, K=128, M=128, N=128, src=line(21), transpose=True)
    p.op("vector", "TENSOR_TENSOR", 2500, 3000, line(30))
    p.op("scalar", "ACTIVATE", 2600, 2900, line(31))
    p.dma(3000, 4000, 20_000, src=line(40), variable="out", direction="store")
    p.packets.append(
        {"start_ts": -1000, "end_ts": -500, "duration_ns": 500, "transfer_bytes": 4096, "queue_type": "instruction", "queue_name": "qInstr"}
    )
    p.packets.append(
        {"start_ts": 3900, "end_ts": 4100, "duration_ns": 200, "transfer_bytes": 4, "queue_type": "data", "queue_name": "qSyncIO0"}
    )
    return p
