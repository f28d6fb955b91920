"""`nkidev migrate` on stores of PSUM tiles (issue 15): the legacy nl.store copied a PSUM tile to SBUF itself, the
current nisa.dma_copy reads SBUF or HBM only, so the migration writes that copy out (an SBUF tile of the value's shape
and dtype, nisa.tensor_copy, then the dma_copy) when the value is known to be a PSUM tile, and leaves a manual note at
the store's line when it may or may not be one. Old and new kernels give the same bits. Our own fixture."""

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nkidev.migrate import migrate_file, migrate_source
from nkidev.taskfile import load_task

from .legacy_pair import run_both

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"
NAME = "legacy_psum_store.py"
KERNELS = (
    "matmul_store_kernel",
    "accumulate_store_kernel",
    "inline_matmul_kernel",
    "slices_kernel",
    "guarded_store_kernel",
    "helper_view_kernel",
    "transpose_operand_kernel",
)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    path = tmp_path_factory.mktemp("psum") / NAME
    shutil.copy(FIXTURES / NAME, path)
    result = migrate_file(path, write=True)
    return result, path


def test_every_kernel_gives_the_legacy_bits_with_no_manual_step(migrated):
    result, path = migrated
    assert result.manual == []
    assert {r["kernel"]: r["status"] for r in result.validation["kernels"]} == dict.fromkeys(KERNELS, "identical")
    for kernel in KERNELS:
        before, after, _, _ = run_both(result, path, kernel)
        assert after.dtype == before.dtype and after.tobytes() == before.tobytes(), kernel


def test_a_matmul_result_is_copied_to_sbuf_before_the_store(migrated):
    result, path = migrated
    text = path.read_text()
    assert (
        "    res = nl.ndarray((x.shape[1], y.shape[1]), dtype=nl.float32, buffer=nl.psum)\n"
        "    nisa.nc_matmul(dst=res, stationary=x, moving=y)\n"
        "    res_sbuf = nl.ndarray(res.shape, dtype=res.dtype, buffer=nl.sbuf)\n"
        "    nisa.tensor_copy(dst=res_sbuf, src=res)\n"
        "    nisa.dma_copy(dst=out, src=res_sbuf)\n"
    ) in text
    rows = [(c["line"], c["construct"]) for c in result.changes if "is a PSUM tile" in c["step"]]
    assert rows == [
        (18, "nl.store(dst, value=res)"),
        (30, "nl.store(dst, value=acc)"),
        (39, "nl.store(dst, value=nl.matmul(x, y, transpose_x=True))"),
        (49, "nl.store(dst, value=res[32:64, :])"),
        (52, "nl.store(dst, value=res[i_p, i_f])"),
        (65, "nl.store(dst, value=res[t * 32 + i_p, i_f])"),
        (78, "nl.store(dst, value=first_rows(nisa.nc_matmul(x, y)))"),
    ]
    before, after, a, b = run_both(result, path, "matmul_store_kernel")
    np.testing.assert_allclose(after, a.T @ b, rtol=1e-5, atol=1e-5)
    # the store as it was migrated before: the current dma_copy rejects a PSUM source, at its line
    kept = path.parent / "kept.py"
    direct = text.replace(
        "    res_sbuf = nl.ndarray(res.shape, dtype=res.dtype, buffer=nl.sbuf)\n"
        "    nisa.tensor_copy(dst=res_sbuf, src=res)\n"
        "    nisa.dma_copy(dst=out, src=res_sbuf)\n",
        "    nisa.dma_copy(dst=out, src=res)\n",
        1,
    )
    kept.write_text(direct)
    task = load_task(kept)
    with pytest.raises(Exception) as raised:
        task.module.nki.simulate(task.kernels["matmul_store_kernel"])(a, b)
    at = next(i for i, row in enumerate(direct.splitlines(), 1) if row == "    nisa.dma_copy(dst=out, src=res)")
    assert type(raised.value).__name__ == "KernelRuleError"
    assert str(raised.value).startswith("err_dma_from_psum") and str(raised.value).endswith(f"(kept.py:{at})")


