"""`validate --workers N`: cases split over N sandbox children give the result of one process, in case order;
the error reported is the one of the lowest failing case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nkidev import exitcodes, sandbox
from nkidev.cli import app
from nkidev.errors import NkiError
from nkidev.sandbox import Limits
from nkidev.validate.parallel import check_workers, validate_parallel

TASK = Path(__file__).parent / "tasks" / "shards.py"
LIMITS = Limits(timeout_s=180)


def line_of(marker: str) -> int:
    return next(i for i, t in enumerate(TASK.read_text().splitlines(), 1) if marker in t)


def test_workers_give_the_result_of_one_process():
    spec, options = f"{TASK}::copy_kernel", {"seeds": 1}
    one = sandbox.run("nkidev.validate.api:validate_task_data", {"spec": spec, **options}, LIMITS)
    events = []
    merged, outputs = validate_parallel(spec, options, LIMITS, 3, events.append)
    assert merged == one
    assert [c["index"] for c in merged["cases"]] == [0, 1, 2, 3, 4]
    assert [c["passed"] for c in merged["cases"]] == [True, True, False, True, True] and merged["passed"] is False
    assert any("case 3 ran" in note for note in merged["notes"])
    assert sorted(e["index"] for e in events if e["event"] == "case") == [0, 1, 2, 3, 4]
    assert [e["event"] for e in events].count("start") == 1 and len(outputs) == 3


def test_workers_report_the_error_of_the_lowest_failing_case():
    # worker 0 of 2 fails on case 4, worker 1 on case 3: one process would have stopped at case 3
    with pytest.raises(NkiError) as e:
        validate_parallel(f"{TASK}::raises_kernel", {"seeds": 0}, LIMITS, 2)
    assert e.value.name == "err_kernel_raised" and "case 3 is refused" in str(e.value)
    assert e.value.location == f"{TASK}:{line_of('marker: case 3')}"


def test_cli_workers_option_streams_and_merges():
    r = CliRunner().invoke(app, ["validate", f"{TASK}::copy_kernel", "--workers", "2", "--seeds", "0", "--json"])
    assert r.exit_code == exitcodes.FAILED, r.output
    result = json.loads(r.stdout)
    assert [c["index"] for c in result["cases"]] == [0, 1, 2, 3, 4] and "by_case" not in result


def test_bad_worker_counts_are_named_errors():
    for bad in (0, 65, True, "2"):
        with pytest.raises(NkiError) as e:
            check_workers(bad)
        assert e.value.name == "err_invalid_argument"


def test_a_bad_shard_is_a_named_error_before_any_case_runs():
    from nkidev.validate.api import validate_task_data

    for bad in ([2, 2], [-1, 2], [0], "0,2"):
        with pytest.raises(NkiError) as e:
            validate_task_data(f"{TASK}::raises_kernel", seeds=0, shard=bad)
        assert e.value.name == "err_invalid_argument"
