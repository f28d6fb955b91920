"""Fuzz the op layer at scale: N well- and badly-typed calls over every nki.isa op and nki.language function.

    python bench/fuzz_ops.py [N] [--seed S]

Prints calls / OK / named / internal and, for every internal crash kind, one example with its traceback.
Internal must be 0: every outcome of an op call is a value or a named nkidev error (tests/emulator/fuzzing.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the strategies live with the tests

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tests.emulator.fuzzing import Tally, call_once, calls, fresh_context, ops_under_test  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=12000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ops = ops_under_test()
    tally = Tally()

    @seed(args.seed)
    @settings(max_examples=args.n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        fresh_context()
        name, kwargs = data.draw(calls(ops))
        call_once(name, ops[name], kwargs, tally)

    start = time.perf_counter()
    run()
    print(f"{len(ops)} ops, {time.perf_counter() - start:.0f} s: {tally.summary()}")
    for kind, count in tally.kinds.most_common():
        kwargs, tb = tally.examples[kind]
        print(f"\n{count}x {kind}\n  args: { {k: repr(v)[:60] for k, v in kwargs.items()} }\n{tb}")
    return 1 if tally.internal else 0


if __name__ == "__main__":
    sys.exit(main())
