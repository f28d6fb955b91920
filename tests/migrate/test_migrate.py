"""`nkidev migrate`: legacy neuronxcc.nki -> current NKI and NKI 0.6 -> 0.7 rewrites that run and give the original's
outputs, backups and atomic writes, manual steps with their lines, --json, and LibCST as an optional extra."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from nkidev import exitcodes
from nkidev.emulator import versions
from nkidev.errors import NkiError, NkiUsageError
from nkidev.migrate import migrate_file, migrate_source
from nkidev.migrate.cli import register
from nkidev.taskfile import load_task

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"

app = typer.Typer()
app.callback()(lambda: None)
register(app)


def copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copy(FIXTURES / name, dest)
    return dest


def cli(*args):
    return CliRunner().invoke(app, ["migrate", *map(str, args)])


def test_legacy_kernel_migrated_gives_the_legacy_outputs_under_the_current_api(tmp_path):
    path = copy(tmp_path, "legacy_add_exp.py")
    result = migrate_file(path, write=True)
    assert result.kind == f"legacy -> {versions.NEWEST}"
    assert result.validation["status"] == "identical"
    new_source = path.read_text()
    for legacy in ("neuronxcc", "nl.load(", "nl.store(", "affine_range", "= nisa.activation(", "= nisa.tensor_tensor("):
        assert legacy not in new_source
    assert "nisa.activation(dst=e, op=nl.exp, data=at)" in new_source
    assert "# one row tile of each input" in new_source  # comments survive

    # independently of the migration's own check: legacy front end vs current API, same bits
    old, new = load_task(Path(result.backup)), load_task(path)
    a, b = old.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels["add_exp_kernel"], a, b)
    after = new.module.nki.simulate(new.kernels["add_exp_kernel"])(a, b)
    assert new.module.nki.__name__ != old.module.nki.__name__  # really two front ends
    np.testing.assert_array_equal(after, before)
    np.testing.assert_allclose(after, np.exp(a) + b, rtol=1e-6)


def test_legacy_arange_mask_becomes_bounded_slices_with_the_same_outputs(tmp_path):
    path = copy(tmp_path, "legacy_masked_scale.py")
    result = migrate_file(path, write=True)
    assert result.validation["status"] == "identical", result.validation
    assert result.manual == []
    new = load_task(path)
    (x,) = new.cases()[0]
    assert x.shape[0] % 128 != 0  # the mask matters
    text = path.read_text()
    assert "= nl.arange(" not in text and "mask=(" not in text and "min(128, x.shape[0] - (t * 128))" in text
    np.testing.assert_array_equal(new.module.nki.simulate(new.kernels["scale_rows_kernel"])(x), 2 * x)


def test_06_dynamic_range_migrated_runs_under_07(tmp_path):
    path = copy(tmp_path, "v06_dynamic.py")
    old = load_task(path)
    (x,) = old.cases()[0]
    with versions.scope("0.7"), pytest.raises(NkiError) as e:
        old.module.nki.simulate(old.kernels["double_kernel"])(x)
    assert e.value.name == "err_removed_in_nki_version" and e.value.lineno == 15

    result = migrate_file(path, write=True)
    assert result.kind == f"0.6 -> {versions.NEWEST}"
    assert result.validation["status"] == "identical"
    lines = {c["line"]: c["construct"] for c in result.changes}
    assert lines[8] == 'NKI_VERSION = "0.6"' and "dynamic_range" in lines[15]
    text = path.read_text()
    assert "in nl.dynamic_range(" not in text and "nl.fori_loop(0, n, _loop_body_1)" in text and "scalar_offset=i" in text
    assert f'NKI_VERSION = "{versions.NEWEST}"' in text

    # the migrated file validates under --nki-version 0.7 in a real `nkidev` process; the backup still fails there
    ok = subprocess.run(
        [sys.executable, "-m", "nkidev", "validate", f"{path}::double_kernel", "--nki-version", "0.7"], capture_output=True, text=True
    )
    assert ok.returncode == exitcodes.OK, ok.stdout + ok.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "nkidev", "validate", f"{result.backup}::double_kernel", "--nki-version", "0.7", "--json"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != exitcodes.OK
    assert "err_removed_in_nki_version" in bad.stdout


def test_write_keeps_every_original_in_a_backup_and_leaves_no_temporary_files(tmp_path):
    path = copy(tmp_path, "legacy_add_exp.py")
    original = path.read_text()
    first = migrate_file(path, write=True)
    assert first.written and Path(first.backup).name == "legacy_add_exp.py.bak"
    assert Path(first.backup).read_text() == original
    path.write_text(original.replace("256, 512", "384, 512"))  # the user edits the original again
    second = migrate_file(path, write=True)
    assert Path(second.backup).name == "legacy_add_exp.py.bak.1"  # the first backup is not overwritten
    assert "384, 512" in Path(second.backup).read_text() and Path(first.backup).read_text() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["legacy_add_exp.py", "legacy_add_exp.py.bak", "legacy_add_exp.py.bak.1"]


def test_without_write_the_file_is_untouched_and_the_diff_is_printed(tmp_path):
    path = copy(tmp_path, "legacy_add_exp.py")
    original = path.read_text()
    r = cli(path)
    assert r.exit_code == exitcodes.OK, r.output
    assert "-        e = nisa.activation(op=nl.exp, data=at)" in r.output
    assert "+        nisa.activation(dst=e, op=nl.exp, data=at)" in r.output
    assert "validation: identical" in r.output
    assert path.read_text() == original and sorted(p.name for p in tmp_path.iterdir()) == ["legacy_add_exp.py"]


def test_json_shape(tmp_path):
    path = copy(tmp_path, "v06_dynamic.py")
    r = cli(path, "--json", "--write")
    assert r.exit_code == exitcodes.OK, r.output
    d = json.loads(r.stdout)
    assert set(d) == {"path", "kind", "diff", "changes", "manual", "validation", "written", "backup"}
    assert d["kind"] == f"0.6 -> {versions.NEWEST}" and d["written"] is True and d["backup"] == f"{path}.bak"
    assert d["diff"].startswith("--- a/v06_dynamic.py\n+++ b/v06_dynamic.py\n")
    assert all(set(c) == {"kind", "line", "construct", "step"} and isinstance(c["line"], int) for c in d["changes"] + d["manual"])
    assert d["validation"]["status"] == "identical"
    assert d["validation"]["kernels"] == [{"kernel": "double_kernel", "case": 0, "status": "identical", "max_abs_diff": 0.0}]


NAN_BEFORE = """\
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def k(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nl.store(out, value=nl.add(x, acc))
    return out


def cases():
    return [(np.ones((128, 128), np.float32),)]
"""


def test_a_mismatch_of_nan_on_one_side_only_says_so_where_the_max_difference_skips_nan(tmp_path):
    # the legacy kernel adds a PSUM tile nothing wrote (NaN); a "migration" that zeroes the tile has numbers
    # everywhere: what the max difference alone (0.0, over no element) would hide
    from nkidev.migrate.check import compare

    path = tmp_path / "k.py"
    path.write_text(NAN_BEFORE)
    new, kind, _ = migrate_source(NAN_BEFORE, "k.py")
    zeroed = new.replace("acc = nl.ndarray(", "acc = nl.zeros(")
    assert zeroed != new
    rows = compare(path, zeroed, kind)["kernels"]
    assert rows == [{"kernel": "k", "case": 0, "status": "mismatch", "max_abs_diff": 0.0, "reason": "16384 NaN before, 0 after (of 16384)"}]


KERNEL_WITH_MANUAL_STEPS = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.dynamic_range(4):
        if i == 2:
            break
    for j in nl.dynamic_range(4):
        nisa.dma_copy(dst=out[j], src=x[j])
    return out
"""


def test_what_cannot_be_rewritten_is_listed_with_its_line_and_left_in_place():
    new, kind, notes = migrate_source(KERNEL_WITH_MANUAL_STEPS, "k.py")
    manual = [(n.line, n.construct, n.step) for n in notes if n.kind == "manual"]
    assert kind == f"0.6 -> {versions.NEWEST}"
    assert manual[0][:2] == (9, "for ... in nl.dynamic_range(...)") and "break" in manual[0][2]
    assert [(line, c) for line, c, _ in manual[1:]] == [(12, "out[j]"), (12, "x[j]")]
    assert all("scalar_offset=j" in step for _, _, step in manual[1:])
    assert "for i in nl.dynamic_range(4):" in new  # left alone


CURRENT_07_KERNEL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(x.shape[0] // 128):
        nisa.dma_copy(dst=out[t * 128 : (t + 1) * 128], src=x[t * 128 : (t + 1) * 128])
    return out
"""


def test_a_file_with_nothing_to_migrate_is_reported_and_not_written(tmp_path):
    path = tmp_path / "current.py"
    path.write_text(CURRENT_07_KERNEL)
    before = path.read_text()
    r = cli(path, "--write")
    assert r.exit_code == exitcodes.OK and "nothing to migrate" in r.output
    assert path.read_text() == before and not (tmp_path / "current.py.bak").exists()


def test_syntax_error_is_err_migrate_parse_at_its_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("from neuronxcc import nki\n\n\ndef k(:\n    pass\n")
    with pytest.raises(NkiUsageError) as e:
        migrate_file(path)
    assert e.value.name == "err_migrate_parse" and e.value.lineno == 4
    assert path.read_text().startswith("from neuronxcc") and not (tmp_path / "broken.py.bak").exists()


def test_missing_libcst_is_a_named_error_with_the_install_command(tmp_path):
    path = copy(tmp_path, "legacy_add_exp.py")
    code = (
        "import sys; sys.modules['libcst'] = None\n"  # as if the extra were not installed
        "from nkidev.cli import main\n"
        f"sys.argv = ['nkidev', 'migrate', {str(path)!r}, '--json']\n"
        "main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == exitcodes.USAGE, r.stdout + r.stderr
    err = json.loads(r.stdout)["error"]
    assert err["name"] == "err_migrate_missing_extra"
    assert "pip install 'nkidev[migrate]'" in err["fix"]
    assert "Traceback" not in r.stderr


def test_libcst_is_not_imported_by_nkidev_or_its_cli():
    code = "import sys, nkidev, nkidev.cli, nkidev.migrate; print('libcst' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


def test_06_virtual_register_loop_bound_becomes_an_nki_scalar(tmp_path):
    path = copy(tmp_path, "v06_register_bound.py")
    result = migrate_file(path, write=True)
    assert result.validation["status"] == "identical"
    text = path.read_text()
    assert "n = nisa.scalar_load(n_sb)" in text and "register_alloc" not in text and "nl.fori_loop(0, n, _loop_body_1)" in text
    new = load_task(path)
    n_tile, x = new.cases()[0]
    with versions.scope("0.7"):
        out = new.module.nki.simulate(new.kernels["count_kernel"])(n_tile, x)
    np.testing.assert_array_equal(out, np.full(x.shape, 5.0, np.float32))


def test_06_while_register_becomes_nl_while_loop_and_runs_under_07(tmp_path):
    path = copy(tmp_path, "v06_while_register.py")
    result = migrate_file(path, write=True)
    assert result.validation["status"] == "identical"
    text = path.read_text()
    assert "    while r:" not in text and "nl.while_loop(r, _while_body_1)" in text and "        return r\n" in text
    new = load_task(path)
    n_tile, x = new.cases()[0]
    with versions.scope("0.7"):
        out = new.module.nki.simulate(new.kernels["countdown_kernel"])(n_tile, x)
    np.testing.assert_array_equal(out, np.full(x.shape, 3.0, np.float32))


def test_index_definitions_are_dropped_per_kernel_even_when_another_kernel_reuses_the_names(tmp_path):
    path = copy(tmp_path, "legacy_index_forms.py")
    result = migrate_file(path, write=True)
    assert result.manual == []  # no "an nl.arange / nl.mgrid expression is left" for i, j
    assert result.validation["status"] == "identical", result.validation
    text = path.read_text()
    assert "= nl.arange(" not in text and "= nl.mgrid[" not in text
    assert "dst=out[0:1, 0:64]" in text and "src=x[0:128, 0:64]" in text
    new = load_task(path)
    (x,) = new.cases()[0]
    np.testing.assert_array_equal(new.module.nki.simulate(new.kernels["first_row_kernel"])(x), x[:1])


def test_mask_variables_transpose_into_sbuf_and_an_hbm_output_migrate_to_the_same_outputs(tmp_path):
    # three rewrites public optimizer kernels need together: index defs used only by (redefined) mask variables go
    # with the masks, a TensorE result assigned to an SBUF tile goes through PSUM, and an output allocated before
    # its `return` in the file's first kernel becomes shared_hbm
    path = copy(tmp_path, "legacy_mask_variables.py")
    result = migrate_file(path, write=True)
    assert result.validation["status"] == "identical", result.validation
    assert result.manual == []
    text = path.read_text()
    assert "nl.mgrid" not in text and "mask =" not in text and "buffer=nl.hbm" not in text
    assert "buffer=nl.psum" in text and "nisa.tensor_copy(dst=flipped[0:128, 0:128]" in text
    new = load_task(path)
    (x,) = new.cases()[0]
    np.testing.assert_array_equal(new.module.nki.simulate(new.kernels["transpose_kernel"])(x), x.T)


def test_explicit_mask_none_and_memset_shape_of_generated_kernels_migrate_to_the_same_outputs(tmp_path):
    path = copy(tmp_path, "legacy_generated_style.py")
    result = migrate_file(path, write=True)
    assert result.validation["status"] == "identical", result.validation
    text = path.read_text()
    assert "if None" not in text and "mask=" not in text and "shape=(128, 1)" not in text
    new = load_task(path)
    (x,) = new.cases()[0]
    np.testing.assert_allclose(new.module.nki.simulate(new.kernels["kernel"])(x), np.exp(x + 0.5), rtol=1e-6)


def test_old_against_new_runs_both_kernels_with_the_cases_keywords():
    """keywords.py's cases 1 and 2 set scale= by keyword: a migration that drops it differs exactly there."""
    from nkidev.migrate.check import compare

    path = Path(__file__).parents[1] / "validate" / "tasks" / "keywords.py"
    source = path.read_text()
    assert compare(path, source, "new")["status"] == "identical"
    rows = compare(path, source.replace("operand1=scale)", "operand1=1.0)"), "new")["kernels"]
    assert [r["status"] for r in rows if r["kernel"] == "scaled_rmsnorm"] == ["identical", "mismatch", "mismatch"]


ISA_UNDER_ANOTHER_NAME = """\
import neuronxcc.nki.isa as ni
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=ni.activation(nl.exp, t))
    return out
"""


def test_rewrites_that_write_nisa_import_it_when_the_isa_module_has_another_name():
    new, _, _ = migrate_source(ISA_UNDER_ANOTHER_NAME, "k.py")
    assert "nisa.dma_copy(" in new and "\nimport nki.isa as nisa\n" in new  # `ni` is not `nisa`
    assert "import nki.isa as ni\n" in new


def test_affine_select_keeps_both_offsets_of_its_predicate_and_reads_a_psum_tile_through_sbuf(tmp_path):
    """`64 + i_p >= t * 128 + i_f`: the rewrite kept only the right side's offset (-(t * 128)), a wrong mask with no
    note; and the current affine_select (GpSimd) cannot read the PSUM tile a TensorE transpose leaves."""
    path = tmp_path / "legacy_causal_select.py"
    shutil.copy(FIXTURES / path.name, path)
    result = migrate_file(path, write=True)
    assert Path(result.backup).read_text() == (FIXTURES / path.name).read_text()
    assert result.manual == []
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("causal_kernel", "identical"),
        ("sbuf_causal_kernel", "identical"),
    ], result.validation
    text = path.read_text()
    assert text.count("cmp_op=nl.greater_equal, offset=64 - (t * 128))") == 2
    assert (
        "        _select_src_1 = nl.ndarray(scores.shape, dtype=scores.dtype, buffer=nl.sbuf)\n"
        "        nisa.tensor_copy(dst=_select_src_1, src=scores)\n"
        "        nisa.affine_select(dst=kept, pattern=[[-1, _select_src_1.shape[1]]], channel_multiplier=1, on_true_tile=_select_src_1,"
    ) in text
    new = load_task(path)
    (x,) = new.cases()[0]
    p, f = np.arange(128)[:, None], np.arange(128)[None, :]
    expected = np.concatenate([np.where(64 + p >= t * 128 + f, x[:, t * 128 : t * 128 + 128], -9984.0) for t in range(2)], axis=1)
    np.testing.assert_array_equal(new.module.nki.simulate(new.kernels["sbuf_causal_kernel"])(x), expected)
    transposed = np.concatenate([np.where(64 + p >= t * 128 + f, x[:, t * 128 : t * 128 + 128].T, -9984.0) for t in range(2)], axis=1)
    np.testing.assert_array_equal(new.module.nki.simulate(new.kernels["causal_kernel"])(x), transposed)


def test_block_tensors_of_direct_allocators_fold_into_the_free_dims(tmp_path):
    # the migration guide ("Translate from the NKI 0.1.0 direct allocation API",
    # https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/migration/index.html) drops the block dims first;
    # the folded tensor holds every block, as the legacy front end's per-block storage does, so the allocator goes
    path = tmp_path / "legacy_direct_alloc.py"
    shutil.copy(FIXTURES / path.name, path)
    result = migrate_file(path, write=True)
    assert result.manual == []
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("rotate_kernel", "identical"),
        ("full_name_kernel", "identical"),
        ("closure_kernel", "identical"),
    ], result.validation
    text = path.read_text()
    assert "    acc = nl.ndarray((128, 8, 128), dtype=nl.float32, buffer=nl.psum)\n" in text
    assert "    res = nl.ndarray((128, 8, 128), dtype=nl.float32, buffer=nl.sbuf)\n" in text
    assert "    acc = nl.ndarray((128, 2, 128), dtype=nl.float32, buffer=nl.psum)\n" in text
    assert "mod_alloc" not in text and "compiler" not in text  # the aliases went with their last use
    assert "def bank_of(idx, pdim_size, fdim_size):" in text  # a plain function stays
    assert sorted(c["line"] for c in result.changes if c["step"].startswith("buffer=nl.")) == [23, 24, 38, 50]
    # the nested function reads the enclosing kernel's folded tensors: its accesses fold too; a parameter of the
    # same name is its own
    assert "        nisa.nc_matmul(dst=acc[:, i], stationary=x[:, nl.ds(i * 128, 128)], moving=eye)\n" in text
    assert "        res[:, i] = nl.add(acc[:, i], 1.0, dtype=nl.float32)\n" in text  # acc's dtype is not known in step
    assert "    def shadow(res):\n        return res[0:128, 0:128]\n" in text
    assert "src=shadow(res[:, i])" in text

    old, new = load_task(Path(result.backup)), load_task(path)
    a, ident = new.cases()[0]
    before = old.module.nki.simulate_kernel(old.kernels["rotate_kernel"], a, ident)
    after = new.module.nki.simulate(new.kernels["rotate_kernel"])(a, ident)
    np.testing.assert_array_equal(after, before)
    blocks = [a[:, i * 128 : (i + 1) * 128].T * 2 for i in range(8)]  # stationary.T @ identity
    np.testing.assert_allclose(after, np.concatenate(blocks[::-1], axis=1), rtol=1e-5, atol=1e-5)
