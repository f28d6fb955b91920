"""`nkidev migrate` on three constructs whose rewrite was silently wrong (issue 15): an ISA result of inputs of two
dtypes, a transposing load that casts, and nl.max / nl.min over axes of a plain tile that are not its last ones.
Each is rewritten so that old and new give the same bits, or is a manual step at its line. Our own fixture."""

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nkidev.migrate import migrate_file
from nkidev.taskfile import load_task

from .legacy_pair import run_both

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"
NAME = "legacy_silent_mixed.py"


@pytest.fixture
def migrated(tmp_path):
    path = tmp_path / NAME
    shutil.copy(FIXTURES / NAME, path)
    result = migrate_file(path, write=True)
    return result, path


def statuses(result):
    return {r["kernel"]: r["status"] for r in result.validation["kernels"]}


def test_a_result_of_a_bfloat16_and_a_float32_input_is_a_float32_tile_as_the_legacy_promotion(migrated):
    result, path = migrated
    text = path.read_text()
    assert "    z = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)\n" in text
    assert "    w = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.sbuf)\n" in text  # already the promoted dtype
    assert statuses(result)["promoted_result_kernel"] == "identical", result.validation
    before, after, a, b = run_both(result, path, "promoted_result_kernel")
    np.testing.assert_array_equal(after, before)
    # the sum is the float32 one: a bfloat16 tile (x's dtype, the rewrite before) would round it
    x, y = a.astype(np.float32), b
    np.testing.assert_array_equal(after, (x + y) + (y * x))


def test_a_result_of_inputs_whose_dtypes_are_not_known_here_is_a_manual_step_at_its_line(migrated):
    result, _ = migrated
    rows = [(m["line"], m["construct"]) for m in result.manual if m["line"] == 31]
    assert rows == [(31, "z = nisa.tensor_tensor(data1, data2, ...)")]
    step = next(m["step"] for m in result.manual if m["line"] == 31)
    assert "promoted dtype of x and y" in step and "allocated with x's dtype" in step  # and runs
    # the migrated kernel still runs (x's dtype: right for inputs of one dtype); ours differ, so the note is needed
    assert statuses(result)["unknown_dtypes_kernel"] == "mismatch", result.validation


def test_a_transposing_load_with_another_dtype_transposes_then_casts_like_the_legacy_load(migrated):
    result, path = migrated
    text = path.read_text()
    assert "    t = nl.copy(nl.load_transpose2d(b), dtype=nl.bfloat16)\n" in text
    assert [c["line"] for c in result.changes if "load_transpose2d" in c["construct"]] == [39]
    assert statuses(result)["transpose_cast_kernel"] == "identical", result.validation
    before, after, a, b = run_both(result, path, "transpose_cast_kernel")
    np.testing.assert_array_equal(after, before)
    assert after.dtype == ml_dtypes.bfloat16
    # the load left as it was (the rewrite before): the current DMA transpose does not cast
    kept = path.parent / "kept.py"
    kept.write_text(text.replace("nl.copy(nl.load_transpose2d(b), dtype=nl.bfloat16)", "nl.load_transpose2d(b, dtype=nl.bfloat16)"))
    task = load_task(kept)
    with pytest.raises(Exception) as raised:
        task.module.nki.simulate(task.kernels["transpose_cast_kernel"])(a, b)
    at = next(i for i, row in enumerate(kept.read_text().splitlines(), 1) if "load_transpose2d" in row)
    assert type(raised.value).__name__ == "KernelRuleError"
    assert str(raised.value).startswith("err_dtype_mismatch") and str(raised.value).endswith(f"(kept.py:{at})")
    np.testing.assert_array_equal(after.astype(np.float32), b.T.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_max_and_min_over_a_middle_axis_of_a_plain_tile_reduce_its_last_axis_of_an_access_pattern(migrated):
    result, path = migrated
    text = path.read_text()
    pattern = "[[cube.shape[1] * cube.shape[2], cube.shape[0]], [1, cube.shape[2]], [cube.shape[2], cube.shape[1]]]"
    assert f"    top = nl.max(cube.ap(pattern={pattern}, offset=0), axis=[2])\n" in text
    assert f"    low = nl.min(cube.ap(pattern={pattern}, offset=0), axis=[2])\n" in text
    rows = [(c["line"], c["construct"]) for c in result.changes if c["construct"].startswith(("nl.max(", "nl.min("))]
    assert rows == [(49, "nl.max(cube, axis=1)"), (50, "nl.min(cube, axis=[1])")]
    assert statuses(result)["middle_axis_kernel"] == "identical", result.validation
    before, after, a, b = run_both(result, path, "middle_axis_kernel")
    np.testing.assert_array_equal(after, before)
    cube = b.reshape(128, 8, 8)
    np.testing.assert_array_equal(after, cube.max(axis=1) - cube.min(axis=1))


def test_max_over_axes_that_cannot_be_the_last_ones_of_a_tile_of_unknown_rank_is_a_manual_step():
    from nkidev.migrate import migrate_source

    src = (
        "import neuronxcc.nki.language as nl\n"
        "from neuronxcc import nki\n\n\n"
        "@nki.jit\n"
        "def k(a, t):\n"
        "    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    m = nl.max(t, axis=[1, 3])\n"
        "    nl.store(out, value=m)\n"
        "    return out\n"
    )
    _, _, notes = migrate_source(src)
    assert [(n.line, n.construct) for n in notes if n.kind == "manual"] == [(8, "nl.max(t, axis=[1, 3])")]


def test_an_isa_result_inside_an_expression_is_noted_at_its_line_without_the_hoisted_name():
    from nkidev.migrate import migrate_source

    src = (
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "from neuronxcc import nki\n\n\n"
        "@nki.jit\n"
        "def k(a, b):\n"
        "    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    x = nl.load(a)\n"
        "    y = nl.load(b)\n"
        "    nl.store(out, value=nisa.tensor_tensor(x, y, op=nl.add))\n"
        "    return out\n"
    )
    new, _, notes = migrate_source(src)
    assert [(n.line, n.construct) for n in notes if n.kind == "manual"] == [(11, "nisa.tensor_tensor(data1, data2, ...)")]
    assert "_tensor_tensor_1 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)" in new
