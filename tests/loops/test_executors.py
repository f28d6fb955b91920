"""The executors' contract: order-preserving map, errors propagate, same results locally and on Ray."""

from __future__ import annotations

import importlib.util
import os

import pytest

from nkidev.errors import NkiUsageError
from nkidev.executors import get_executor


def square_with_pid(item: dict) -> dict:
    return {"n": item["n"], "square": item["n"] ** 2, "pid": os.getpid()}


def fail_on_three(n: int) -> int:
    if n == 3:
        raise ValueError("three")
    return n


def test_local_pool_keeps_item_order_and_runs_in_other_processes():
    items = [{"n": n} for n in range(7)]
    with get_executor("local", jobs=2) as executor:
        first = executor.map(square_with_pid, items)
        again = executor.map(square_with_pid, items[:3])  # the pool is reused
    assert [r["square"] for r in first] == [n * n for n in range(7)]
    assert [r["n"] for r in again] == [0, 1, 2]
    assert os.getpid() not in {r["pid"] for r in first}


def test_one_job_runs_in_process_with_the_same_results():
    with get_executor("local", jobs=1) as executor:
        results = executor.map(square_with_pid, [{"n": 2}, {"n": 5}])
    assert [(r["square"], r["pid"]) for r in results] == [(4, os.getpid()), (25, os.getpid())]


def sleep_then_return(item: dict) -> int:
    import time

    time.sleep(item["sleep"])
    return item["n"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_on_result_streams_each_result_as_it_finishes(jobs):
    items = [{"n": 0, "sleep": 1.5 if jobs == 2 else 0}, {"n": 1, "sleep": 0}]
    seen = []
    with get_executor("local", jobs=jobs) as executor:
        results = executor.map(sleep_then_return, items, on_result=lambda i, r: seen.append((i, r)))
    assert results == [0, 1]
    assert sorted(seen) == [(0, 0), (1, 1)]
    if jobs == 2:
        assert seen[0] == (1, 1)  # the quick item is reported before the slow one finishes


def test_an_exception_in_fn_propagates():
    with get_executor("local", jobs=2) as executor, pytest.raises(ValueError, match="three"):
        executor.map(fail_on_three, [1, 2, 3, 4])


@pytest.mark.parametrize(
    "kwargs, fragment",
    [({"name": "dask"}, "--executor 'dask'"), ({"name": "local", "jobs": 0}, "--jobs 0"), ({"name": "local", "ray_address": "auto"}, "")],
)
def test_bad_arguments_are_named_errors(kwargs, fragment):
    with pytest.raises(NkiUsageError) as info:
        get_executor(**kwargs)
    assert info.value.name == "err_invalid_argument" and fragment in info.value.message


def test_missing_ray_is_err_missing_extra_with_the_install_command():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['ray'] = None\n"  # what an environment without the extra sees: ImportError
        "from nkidev.executors import get_executor\n"
        "try:\n    get_executor('ray')\nexcept Exception as e:\n    print(e.name, '|', e.fix)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("err_missing_extra |") and "pip install 'nkidev[ray]'" in out


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install 'nkidev[ray]')")
def test_ray_local_cluster_equals_local_pool():
    items = [{"n": n} for n in range(5)]
    with get_executor("local", jobs=2) as local:
        expected = [{k: v for k, v in r.items() if k != "pid"} for r in local.map(square_with_pid, items)]
    with get_executor("ray", jobs=2) as ray_executor:
        got = [{k: v for k, v in r.items() if k != "pid"} for r in ray_executor.map(square_with_pid, items)]
    assert got == expected
