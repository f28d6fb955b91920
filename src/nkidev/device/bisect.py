"""When the device and the emulator disagree on a kernel's outputs: the first instruction whose output differs.

What an engineer does by hand, mechanised (`validate --hardware` runs it on a mismatch):
1. Map the program. The task file's kernel is run in the emulator as a *recording variant*
   (probes.recording_variant): every statement that writes a destination reports when it finishes, so each
   execution of it (a *probe point*) gets the trace instructions it issued, in program order.
2. Order the search by data flow. From the trace's operand regions, each point's ancestors are the points
   whose writes reach its reads; the device's differing output elements are reached from some of them (the
   candidates; without the device's outputs, every output writer counts). A point that matches on
   the device says nothing about points it does not depend on, so the search is git bisect's over a DAG
   (pick the probe that splits the remaining candidates most evenly into its ancestors and the rest), not a
   binary search over a list. Past MAX_DAG_POINTS points it falls back to program order.
3. Probe. A *probe variant* (probes.probe_variant) returns one point's destination tile as an extra output;
   it runs on the device and in the emulator, and the two tiles are compared with the tolerance of the tile's
   dtype (at least the task's TOLERANCE). Both tiles are written as .npy under the run's output directory
   with the variant's source, so the engineer can rerun it. At most ceil(log2(n + 1)) + SLACK device runs.

The answer is a differing point all of whose candidate ancestors matched: its statement, execution number,
instructions (the last one wrote the tile), the two values' summary and the dump paths. Plain data out.
"""

from __future__ import annotations

import io
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nkidev import atomic
from nkidev.case import Case
from nkidev.device import probes, recorder
from nkidev.emulator.context import EmulatorOptions
from nkidev.emulator.jit import run
from nkidev.emulator.ops import OPS
from nkidev.taskfile import load_task
from nkidev.validate.tolerance import DEFAULTS, EXACT

MAX_DAG_POINTS = 2048  # above this the ancestor bitsets cost more than they save: search in program order
SLACK = 3  # device runs allowed beyond log2(points): a DAG splits less evenly than a list
MASK_MAGNITUDE = 1e20  # values this large are masks (`on_false_value=-1e30`), not data: they do not scale atol


@dataclass
class Point:
    index: int  # program order
    site: probes.Site
    hit: int  # execution number of the statement (0 = first)
    instructions: list  # trace Instructions it issued, in order (the last one wrote the tile)
    shape: tuple
    dtype: str


def _load(path: Path, original_dir: Path):
    """load_task on an instrumented copy, with the original's directory importable (sibling modules)."""
    sys.path.insert(0, str(original_dir))
    try:
        return load_task(path)
    finally:
        sys.path.remove(str(original_dir))


def _emulate(kernel, case: Case, target) -> tuple[list, object, recorder.Records]:
    with recorder.recording() as recs:
        result = run(kernel, case.args, case.kwargs, options=EmulatorOptions(target=target, compute=True))
    outputs = result.outputs if isinstance(result.outputs, tuple | list) else [result.outputs]
    return list(outputs), result.trace, recs


def points_of(trace, records: list, sites: list[probes.Site], variant: Path) -> list[Point]:
    """Probe points in program order: each recorded statement execution that issued instructions."""
    by_id = {s.id: s for s in sites}
    rows = trace.instructions
    hits: dict[int, int] = {}
    found, start = [], 0
    for rec in records:
        site = by_id[rec.site]
        hit = hits[rec.site] = hits.get(rec.site, -1) + 1
        issued = []
        for i in range(start, rec.issued):
            path, _, line = (rows[i].location or "").rpartition(":")
            # by file name, not path: the emulator caches a location per code object, and code objects compare
            # equal across files, so an identical earlier copy of the task file may be the one named
            if Path(path).name == variant.name and site.line <= int(line or 0) <= site.end_line:
                issued.append(rows[i])
        start = rec.issued
        if issued:
            found.append(Point(len(found), site, hit, issued, rec.shape, rec.dtype))
    return found


def _overlaps(a, b) -> bool:
    if a[2] >= b[3] or b[2] >= a[3]:  # byte ranges
        return False
    return a[0] == "hbm" or not (a[1][0] >= b[1][1] or b[1][0] >= a[1][1])  # on-chip: partition ranges too


