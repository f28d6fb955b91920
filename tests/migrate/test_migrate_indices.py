"""`nkidev migrate` on legacy index constructs: index variables assigned on the paths of an if, sums and non-literal
scales of index expressions, and block dims folded into the free dims. Each rewrite is checked as text and run old
against new on the file's cases (the legacy front end vs the current API); what cannot be rewritten exactly is a
manual step at its line and is left in place."""

from pathlib import Path

import numpy as np
import pytest

from nkidev.migrate import migrate_source

from .legacy_pair import migrated

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"


def run(task, kernel: str, *args):
    return task.module.nki.simulate(task.kernels[kernel])(*args)


def manual(source: str) -> list[tuple[int, str, str]]:
    _, _, notes = migrate_source(source, "k.py")
    return [(n.line, n.construct, n.step) for n in notes if n.kind == "manual"]


def test_index_ranges_assigned_in_if_branches_follow_the_path_taken(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_branch_indices.py")
    assert result.manual == []
    rows = result.validation["kernels"]
    assert {r["status"] for r in rows} == {"identical"} and len(rows) == 6, rows  # 3 kernels x 2 widths
    # the length (or start) of each definition goes with it; the accesses after the if read it
    assert "    if x.shape[1] > 256:\n        i_f_size = 512\n    else:\n        i_f_size = 256\n" in text
    assert "src=x[0:128, 0:i_f_size]" in text
    assert "    i_f_size = 128\n    n_tiles = 1\n    if x.shape[1] < 512:\n        i_f_size = 64\n" in text
    assert "src=nl.load(x[0:128, k * 64:k * 64 + i_f_size])" in text
    assert "i_p_start = 64" in text and "i_p_start = 32" in text and "x[i_p_start:i_p_start + 64, k * 64:k * 64 + 64]" in text
    assert "nl.arange" not in text and "_start = 0\n    i_f" not in text  # unused companions are dropped
    for x in (c[0] for c in new.cases()):
        wide = x.shape[1] > 256
        np.testing.assert_allclose(run(new, "branch_width_kernel", x), np.exp(x), rtol=1e-6)  # 512 or 256 columns
        np.testing.assert_array_equal(run(new, "shrink_kernel", x), x[:, :128])
        np.testing.assert_array_equal(run(new, "offset_kernel", x), x[64:128, :128] if wide else x[32:96, :128])


BRANCH_AXES = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def k(x, flag):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    if flag:
        i = nl.arange(128)[:, None]
        mask = i < 100
    else:
        i = nl.arange(128)[None, :]
        mask = i < 50
    j = nl.arange(128)[None, :]
    t = nl.load(x[i, j])
    nl.store(out[i, j], value=t, mask=mask)
    if flag:
        only_here = nl.arange(64)[None, :]
    u = nl.load(x[0, only_here])
    return out
"""


def test_an_index_whose_shape_depends_on_the_path_is_a_manual_step_at_each_use():
    notes = manual(BRANCH_AXES)
    by_line = {line: (construct, step) for line, construct, step in notes if "rewrite this index" in step or "by hand" in step}
    assert by_line[15][0] == "x[i, j]" and "i has a different index shape on the paths through the if at line 8" in by_line[15][1]
    assert "bound the slices by the mask by hand" in by_line[16][1] and "through the if at line 8" in by_line[16][1]
    assert by_line[19][0] == "x[0, only_here]" and "only_here is an index only on some paths through the if at line 17" in by_line[19][1]
    new, _, _ = migrate_source(BRANCH_AXES, "k.py")
    assert "src=x[i, j]" in new and "if mask" not in new  # left in place, never guarded by the mask as a condition


def test_sums_and_non_literal_scales_of_indices_become_exact_slices(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_index_sums.py")
    assert result.manual == []
    assert {r["status"] for r in result.validation["kernels"]} == {"identical"}, result.validation
    assert "src=x[j * 64:j * 64 + 64, k * 64:k * 64 + 64]" in text
    assert "x[0:128, (stride - 1):(stride - 1) + stride * (64 - 1) + 1:stride]" in text
    assert "x[0:128, 1:1 + 2 * (x.shape[1] // 2 - 1) + 1:2]" in text  # stops right after the last column, inside x
    for x in (c[0] for c in new.cases()):
        np.testing.assert_array_equal(run(new, "column_tiles_kernel", x), x * 3.0)
        stride = x.shape[1] // 64
        np.testing.assert_array_equal(run(new, "strided_kernel", x), x[:, stride - 1 :: stride])
        np.testing.assert_array_equal(run(new, "odd_columns_kernel", x), x[:, 1::2])
        np.testing.assert_array_equal(run(new, "partial_tiles_kernel", x)[:, :200], -x[:, :200])  # 200 columns at most
    # a mask of mask variables is their conjunction, not an `if both:` around an unbounded copy
    assert "if both" not in text and "x[t * 96:t * 96 + min(96, x.shape[0] - (t * 96)), 0:min(200, x.shape[1])]" in text


NOT_A_MASK_OR_AN_INDEX = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def k(x, ids, mask=None):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(x[i_p, i_f], mask=mask)
    rows = ids[i_p, 0]
    g = nl.load(x[rows, i_f])
    nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < 100))
    return out
"""


def test_a_mask_parameter_and_tensor_values_used_as_an_index_stay_manual_steps():
    notes = {(line, construct): step for line, construct, step in manual(NOT_A_MASK_OR_AN_INDEX)}
    assert "mask term mask is not a comparison of loop variables or a known mask" in notes[(10, "nl.load(x[i_p, i_f], mask=mask)")]
    assert "rows = ids[i_p, 0] holds tensor values (an indirect index)" in notes[(12, "x[rows, i_f]")]
    assert "a masked store of a computed value" in notes[(13, "nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < 100))")]
    new, _, _ = migrate_source(NOT_A_MASK_OR_AN_INDEX, "k.py")
    assert "if mask" not in new and "src=x[rows, i_f]" in new  # never skipped for mask=None, never sliced as a number


def test_block_dims_fold_into_the_free_dims_with_the_same_outputs(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_block_dims.py")
    assert result.manual == [], result.manual
    assert {r["status"] for r in result.validation["kernels"]} == {"identical"}, result.validation
    assert "tiles = nl.ndarray((128, n_blocks, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)" in text
    assert "dst=tiles[0:128, b, 0:x.shape[1]]" in text and "nl.add(tiles[:, b][0:128, 0:x.shape[1]], tiles[:, n_blocks - 1])" in text
    assert "grid = nl.zeros((128, 2, 2, 64)" in text and "dst=grid[:, r, c]" in text and "grid[:, 1 - r, 1 - c, ...]" in text
    assert "acc = nl.ndarray((128, 2, 64), dtype=nl.float32, buffer=nl.psum)" in text and "nisa.nc_matmul(dst=acc[:, n]" in text
    assert "par_dim" not in text.split('"""')[2]  # the code after the docstring
    folded = [c for c in result.changes if "block dims folded" in c["step"]]
    assert [c["line"] for c in folded] == [17, 30, 43]
    (x,) = new.cases()[0]
    last = x[128:]
    np.testing.assert_array_equal(run(new, "row_blocks_kernel", x), np.concatenate([x[:128] + last, last + last]))
    swapped = x.reshape(2, 128, 2, 64)[::-1, :, ::-1, :].reshape(256, 128)  # block (r, c) from block (1 - r, 1 - c)
    np.testing.assert_array_equal(run(new, "grid_blocks_kernel", x), 2 * swapped)
    np.testing.assert_allclose(run(new, "psum_blocks_kernel", x), x.T @ x, rtol=1e-4, atol=1e-3)


BLOCKS_LEFT = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


def helper(t):
    return t


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    whole = nl.ndarray((2, nl.par_dim(128), 64), dtype=x.dtype, buffer=nl.sbuf)
    sliced = nl.ndarray((2, nl.par_dim(128), 64), dtype=x.dtype, buffer=nl.sbuf)
    for b in nl.affine_range(2):
        whole[b] = nl.load(x[b * 128 : b * 128 + 128, 0:64])
        sliced[b] = nl.load(x[b * 128 : b * 128 + 128, 0:64])
    helper(whole)
    nl.store(out[0:128, 0:64], value=sliced[0:1, :, :])
    return out
"""


def test_block_tensors_used_whole_or_sliced_on_their_blocks_stay_manual_steps_naming_the_use():
    notes = manual(BLOCKS_LEFT)
    blocks = {line: step for line, _, step in notes if "block dims" in step}
    assert (
        "(not folded automatically: line 17: whole is passed whole to helper, whose parameter t does not fold in helper "
        "(line 6: t is used whole here (not as one block)))"
    ) in blocks[12]
    assert "(not folded automatically: line 18: sliced[0:1, :, :] slices the block dims)" in blocks[13]
    new, _, _ = migrate_source(BLOCKS_LEFT, "k.py")
    assert "whole = nl.ndarray((2, 128, 64)" in new and "whole[b]" in new  # untouched apart from par_dim


LOOP_REDEFINES = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    for r in nl.affine_range(2):
        first = nl.load(x[i_p, 0])
        nl.store(out[i_p, r * 64 + i_f], value=nl.load(x[i_p, r * 64 + i_f]))
        i_f = nl.arange(32)[None, :]
        i_p = nl.arange(128)[:, None]
    return out
"""


def test_an_index_a_loop_body_redefines_differently_is_a_manual_step_before_the_redefinition():
    notes = manual(LOOP_REDEFINES)
    steps = {(line, construct): step for line, construct, step in notes}
    # from the second iteration on, i_f is the 32-wide redefinition: no one slice is right for both
    assert "i_f is assigned again later in the body of the loop at line 10" in steps[(12, "out[i_p, r * 64 + i_f]")]
    assert "i_f is assigned again later in the body of the loop at line 10" in steps[(12, "x[i_p, r * 64 + i_f]")]
    new, _, _ = migrate_source(LOOP_REDEFINES, "k.py")
    assert "src=x[0:128, 0:1]" in new  # i_p is defined the same way on every iteration: rewritten


def test_block_tensors_passed_whole_to_helpers_fold_with_the_helpers_parameters(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_block_helpers.py")
    assert result.manual == [], result.manual
    assert {r["status"] for r in result.validation["kernels"]} == {"identical"}, result.validation
    assert "tiles = nl.ndarray((128, n_blocks, 64), dtype=x.dtype, buffer=nl.sbuf)" in text
    assert "grid = nl.ndarray((128, 2, 2, 32), dtype=x.dtype, buffer=nl.sbuf)" in text
    assert "parts, n_blocks, width = tiles.shape" in text  # one name per dim: in the folded order
    assert "nisa.dma_copy(dst=tiles[0:parts, b, 0:width], src=x[b * 128:b * 128 + parts, 0:width])" in text
    assert "for b in range(tiles.shape[1]):" in text  # the block dim is dim 1 once folded; the last dim stays -1
    assert "tiles[:, b] = nl.multiply(tiles[:, b], factor * tiles.shape[-1] / 64)" in text
    assert "tiles[:, last] = nl.add(tiles[:, last], tiles[:, 0])" in text  # passed on by keyword
    assert "src=grid[:, r, c])" in text  # store_grid, two block dims
    assert "load_blocks(x, tiles)" in text and "add_first_to_last(last=n_blocks - 1, tiles=tiles)" in text
    params = sorted((c["line"], c["construct"]) for c in result.changes if c["construct"].startswith("parameter"))
    assert params == [
        (10, "parameter tiles of load_blocks"),
        (18, "parameter tiles of scale_blocks"),
        (24, "parameter tiles of add_first_to_last"),
        (28, "parameter grid of store_grid"),
    ]
    (x,) = new.cases()[0]
    blocks = [3 * x[b * 128 : b * 128 + 128] for b in range(3)]
    blocks[2] = blocks[2] + blocks[0]
    np.testing.assert_array_equal(run(new, "helper_blocks_kernel", x), np.concatenate(blocks))
    swapped = np.concatenate([x[:256, 32:64], x[:256, 0:32]], axis=1)  # column block c from block 1 - c
    np.testing.assert_array_equal(run(new, "helper_grid_kernel", x), swapped)


HELPERS_LEFT = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


def fill(t, n):
    for b in nl.affine_range(n):
        t[b] = nl.zeros((128, 64), dtype=nl.float32)


def sized(t):
    shape = t.shape
    return shape[0]


def inner(t):
    t[0] = nl.zeros((128, 64), dtype=nl.float32)


def decorated_use(t):
    inner(t)


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    mixed = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    plain = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    fill(mixed, 2)
    fill(plain, 1)
    shaped = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    sized(shaped)
    ranks = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    grid = nl.ndarray((2, 2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    inner(ranks)
    decorated_use(grid)
    return out
"""


def test_block_tensors_passed_to_helpers_that_cannot_take_them_folded_stay_manual_steps_naming_why():
    notes = manual(HELPERS_LEFT)
    blocks = {line: step for line, _, step in notes if "block dims" in step}
    assert sorted(blocks) == [26, 30, 32, 33]
    # fill(plain, 1) passes a plain tile where fill(mixed, 2) passes a block tensor: fill's t cannot be folded
    assert "line 28: mixed is passed whole to fill, whose parameter t is passed something else than a block tensor at line 29" in blocks[26]
    assert "line 31: shaped is passed whole to sized, whose parameter t does not fold in sized (line 11: t is used whole" in blocks[30]
    # inner gets a one-block-dim tensor from k and a two-block-dim one through decorated_use
    assert "parameter t is passed block tensors of different block dims or ranks" in blocks[32]
    assert "parameter t is passed block tensors of different block dims or ranks" in blocks[33]
    new, _, _ = migrate_source(HELPERS_LEFT, "k.py")
    assert "mixed = nl.ndarray((2, 128, 64)" in new and "t[b] = nl.zeros" in new  # left as it was, apart from par_dim


def test_a_helper_the_file_also_uses_as_a_value_does_not_fold():
    folds = HELPERS_LEFT.replace("    fill(plain, 1)\n", "    fill(mixed, 1)\n")  # every call of fill passes a block tensor
    folded, _, _ = migrate_source(folds, "k.py")
    assert "mixed = nl.ndarray((128, 2, 64)" in folded and "t[:, b] = nl.zeros" in folded
    used_as_a_value = folds.replace("@nki.jit", "fill_too = fill\n\n\n@nki.jit")
    blocks = {line: step for line, _, step in manual(used_as_a_value) if "block dims" in step}
    assert "line 31: mixed is used whole here (not as one block)" in blocks[29]  # `fill_too = fill`: calls unseen
    left, _, _ = migrate_source(used_as_a_value, "k.py")
    assert "mixed = nl.ndarray((2, 128, 64)" in left and "t[b] = nl.zeros" in left


ANOTHER_KERNEL_PASSES_A_TILE = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


def fill(t):
    t[0] = nl.zeros((128, 64), dtype=nl.float32)


@nki.jit
def blocks_kernel(x):
    blocked = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    fill(blocked)
    return x


@nki.jit
def tile_kernel(x):
    tile = nl.ndarray((4, 128), dtype=nl.float32, buffer=nl.sbuf)
    fill(tile)
    return x
"""


def test_a_helper_that_another_kernel_passes_a_plain_tile_does_not_fold():
    blocks = {line: step for line, _, step in manual(ANOTHER_KERNEL_PASSES_A_TILE) if "block dims" in step}
    assert "parameter t is passed something else than a block tensor at line 19" in blocks[11]
    new, _, _ = migrate_source(ANOTHER_KERNEL_PASSES_A_TILE, "k.py")
    assert "t[0] = nl.zeros" in new and "(2, 128, 64)" in new


def test_loop_reduce_becomes_tensor_tensor_into_its_destination_with_the_same_outputs(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_loop_reduce.py")
    assert result.manual == [], result.manual
    assert {r["status"] for r in result.validation["kernels"]} == {"identical"}, result.validation
    assert "nl.loop_reduce" not in text.split('"""')[2]  # the code after the docstring
    assert "nisa.tensor_tensor(dst=acc[:, n, :], data1=acc[:, n, :], data2=_nc_matmul_1, op=nl.add)" in text
    assert "nisa.tensor_tensor(dst=best, data1=best, data2=block, op=nl.maximum)" in text  # np.max, positional
    # dtype=nl.bfloat16 into a float32 tile: the legacy result is rounded to bfloat16 before it is stored
    assert "_loop_reduce_2 = nl.ndarray(acc[...].shape, dtype=nl.bfloat16, buffer=nl.sbuf)" in text
    assert "nisa.tensor_tensor(dst=_loop_reduce_2, data1=acc[...], data2=block, op=nl.add)" in text
    assert "nisa.tensor_copy(dst=acc[...], src=_loop_reduce_2)" in text
    lines = sorted(c["line"] for c in result.changes if c["construct"].startswith("nl.loop_reduce"))
    assert lines == [19, 30, 41]
    x, y = new.cases()[0]
    expected = np.stack([x.T @ y[:, 0:64], x.T @ y[:, 64:128]], axis=1)  # out[:, n] sums x_k.T @ y_k over k
    np.testing.assert_allclose(run(new, "sum_over_k_kernel", x, y), expected, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(run(new, "max_over_blocks_kernel", x, y), y[:128].reshape(128, 4, 64).max(axis=1))


LOOP_REDUCE_LEFT = """\
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    fresh = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    kept = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    masked = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    i_p = nl.arange(128)[:, None]
    for b in nl.affine_range(2):
        t = nl.load(x[0:128, b * 64 : b * 64 + 64])
        fresh[...] = nl.loop_reduce(t, op=np.add, loop_indices=[b])
        before = kept
        kept = nl.loop_reduce(t, op=np.add, loop_indices=[b])
        masked[...] = nl.loop_reduce(t, op=np.add, loop_indices=[b], mask=(i_p < 64))
    nl.store(out, value=nl.add(nl.add(fresh, before), nl.add(kept, masked)))
    return out
"""


def test_loop_reduce_into_a_tile_that_may_not_hold_values_or_that_has_an_alias_or_a_mask_stays_a_manual_step():
    notes = {line: step for line, construct, step in manual(LOOP_REDUCE_LEFT) if construct.startswith("nl.loop_reduce")}
    assert sorted(notes) == [15, 17, 18]
    assert "fresh[...] is not a tile allocated here with nl.zeros / nl.ones / nl.full" in notes[15]  # a fresh nl.ndarray
    assert "kept is also read whole here other than as an argument" in notes[17]  # `before = kept` keeps the old tile
    assert notes[18].startswith("with a mask")
    new, _, _ = migrate_source(LOOP_REDUCE_LEFT, "k.py")
    assert new.count("nl.loop_reduce(") == 3  # each left as it was


LEFTOVER_INDEX = """\
import neuronxcc.nki.language as nl
from neuronxcc.nki.language import par_dim
from neuronxcc import nki


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    nl.store(out[i_p, i_f], value=nl.load(x[i_p, i_f]))
    print(nl.arange(8))
    return out
"""


def test_an_index_expression_left_in_the_code_is_a_manual_step_at_its_line_in_the_original_file():
    # the migration drops the par_dim import and the i_p / i_f definitions: the migrated file's line would be 3 less
    notes = [(line, construct) for line, construct, step in manual(LEFTOVER_INDEX) if "expression is left" in step]
    assert notes == [(12, "print(nl.arange(8))")]
    new, _, _ = migrate_source(LEFTOVER_INDEX, "k.py")
    moved = [n for n, text in enumerate(new.splitlines(), 1) if text.strip() == "print(nl.arange(8))"]
    assert moved and moved != [12]  # in the migrated file the line really moved


NUMPY_ARANGE = """\
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


def cases():
    q = np.arange(128)[:, None]
    grid = np.mgrid[0:128, 0:64]
    return [((q + grid[1]).astype(np.float32),)]
"""


def test_numpy_arange_and_mgrid_in_the_file_are_not_left_index_expressions():
    # the file's NumPy test data (np.arange, np.mgrid) were manual 'nl.arange / nl.mgrid expression is left' notes
    assert manual(NUMPY_ARANGE) == []
    new, _, _ = migrate_source(NUMPY_ARANGE, "k.py")
    assert "    q = np.arange(128)[:, None]\n    grid = np.mgrid[0:128, 0:64]\n" in new
    assert manual(NUMPY_ARANGE.replace("nl.store(out, value=nl.load(x))", "nl.store(out, value=nl.load(x))\n    print(nl.mgrid[0:2])")) == [
        (10, "print(nl.mgrid[0:2])", "an nl.arange / nl.mgrid expression is left: rewrite it as slices or an .ap() pattern")
    ]


def test_accesses_that_add_index_variables_become_ap_patterns_with_the_same_outputs(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_index_add_vars.py")
    assert result.manual == [], result.manual
    rows = result.validation["kernels"]
    assert [(r["kernel"], r["status"]) for r in rows] == [
        ("window_max_kernel", "identical"),
        ("swap_pairs_kernel", "identical"),
        ("mirror_kernel", "identical"),
    ], rows
    # a sliding window read from HBM: one [step, num] pair per mgrid axis, the window axis stepping 1 like the position
    assert "    windows = nl.ndarray((128, 62, 3), dtype=x.dtype, buffer=nl.sbuf)\n" in text
    assert "nisa.dma_copy(dst=windows, src=x.ap(pattern=[[x.shape[1], 128], [1, 62], [1, 3]], offset=0))" in text
    # an index sum inline, and one through a name (`i_dst = 2 * i_y + 1 - i_x`, a store target: `.ap(...)[...] =`)
    assert "nisa.dma_copy(dst=pairs[0:128, 0:32, 0:2], src=x.ap(pattern=[[x.shape[1], 128], [2, 32], [1, 2]], offset=0))" in text
    assert "swapped.ap(pattern=[[swapped.shape[1], 128], [2, 32], [-1, 2]], offset=1)[...] = nl.copy(pairs[0:128, 0:32, 0:2])" in text
    # `63 - i_f`: a negative step from the last column
    assert "nisa.tensor_copy(dst=flipped, src=tile.ap(pattern=[[tile.shape[1], 128], [-1, 64]], offset=63))" in text
    body = text.split('"""')[2]  # the code after the docstring
    assert "nl.mgrid" not in body and "i_dst" not in body and "nl.arange" not in body  # the index definitions are gone
    lines = sorted(c["line"] for c in result.changes if c["step"].startswith("an index sum as an .ap()"))
    assert lines == [15, 26, 29, 40]
    (x,) = new.cases()[0]
    windows = np.stack([x[:, k : k + 62] for k in range(3)], axis=2)
    np.testing.assert_array_equal(run(new, "window_max_kernel", x), windows.max(axis=2))
    np.testing.assert_array_equal(run(new, "swap_pairs_kernel", x), x.reshape(128, 32, 2)[:, :, ::-1].reshape(128, 64))
    np.testing.assert_array_equal(run(new, "mirror_kernel", x), x[:, ::-1])


SUM_LEFT = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def k(x):
    out = nl.ndarray((128, 60), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_w, i_k = nl.mgrid[0:128, 0:60, 0:4]
    t = nl.load(x[0:132, 0:60])
    u = nl.copy(t[i_p + i_k, i_w])
    i_z = nl.arange(60)[:, None]
    i_f = nl.arange(128)[None, :]
    nl.store(out[i_f * 0, i_z], value=nl.max(u, axis=[2]))
    return out
"""


def test_an_on_chip_index_sum_on_the_partition_axis_or_a_store_repeating_elements_stays_a_manual_step_at_its_line():
    notes = {line: step for line, construct, step in manual(SUM_LEFT) if "index" in step}
    assert sorted(notes)[:2] == [10, 13], notes
    assert "the partition axis is not the first dim's own index" in notes[10]  # an SBUF tile: partitions do not stride
    assert "repeats elements along index axis 1 (a step 0)" in notes[13]  # a transposed store writing one row 128 times
    new, _, _ = migrate_source(SUM_LEFT, "k.py")
    assert "t[i_p + i_k, i_w]" in new and "out[i_f * 0, i_z]" in new  # each left as it was


def test_hbm_accesses_by_index_sums_transposed_indices_and_masks_become_ap_patterns_with_the_same_outputs(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_hbm_patterns.py")
    assert result.manual == [], result.manual
    rows = result.validation["kernels"]
    assert [(r["kernel"], r["status"]) for r in rows] == [
        ("row_window_kernel", "identical"),
        ("pooled_rows_kernel", "identical"),
        ("transpose_kernel", "identical"),
        ("window_pool_kernel", "identical"),
        ("free_transpose_kernel", "identical"),
    ], rows
    # a sum on the partition axis of an HBM source (no partitions there): rows i_p + i_k, one pair per mgrid axis
    assert "nisa.dma_copy(dst=t, src=x.ap(pattern=[[x.shape[1], 128], [1, 60], [x.shape[1], 4]], offset=0))" in text
    # a mask on a summed access shortens its axis, in the pattern and in the tile written
    assert "nisa.dma_copy(dst=u[:, 0:min(60, 50), :], src=x.ap(pattern=[[x.shape[1], 128], [1, min(60, 50)], [1, 4]], offset=0))" in text
    bound = "min(128, h - 2 - (tile * 128))"
    assert (
        f"nisa.dma_copy(dst=rows[0:{bound}, :, :], src=x.ap(pattern=[[x.shape[1], {bound}], [1, w], [x.shape[1], 3]], "
        "offset=((tile * 128)) * (x.shape[1])))"
    ) in text
    # `i_h = tile * 128 + i_h` read only its own earlier definition: both go with the accesses
    body = text.split('"""')[2]
    assert "nl.mgrid" not in body and "nl.arange" not in body and "i_h" not in body and "i_o" not in body
    # transposed: the load's pattern steps 1 along the partitions, the store's destination likewise
    assert "nisa.dma_copy(dst=t, src=x.ap(pattern=[[1, 64], [x.shape[1], 128]], offset=0))" in text
    assert "nisa.dma_copy(dst=back.ap(pattern=[[1, 64], [back.shape[1], 128]], offset=0), src=t)" in text
    (x,) = new.cases()[0]
    win = np.stack([x[k : k + 128, 0:50] for k in range(4)], axis=2) + np.stack([x[0:128, k : k + 50] for k in range(4)], axis=2)
    np.testing.assert_array_equal(run(new, "row_window_kernel", x)[:, 0:50], win.max(axis=2))
    pooled = np.maximum(np.maximum(x[0:198], x[1:199]), x[2:200])
    np.testing.assert_array_equal(run(new, "pooled_rows_kernel", x), pooled)
    out, back = run(new, "transpose_kernel", x[0:128])
    np.testing.assert_array_equal(out, 2 * x[0:128].T)
    np.testing.assert_array_equal(back, x[0:128])
    # nl.max over axes 1 and 3 of a pattern: the current API reduces the last axes, so their pairs move last
    assert (
        "src=nl.max(tile.ap(pattern=[[tile.shape[1] * tile.shape[2], 128], [1, 62], [tile.shape[2], 2], [1, 3]], offset=0), axis=[2, 3])"
    ) in text
    assert [c["line"] for c in result.changes if "reduced axes' pattern pairs moved last" in c["step"]] == [55]
    window = np.stack([np.stack([x[r : r + 128, k : k + 62] for k in range(3)], axis=2) for r in range(2)], axis=2)
    np.testing.assert_array_equal(run(new, "window_pool_kernel", x), window.max(axis=(2, 3)))
    # an SBUF tile whose free axes are read in the other order: the partition pair stays first, the others swap
    pattern = "[[tile.shape[1] * tile.shape[2], 128], [1, 16], [tile.shape[2], 4]]"
    assert f"swapped[0:128, 0:16, 0:4] = nl.copy(tile.ap(pattern={pattern}, offset=0))" in text
    expected = x[0:128, 0:64].reshape(128, 4, 16).transpose(0, 2, 1).reshape(128, 64)
    np.testing.assert_array_equal(run(new, "free_transpose_kernel", x), expected)


def test_an_index_chosen_by_a_conditional_expression_slices_the_one_chosen_with_the_same_outputs(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_conditional_index.py")
    assert result.manual == [], result.manual
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("swap_rows_kernel", "identical"),
        ("swap_rows_kernel", "identical"),
    ], result.validation
    # what differs between the two choices (a step, a start) is chosen by the same condition, once
    assert (
        "    i_even_step = 1 if half else 2\n    i_odd_start = d // 2 if half else 1\n    i_odd_step = 1 if half else i_even_step\n" in text
    )
    assert "nisa.dma_copy(dst=e, src=x[0:i_even_step * (d // 2 - 1) + 1:i_even_step, 0:s])" in text
    assert "dst=out[i_odd_start:i_odd_start + i_odd_step * (d // 2 - 1) + 1:i_odd_step, 0:s], src=e)" in text
    assert "if half else i_up" not in text and "nl.arange" not in text
    assert sorted(c["line"] for c in result.changes if c["step"].startswith("an index chosen by a condition")) == [15, 16]
    (x,) = new.cases()[0]
    pairs = x.reshape(64, 2, 32)[:, ::-1].reshape(128, 32)
    halves = np.concatenate([x[64:], x[:64]])
    np.testing.assert_array_equal(run(new, "swap_rows_kernel", x), halves)
    np.testing.assert_array_equal(new.module.nki.simulate(new.kernels["swap_rows_kernel"])(x, half=False), pairs)
