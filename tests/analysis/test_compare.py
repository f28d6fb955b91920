"""`nkidev compare A B` on the seed walkthrough's naive and fixed SwiGLU, from specs and from profile dirs."""

import json
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nkidev.analysis import report_html
from nkidev.analysis.compare import compare
from nkidev.cli import app
from nkidev.examples import example
from nkidev.profile.api import profile_task

NAIVE = f"{example('swiglu_naive.py')}::swiglu_naive"
FIXED = f"{example('swiglu.py')}::swiglu"
runner = CliRunner()


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    return {name: profile_task(spec, out=root / name, compute=False).profile_dir for name, spec in (("naive", NAIVE), ("fixed", FIXED))}


@pytest.fixture(scope="module")
def comparison():
    return compare(NAIVE, FIXED)  # specs: profiled with the cost model into a temporary directory


def test_time_and_engines(comparison):
    t = comparison.time
    assert t["speedup"] == pytest.approx(t["a_ns"] / t["b_ns"]) and t["speedup"] > 2
    assert t["delta_ns"] == pytest.approx(t["b_ns"] - t["a_ns"])
    dma = comparison.engines["DMA"]
    assert dma["bottleneck"] == [True, False] and dma["delta"] < 0
    assert comparison.engines["Tensor"]["bottleneck"] == [False, True]


def test_findings_fixed_and_introduced(comparison):
    fixed = {(f["kind"], tuple(f["source_lines"])) for f in comparison.findings["fixed"]}
    kinds = {k for k, _ in fixed}
    assert {"redundant_load", "dma_efficiency"} <= kinds
    assert not {"redundant_load", "dma_efficiency"} & {f["kind"] for f in comparison.findings["introduced"]}


def test_lines_are_matched_by_code_and_sorted_by_change(comparison):
    lines = comparison.lines
    deltas = [abs(r["delta_ns"]) for r in lines]
    assert deltas == sorted(deltas, reverse=True)
    w_up = next(r for r in lines if r["code"].startswith("nisa.dma_copy(dst=wu_tile"))
    assert w_up["status"] == "only_a" and w_up["delta_ns"] == -w_up["cost_a_ns"] < 0
    assert all(r["status"] in ("both", "only_a", "only_b") for r in lines)


def test_spec_profiles_leave_no_temporary_files(monkeypatch, tmp_path, dirs):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    c = compare(dirs["naive"], FIXED)
    assert c.b.kind == "spec" and c.to_dict()["b"]["profile_dir"] is None
    assert list(tmp_path.iterdir()) == []


def test_profile_directories_and_the_cli_json(tmp_path, dirs):
    a = dirs["naive"]
    done = runner.invoke(app, ["compare", a, FIXED, "--json", "--html", str(tmp_path / "cmp.html")])
    assert done.exit_code == 0, done.output
    d = json.loads(done.output)
    assert d["schema"] == "nkidev.compare/1" and d["a"]["kind"] == "profile" and d["b"]["kind"] == "spec"
    assert d["a"]["profile_dir"] == a and d["time"]["speedup"] > 2
    assert set(d["findings"]) == {"fixed", "introduced", "remaining"}
    page = (tmp_path / "cmp.html").read_text()
    assert "<script" not in page and "Cost per source line" in page and page.count("<svg") == 2
    assert 'data-change="fixed"' in page or "data-change='fixed'" in page


def test_text_output_names_both_sides(dirs):
    done = runner.invoke(app, ["compare", dirs["fixed"], dirs["fixed"]])
    assert done.exit_code == 0, done.output
    assert "1.00x" in done.output and "0 fixed, 0 introduced" in done.output


def test_a_missing_profile_is_a_named_error(tmp_path):
    done = runner.invoke(app, ["compare", str(tmp_path / "nope"), FIXED, "--json"])
    assert done.exit_code == 2
    assert json.loads(done.output)["error"]["name"] == "err_bad_profile"


def test_html_report_has_a_roofline_and_rates_for_an_elementwise_kernel(tmp_path):
    from nkidev.analysis.api import analyze

    made = profile_task(f"{example('layernorm.py')}::layernorm_kernel", case=1, out=tmp_path / "p")
    page = report_html.render(analyze(made.profile_dir))
    assert "HBM 363 GB/s" in page and "DMA 435 GB/s" in page  # both roofs, labelled
    assert "HBM (binding)" in page and "Vector busy" in page
    assert 'id="tz16"' in page and "#tz16:checked~.tl .inner{width:1600%}" in page  # zoomable timeline
    assert Path(made.profile_dir).exists()
