"""`nkidev migrate` on `t[...] = nisa.<op>(..., dtype=D)`: the legacy op rounds its result to D before the
assignment stores it into t, so the rewrite keeps that rounding (a tile of dtype D, then nisa.tensor_copy into t)
unless D is t's own dtype, or float32 into a float tile (the engines compute in float32). Checked as text and old
against new, bit for bit, on our own kernels (the legacy front end vs the current API)."""

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nkidev.migrate import migrate_file
from nkidev.taskfile import load_task

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_narrower_result_dtype_into_a_wider_tile_is_rounded_first_as_in_the_legacy_kernel(tmp_path):
    path = tmp_path / "legacy_dtype_into_tile.py"
    shutil.copy(FIXTURES / path.name, path)
    result = migrate_file(path, write=True)
    assert Path(result.backup).read_text() == (FIXTURES / path.name).read_text()  # --write keeps the original
    assert result.manual == []
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("narrow_result_kernel", "identical"),
        ("wide_result_kernel", "identical"),
        ("same_dtype_kernel", "identical"),
    ], result.validation
    text = path.read_text()
    # bfloat16 results into float32 tiles: computed into a bfloat16 tile, then copied
    assert (
        "    _tensor_tensor_1 = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "    nisa.tensor_tensor(dst=_tensor_tensor_1, data1=x, data2=y, op=nl.add)\n"
        "    nisa.tensor_copy(dst=acc[...], src=_tensor_tensor_1)\n"
    ) in text
    assert (
        "    _activation_2 = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "    nisa.activation(dst=_activation_2, op=nl.exp, data=x)\n"
        "    nisa.tensor_copy(dst=e[:, 1, :], src=_activation_2)\n"
    ) in text
    # float32 into a bfloat16 tile, and a dtype that is the tile's own (np.float32 vs nl.float32): straight into t
    assert "nisa.tensor_scalar(dst=t[...], data=x, op0=nl.multiply, operand0=3.0, op1=nl.add, operand1=y[:, 0:1])\n" in text
    assert "nisa.tensor_tensor(dst=s[...], data1=x, data2=y, op=nl.multiply)\n" in text
    assert text.count("nisa.tensor_copy(") == 2
    lines = sorted(c["line"] for c in result.changes if "dtype=nl.bfloat16)" in c["construct"])
    assert lines == [17, 19]

    old, new = load_task(Path(result.backup)), load_task(path)
    a, b = new.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels["narrow_result_kernel"], a, b)
    after = new.module.nki.simulate(new.kernels["narrow_result_kernel"])(a, b)
    np.testing.assert_array_equal(after, before)
    # the rounding is real: the sum is a bfloat16 value, not the float32 sum
    bf = ml_dtypes.bfloat16
    expected = (a + b).astype(bf).astype(np.float32) + np.exp(a).astype(bf).astype(np.float32)
    np.testing.assert_allclose(after, expected, rtol=1e-2, atol=1e-2)
    assert np.abs(after - (a + b + np.exp(a))).max() > 1e-3


def test_the_same_kernel_written_straight_into_the_float32_tile_would_differ_from_the_legacy_outputs(tmp_path):
    """Why the temporary tile: a dst= rewrite that dropped dtype= (what the migration wrote before) is not the legacy
    kernel's result."""
    path = tmp_path / "legacy_dtype_into_tile.py"
    shutil.copy(FIXTURES / path.name, path)
    result = migrate_file(path)
    dropped = result.source.replace(
        "    _tensor_tensor_1 = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "    nisa.tensor_tensor(dst=_tensor_tensor_1, data1=x, data2=y, op=nl.add)\n"
        "    nisa.tensor_copy(dst=acc[...], src=_tensor_tensor_1)\n",
        "    nisa.tensor_tensor(dst=acc[...], data1=x, data2=y, op=nl.add)\n",
    )
    assert dropped != result.source
    straight = tmp_path / "straight.py"
    straight.write_text(dropped)
    old, new = load_task(path), load_task(straight)
    a, b = new.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels["narrow_result_kernel"], a, b)
    after = new.module.nki.simulate(new.kernels["narrow_result_kernel"])(a, b)
    assert not np.array_equal(after, before)