def _covers(new, old) -> bool:
    return new[2] <= old[2] and old[3] <= new[3] and (new[0] == "hbm" or (new[1][0] <= old[1][0] and old[1][1] <= new[1][1]))


def _region(access):
    return (access.buffer, (access.partition_start, access.partition_start + access.partitions), access.byte_start, access.byte_stop)


def ancestry(trace, points: list[Point], differing: dict[int, np.ndarray] | None = None) -> tuple[list[int], int]:
    """Per point, a bitset of the points it depends on (through every instruction in between); and the bitset
    of points the kernel's outputs depend on (themselves included). `differing` (output storage id -> sorted
    byte offsets of the elements that differ) narrows the latter to the writers of those elements."""
    owner = {ins.id: p.index for p in points for ins in p.instructions}
    anc = [0] * len(points)
    writers: dict[int, list] = {}  # tensor id -> [(region, bits of the writer and its ancestors)]
    for ins in trace.instructions:
        bits = 0
        for r in ins.reads:
            region = _region(r)
            for w_region, w_bits in writers.get(r.tensor, ()):
                if _overlaps(region, w_region):
                    bits |= w_bits
        accumulates = OPS[ins.opcode].kind == "matmul"  # adds to the PSUM values already there
        for w in ins.writes if accumulates else ():
            region = _region(w)
            bits |= next((b for reg, b in writers.get(w.tensor, ()) if _overlaps(region, reg)), 0)
        p = owner.get(ins.id)
        if p is not None:
            anc[p] |= bits & ~(1 << p)
            bits |= 1 << p
        for w in ins.writes:
            region = _region(w)
            kept = [(reg, b) for reg, b in writers.get(w.tensor, ()) if accumulates or not _covers(region, reg)]
            writers[w.tensor] = [*kept, (region, bits)]
    final = 0
    for tid in differing if differing else {tid for tid, rec in trace.tensors.items() if rec.kind == "output"}:
        offsets = differing[tid] if differing else None
        for region, b in writers.get(tid, ()):
            if offsets is None or np.searchsorted(offsets, region[2]) < np.searchsorted(offsets, region[3]):
                final |= b
    return anc, final


def differing_bytes(device: list, emulated: list, returned: list | None, trace, task_tol: dict) -> dict[int, np.ndarray] | None:
    """Output storage id -> byte offsets of the elements where the device's outputs differ from the emulator's
    (None when the outputs cannot be matched to storages: then every output writer counts)."""
    if not returned or len(returned) != len(emulated) or len(device) != len(emulated):
        return None
    found = {}
    for tid, d, e in zip(returned, device, emulated):
        if tid is None or tid not in trace.tensors:
            return None
        d, e = np.asarray(d), np.asarray(e)
        if d.shape != e.shape:
            return None
        mask = _beyond(d.astype(np.float64), e.astype(np.float64), *tolerance_for(str(e.dtype), task_tol, e.astype(np.float64)))
        if mask.any():
            found[tid] = np.flatnonzero(mask) * e.dtype.itemsize
    return found or None


def choose(candidates: int, anc: list[int]) -> int:
    """The candidate that splits the candidates most evenly into (it and its ancestors) and the rest."""
    total = candidates.bit_count()
    best, best_score = -1, -1
    rest = candidates
    while rest:
        low = rest & -rest
        m = low.bit_length() - 1
        rest ^= low
        inside = ((anc[m] | low) & candidates).bit_count()
        score = min(inside, total - inside)
        if score > best_score:
            best, best_score = m, score
    return best


def tolerance_for(dtype: str, task_tol: dict, values: np.ndarray) -> tuple[float, float]:
    """The tile dtype's default tolerance (atol scaled by the values' RMS, as validate does), at least the task's."""
    base = DEFAULTS.get(dtype, EXACT if dtype.startswith(("int", "uint", "bool")) else DEFAULTS["float32"])
    data = values[np.isfinite(values) & (np.abs(values) < MASK_MAGNITUDE)]
    rms = float(np.sqrt(np.mean(data**2))) if data.size else 1.0
    return max(base[0] * max(1.0, rms), task_tol.get("atol", 0.0)), max(base[1], task_tol.get("rtol", 0.0))


