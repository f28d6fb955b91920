"""Per-call overhead of running validate in the sandbox's child process, against the same call in-process.

    python bench/sandbox_overhead.py [REPEATS]

Validates the bundled softmax example (1 seed) REPEATS times (default 5) three ways: in this process (imports
already warm), in a freshly spawned child, and in a warm spare child started beforehand (what the CLI and the
MCP server use). Prints min and median wall time of each.
"""

from __future__ import annotations

import statistics
import sys
import time

from nkidev import sandbox
from nkidev.examples import example
from nkidev.validate.api import validate_task_data

FUNCTION = "nkidev.validate.api:validate_task_data"


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main(repeats: int = 5) -> None:
    kwargs = {"spec": f"{example('softmax.py')}::softmax_kernel", "seeds": 1}
    validate_task_data(**kwargs)  # warm this process's imports first: the in-process time is the floor
    runs: dict[str, list[float]] = {"in-process": [], "child, cold spawn": [], "child, warm spare": []}
    for _ in range(repeats):
        runs["in-process"].append(timed(lambda: validate_task_data(**kwargs)))
        runs["child, cold spawn"].append(timed(lambda: sandbox.run(FUNCTION, kwargs)))
        sandbox.prestart()
        time.sleep(3)  # let the spare finish its imports, as it does while the CLI parses options
        runs["child, warm spare"].append(timed(lambda: sandbox.run(FUNCTION, kwargs, warm=True)))
    for name, times in runs.items():
        print(f"{name:20s} min {min(times) * 1e3:7.1f} ms   median {statistics.median(times) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