def test_a_result_without_dtype_keeps_the_legacy_input_dtype_rounding_into_a_wider_tile(tmp_path):
    """bf16 inputs into a float32 tile without dtype=: the legacy result is a bf16 tile copied into t. Writing t
    directly (the rewrite before) rounds once to float32: other bits, shown by running that form too."""
    path = tmp_path / "legacy_implicit_dtype.py"
    shutil.copy(FIXTURES / path.name, path)
    result = migrate_file(path, write=True)
    assert Path(result.backup).read_text() == (FIXTURES / path.name).read_text()
    statuses = {r["kernel"]: r["status"] for r in result.validation["kernels"]}
    assert statuses["implicit_bf16_kernel"] == "identical", result.validation
    assert statuses["float32_tiles_kernel"] == "identical", result.validation
    text = path.read_text()
    direct = "    nisa.tensor_tensor(dst=acc[...], data1=x, data2=y, op=nl.multiply)\n"
    staged = (
        "    _tensor_tensor_1 = nl.ndarray(x.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
        "    nisa.tensor_tensor(dst=_tensor_tensor_1, data1=x, data2=y, op=nl.multiply)\n"
        "    nisa.tensor_copy(dst=acc[...], src=_tensor_tensor_1)\n"
    )
    assert staged in text
    assert (
        "    _activation_2 = nl.ndarray(x.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
        "    nisa.activation(dst=_activation_2, op=nl.exp, data=x, scale=1.5)\n"
        "    nisa.tensor_copy(dst=e[...], src=_activation_2)\n"
    ) in text
    # float32 tiles into a float32 tile: straight into it (no extra copy)
    assert "    nisa.tensor_scalar(dst=s[...], data=x, op0=nl.multiply, operand0=3.0)\n" in text
    assert text.count("nisa.tensor_copy(") == 2
    assert sorted(c["line"] for c in result.changes if "without dtype=" in c["construct"]) == [18, 20]
    # two inputs of dtypes not known here (a's and b's): their promotion is a manual step at its line
    assert [(m["line"], m["construct"]) for m in result.manual] == [(42, "t[...] = nisa.tensor_tensor(data1, data2, ...)")]
    assert "promoted dtype of x and y" in result.manual[0]["step"]

    old, new = load_task(Path(result.backup)), load_task(path)
    a, b = new.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels["implicit_bf16_kernel"], a, b)
    after = new.module.nki.simulate(new.kernels["implicit_bf16_kernel"])(a, b)
    np.testing.assert_array_equal(after, before)
    # the product is a bfloat16 value in the legacy kernel; written straight into the float32 tile it is not
    direct_path = tmp_path / "direct.py"
    direct_path.write_text(text.replace(staged, direct))
    bare = load_task(direct_path).module.nki.simulate(load_task(direct_path).kernels["implicit_bf16_kernel"])(a, b)
    assert not np.array_equal(bare, before)
    x = a.astype(np.float32)
    product = x * x
    rounding = np.abs(product - product.astype(ml_dtypes.bfloat16).astype(np.float32))
    differ = bare != after
    assert differ.sum() > 1000  # most products need more than bfloat16's 8 bits
    assert np.all(np.abs(bare - after) <= rounding + np.abs(after) * 2.0**-23)  # and differ by that rounding alone


def test_dtype_expressions_of_different_tensors_are_not_taken_for_the_same_dtype():
    from nkidev.migrate.legacy_rules import _same_dtype

    assert _same_dtype("nl.float32", "np.float32") and _same_dtype("nl.fp32", "'float32'")
    assert _same_dtype("a.dtype", "a.dtype")
    assert not _same_dtype("a.dtype", "b.dtype")  # both end in .dtype: were one dtype
    assert not _same_dtype("a.dtype", "nl.bfloat16")


def test_nl_arithmetic_with_a_python_float_or_mixed_tiles_keeps_the_legacy_promoted_dtype(tmp_path):
    # Legacy pages, "NKI Type Promotion" / "Weakly Typed Scalar Type Inference"
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.0/general/nki/api/nki.api.shared.html): a Python float
    # is float32 and the result takes the promotion of both operands. The current nki.language.multiply page
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.language.multiply.html) gives
    # no default result dtype; the current API here gives the tile's own, so migrate passes the legacy one.
    path = tmp_path / "legacy_scalar_promotion.py"
    shutil.copy(FIXTURES / path.name, path)
    result = migrate_file(path, write=True)
    assert result.manual == []
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("float_scalar_kernel", "identical"),
        ("mixed_tiles_kernel", "identical"),
        ("same_dtype_kernel", "identical"),
    ], result.validation
    text = path.read_text()
    assert "    y = nl.multiply(x, 3.0, dtype=nl.float32)\n" in text
    assert "    z = nl.add(0.1, y, dtype=nl.float32)\n" in text
    assert "    s = nl.subtract(x, w, dtype=nl.float32)\n" in text
    # float32 tiles (a float or an int scalar) need no dtype=
    assert "    y = nl.multiply(x, 3.0)\n" in text
    assert "    k = nl.maximum(x, 2)\n" in text
    assert sorted(c["line"] for c in result.changes if c["step"].startswith("dtype=nl.float32: the legacy result")) == [14, 15, 27]

    old, new = load_task(Path(result.backup)), load_task(path)
    a, b = new.cases()[0]
    for kernel, expected in (
        ("float_scalar_kernel", a.astype(np.float32) * np.float32(3.0) + np.float32(0.1)),
        ("mixed_tiles_kernel", a.astype(np.float32) - b),
    ):
        before = old.module.nki.simulate_kernel(old.kernels[kernel], a, b)
        after = new.module.nki.simulate(new.kernels[kernel])(a, b)
        assert before.dtype == after.dtype == np.float32, kernel
        np.testing.assert_array_equal(after, before)
        np.testing.assert_allclose(after, expected, rtol=1e-6, atol=1e-6)


def test_without_the_dtype_the_current_api_keeps_the_tiles_dtype(tmp_path):
    # what the inserted dtype= is for: the same kernel text, current API, no dtype=, gives a bfloat16 result
    path = tmp_path / "current_scalar.py"
    path.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\ndef k(a):\n"
        "    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)\n    nisa.dma_copy(dst=x, src=a)\n"
        "    y = nl.multiply(x, 3.0)\n    out = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)\n"
        "    nisa.dma_copy(dst=out, src=y)\n    return out\n"
    )
    task = load_task(path)
    a = (np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 7).astype(ml_dtypes.bfloat16)
    got = task.module.nki.simulate(task.kernels["k"])(a)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got, (a.astype(np.float32) * 3).astype(ml_dtypes.bfloat16))
