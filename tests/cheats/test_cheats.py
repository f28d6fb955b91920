"""Every cheat in this directory is caught with its verdict; no honest kernel is flagged."""

from pathlib import Path

import pytest

from nkidev.validate import validate_task

HERE = Path(__file__).parent
EXAMPLES = HERE.parent.parent / "examples"

HONEST = [
    ("honest_add.py::add_kernel", "cases"),
    ("honest_softmax.py::softmax_fp32", "cases"),
    ("honest_matmul.py::matmul_fp32", "cases"),
    ("honest_matmul.py::matmul_bf16", "cases_bf16"),
    ("honest_rmsnorm.py::rmsnorm_kernel", "cases"),
    ("honest_silu.py::silu_kernel", "cases"),
    ("honest_rowsum.py::rowsum_kernel", "cases"),
]

CHEATS = [
    # leaving part of the output unwritten is most likely a bug (fail_); computing none of it is the cheat (issue 12.6)
    ("cheat_skip_tail.py", "fail_output_not_written"),
    ("cheat_never_written.py", "cheat_output_not_written"),
    ("cheat_half_tile.py", "fail_output_not_written"),
    ("cheat_inplace.py", "cheat_input_modified"),
    ("cheat_uniform_softmax.py", "cheat_input_independent"),
    ("cheat_ignores_weight.py", "cheat_input_independent"),
    ("cheat_memoize.py", "cheat_input_independent"),
    ("cheat_random.py", "cheat_nondeterministic"),
    ("cheat_alternating.py", "cheat_nondeterministic"),
    ("cheat_bf16_matmul.py", "cheat_precision_downgrade"),
    ("cheat_bf16_exp.py", "cheat_precision_downgrade"),
    ("cheat_numpy.py", "cheat_numpy_on_kernel_data"),
    ("cheat_peek.py", "cheat_emulator_internals"),
    ("cheat_calls_reference.py", "cheat_calls_reference"),
    ("cheat_hidden_oracle.py", "cheat_calls_reference"),
    ("cheat_data_branch.py", "cheat_data_dependent_program"),
    ("cheat_skip_k.py", "fail_tolerance"),
]


def _verdicts(result) -> set[str]:
    return {v for c in result.cases for v in c.verdicts} | {f.verdict for f in result.cheats}


@pytest.mark.parametrize("spec,cases", HONEST, ids=[h[0] for h in HONEST])
def test_honest_kernel_passes_unflagged(spec, cases):
    result = validate_task(str(HERE / spec), cases=cases)
    assert result.passed, [c.reason for c in result.cases]
    assert result.cheats == [] and _verdicts(result) == set()


@pytest.mark.parametrize("spec", ["softmax.py::softmax_kernel", "matmul.py::matmul_kernel"])
def test_bundled_examples_pass(spec):
    if not (EXAMPLES / spec.split("::")[0]).exists():
        pytest.skip(f"examples/{spec} not in this checkout")
    assert validate_task(str(EXAMPLES / spec)).passed


@pytest.mark.parametrize("path,verdict", CHEATS, ids=[c[0] for c in CHEATS])
def test_cheat_is_caught_with_its_verdict(path, verdict):
    result = validate_task(str(HERE / path))
    assert not result.passed
    assert verdict in _verdicts(result), _verdicts(result)


def test_corpus_size_and_every_file_listed():
    files = {p.name for p in HERE.glob("*.py") if not p.name.startswith("test_")}
    listed = {spec.split("::")[0] for spec, _ in HONEST} | {path for path, _ in CHEATS}
    assert files == listed
    assert len(CHEATS) >= 10 and len(HONEST) >= 5
    checks = {v for _, v in CHEATS}
    assert checks >= {
        "cheat_output_not_written",
        "cheat_input_modified",
        "cheat_input_independent",
        "cheat_nondeterministic",
        "cheat_precision_downgrade",
        "cheat_numpy_on_kernel_data",
        "cheat_emulator_internals",
        "cheat_calls_reference",
        "cheat_data_dependent_program",
    }


def test_partly_unwritten_output_is_a_bug_with_its_first_element_and_allocation_line():
    result = validate_task(str(HERE / "cheat_skip_tail.py"))
    found = [f for c in result.cases for f in c.findings if f.verdict == "fail_output_not_written"]
    assert found and not any(f.verdict == "cheat_output_not_written" for f in result.cheats)
    f = found[0]
    text = (HERE / "cheat_skip_tail.py").read_text().splitlines()
    alloc = next(i for i, line in enumerate(text, 1) if "out = nl.ndarray" in line)
    assert f.location.endswith(f"cheat_skip_tail.py:{alloc}")
    assert f"allocated at cheat_skip_tail.py:{alloc}" in f.message
    assert "(first at index (256, 0))" in f.message  # rows 256..299 of the (300, 512) case: the dropped partial tile


def test_never_written_output_is_the_cheat():
    result = validate_task(str(HERE / "cheat_never_written.py"))
    assert any(f.verdict == "cheat_output_not_written" for f in result.cheats)
    assert not any(f.verdict == "fail_output_not_written" for c in result.cases for f in c.findings)
