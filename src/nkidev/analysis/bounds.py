"""Performance bounds, bottleneck engine and the gaps between them ([sources: agentic-bounds "Performance Bounds"]).

Three families of lower bounds on the kernel time, each removing one layer of overhead:
memory (DMA busy -> bytes at peak -> necessary bytes at peak), compute (TensorE busy -> FLOPs at peak
-> FLOPs without transposes at peak) and pipeline (the slowest engine). All times are in ns.
"""

from __future__ import annotations

import numpy as np

from nkidev.analysis.intervals import merge_busy
from nkidev.analysis.tables import Profile, named_queries, sql_text
from nkidev.hardware import Target

# Display name -> engine key used in the normalized tables.
ENGINES = {"Tensor": "tensor", "Vector": "vector", "Scalar": "scalar", "GpSimd": "gpsimd", "DMA": "dma"}

MEMORY_BOUNDS = ("memory_bound_ns", "memory_bound_ideal_ns", "memory_bound_ideal_no_reloads_ns")
COMPUTE_BOUNDS = ("compute_bound_ns", "compute_bound_ideal_flops_ns", "compute_bound_ideal_useful_flops_ns")


def build_busy(profile: Profile) -> str:
    """Fill busy (merged busy intervals per engine, busy.sql); returns where engine busy time came from."""
    if profile.has("ActiveTime", "engine", "start_ts", "end_ts"):
        engines, source = "SELECT CAST(engine_key(engine) AS nk_engine) AS engine, start_ts, end_ts FROM _raw_ActiveTime", "ActiveTime"
    else:
        engines, source = "SELECT engine, start_ts, end_ts FROM inst", "Instruction"
        profile.notes.append("no ActiveTime table: engine busy time is the merged Instruction intervals")
    # a view: busy.sql reads it once, so it is never materialized
    profile.con.execute(f"CREATE OR REPLACE TEMP VIEW busy_engines AS {engines} WHERE start_ts IS NOT NULL AND end_ts IS NOT NULL")
    q = named_queries("busy.sql")
    iv = profile.arrays(q["intervals"])
    pieces = merge_busy(iv["engine"], iv["s"], iv["e"])
    first = pieces.pop("first")
    profile.busy = {"engine": pieces["group"], "s": pieces["s"], "e": pieces["e"]}  # the timeline reads them again
    # Only te_idle reads pieces in SQL (TensorE's); the bounds need each engine's busy sum: summed here, per code.
    codes, at = np.unique(pieces["group"], return_index=True)  # merge_busy returns the pieces grouped by code
    ns = np.add.reduceat(pieces["e"] - pieces["s"], at) if len(at) else np.zeros(0, dtype=np.int64)
    profile.put("_busy_ns", {"engine": codes.astype(np.int64), "ns": ns.astype(np.int64)})
    te = pieces["group"] == profile.rows("SELECT enum_code(CAST('tensor' AS nk_engine)) AS c")[0]["c"]
    columns = {"engine": pieces["group"][te], "s": pieces["s"][te], "e": pieces["e"][te], "prev_end": pieces["prev_end"][te]}
    profile.put("_busy_pieces", columns, {"prev_end": first[te]})
    profile.con.execute(q["pieces"])
    profile.con.unregister("_busy_pieces")
    profile.con.unregister("_busy_ns")
    return source


def _div(a, b):
    return None if a is None or not b else a / b


def _sub(a, b):
    return None if a is None or b is None else a - b


def memory_ceilings(dma_bytes: float, hbm_bytes: float | None, dma_bw: float | None, hbm_bw: float | None) -> dict:
    """The two ceilings every DMA byte meets and which one binds.

    All DMA traffic goes through the 16 DMA engines of the NeuronCore (`dma_bw`: Metadata.dma_ddr_bandwidth,
    which nkidev writes as the target's engines x theoretical rate); the part that reads or writes HBM also shares the NeuronCore's
    HBM bandwidth (`hbm_bw`: the target's `[hbm] bytes_per_s_per_nc`). The ideal memory time is the larger of
    the two times; on trn2 HBM (~363 GB/s) binds before DMA (435 GB/s) for HBM traffic.
    """
    hbm = dma_bytes if hbm_bytes is None else hbm_bytes
    dma_ns, hbm_ns = _div(dma_bytes * 1e9, dma_bw), _div(hbm * 1e9, hbm_bw)
    binding = None
    if dma_ns is not None or hbm_ns is not None:
        binding = "HBM" if (hbm_ns or 0) > (dma_ns or 0) else "DMA"
    ideal = max(x for x in (dma_ns, hbm_ns, 0.0) if x is not None) if binding else None
    return {
        "dma_bytes_per_s": dma_bw,
        "hbm_bytes_per_s": hbm_bw,
        "dma_bytes": int(dma_bytes),
        "hbm_bytes": int(hbm),
        "hbm_bytes_source": "profile" if hbm_bytes is not None else "assumed: every DMA byte crosses HBM",
        "dma_time_ns": dma_ns,
        "hbm_time_ns": hbm_ns,
        "binding": binding,
        "ideal_ns": ideal,
        "effective_bytes_per_s": _div(dma_bytes * 1e9, ideal) if ideal else (min(dma_bw, hbm_bw or dma_bw) if dma_bw else None),
    }


