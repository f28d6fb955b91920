"""bench/corpus: the fetch step (against a local git repository, no network), the NKI version each repository
runs under, and the report's rates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus"
sys.path.insert(0, str(CORPUS))

import harness  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402
from repos import FetchError, Repo, fetch_one, nki_version_for  # noqa: E402

# A 0.6 kernel: nl.dynamic_range was removed in NKI 0.7 (as in nki-library's dynamic_elementwise_add).
DYNAMIC_RANGE_KERNEL = """
import numpy as np, nkidev
nkidev.emulate()
import nki, nki.isa as nisa, nki.language as nl

@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for _i in nl.dynamic_range(1):
        nisa.dma_copy(dst=out, src=x)
    return out

x = np.arange(512, dtype=np.float32).reshape(128, 4)
try:
    print("OK" if np.array_equal(nkidev.simulate(k)(x), x) else "WRONG")
except nkidev.errors.NkiError as e:
    print(e.name)
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _upstream(tmp_path: Path) -> tuple[Path, str, str]:
    up = tmp_path / "upstream"
    up.mkdir()
    _git("init", "-q", cwd=up)
    commits = []
    for i in range(2):
        (up / "k.py").write_text(f"V = {i}\n")
        _git("add", "k.py", cwd=up)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{i}", cwd=up)
        commits.append(_git("rev-parse", "HEAD", cwd=up))
    return up, commits[0], commits[1]


def test_fetch_checks_out_the_pinned_commit_and_skips_when_there(tmp_path):
    up, first, _ = _upstream(tmp_path)
    dest = fetch_one(Repo("k", "o/k", first), tmp_path / "src", url=str(up))
    assert (dest / "k.py").read_text() == "V = 0\n"
    assert _git("rev-parse", "HEAD", cwd=dest) == first
    (dest / "marker").write_text("")  # a second fetch at the same commit leaves the clone alone
    fetch_one(Repo("k", "o/k", first), tmp_path / "src", url=str(up))
    assert (dest / "marker").exists()


def test_fetch_failure_is_named(tmp_path):
    with pytest.raises(FetchError) as e:
        fetch_one(Repo("k", "o/k", "0" * 40), tmp_path / "src", url=str(tmp_path / "missing"))
    assert e.value.name == "corpus_fetch_failed"


def test_adjusted_rate_leaves_out_compiler_and_upstream_failures():
    res = [
        {"corpus": "x", "status": "PASS"},
        {"corpus": "x", "status": "ERROR", "cause": "needs_compiler_trace"},
        {"corpus": "x", "status": "ERROR", "cause": "kernel_uses_removed_kwarg"},  # category (c)
        {"corpus": "x", "status": "ERROR", "cause": "nl_range_missing"},  # category (a): an nkidev bug, counted
        {"corpus": "x", "status": "SKIP"},
    ]
    row = report.pass_table(res)[2]
    assert row.endswith("| 1 | 1/4 = 25% | 1/2 = 50% |")


def test_a_true_sbuf_overflow_is_not_counted_as_an_nkidev_gap_in_either_message_form():
    from causes import classify

    def cause(msg: str) -> str:
        return classify({"id": "t::test_llama4_maverick_fast[x]", "status": "ERROR", "message": msg})

    old = "err_sbuf_capacity_exceeded: allocating (64, 65535) bfloat16 tile 'a' needs more"
    new = (
        "err_sbuf_capacity_exceeded: the SBUF operands of this instruction need 262144 bytes per partition together "
        "('batch_exp_chunk' (131070), 'batch_chunk' (131070), 'batch_m_new' (4)) but trn2 has 212984"
    )
    assert cause(old) == cause(new) == "sbuf_true_overflow"
    # any other capacity error is still the (a) rebind gap, so a real nkidev regression shows up as one
    assert cause("err_sbuf_capacity_exceeded: the SBUF operands of this instruction need 9 bytes ('t' (8))") == "sbuf_capacity_rebind"


def test_a_crashed_worker_is_the_tests_own_oversized_inputs_only_for_the_measured_cross_entropy_cases():
    from causes import classify

    def cause(test: str, case: str, msg: str) -> str:
        cid = f"integration.nkilib.experimental.loss.{test}.Sweep::test_x_fast[_manual_ce_config__{case}_dtype-bfloat16]"
        return classify({"id": cid, "status": "ERROR", "message": msg})

    crash = "worker 'gw1' crashed while running 'test_x_fast[...]'"
    nomem = "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 15.4 GiB for an array with shape (10235, 202408)"
    assert cause("test_cross_entropy_backward", "B-5_T-2047_V-202408", crash) == "test_inputs_too_big"
    assert cause("test_cross_entropy_forward", "B-1_T-14000_V-151936", nomem) == "test_inputs_too_big"
    assert cause("test_cross_entropy_backward", "B-3_T-3413_V-201088", crash) == "test_inputs_too_big"
    # a smaller case (8.3e8 logits, 8.3 GB of inputs) that crashes is not explained by its inputs
    assert cause("test_cross_entropy_backward", "B-1_T-4096_V-202408", crash) == "harness_worker_oom"


