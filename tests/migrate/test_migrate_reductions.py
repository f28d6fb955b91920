"""`nkidev migrate` on reductions over free axes that are not a tile's last ones (issue 15): the rank of a tile
where its source shows it (ranks.py), the reduced axes moved last through an access pattern for sum / prod / mean
as for max / min (keepdims=True reshaped back), an operand that is an expression bound to a name first, and a
manual note where the rank is not shown. Also the legacy placement helpers nki-samples' attention_fwd v8a / v9 / v11 use
(a helper returning the modular allocator's placement, a nki.compiler pass decorator, shared_constant's dtype=,
a loop directive).
Our own fixtures."""

from pathlib import Path

import libcst as cst
import numpy as np
import pytest

from nkidev.migrate import migrate_source
from nkidev.migrate.ranks import TileRanks

from .legacy_pair import migrated

pytest.importorskip("libcst")

FIXTURES = Path(__file__).parent / "fixtures"


def run(task, kernel: str, *args):
    return task.module.nki.simulate(task.kernels[kernel])(*args)


def test_sum_mean_prod_and_max_over_a_middle_axis_move_it_last_with_the_same_bits(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_middle_reductions.py")
    assert result.manual == [], result.manual
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("reshaped_sums_kernel", "identical"),
        ("grid_max_kernel", "identical"),
        ("stacked_kernel", "identical"),
    ], result.validation
    pattern = "[[cube.shape[1] * cube.shape[2], cube.shape[0]], [1, cube.shape[2]], [cube.shape[2], cube.shape[1]]]"
    assert f"    total = nl.sum(cube.ap(pattern={pattern}, offset=0), axis=[2])\n" in text
    assert f"    avg = nl.mean(cube.ap(pattern={pattern}, offset=0), axis=[2])\n" in text
    # an operand that is an expression: bound to a name first, so that the reduction reads it through a pattern
    assert "    _reduced_1 = nl.multiply(cube, 0.5, dtype=nl.float32)\n    halves = nl.prod(_reduced_1.ap(" in text
    # keepdims=True: the 1-dim the current reduction leaves last goes back where the reduced axis was
    assert "axis=[2], keepdims=True).reshape((block.shape[0], 1, block.shape[2]))" in text
    moved = sorted(c["line"] for c in result.changes if "reduced axes' pattern pairs moved last" in c["step"])
    assert moved == [16, 17, 18, 30, 44, 45]
    (x,) = new.cases()[0]
    cube = x.reshape(128, 4, 16)
    got = run(new, "reshaped_sums_kernel", x)
    np.testing.assert_allclose(got[:, 0:16], cube.sum(axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[:, 16:32], cube.mean(axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[:, 32:48], (cube * 0.5).prod(axis=1), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(run(new, "grid_max_kernel", x), cube.max(axis=1))
    halves = [x[:, 32 * i : 32 * i + 32].reshape(128, 4, 8) for i in range(2)]
    expected = np.concatenate([np.maximum(h.max(axis=1), h.sum(axis=1)) for h in halves], axis=1)
    np.testing.assert_allclose(run(new, "stacked_kernel", x), expected, rtol=1e-6, atol=1e-6)


UNKNOWN = """\
import neuronxcc.nki.language as nl
from neuronxcc import nki
from helpers import tile_of


@nki.jit
def k(x):
    n, f = x.shape
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = tile_of(x)
    u = nl.load(x[0:128, 0:64])
    nl.store(out, value=nl.add(nl.sum(t, axis=1), nl.sum(u, axis=1)))
    return out
"""


def test_a_reduction_over_axis_1_of_a_tile_whose_rank_is_not_shown_is_a_manual_step_at_its_line():
    new, _, notes = migrate_source(UNKNOWN, "k.py")
    manual = [(n.line, n.construct, n.step) for n in notes if n.kind == "manual"]
    assert [(line, construct) for line, construct, _ in manual] == [(12, "nl.sum(t, axis=1)")], manual
    assert "right only if t has 2 dims" in manual[0][2]
    assert "nl.sum(t, axis=1)" in new and "nl.sum(u, axis=1)" in new  # u is 2-d (x is): axis 1 is its last


RANKS = """\
def k(x, s):
    b, p, f = s.shape
    i_p = nl.arange(128)[:, None, None]
    i_a = nl.arange(4)[None, :, None]
    i_b = nl.arange(8)[None, None, :]
    for j in nl.affine_range(b):
        plane = nl.load(s[j])
        row = nl.load(s[j, 0])
        cols = nl.load(s[j, :, nl.ds(0, 4)])
        grid = nl.load(x[i_p, i_a * 8 + i_b])
        shifted = nl.exp(nl.subtract(grid, 1.0))
        folded = nl.ndarray((4, nl.par_dim(128), 8), dtype=nl.float32, buffer=nl.sbuf)
        either = plane if j else grid
    mixed = nl.load(s[1, :, :])
    mixed = nl.load(s[0])
    unknown = nl.load(x[0:128])
    declared: nt.tensor[128, 4, 8] = helper(x)
    shaped: nt.tensor[shape] = nl.load(s[0])
    return plane
"""


def test_tile_ranks_follow_slices_integer_indices_grids_shape_unpacking_and_element_wise_results():
    fn = cst.parse_module(RANKS).body[0]

    def target(node):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "nl":
            return "language", node.attr.value
        return None, None

    ranks = TileRanks(fn, target)
    names = ("s", "plane", "row", "cols", "grid", "shifted", "folded", "either", "mixed", "unknown", "declared", "shaped")
    found = {n: ranks.get(n) for n in names}
    assert found == {
        "s": 3,  # `b, p, f = s.shape`
        "plane": 2,  # s[j]: the integer drops a dim, the rest are whole
        "row": None,  # s[j, 0]: a 1-d tile, whose shape differs between the APIs
        "cols": 2,
        "grid": 3,  # a 3-d grid of aranges
        "shifted": 3,
        "folded": None,  # block dims fold, and the folded tensor's accesses change
        "either": None,  # a conditional expression: not followed
        "mixed": 2,  # both bindings are 2-d
        "unknown": None,  # x's rank is not shown: whether x[0:128] keeps more dims is not known
        "declared": 3,  # an nt.tensor annotation's dims
        "shaped": 2,  # a one-element annotation may name a shape tuple: the value's own rank
    }


def test_a_helper_returning_the_allocators_placement_a_compiler_pass_decorator_and_a_cast_constant_migrate(tmp_path):
    result, text, new = migrated(tmp_path, "legacy_placed_helpers.py")
    assert result.manual == [], result.manual
    assert [(r["kernel"], r["status"]) for r in result.validation["kernels"]] == [
        ("placed_transpose_kernel", "identical"),
        ("ordered_rounds_kernel", "identical"),
    ]
    assert "        return nl.sbuf\n" in text  # the helper's placement: storage of its own, as the legacy emulator's
    assert "buffer=nl.sbuf)\n    nisa.dma_copy(dst=x[...], src=a)" in text
    code = text.split('"""')[2]  # after the docstring
    assert "sb_mod" not in code and "compiler" not in code  # the alias went with its last use, the decorator too
    assert "    eye = nl.shared_constant(np.asarray(np.identity(128, dtype=np.int8)).astype(nl.float32))\n" in text
    steps = {c["line"]: c["step"] for c in result.changes}  # a decorator's note is at its function's line
    assert steps[29].startswith("removed: a legacy compiler-pass switch"), steps
    assert steps[31].startswith("nl.shared_constant(np.asarray("), steps
    assert sorted(line for line, step in steps.items() if "no direct allocator" in step) == [21, 34]
    # a loop kept in order by a directive: inside the current API's no_reorder block (a range takes no directives)
    assert "    with nl.no_reorder():\n        for i in range(3):  # three rounds, in order\n" in text
    assert steps[47].startswith("the loop inside `with nl.no_reorder():`"), steps
    (a,) = new.cases()[0]
    np.testing.assert_array_equal(run(new, "placed_transpose_kernel", a), a.T)
    np.testing.assert_array_equal(run(new, "ordered_rounds_kernel", a), 3 * a)


def test_a_loop_directive_other_than_no_reorder_is_a_manual_step_at_the_loop():
    source = (
        "import neuronxcc.nki.language as nl\nfrom neuronxcc import nki\n\n\n@nki.jit\ndef k(a):\n"
        "    for i in nl.affine_range(2, directives=nki.compiler.multi_buffer(2)):\n        pass\n    return a\n"
    )
    _, _, notes = migrate_source(source, "k.py")
    assert [(n.line, n.construct) for n in notes if n.kind == "manual"] == [(7, "directives=nki.compiler.multi_buffer(2)")]
