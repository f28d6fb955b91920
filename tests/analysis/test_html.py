"""The HTML report renders offline in a real browser (headless Chromium) and shows the findings."""

import shutil
import subprocess

import pytest

from nkidev.analysis import report_html
from nkidev.analysis.api import analyze

from .fixtures import make_real_profile as fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def dump_dom(html_file, profile_dir) -> str:
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile_dir}",
        "--dump-dom",
        html_file.as_uri(),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_report_is_self_contained(tmp_path):
    html = report_html.render(analyze(fixture.OUT, source_root=fixture.HERE / "kernels"))
    for needle in ("<script", 'src="http', 'href="http', "@import", "url("):
        assert needle not in html
    assert html.count("<svg") == 3  # timeline, bounds, roofline


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_findings_appear_in_the_rendered_dom(tmp_path):
    result = analyze(fixture.OUT, source_root=fixture.HERE / "kernels")
    page = tmp_path / "report.html"
    page.write_text(report_html.render(result))
    dom = dump_dom(page, tmp_path / "chromium-profile")
    assert f"Findings ({len(result.findings)})" in dom
    for f in result.findings:
        assert f'data-kind="{f.kind}"' in dom
        for line in f.source_lines:
            assert line in dom
    assert "nisa.dma_copy(dst=lhs_sb, src=lhsT)" in dom  # the code excerpt of the reload
    assert dom.count("<rect") > 10  # the timeline and bound bars were drawn


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
@pytest.mark.parametrize("spec,case", [("matmul.py::matmul_kernel", 0), ("layernorm.py::layernorm_kernel", 1)])
def test_roofline_and_rates_render_for_matmul_and_elementwise_kernels(tmp_path, spec, case):
    from nkidev.examples import example
    from nkidev.profile.api import profile_task

    file, kernel = spec.split("::")
    made = profile_task(f"{example(file)}::{kernel}", case=case, out=tmp_path / "p", compute=False)
    page = tmp_path / "report.html"
    page.write_text(report_html.render(analyze(made.profile_dir)))
    dom = dump_dom(page, tmp_path / "chromium-profile")
    assert "HBM 363 GB/s" in dom and "DMA 435 GB/s" in dom and "HBM (binding)" in dom
    assert ("kernel:" in dom and "FLOP/B" in dom) if file == "matmul.py" else "no TensorE FLOPs" in dom
    assert 'id="tz16"' in dom and "1 P" in dom  # zoom controls and labelled roofline ticks
