"""The DMA transfer model: queues, engines, descriptor sizes and per-engine packet times.

A transfer (one dma_copy / dma_transpose / dma_compute / sendrecv) is issued on a queue, waits the
fixed trigger-to-start latency, then each DMA engine that serves its SBUF partitions (8 partitions per
engine, [sources: dma-overview "Performance Considerations"]) moves its share as one packet:

    packet_ns = bytes_e / (bytes_per_ns_per_engine * efficiency) + descriptors_e * descriptor_ns(d)
    descriptor_ns(d) = descriptor_overhead_ns * max(0, 1 - d / saturating_bytes_per_partition)

`efficiency` is `hbm_efficiency` when one side is HBM (times the transpose efficiency for DMA
transposes). A descriptor is one contiguous run of d = min(source run, destination run) bytes. Its
processing cost on the DMA engine (the packet-rate limit of [sources: dma-bandwidth "Why Large Contiguous
DMA Payloads Are Required"]) shrinks as the run grows and is gone at the documented saturating size, so
the efficiency curve has the documented regimes: overhead-bound below 256 B (the cost per descriptor is
nearly constant), near peak from 2 KiB, saturated from 4 KiB ([sources: dma-bandwidth "Bandwidth vs. Payload
Size"]). The fixed trigger-to-start latency (~1,300 ns, "cross-engine") occupies no engine: the documents
name no engine that pays it, and DMAs on other queues overlap it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nkidev.emulator.ops import OPS
from nkidev.emulator.trace import Access, Instruction, Trace
from nkidev.hardware import Target

# queue name -> (queue_type, queue index): our own naming in neuron-explorer's style
QUEUES = {
    "qSyncIO0": ("input", 0),  # HBM -> SBUF (static, compiler-built descriptors)
    "qSyncIO1": ("output", 1),  # SBUF -> HBM
    "qSyncData0": ("data", 2),  # SBUF -> SBUF
    "qSyncData1": ("data", 6),  # HBM -> HBM
    "qSyncHwdge0": ("hardware_dynamic", 3),  # dge_mode=hwdge
    "qGpSimdDynamic": ("software_dynamic", 4),  # dge_mode=swdge or run-time addresses
    "qSyncCC0": ("data", 5),  # sendrecv between cores
    # compiler-inserted SBUF <-> HBM spill traffic (costmodel/spills.py): the queue names of the Fused Mamba
    # tutorial's mamba_v2 profile at seq_len 8192 [sources: mamba-tutorial "Increasing input seq_len size"]; the
    # documents give no queue type for them
    "qSyncSpillReload0": ("unknown", 7),
    "qVectorSpillReload0": ("unknown", 8),
}


@dataclass(slots=True)
class Transfer:
    """What the scheduler needs to time one DMA, plus the labels the profile shows."""

    queue: str
    issue_engine: str  # engine whose instruction stream issues it: "sync" or "gpsimd" (software DGE)
    issue_ns: float
    transfer_bytes: int
    read_bytes: int
    write_bytes: int
    descriptor_bytes: int
    engines: tuple[int, ...]
    packet_bytes: tuple[int, ...]
    packet_ns: tuple[float, ...]
    source: str
    dest: str
    variable: str
    op: str
    read_partitions: tuple[int, int] | None  # (first, count) on the SBUF side, None for HBM
    write_partitions: tuple[int, int] | None
    is_transpose: bool
    hbm_read: int
    hbm_write: int
    # (first engine, end engine, packet ns) when every packet takes the same time on a range of engines: the
    # scheduler then starts them together when those engines are in step
    lockstep: tuple[int, int, float] | None
    form: object = None  # the Form planned, for transfers no trace instruction issues (spills)


def _label(acc: Access, trace: Trace) -> str:
    if acc.buffer != "hbm":
        return "[[SB]]" if acc.buffer == "sbuf" else "[[PSUM]]"
    rec = trace.tensors.get(acc.tensor)
    return label(acc.buffer, rec.kind if rec is not None else "internal")


def label(buffer: str, kind: str) -> str:
    """A transfer's source/dest label: the memory, or for HBM the role of the tensor."""
    if buffer != "hbm":
        return "[[SB]]" if buffer == "sbuf" else "[[PSUM]]"
    return {"input": "[[INPUT]]", "output": "[OUTPUT]"}.get(kind, "[[HBM]]")


def _queue(ins, src, dst, hw: Target) -> str:
    mode = ins.attrs.get("dge_mode", "unknown")
    if OPS[ins.opcode].rendezvous:  # a core-to-core transfer (sendrecv)
        return "qSyncCC0"
    if mode == "swdge":
        return "qGpSimdDynamic"
    if mode == "hwdge" and hw.features.hwdge:
        return "qSyncHwdge0"
    if src.buffer == "hbm" and dst.buffer != "hbm":
        return "qSyncIO0"
    if src.buffer != "hbm" and dst.buffer == "hbm":
        return "qSyncIO1"
    return "qSyncData1" if dst.buffer == "hbm" else "qSyncData0"


def descriptor_ns(desc_bytes: int, hw: Target) -> float:
    """DMA-engine time a descriptor of `desc_bytes` contiguous bytes costs on top of moving its bytes."""
    d = hw.dma
    return d.descriptor_overhead_ns * max(0.0, 1.0 - desc_bytes / d.saturating_bytes_per_partition)


