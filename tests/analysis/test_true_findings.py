"""Every investigation on real kernels: one written to trigger it, one that looks like it and must not.

The kernels (tests/analysis/true_kernels.py) run on the emulator and the cost model, so these tests check the
whole chain from kernel line to finding, including the cases the analysis used to get wrong: a one-time
stride-0 broadcast and a cast on the DMA are not reloads.
"""

import json

import ml_dtypes
import numpy as np
import pytest

from nkidev.analysis.api import analyze
from nkidev.examples import example
from nkidev.profile.api import profile, profile_task

from . import true_kernels as K

BF16 = ml_dtypes.bfloat16


def rand(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def kernel_line(fn, text: str) -> str:
    """'true_kernels.py:LINE' of the one line of `fn`'s source that contains `text`."""
    import inspect

    src, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    hits = [first + i for i, line in enumerate(src) if text in line]
    assert len(hits) == 1, (text, hits)
    return f"true_kernels.py:{hits[0]}"


CASES = {
    "reload_in_loop": (K.reload_in_loop, lambda: (rand((512, 512)), rand((128, 512), seed=1))),
    "broadcast_once": (K.broadcast_once, lambda: (rand((512, 512)), rand(512, seed=1))),
    "broadcast_once_ap": (K.broadcast_once_ap, lambda: (rand((512, 512)), rand(512, seed=1))),
    "broadcast_in_loop": (K.broadcast_in_loop, lambda: (rand((512, 512)), rand(512, seed=1))),
    "cast_on_dma": (K.cast_on_dma, lambda: (rand((512, 512), BF16),)),
    "narrow_dmas": (K.narrow_dmas, lambda: (rand((256, 1024), BF16),)),
    "wide_dmas": (K.wide_dmas, lambda: (rand((512, 2048)),)),
    "matmul_k64": (K.matmul_k64, lambda: (rand((256, 128), BF16), rand((256, 512), BF16, 1))),
    "matmul_k128": (K.matmul_k128, lambda: (rand((128, 128), BF16), rand((128, 512), BF16, 1))),
    "matmul_transposing": (K.matmul_transposing, lambda: (rand((128, 128), BF16), rand((128, 512), BF16, 1))),
    "matmul_waiting_on_loads": (K.matmul_waiting_on_loads, lambda: (rand((128, 128), BF16), rand((128, 4096), BF16, 1))),
    "vector_heavy": (K.vector_heavy, lambda: (rand((512, 512)),)),
}


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    out = {}
    for name, (kernel, args) in CASES.items():
        made = profile(kernel, *args(), out=tmp_path_factory.mktemp(name) / "p")
        out[name] = (made, analyze(made.profile_dir))
    return out


def kinds(result, kind):
    return result.by_kind(kind)


def test_reload_in_a_loop_is_found_with_its_numbers(analyses):
    r = analyses["reload_in_loop"][1]
    (f,) = kinds(r, "redundant_load")
    assert f.source_lines == [kernel_line(K.reload_in_loop, "src=w)")]
    assert f.evidence["tensor"] == "w" and f.evidence["repeat"] == pytest.approx(4.0)
    assert f.evidence["excess_bytes"] == 3 * 128 * 512 * 4
    assert "repeat = bytes loaded / size" in f.evidence["computed_as"]


@pytest.mark.parametrize("name", ["broadcast_once", "broadcast_once_ap", "cast_on_dma"])
def test_broadcast_and_cast_on_the_dma_are_not_reloads(analyses, name):
    r = analyses[name][1]
    assert kinds(r, "redundant_load") == []
    tensors = {t["tensor"]: t for t in r.investigations["redundant_load"]["details"]["tensors"]}
    assert all(t["repeat"] == pytest.approx(1.0) for t in tensors.values()), tensors


def test_a_broadcast_repeated_in_the_loop_is_a_reload_costing_its_traffic(analyses):
    r = analyses["broadcast_in_loop"][1]
    (f,) = kinds(r, "redundant_load")
    assert f.evidence["tensor"] == "g" and f.evidence["repeat"] == pytest.approx(4.0)
    # each broadcast reads 128 x 512 fp32 from HBM; three of the four are avoidable
    assert f.evidence["excess_bytes"] == 3 * 128 * 512 * 4


def test_the_bundled_layernorm_has_no_reload(tmp_path):
    made = profile_task(f"{example('layernorm.py')}::layernorm_kernel", case=1, out=tmp_path / "p")
    r = analyze(made.profile_dir)
    assert kinds(r, "redundant_load") == []
    assert r.total_time_ns == made.total_time_ns


def test_narrow_dmas_are_flagged_and_wide_ones_are_not(analyses):
    narrow = analyses["narrow_dmas"][1]
    lines = {f.source_lines[0]: f for f in kinds(narrow, "dma_efficiency")}
    load = kernel_line(K.narrow_dmas, "dst=xt, src=x[")
    assert lines[load].evidence["bytes_per_partition"] == 128 and "bytes per partition" in lines[load].evidence["computed_as"]
    assert kinds(analyses["wide_dmas"][1], "dma_efficiency") == []


def test_k64_matmuls_underuse_the_array_and_k128_ones_do_not(analyses):
    (f,) = kinds(analyses["matmul_k64"][1], "te_underutilization")
    assert (f.evidence["K"], f.evidence["M"]) == (64, 128) and f.evidence["array_fraction_used"] == 0.5
    assert kinds(analyses["matmul_k128"][1], "te_underutilization") == []


def test_tensor_engine_transposes_are_flagged_only_when_present(analyses):
    (f,) = kinds(analyses["matmul_transposing"][1], "redundant_transpose")
    assert f.source_lines == [kernel_line(K.matmul_transposing, "nc_transpose")] and f.evidence["transposes"] == 16
    assert analyses["matmul_k128"][1].investigations["redundant_transpose"]["findings"] == 0


def test_tensor_engine_waiting_on_loads_and_not_when_operands_are_resident(analyses):
    waits = kinds(analyses["matmul_waiting_on_loads"][1], "te_idle")
    assert waits and waits[0].evidence["waited_on"] == "DMA" and waits[0].evidence["what"] == "rhs"
    assert kinds(analyses["matmul_k128"][1], "te_idle") == []


def test_vector_bound_kernel_and_a_dma_bound_one(analyses):
    r = analyses["vector_heavy"][1]
    assert r.bottleneck_engine == "Vector"
    (f,) = kinds(r, "engine_bound")
    assert f.evidence["opcode"] == "TENSOR_TENSOR" and "next slowest engine" in f.evidence["computed_as"]
    assert analyses["wide_dmas"][1].investigations["engine_bound"]["status"] == "not_applicable"


def test_nkidev_profiles_never_spill(analyses):
    for _, r in analyses.values():
        assert r.investigations["spill"]["status"] == "ran" and kinds(r, "spill") == []


def test_every_finding_says_how_it_was_computed(analyses):
    for _, r in analyses.values():
        for f in r.findings:
            assert f.evidence.get("computed_as"), (f.kind, f.evidence)


def test_profile_and_analyze_report_one_kernel_time(analyses):
    for made, r in analyses.values():
        assert r.total_time_ns == made.total_time_ns
        assert r.bounds["inputs"]["total_time_source"] == "Summary.total_time"


def test_ideal_memory_bound_uses_the_binding_ceiling(analyses):
    made, r = analyses["wide_dmas"]
    ceiling = r.bounds["inputs"]["memory_ceiling"]
    assert ceiling["binding"] == "HBM"  # trn2: HBM ~363 GB/s per NeuronCore binds before DMA's 435 GB/s
    assert ceiling["hbm_bytes"] == 2 * 512 * 2048 * 4
    assert r.bounds["memory_bound_ideal_ns"] == pytest.approx(ceiling["hbm_bytes"] / 363)
    assert r.bounds["memory_bound_ideal_ns"] <= r.bounds["memory_bound_ns"] * 1.02  # the model moves HBM bytes at ~368 GB/s


def test_analysis_output_is_identical_across_runs(analyses):
    made, first = analyses["matmul_transposing"]
    again = analyze(made.profile_dir)
    assert json.dumps(first.to_dict(), default=str) == json.dumps(again.to_dict(), default=str)


def test_tensor_engine_throttled_after_idle_gaps_and_not_when_matmuls_run_back_to_back(analyses):
    made, r = analyses["matmul_waiting_on_loads"]
    assert r.target == "trn2"
    (f,) = kinds(r, "te_throttle")
    assert f.source_lines == [kernel_line(K.matmul_waiting_on_loads, "nc_matmul")]
    # the cost model's own numbers: every MATMUL re-engaged the limit; all but the first start-up ramp count
    tl = made.timeline
    th = tl.throttled
    assert len(th) == 8 and f.evidence["engagements"] == 7 and f.evidence["all_engagements"] == 8
    spans = [next((s, e) for op, s, e in tl.spans(i) if op == "MATMUL") for i in th.trigger]
    refill = 64 / 2.4  # the second MATMUL's pipeline refill ends the start-up (the limit engages again there)
    assert f.evidence["throttled_busy_ns"] == pytest.approx(sum(e - s for s, e in spans[1:]) - refill, abs=8)
    lost = sum(e - s - refill - tl.work[i].busy_ns for (s, e), i in zip(spans[1:], th.trigger[1:].tolist()))
    assert f.time_gap_ns == pytest.approx(lost, rel=0.1)  # the limit in 4 steps per ramp, the model's linear
    resident = analyses["matmul_k128"][1]
    assert kinds(resident, "te_throttle") == []
    assert resident.investigations["te_throttle"]["details"]["startup_throttled_ns"] == 3000  # one ramp, at the start


def test_no_throttle_finding_on_trn1(tmp_path):
    kernel, args = CASES["matmul_waiting_on_loads"]
    r = analyze(profile(kernel, *args(), target="trn1", out=tmp_path / "p", compute=False).profile_dir)
    assert kinds(r, "te_throttle") == [] and kinds(r, "te_idle")  # idle gaps, but no dI/dt limit on trn1
    assert r.investigations["te_throttle"]["status"] == "not_applicable"


def test_throttling_is_matched_to_the_busy_time_of_its_own_core(tmp_path):
    from tests.profile import kernels as PK

    args = (rand((128, 128), BF16), rand((128, 4096), BF16, 1))
    made = profile(PK.matmul_starved[2], *args, out=tmp_path / "p", compute=False)  # 4 starved matmuls per core
    d = analyze(made.profile_dir).investigations["te_throttle"]["details"]
    assert d["throttled_cores"] == 2 and d["all_engagements"] == 8 and d["engagements"] == 2 * 3
    th = made.timeline.throttled
    assert sorted(th.core.tolist()) == [0] * 4 + [1] * 4
