"""The in-process library API is thread-safe: concurrent validations keep their own verdicts, prints and
tripwires, leave sys.stdout alone, and one thread's emulate(target=...) does not move another's kernels."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from nkidev.validate.api import validate, validate_task

ROOT = Path(__file__).parents[2]
PRINTING = f"{Path(__file__).parent / 'tasks' / 'printing.py'}::print_kernel"
HONEST = f"{ROOT / 'tests' / 'cheats' / 'honest_add.py'}"
CHEAT = f"{ROOT / 'tests' / 'cheats' / 'cheat_calls_reference.py'}"


def summary(result) -> tuple:
    d = result.to_dict()
    return d["passed"], tuple(f["verdict"] for f in d["cheats"]), tuple(n for n in d["notes"] if "printed" in n)


def test_concurrent_validations_match_sequential_ones():
    specs = [PRINTING, HONEST, CHEAT] * 3
    sequential = {s: summary(validate_task(s, seeds=1)) for s in set(specs)}
    stdout = sys.stdout
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda s: (s, summary(validate_task(s, seeds=1))), specs))
    assert sys.stdout is stdout
    for spec, got in results:
        assert got == sequential[spec], spec
    assert set(sequential[CHEAT][1]) == {"cheat_calls_reference"} and sequential[HONEST][0] is True
    assert "tile [[0. 1. 2. 3.]]" in sequential[PRINTING][2][0]


def test_a_tripwire_in_one_thread_does_not_trip_another():
    import nkidev.validate.guard as guard
    from nkidev.taskfile import load_task

    task = load_task(CHEAT).module
    calls = []
    ref = task.reference
    x = task.cases()[0]
    armed, release = threading.Event(), threading.Event()

    def hold_the_tripwire():
        with guard.tripwire([ref]):
            armed.set()
            release.wait(10)

    t = threading.Thread(target=hold_the_tripwire)
    t.start()
    armed.wait(10)
    try:
        calls.append(ref(*x))  # this thread is not running a kernel: the real reference runs
    finally:
        release.set()
        t.join()
    assert isinstance(calls[0], np.ndarray)
    assert ref.__code__.co_name == "reference" and "tripped" not in ref.__code__.co_names


def test_emulate_target_is_per_thread():
    import nkidev
    from nkidev.emulator import context

    seen = {}
    inside, done = threading.Event(), threading.Event()

    def on_trn3():
        with nkidev.emulate(target="trn3"):
            context.set_current(None)
            seen["trn3 thread"] = context.current().target.name
            inside.set()
            done.wait(10)

    t = threading.Thread(target=on_trn3)
    t.start()
    inside.wait(10)
    context.set_current(None)
    seen["other thread"] = context.current().target.name
    done.set()
    t.join()
    assert seen == {"trn3 thread": "trn3", "other thread": "trn2"}


def test_validate_with_shared_functions_from_two_threads():
    from nkidev.taskfile import load_task

    task = load_task(HONEST).module

    def one(_):
        r = validate(task.add_kernel, task.reference, task.cases, seeds=1)
        return r.passed

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(one, range(8)))