def compute(profile: Profile, target: Target) -> tuple[dict, dict]:
    """(bounds, engines) for the profile; see SCHEMA.md for every key. `target` gives the HBM ceiling."""
    busy_source = build_busy(profile)
    q = profile.rows(sql_text("bounds.sql"))[0]
    total = q["total_time_ns"] or 0
    engine_times = {name: float(q[f"{key}_ns"]) for name, key in ENGINES.items()}

    # Without Metadata a real profile names neither its DMA rate nor its instance: no ideal memory bounds.
    dma_bw, te_peak = q["dma_bw_peak"], q["te_peak_flops"]
    hbm_bw = target.hbm.bytes_per_s_per_nc if dma_bw else None
    # Without DmaPacket a profile names no DMA bytes or DMA busy time (api._warnings says so): the memory bounds
    # are unknown, not zero (a 0-byte DMA ceiling beside the Instruction table's HBM bytes gave negative gaps).
    has_packets = not profile.lacking("DmaPacket", "start_ts", "end_ts", "transfer_bytes")
    if has_packets:
        ceilings = memory_ceilings(q["dma_transfer_bytes"], q["hbm_bytes"], dma_bw, hbm_bw)
    else:
        ceilings = memory_ceilings(q["dma_transfer_bytes"], q["hbm_bytes"], None, None)
    necessary = q["necessary_bytes"]
    floor_bw = min(dma_bw, hbm_bw) if dma_bw else None  # necessary bytes cross both HBM and DMA
    b = {
        "total_time_ns": float(total),
        "memory_bound_ns": engine_times["DMA"] if has_packets else None,
        "memory_bound_ideal_ns": ceilings["ideal_ns"],
        "memory_bound_ideal_no_reloads_ns": _div(None if necessary is None else necessary * 1e9, floor_bw),
        "compute_bound_ns": engine_times["Tensor"],
        "compute_bound_ideal_flops_ns": _div(q["hw_flops"] * 1e9, te_peak),
        "compute_bound_ideal_useful_flops_ns": _div((q["hw_flops"] - q["transpose_flops"]) * 1e9, te_peak),
    }
    bottleneck = max(engine_times, key=lambda e: (engine_times[e], -list(ENGINES).index(e))) if any(engine_times.values()) else None
    b["perfect_pipeline_ns"] = engine_times[bottleneck] if bottleneck else 0.0
    b["bottleneck_engine"] = bottleneck
    b["gaps"] = _gaps(b)
    b["bn_speedup"] = _speedups(b, engine_times)
    b["inputs"] = {
        "t0_ns": q["t0"],
        "t1_ns": q["t1"],
        "window_source": q["window_source"],
        "total_time_source": q["length_source"],
        "busy_source": busy_source,
        "dma_transfer_bytes": int(q["dma_transfer_bytes"]),
        "hbm_bytes": ceilings["hbm_bytes"],
        "kernel_dma_packets": int(q["kernel_packets"]),
        "necessary_bytes": None if necessary is None else int(necessary),
        "excess_ratio": _div(q["dma_transfer_bytes"], necessary),
        "hw_flops": float(q["hw_flops"]),
        "transpose_flops": float(q["transpose_flops"]),
        "matmuls": q["matmuls"],
        "dma_bw_peak_bytes_per_s": dma_bw,
        "hbm_bw_peak_bytes_per_s": hbm_bw,
        "memory_ceiling": ceilings,
        "te_peak_flops_per_s": te_peak,
        "achieved_dma_bytes_per_s": _div(q["dma_transfer_bytes"] * 1e9, engine_times["DMA"]),
        "achieved_hbm_bytes_per_s": _div(ceilings["hbm_bytes"] * 1e9, engine_times["DMA"]),
        "te_utilization": _div(q["hw_flops"] * 1e9, (te_peak or 0) * engine_times["Tensor"]),
    }
    return b, _engines(profile, engine_times, total)


def _gaps(b: dict) -> dict:
    total = b["total_time_ns"]
    return {
        "dma_idle_ns": _sub(total, b["memory_bound_ns"]),
        "dma_inefficiency_ns": _sub(b["memory_bound_ns"], b["memory_bound_ideal_ns"]),
        "excess_traffic_ns": _sub(b["memory_bound_ideal_ns"], b["memory_bound_ideal_no_reloads_ns"]),
        "te_idle_ns": _sub(total, b["compute_bound_ns"]),
        "te_underutilization_ns": _sub(b["compute_bound_ns"], b["compute_bound_ideal_flops_ns"]),
        "transpose_ns": _sub(b["compute_bound_ideal_flops_ns"], b["compute_bound_ideal_useful_flops_ns"]),
        "pipeline_ns": _sub(total, b["perfect_pipeline_ns"]),
    }


def _speedups(b: dict, engine_times: dict) -> dict:
    """bn_speedup = total_time / max(bound, slowest engine the bound does not improve)."""
    total = b["total_time_ns"]
    others_of_dma = max(t for e, t in engine_times.items() if e != "DMA")
    others_of_te = max(t for e, t in engine_times.items() if e != "Tensor")
    out = {}
    for name in MEMORY_BOUNDS:
        out[name] = None if b[name] is None else _div(total, max(b[name], others_of_dma))
    for name in COMPUTE_BOUNDS:
        out[name] = None if b[name] is None else _div(total, max(b[name], others_of_te))
    out["perfect_pipeline_ns"] = _div(total, b["perfect_pipeline_ns"])
    return out


def _engines(profile: Profile, engine_times: dict, total: float) -> dict:
    counts = {r["engine"]: r for r in profile.rows(sql_text("engines.sql"))}
    out = {}
    for name, key in ENGINES.items():
        r = counts.get(key, {})
        out[name] = {
            "active_ns": engine_times[name],
            "active_percent": 100.0 * engine_times[name] / total if total else 0.0,
            "instruction_count": int(r.get("instruction_count") or 0),
            "instruction_time_ns": float(r.get("instruction_time_ns") or 0),
        }
        if key == "dma":
            out[name]["transfer_bytes"] = int(r.get("bytes") or 0)
    return out
