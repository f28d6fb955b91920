"""The library API and the CLI commands over a hand-built profile."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from nkidev import exitcodes
from nkidev.analysis.api import analyze, query
from nkidev.analysis.investigations import KINDS
from nkidev.cli import app
from nkidev.errors import NkiUsageError

from .fixtures import make_real_profile as fixture

REAL = str(fixture.OUT)
runner = CliRunner()


def test_query_runs_selects_and_ctes():
    rows = query(REAL, "SELECT engine, count(*) AS n FROM Instruction GROUP BY engine ORDER BY engine")
    assert {r["engine"] for r in rows} == {"Tensor", "Scalar", "Sync", "Vector"}
    rows = query(REAL, "WITH m AS (SELECT * FROM Instruction WHERE opcode = 'MATMUL') SELECT count(*) AS n FROM m")
    assert rows == [{"n": 24}]


def test_connection_draws_no_progress_bar():
    # DuckDB draws its progress bar on stdout once a statement runs 2 s (a 1M-instruction profile on a busy
    # machine), which would break `nkidev analyze --json`; the setting is off, and locked. A real process:
    # under pytest's captured stdout DuckDB leaves the bar off by itself.
    code = f"from nkidev.analysis.api import query; print(query({REAL!r}, \"SELECT current_setting('enable_progress_bar') AS bar\"))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[{'bar': False}]"


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM Instruction",
        "CREATE TABLE t AS SELECT 1",
        "SELECT 1; SELECT 2",
        "COPY Instruction TO '/tmp/x.csv'",
        "PRAGMA version",
        "ATTACH '/tmp/x.db'",
        "SELEC 1",
        "SELECT * FROM NoSuchTable",
    ],
)
def test_query_rejects_anything_else(sql):
    with pytest.raises(NkiUsageError) as e:
        query(REAL, sql)
    assert e.value.name == "err_bad_query"
    assert "Instruction" in e.value.fix  # the message lists the tables


def test_result_json_has_the_documented_shape():
    d = json.loads(json.dumps(analyze(REAL).to_dict()))
    assert set(d) == {
        "schema",
        "profile_dir",
        "target",
        "bottleneck_engine",
        "total_time_ns",
        "bounds",
        "engines",
        "findings",
        "investigations",
        "warnings",
    }
    assert set(d["investigations"]) == set(KINDS)
    assert set(d["engines"]) == {"Tensor", "Vector", "Scalar", "GpSimd", "DMA"}
    for f in d["findings"]:
        assert f["kind"] in KINDS and f["severity"] in ("high", "medium", "low")
        assert isinstance(f["time_gap_ns"], float) and all(":" in s for s in f["source_lines"])


def test_cli_analyze_json_and_html(tmp_path):
    html = tmp_path / "report.html"
    out = runner.invoke(app, ["analyze", REAL, "--json", "--html", str(html)])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert d["bottleneck_engine"] == "Tensor" and d["findings"]
    text = html.read_text()
    assert "redundant_load" in text and "<script" not in text and "http" not in text.replace("http://www.w3.org", "")


def test_cli_analyze_text_shows_source_text():
    out = runner.invoke(app, ["analyze", REAL, "--source-root", str(fixture.HERE / "kernels")], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "mm_real.py:21" in out.output and "nisa.dma_copy(dst=lhs_sb, src=lhsT)" in out.output
    assert "Performance bounds" in out.output and "bottleneck engine Tensor" in out.output


def test_cli_fail_on():
    assert runner.invoke(app, ["analyze", REAL, "--fail-on", "high"]).exit_code == exitcodes.FAILED
    out = runner.invoke(app, ["analyze", REAL, "--fail-on", "urgent", "--json"])
    assert out.exit_code == exitcodes.USAGE and json.loads(out.output)["error"]["name"] == "err_bad_argument"


def test_cli_query_and_errors(tmp_path):
    out = runner.invoke(app, ["query", REAL, "SELECT opcode, count(*) AS n FROM Instruction GROUP BY 1", "--json"])
    assert out.exit_code == 0
    assert {r["opcode"] for r in json.loads(out.output)} >= {"MATMUL", "LDWEIGHTS"}
    out = runner.invoke(app, ["query", REAL, "DROP TABLE Instruction"])
    assert out.exit_code == exitcodes.USAGE and "err_bad_query" in out.output
    out = runner.invoke(app, ["analyze", str(tmp_path)])
    assert out.exit_code == exitcodes.USAGE and "err_bad_profile" in out.output and "Traceback" not in out.output
