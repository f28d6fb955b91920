"""How the emulator fills never-written memory (NaN for floats, 4 for integers), and the harness's
alternative fill that exposes outputs depending on it, whatever their dtype."""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nkidev.case import Case
from nkidev.taskfile import load_task
from nkidev.validate import fill, runner, validate, validate_task

KERNEL = load_task(Path(__file__).parent / "tasks" / "partial.py").kernel("half_copy")


@pytest.mark.parametrize(
    "dtype,default,alternative",
    [
        (np.float32, "nan", fill.FLOAT_FILL),
        (ml_dtypes.bfloat16, "nan", fill.FLOAT_FILL),
        (np.int32, 4, fill.INT_FILL),
    ],
)
def test_unwritten_rows_hold_the_fill(dtype, default, alternative):
    x = np.ones((128, 8), dtype)
    plain = runner.run(KERNEL, Case(x), None).outputs[0].astype(np.float64)
    assert np.all(plain[:64] == 1)
    assert np.all(np.isnan(plain[64:])) if default == "nan" else np.all(plain[64:] == default)
    assert fill.supported()
    other = runner.run(KERNEL, Case(x), None, alternative_fill=True).outputs[0].astype(np.float64)
    assert np.all(other[:64] == 1) and np.all(other[64:] == alternative)


def test_integer_output_depending_on_unwritten_memory_is_caught():
    x = np.arange(128 * 8, dtype=np.int32).reshape(128, 8)
    result = validate(KERNEL, lambda a: a, [(x,)], seeds=0)
    # half of the output written: a likely bug (fail_output_not_written), not the cheat (issue 12.6)
    found = [f for c in result.cases for f in c.findings if f.verdict == "fail_output_not_written"]
    assert found and found[0].message.startswith("512 of 1024 elements of output 0 depend on memory")
    assert "(first at index (64, 0))" in found[0].message


def test_without_an_alternative_fill_nan_outputs_and_reruns_still_name_the_cheat(monkeypatch):
    monkeypatch.setattr(fill, "_PROBED", [False])  # as if the emulator offered no way to change the fill
    cheats = Path(__file__).parents[1] / "cheats"
    verdicts = lambda name: {f.verdict for f in validate_task(str(cheats / name), seeds=0).cheats}  # noqa: E731
    unwritten = {f.verdict for c in validate_task(str(cheats / "cheat_skip_tail.py"), seeds=0).cases for f in c.findings}
    assert "fail_output_not_written" in unwritten and verdicts("cheat_skip_tail.py") == set()  # a likely bug (issue 12.6)
    assert verdicts("cheat_never_written.py") == {"cheat_output_not_written"}
    assert verdicts("cheat_random.py") == {"cheat_nondeterministic"}
