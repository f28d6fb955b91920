"""`query` and `analyze` are read-only and bounded: DuckDB reads only the profile's own Parquet files (no
read_text/read_csv/read_blob/glob/ATTACH/URLs, no extensions, locked settings), statements time out and
results are capped; `analyze` prints source lines only of .py files under the source root."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from nkidev.analysis.api import analyze, query
from nkidev.errors import NkiUsageError

from .fixtures import make_real_profile as fixture

REAL = str(fixture.OUT)


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("password=hunter2\n")
    return path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_text('{secret}')",
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM read_blob('{secret}')",
        "SELECT * FROM read_csv_auto('/etc/passwd')",
        "SELECT * FROM glob('/**')",
        "SELECT * FROM glob('{profile}/*')",
        "SELECT * FROM read_parquet('{profile}/../*.parquet')",
        "SELECT * FROM '{secret}'",
        "SELECT * FROM read_json('https://example.com/x.json')",
        "SELECT current_setting('enable_external_access') AS v FROM (SELECT set_config('x', 'y'))",
    ],
)
def test_no_file_outside_the_profile_can_be_read(sql, secret):
    with pytest.raises(NkiUsageError) as e:
        query(REAL, sql.format(secret=secret, profile=REAL))
    assert e.value.name == "err_bad_query"
    assert "hunter2" not in e.value.message and "root:" not in e.value.message


@pytest.mark.parametrize("sql", ["SET enable_external_access = true", "RESET lock_configuration", "INSTALL httpfs", "LOAD httpfs"])
def test_settings_and_extensions_cannot_be_changed(sql):
    with pytest.raises(NkiUsageError) as e:
        query(REAL, sql)
    assert e.value.name == "err_bad_query"


def test_the_connection_itself_is_locked_down():
    from nkidev.analysis.tables import open_profile

    profile = open_profile(REAL)
    try:
        assert profile.scalar("SELECT current_setting('enable_external_access')") is False
        assert profile.scalar("SELECT current_setting('lock_configuration')") is True
        assert profile.scalar("SELECT current_setting('autoload_known_extensions')") is False
        with pytest.raises(Exception, match="locked"):
            profile.con.execute("SET enable_external_access = true")
    finally:
        profile.con.close()


@pytest.mark.parametrize("sql", ["SELECT count(*) AS n FROM range(100000000000)", "SELECT count(*) AS n FROM range(1e11::BIGINT) a"])
def test_an_endless_query_times_out(sql):
    start = time.monotonic()
    with pytest.raises(NkiUsageError) as e:
        query(REAL, sql, timeout_s=1.0)
    assert e.value.name == "err_timeout" and time.monotonic() - start < 20


def test_rows_are_capped():
    with pytest.raises(NkiUsageError) as e:
        query(REAL, "SELECT * FROM range(1000)", max_rows=100)
    assert e.value.name == "err_query_too_large" and "100 rows" in e.value.message
    assert len(query(REAL, "SELECT * FROM range(100)", max_rows=100)) == 100


def test_cli_query_options(secret):
    from typer.testing import CliRunner

    from nkidev import exitcodes
    from nkidev.cli import app

    r = CliRunner().invoke(app, ["query", REAL, f"SELECT * FROM read_text('{secret}')", "--json"])
    assert r.exit_code == exitcodes.USAGE and "hunter2" not in r.output
    r = CliRunner().invoke(app, ["query", REAL, "SELECT count(*) FROM range(100000000000)", "--timeout", "1", "--json"])
    assert r.exit_code == exitcodes.STOPPED and json.loads(r.stdout)["error"]["name"] == "err_timeout"
    r = CliRunner().invoke(app, ["query", REAL, "SELECT * FROM range(50)", "--row-cap", "10", "--json"])
    assert r.exit_code == exitcodes.USAGE and json.loads(r.stdout)["error"]["name"] == "err_query_too_large"


def test_analyze_reads_no_file_a_profile_points_at_outside_the_source_root(tmp_path, secret):
    import duckdb

    prof = tmp_path / "prof"
    shutil.copytree(REAL, prof)
    for f in prof.glob("Instruction*.parquet"):  # a crafted profile: every line now "lives" in secret files
        duckdb.sql(f"COPY (SELECT * REPLACE ('{secret}:1' AS nki_source_location) FROM '{f}') TO '{f}.new' (FORMAT parquet)")
        f.unlink()
        f.with_name(f.name + ".new").rename(f)
    py = tmp_path / "elsewhere" / "kernel.py"
    py.parent.mkdir()
    py.write_text("password = 'hunter2'\n")
    text = json.dumps(analyze(prof, source_root=tmp_path / "workspace").to_dict())
    assert "hunter2" not in text
    inside = analyze(prof, source_root=tmp_path).to_dict()  # a .txt file is never read, even inside the root
    assert "hunter2" not in json.dumps(inside)