def _beyond(d: np.ndarray, e: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Elements outside atol + rtol * |e| (NaN matches NaN)."""
    return ~((np.abs(d - e) <= atol + rtol * np.abs(e)) | (np.isnan(d) & np.isnan(e)))


def compare(device, emulated, dtype: str, task_tol: dict) -> dict:
    """Whether two tiles differ beyond tolerance, with max abs/rel error and the first differing index."""
    d = np.asarray(device).astype(np.float64)
    e = np.asarray(emulated).astype(np.float64)
    if d.shape != e.shape:
        return {"differs": True, "reason": f"shape {list(d.shape)} on the device, {list(e.shape)} in the emulator"}
    atol, rtol = tolerance_for(dtype, task_tol, e)
    bad = _beyond(d, e, atol, rtol)
    diff = np.where(np.isnan(d) & np.isnan(e), 0.0, np.abs(d - e))
    nonzero = np.abs(e) > 0
    out = {
        "differs": bool(bad.any()),
        "max_abs_error": float(np.max(diff)) if diff.size else 0.0,
        # relative to the emulator's value, where it is not 0 (None: every emulator value is 0)
        "max_rel_error": float(np.max(diff[nonzero] / np.abs(e[nonzero]))) if nonzero.any() else None,
        "differing_elements": int(bad.sum()),
        "elements": int(bad.size),
        "atol": atol,
        "rtol": rtol,
    }
    if out["differs"]:
        first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
        out.update(first_differing_index=list(first), device_value=float(d[first]), emulator_value=float(e[first]))
    return out


def _npy(values) -> bytes:
    arr = np.asarray(values)
    if arr.dtype.type.__module__.startswith("ml_dtypes"):  # NumPy's format cannot name bfloat16/fp8: widen
        arr = arr.astype(np.float32)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _describe(p: Point, original: Path, source_lines: list[str]) -> dict:
    last = p.instructions[-1]
    return {
        "point": p.index,
        "location": f"{original}:{p.site.line}",
        "line": p.site.line,
        "function": p.site.function,
        "source": source_lines[p.site.line - 1].strip() if p.site.line <= len(source_lines) else "",
        "execution": p.hit,
        "destination": p.site.dst,
        "shape": list(p.shape),
        "dtype": p.dtype,
        "instruction": {"id": last.id, "opcode": last.opcode, "engine": last.engine},
        "instructions": [{"id": i.id, "opcode": i.opcode, "engine": i.engine} for i in p.instructions],
    }


class Search:
    """The state of one bisect: candidates, the earliest known differing point, the probes made."""

    def __init__(self, points: list[Point], anc: list[int] | None, final: int):
        self.points = points
        self.anc = anc  # None: program order (every earlier point is an ancestor)
        self.candidates = final if anc is not None else (1 << len(points)) - 1
        self.lo, self.hi = 0, len(points)  # program order: the answer is in [lo, hi); hi = the bad point or n
        self.bad: int | None = None

    def remaining(self) -> int:
        return self.candidates.bit_count() if self.anc is not None else self.hi - self.lo

    def done(self) -> bool:
        if self.anc is None:
            return self.lo >= self.hi
        if self.bad is None:
            return self.candidates == 0
        return self.candidates == 1 << self.bad

    def next(self) -> int:
        if self.anc is None:
            return (self.lo + self.hi) // 2
        pool = self.candidates & ~(1 << self.bad) if self.bad is not None else self.candidates
        return choose(pool, self.anc) if pool.bit_count() > 1 else pool.bit_length() - 1

    def learn(self, m: int, differs: bool) -> None:
        if differs:
            self.bad = m
        if self.anc is None:  # a binary search: points before the first difference match, the rest differ
            self.hi, self.lo = (m, self.lo) if differs else (self.hi, m + 1)
            return
        below = self.anc[m] | 1 << m
        self.candidates = self.candidates & below if differs else self.candidates & ~below


def bisect_case(
    task_path: Path,
    kernel_name: str,
    case: Case,
    target,
    task_tol: dict,
    device: Callable[[Path], list],
    out_dir: Path,
    emit: Callable[[dict], None],
    max_runs: int | None = None,
    device_outputs: list | None = None,
) -> dict:
    """Find the first probe point whose tile differs between `device(variant_path) -> outputs` and the emulator.
    `device_outputs` (the device's outputs of the uninstrumented kernel) narrows the search to the instructions
    that the differing output elements depend on."""
    source = task_path.read_text()
    lines = source.splitlines()
    try:
        recording, sites = probes.recording_variant(source, kernel_name, str(task_path))
    except probes.NotProbeable as e:
        return {"status": "skipped", "reason": str(e)}
    with tempfile.TemporaryDirectory(prefix="nkidev-bisect-") as tmp:
        variant = Path(tmp) / task_path.name
        variant.write_text(recording)
        kernel = _load(variant, task_path.parent).kernel(kernel_name)
        emulated, trace, records = _emulate(kernel, case, target)
        points = points_of(trace, records, sites, variant)
    if not points:
        return {"status": "skipped", "reason": "no statement of the task file issued an instruction that can be probed"}
    if len(points) <= MAX_DAG_POINTS:
        differing = differing_bytes(device_outputs, emulated, records.returned, trace, task_tol) if device_outputs else None
        anc, final = ancestry(trace, points, differing)
        search, mode = Search(points, anc, final), "dependencies"
    else:
        search, mode = Search(points, None, 0), "program order"
    budget = max_runs if max_runs is not None else math.ceil(math.log2(search.remaining() + 1)) + SLACK
    out_dir.mkdir(parents=True, exist_ok=True)
    probes_made: list[dict] = []
    summary = {"mode": mode, "probe_points": len(points), "candidates": search.remaining(), "max_runs": budget, "out_dir": str(out_dir)}
    while not search.done() and len(probes_made) < budget:
        m = search.next()
        p = points[m]
        emit({"event": "stage", "stage": f"bisect probe {len(probes_made) + 1}/{budget}: line {p.site.line} (execution {p.hit})"})
        row = _probe(task_path, kernel_name, case, target, task_tol, device, out_dir, p, len(probes_made), lines)
        probes_made.append(row)
        search.learn(m, row["differs"])
        verdict = "DIFFERS" if row["differs"] else "matches"
        emit({"event": "case", "line": f"  bisect: line {p.site.line} ({row['instruction']['opcode']}, execution {p.hit}) {verdict}"})
    summary.update(device_runs=len(probes_made), probes=probes_made, remaining_candidates=search.remaining())
    calm = [r["point"] for r in probes_made if r.get("outputs_differ") is False]
    if calm:
        summary["note"] = (
            f"with the probe of point(s) {calm} the device's outputs matched the emulator's: instrumenting the kernel changed "
            "what the device computes (a race between engines, or a read of uninitialized memory?), so those probes prove little"
        )
    found = next((r for r in reversed(probes_made) if r["differs"] and r["point"] == search.bad), None)
    if search.done() and found is not None:
        return {"status": "found", "first_difference": found, **summary}
    if search.done():
        reason = (
            "every probed intermediate the outputs depend on matches the emulator; "
            "the difference may come from an instruction no statement names"
        )
    else:
        reason = f"stopped after {budget} device runs with {search.remaining()} candidate points left (raise --max-probes)"
    return {"status": "inconclusive", "reason": reason, "first_difference": found, **summary}


def _probe(task_path, kernel_name, case, target, task_tol, device, out_dir: Path, p: Point, k: int, lines) -> dict:
    stem = f"probe{k:02d}_line{p.site.line}_exec{p.hit}"  # an importable module name
    variant = out_dir / f"{stem}.py"
    atomic.write_bytes(variant, probes.probe_variant(task_path.read_text(), kernel_name, p.site, p.hit, str(task_path)).encode())
    emulated, _, _ = _emulate(_load(variant, task_path.parent).kernel(kernel_name), case, target)
    on_device = device(variant)
    row = _describe(p, task_path, lines)
    if len(on_device) != len(emulated) or not emulated:
        row.update(differs=True, reason=f"the device returned {len(on_device)} output(s), the emulator {len(emulated)}")
        return row
    row.update(compare(on_device[-1], emulated[-1], p.dtype, task_tol))
    # the kernel's own outputs should still differ; if not, the probe changed what the device computes
    row["outputs_differ"] = any(compare(d, e, str(np.asarray(e).dtype), task_tol)["differs"] for d, e in zip(on_device[:-1], emulated[:-1]))
    for side, values in (("device", on_device[-1]), ("emulator", emulated[-1])):
        path = out_dir / f"{stem}.{side}.npy"
        atomic.write_bytes(path, _npy(values))
        row[f"{side}_file"] = str(path)
    row["probe_kernel"] = str(variant)
    return row
