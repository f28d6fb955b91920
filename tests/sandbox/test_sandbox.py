"""nkidev.sandbox with real child processes: plain data back, named errors re-raised with their class, progress
streamed while the child runs, output captured, and every way a child can misbehave ending in a named error."""

from __future__ import annotations

import os
import time

import pytest

from nkidev import sandbox
from nkidev.errors import NkiError, NkiUsageError
from nkidev.sandbox import Limits

FUNCS = "tests.sandbox.funcs"


def run(name: str, kwargs: dict | None = None, limits: Limits | None = None, **options):
    return sandbox.run(f"{FUNCS}:{name}", kwargs or {}, limits or Limits(60), preload=(), **options)


def test_plain_data_comes_back_and_output_is_captured_per_run(capfd):
    job = sandbox.start(f"{FUNCS}:add", {"a": 2, "b": 3}, Limits(60), preload=())
    assert job.result() == {"sum": 5}
    assert job.stdout.strip() == "printed by the child" and job.stderr.strip() == "to stderr"
    out, err = capfd.readouterr()
    assert "printed by the child" not in out + err  # the caller's streams are untouched


def test_progress_events_arrive_in_order_on_the_callers_thread():
    import threading

    seen, threads = [], set()
    result = run("counts", {"n": 4}, on_event=lambda e: (seen.append(e["i"]), threads.add(threading.get_ident())))
    assert result == [0, 1, 2, 3] and seen == [0, 1, 2, 3] and threads == {threading.get_ident()}


def test_named_errors_keep_their_class_name_and_line():
    with pytest.raises(NkiUsageError) as e:
        run("named_error")
    assert e.value.name == "err_bad_task_file" and e.value.location == "/x.py:3"


def test_an_unnamed_exception_in_the_library_call_is_internal():
    with pytest.raises(NkiError) as e:
        run("raises_bug")
    assert e.value.name == "err_internal" and "KeyError" in e.value.message


def test_os_exit_zero_is_a_named_failure_not_a_pass():
    with pytest.raises(NkiError) as e:
        run("exits_quietly")
    assert e.value.name == "err_child_exited" and "exited with code 0" in e.value.message


def test_timeout_kills_the_child_and_its_process_group(tmp_path, monkeypatch):
    pidfile = tmp_path / "grandchild.pid"
    monkeypatch.setenv("NKIDEV_TEST_PIDFILE", str(pidfile))
    start = time.monotonic()
    with pytest.raises(NkiError) as e:
        run("sleeps", {"seconds": 3600}, Limits(timeout_s=1.5))
    assert e.value.name == "err_timeout" and "while sleeping" in e.value.message
    assert time.monotonic() - start < 15
    grandchild = int(pidfile.read_text())
    for _ in range(50):  # the kill reaches the grandchild too (same process group)
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild {grandchild} survived the timeout")


def test_a_memory_hog_stops_at_the_limit():
    with pytest.raises(NkiError) as e:
        run("hogs_memory", {"megabytes": 4096}, Limits(60, 1 << 30))
    assert e.value.name == "err_memory_limit"


def test_threads_the_call_leaves_do_not_keep_the_child_alive():
    start = time.monotonic()
    assert run("leaves_thread") == "done"
    assert time.monotonic() - start < 10


def test_warm_spares_run_one_job_each():
    first = sandbox.start(f"{FUNCS}:add", {"a": 1, "b": 1}, Limits(60), preload=(), warm=True)
    assert first.result() == {"sum": 2}
    second = sandbox.start(f"{FUNCS}:add", {"a": 1, "b": 2}, Limits(60), preload=(), warm=True)
    assert second.worker.process.pid != first.worker.process.pid and second.result() == {"sum": 3}
    sandbox.pool.shutdown()


@pytest.mark.parametrize("limits", [dict(timeout_s=0), dict(timeout_s=float("nan")), dict(memory_bytes=1000)])
def test_bad_limits_are_named(limits):
    with pytest.raises(NkiUsageError) as e:
        Limits(**limits)
    assert e.value.name == "err_invalid_argument"


def test_memory_sizes_parse():
    assert sandbox.parse_memory("8G") == 8 << 30 and sandbox.parse_memory("512m") == 512 << 20 and sandbox.parse_memory("1.5GiB") == 3 << 29
    with pytest.raises(NkiUsageError):
        sandbox.parse_memory("lots")