def descriptor_efficiency(desc_bytes: int, hw: Target) -> float:
    """Share of the saturated rate (a DMA engine's HBM rate, bytes_per_ns_per_engine x hbm_efficiency) a stream of
    `desc_bytes`-byte descriptors reaches, as packet_ns computes it (1.0 = saturated)."""
    data_ns = desc_bytes / (hw.dma.bytes_per_ns_per_engine * hw.dma.hbm_efficiency)
    return data_ns / (data_ns + descriptor_ns(desc_bytes, hw))


def _engines(onchip, nbytes: int, hw: Target) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """DMA engines serving the transfer and the bytes each moves."""
    d = hw.dma
    if onchip is None:  # HBM -> HBM: spread evenly
        n = d.engines
        share = [nbytes // n + (1 if e < nbytes % n else 0) for e in range(n)]
        return tuple(e for e in range(n) if share[e]), tuple(s for s in share if s)
    p0, p1 = onchip.partition_start, onchip.partition_start + max(1, onchip.partitions)
    engines, shares = [], []
    ppe = d.partitions_per_engine
    for e in range(p0 // ppe, min(d.engines, (p1 - 1) // ppe + 1)):
        parts = min(p1, (e + 1) * ppe) - max(p0, e * ppe)
        engines.append(e)
        shares.append(parts)
    total = sum(shares)
    bytes_e = [nbytes * s // total for s in shares]
    bytes_e[-1] += nbytes - sum(bytes_e)
    return tuple(engines), tuple(bytes_e)


def plan_transfer(ins: Instruction, trace: Trace, hw: Target) -> Transfer:
    """Queue, engines, descriptor size and packet times of one DMA instruction."""
    dst = ins.writes[0]
    src = (ins.reads or [dst])[0]
    hbm_side = src if src.buffer == "hbm" else dst
    rec = trace.tensors.get(hbm_side.tensor)
    return plan(ins, _label(src, trace), _label(dst, trace), rec.name if rec is not None else "", hw)


def plan_key(ins, source: str, dest: str, variable: str) -> tuple:
    """Everything `plan` reads: instructions with equal keys have equal transfers (a loop over tiles at
    different offsets of a tensor has one)."""
    layouts = tuple((a.buffer, a.nbytes, a.contiguous_bytes, a.partition_start, a.partitions) for a in (*ins.reads, ins.writes[0]))
    return (
        ins.opcode,
        ins.attrs.get("dge_mode", "unknown"),
        bool(ins.attrs.get("transpose")),
        len(ins.reads),
        layouts,
        source,
        dest,
        variable,
    )


def plan(ins, source: str, dest: str, variable: str, hw: Target, queue: str | None = None) -> Transfer:
    """The transfer of a DMA instruction (a row or a trace Form: its layouts are all this reads) whose HBM
    side is the tensor `variable`, labelled `source` -> `dest`, on `queue` (default: the one its kind and DGE
    mode use)."""
    d = hw.dma
    dst = ins.writes[0]
    srcs = ins.reads or (dst,)
    src = srcs[0]
    read_bytes = sum(a.nbytes for a in srcs)
    nbytes = max(read_bytes, dst.nbytes)
    desc = max(1, min(min(a.contiguous_bytes for a in srcs), dst.contiguous_bytes))
    onchip = dst if dst.buffer != "hbm" else (src if src.buffer != "hbm" else None)
    engines, shares = _engines(onchip, nbytes, hw)
    transpose = bool(ins.attrs.get("transpose"))
    touches_hbm = dst.buffer == "hbm" or any(a.buffer == "hbm" for a in srcs)
    eff = d.hbm_efficiency if touches_hbm else 1.0
    if transpose:
        eff *= d.transpose_efficiency if src.buffer == "hbm" else d.transpose_onchip_efficiency
    rate = d.bytes_per_ns_per_engine * eff
    per_descriptor = descriptor_ns(desc, hw)
    packet_ns = tuple(b / rate + math.ceil(b / desc) * per_descriptor for b in shares)
    queue = queue or _queue(ins, src, dst, hw)
    issue_engine = "gpsimd" if queue == "qGpSimdDynamic" else "vector" if queue == "qVectorSpillReload0" else "sync"
    issue_ns = {"qGpSimdDynamic": d.swdge_cost_ns, "qSyncHwdge0": d.hwdge_cost_ns}.get(queue, d.trigger_ns)
    op = "read" if src.buffer == "hbm" and dst.buffer != "hbm" else "write" if dst.buffer == "hbm" else "copy"
    return Transfer(
        queue=queue,
        issue_engine=issue_engine,
        issue_ns=issue_ns,
        transfer_bytes=nbytes,
        read_bytes=read_bytes,
        write_bytes=dst.nbytes,
        descriptor_bytes=desc,
        engines=engines,
        packet_bytes=shares,
        packet_ns=packet_ns,
        source=source,
        dest=dest,
        variable=variable,
        op=op,
        read_partitions=None if src.buffer == "hbm" else (src.partition_start, src.partitions),
        write_partitions=None if dst.buffer == "hbm" else (dst.partition_start, dst.partitions),
        is_transpose=transpose,
        hbm_read=sum(a.nbytes for a in srcs if a.buffer == "hbm"),
        hbm_write=dst.nbytes if dst.buffer == "hbm" else 0,
        lockstep=_lockstep(engines, packet_ns),
    )


def _lockstep(engines: tuple[int, ...], packet_ns: tuple[float, ...]) -> tuple[int, int, float] | None:
    if not engines or engines != tuple(range(engines[0], engines[0] + len(engines))) or any(d != packet_ns[0] for d in packet_ns):
        return None
    return engines[0], engines[0] + len(engines), packet_ns[0]