def test_an_accumulator_stored_into_a_bfloat16_output_rounds_once_as_before(migrated):
    result, path = migrated
    assert "    acc_sbuf = nl.ndarray(acc.shape, dtype=acc.dtype, buffer=nl.sbuf)\n" in path.read_text()
    before, after, a, b = run_both(result, path, "accumulate_store_kernel")
    assert after.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(after.view(np.uint16), before.view(np.uint16))
    expected = (a[0:64].T @ b[0:64] + a[64:128].T @ b[64:128]).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(after.astype(np.float32), expected.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_an_inline_value_is_computed_once_and_slices_and_masks_copy_only_their_box(migrated):
    _, path = migrated
    text = path.read_text()
    assert (
        "    store_psum = nl.matmul(x, y, transpose_x=True)\n"
        "    store_psum_sbuf = nl.ndarray(store_psum.shape, dtype=store_psum.dtype, buffer=nl.sbuf)\n"
    ) in text
    assert "    nisa.tensor_copy(dst=res_sbuf, src=res[32:64, :])\n    nisa.dma_copy(dst=out[0:32, :], src=res_sbuf)\n" in text
    assert "    nisa.tensor_copy(dst=res_sbuf_1, src=res[0:min(64, 64 - 32), 0:32])\n" in text
    # a mask on the loop variable only: one `if` around the copy and the store
    assert (
        "        if t < 2:\n"
        "            res_sbuf = nl.ndarray(res[t * 32:t * 32 + 32, 0:32].shape, dtype=res.dtype, buffer=nl.sbuf)\n"
        "            nisa.tensor_copy(dst=res_sbuf, src=res[t * 32:t * 32 + 32, 0:32])\n"
        "            nisa.dma_copy(dst=out[t * 32:t * 32 + 32, 0:32], src=res_sbuf)\n"
    ) in text
    assert "    store_psum = first_rows(_nc_matmul_1)\n" in text  # a helper's view of its PSUM argument


def test_a_transpose_is_copied_to_sbuf_and_a_reduction_op_is_the_element_wise_one(migrated):
    result, path = migrated
    text = path.read_text()
    assert "    xt = nl.copy(nl.transpose(x))\n" in text
    assert "    nisa.tensor_reduce(dst=top, op=nl.maximum, data=res, axis=1)\n" in text
    rows = [(c["line"], c["construct"]) for c in result.changes if c["construct"] in ("nl.transpose(x)", "op=nl.max")]
    assert rows == [(86, "nl.transpose(x)"), (89, "op=nl.max")]
    _, after, a, b = run_both(result, path, "transpose_operand_kernel")
    # the matmul's stationary operand is x.T, so the result is (x.T).T @ y = x @ y
    np.testing.assert_allclose(after[:, 0], (a[0:64] @ b[0:64]).max(axis=1), rtol=1e-5, atol=1e-5)


HEAD = "import neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\nfrom neuronxcc import nki\n"


def manual(src):
    new, _, notes = migrate_source(HEAD + src)
    return new, [(n.line, n.construct, n.step) for n in notes if n.kind == "manual"]


def test_a_value_that_is_a_psum_tile_on_one_path_only_is_a_manual_step_at_the_store():
    new, notes = manual(
        "\n\n@nki.jit\n"
        "def k(a, b):\n"
        "    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    x = nl.load(a)\n"
        "    t = nisa.nc_matmul(x, nl.load(b))\n"
        "    if a.shape[0] > 64:\n"
        "        t = nl.load(b[0:64, :])\n"
        "    nl.store(out, value=t)\n"
        "    return out\n"
    )
    assert [(line, construct) for line, construct, _ in notes] == [(13, "nl.store(..., value=t)")]
    assert notes[0][2].startswith("if t is a PSUM tile here (a PSUM tile on some paths, not on others), nisa.tensor_copy it")
    assert "    nisa.dma_copy(dst=out, src=t)\n" in new  # left as it was


def test_a_value_from_a_function_of_another_module_is_a_manual_step_naming_the_call():
    _, notes = manual(
        "from mylib import make_tile\n\n\n@nki.jit\n"
        "def k(a):\n"
        "    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    t = make_tile(a)\n"
        "    nl.store(out, value=t)\n"
        "    return out\n"
    )
    assert [(line, construct) for line, construct, _ in notes] == [(11, "nl.store(..., value=t)")]
    assert "(make_tile(...) at line 10 may return one)" in notes[0][2]


def test_a_helper_parameter_is_what_the_calls_in_the_file_pass():
    helper = "def put(out, t):\n    nl.store(out, value=t)\n\n\n"
    kernel = (
        "@nki.jit\n"
        "def k(a, b):\n"
        "    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    x = nl.load(a)\n"
        "    {calls}\n"
        "    return out\n"
    )
    # every call passes a PSUM tile: the copy goes in the helper
    new, notes = manual("\n\n" + helper + kernel.format(calls="put(out, nisa.nc_matmul(x, nl.load(b)))"))
    assert notes == []
    assert "    t_sbuf = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)\n    nisa.tensor_copy(dst=t_sbuf, src=t)\n" in new
    # one call passes PSUM, one SBUF: a manual step at the helper's store
    _, notes = manual("\n\n" + helper + kernel.format(calls="put(out, nisa.nc_matmul(x, nl.load(b)))\n    put(out, x)"))
    assert [(line, construct) for line, construct, _ in notes] == [(7, "nl.store(..., value=t)")]
    assert "(the calls of put pass t a PSUM tile and other tiles)" in notes[0][2]
    # no call in the file: nothing tells
    _, notes = manual("\n\n" + helper)
    assert [(line, construct) for line, construct, _ in notes] == [(7, "nl.store(..., value=t)")]
    assert "(t is a parameter of put, which no call in this file shows)" in notes[0][2]
