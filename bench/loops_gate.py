"""Per-candidate cost of the loops' gate: one candidate judged in an isolated child (validation with every
anti-cheat check on all cases, a cost-model profile of one case, the analysis) against the same work done
in-process, so the difference is the isolation's own overhead (child start-up, imports, shipping the files).

    python bench/loops_gate.py [N]         # N candidates each way (default 5); prints min / median seconds
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from nkidev.loops.evaluate import evaluate_candidate, evaluate_item

TASK = Path(__file__).resolve().parents[1] / "examples" / "tiled_add.py"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(n: int = 5) -> None:
    source = TASK.read_text()
    item = {"source": source, "task_text": source, "task_name": TASK.name, "kernel": "tiled_add", "analyze": True}
    evaluate_candidate(source, f"{TASK}::tiled_add", analyze=True)  # warm this process's imports and caches
    inproc = [timed(lambda: evaluate_candidate(source, f"{TASK}::tiled_add", analyze=True)) for _ in range(n)]
    evaluate_item(item)  # the first child is cold; later ones take a warm spare, as in a loop
    isolated = []
    for _ in range(n):
        isolated.append(timed(lambda: evaluate_item(item)))
        time.sleep(1.0)  # a proposer's think time: the next spare finishes its imports meanwhile
    overhead = [i - statistics.median(inproc) for i in isolated]
    for label, xs in (("in-process gate+profile+analysis", inproc), ("isolated (warm spare)", isolated), ("overhead", overhead)):
        print(f"{label:34} min {min(xs):6.2f} s   median {statistics.median(xs):6.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