def test_a_memory_error_in_the_tests_own_input_generator_is_the_memory_cap_not_nkidev():
    from causes import classify

    def cause(msg: str) -> str:
        return classify(
            {"id": "integration.nkilib.core.moe.moe_tkg.test_moe_tkg.T::test_moe_tkg_bfloat16[vnc-2]", "status": "ERROR", "message": msg}
        )

    head = "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 6.00 GiB for an array with shape (128, 3072, 2, 1024)\n"
    in_test_code = head + "E   MemoryError\n\ntest/integration/nkilib/core/moe/moe_tkg/test_moe_tkg_utils.py:142: MemoryError"
    via_generator = (
        head + "test/integration/nkilib/core/moe/moe_tkg/test_moe_tkg_utils.py:142: in default_tensor_generator\n"
        "    return rng.normal(size=inp.shape)\nnumpy/random/_common.pyx:654: MemoryError"
    )
    assert cause(in_test_code) == cause(via_generator) == "test_inputs_over_memory_cap"
    # the same allocation failure inside nkidev stays unexplained
    assert cause(head + "src/nkidev/emulator/memory.py:88: MemoryError") == "unclassified"


def test_an_allocation_failure_in_the_tests_output_check_is_an_error_with_its_cause_not_a_numeric_failure():
    from causes import classify

    # the tail of a real record (ranged_attn under prlimit --as=8G): the traceback shows the orchestrator's rank loop
    msg = (
        "                        # Build list of paths to check (per-rank for collectives, single path otherwise)\n"
        "E               test.utils.exceptions.ValidationException: [enforce fail at alloc_cpu.cpp:127] err == 0. "
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1849344000 bytes. Error code 12 (Cannot allocate memory)"
        "\n\ntest/utils/test_orchestrator.py:563: ValidationException"
    )
    status = harness.classify_status(msg)
    assert status == "ERROR"
    rec = {"id": "test_attention_cte.py::T::test_ranged_attn_cte_sweep_cp_manual[True-False-1]", "status": status, "message": msg}
    assert classify(rec) == "validation_over_memory_cap"
    # a real mismatch stays numeric
    assert harness.classify_status("ValidationException: COMPARISON: out FAILED (max diff 3.0)") == "FAIL-numeric"


def test_a_pass_whose_test_compared_nothing_is_marked_unvalidated(tmp_path):
    """The plugin records the orchestrator's skipped validation as a junit property; the report calls such passes out."""
    xml = tmp_path / "r.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="t.C" name="checked" time="1.0"/>'
        '<testcase classname="t.C" name="unchecked" time="1.0"><properties>'
        '<property name="corpus_validation_skipped" value="Validation is disabled because no validation arguments were passed" />'
        "</properties></testcase></testsuite></testsuites>"
    )
    checked, unchecked = harness.junit_cases(xml)
    assert (checked["status"], checked.get("unvalidated")) == ("PASS", None)
    assert (unchecked["status"], unchecked["unvalidated"]) == ("PASS", True) and "Validation is disabled" in unchecked["message"]
    row = report.pass_table([dict(checked, corpus="x"), dict(unchecked, corpus="x")])[2]
    assert row.startswith("| x | all | 2 (1 unvalidated) |")


def test_nki_library_targets_0_6_and_the_option_overrides_every_repository():
    assert nki_version_for("nki-library") == "0.6"
    assert nki_version_for("nki-samples") is None  # nkidev's default, the newest
    assert nki_version_for("nki-library", "0.7") == "0.7"
    assert nki_version_for("nki-samples", "0.6") == "0.6"


def _child(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", DYNAMIC_RANGE_KERNEL], env=env, capture_output=True, text=True, timeout=120).stdout.strip()


def test_a_0_6_kernel_runs_under_its_repository_version_and_fails_under_0_7(tmp_path, monkeypatch):
    monkeypatch.setenv("NKIDEV_NKI_VERSION", "0.6")  # an ambient value is not inherited: only the repository / option count
    env = harness.checkout_env(tmp_path)
    assert "NKIDEV_NKI_VERSION" not in env
    assert _child(harness.with_nki_version(env, nki_version_for("nki-library"))) == "OK"
    assert _child(harness.with_nki_version(env, nki_version_for("nki-library", "0.7"))) == "err_removed_in_nki_version"
    assert _child(harness.with_nki_version(env, nki_version_for("nki-samples"))) == "err_removed_in_nki_version"
    assert harness.effective_nki_version(harness.with_nki_version(env, "0.6.0")) == "0.6"


def test_an_unknown_nki_version_stops_the_run_with_nkidevs_error(tmp_path, capsys):
    assert run.main(["--work", str(tmp_path), "--no-fetch", "--only", "standalone", "--nki-version", "0.9"]) == 2
    assert "err_unknown_nki_version" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()
