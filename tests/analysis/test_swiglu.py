"""The seed walkthrough: the naive SwiGLU kernel's waste is found at its lines; the fixed one is clean."""

import numpy as np
import pytest

from nkidev.analysis.api import analyze
from nkidev.emulator.jit import simulate
from nkidev.examples import example
from nkidev.taskfile import load_task

KERNELS = (("swiglu_naive.py", "swiglu_naive"), ("swiglu.py", "swiglu"))


def line_of(file: str, text: str) -> str:
    lines = example(file).read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return f"{file}:{hits[0]}"


@pytest.mark.parametrize("file,kernel", KERNELS)
def test_kernels_match_the_reference(file, kernel):
    task = load_task(example(file))
    tol = task.attr("TOLERANCE")
    for case in task.attr("cases")():
        out = np.asarray(simulate(task.kernel(kernel))(*case), dtype=np.float64)
        np.testing.assert_allclose(out, task.attr("reference")(*case), **tol)


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    api = pytest.importorskip("nkidev.profile.api")
    out = {}
    for file, kernel in KERNELS:
        made = api.profile_task(f"{example(file)}::{kernel}", out=tmp_path_factory.mktemp(kernel) / "p")
        out[kernel] = analyze(made.profile_dir)
    return out


def test_naive_weights_reloaded_8x_at_their_lines(analyses):
    found = {f.evidence["tensor"]: f for f in analyses["swiglu_naive"].by_kind("redundant_load")}
    for tensor, text in (("w_gate", "src=w_gate["), ("w_up", "src=w_up[")):
        assert found[tensor].evidence["repeat"] == pytest.approx(8.0)
        assert found[tensor].source_lines == [line_of("swiglu_naive.py", text)]
        assert found[tensor].severity in ("high", "medium")  # DMA-bound: reloads cost a third of the time


def test_naive_small_x_slices_at_their_line(analyses):
    by_line = {f.source_lines[0]: f for f in analyses["swiglu_naive"].by_kind("dma_efficiency")}
    x_line = line_of("swiglu_naive.py", "src=xT[")
    assert by_line[x_line].evidence["bytes_per_partition"] == 256
    assert "dma_copy" in by_line[x_line].source[0]["text"]


def test_optimized_is_clean_and_faster(analyses):
    naive, fixed = analyses["swiglu_naive"], analyses["swiglu"]
    assert fixed.by_kind("dma_efficiency") == [] and fixed.by_kind("redundant_load") == []
    assert fixed.bounds["inputs"]["excess_ratio"] == pytest.approx(1.0)
    assert fixed.total_time_ns < naive.total_time_ns / 2
    assert fixed.bottleneck_engine == "Tensor" and naive.bottleneck_engine == "DMA"


def test_demo_diagnosis(tmp_path):
    pytest.importorskip("nkidev.profile.api")
    from nkidev.workflows.demo import diagnose_swiglu, diagnosis_text

    d = diagnose_swiglu(tmp_path)
    assert {"redundant_load", "dma_efficiency"} <= {f["kind"] for f in d["findings"]}
    assert d["speedup"] > 2 and not {"redundant_load", "dma_efficiency"} & set(d["fixed"]["kinds"])
    text = diagnosis_text(d)
    assert "loaded 8.0x" in text and line_of("swiglu_naive.py", "src=w_gate[") in text
    assert "faster" in text
