"""CLI conventions: --version, shell completion, query output that fits the terminal, CSV and JSON."""

import csv
import io
import json
import os
import subprocess
import sys

from nkidev import __version__
from tests.analysis.fixtures import make_real_profile as fixture

REAL = str(fixture.OUT)


def nkidev(*args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "nkidev", *args], capture_output=True, text=True, env=env, timeout=120)


def test_version():
    done = nkidev("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"nkidev {__version__}"


def test_shell_completion_script():
    done = nkidev("--show-completion", "bash")
    assert done.returncode == 0 and "complete" in done.stdout and "_NKIDEV_COMPLETE" in done.stdout


def test_wide_query_fits_an_80_column_terminal():
    done = nkidev("query", REAL, "SELECT * FROM Instruction ORDER BY id LIMIT 20")
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "more column(s) do not fit" in done.stdout and "--format csv" in done.stdout


def test_few_wide_rows_become_records():
    done = nkidev("query", REAL, "SELECT * FROM Instruction ORDER BY id LIMIT 1")
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "row 1" in done.stdout and "opcode" in done.stdout and "bir_debug_info_source_location" in done.stdout


def test_csv_and_json_formats_carry_every_column():
    sql = "SELECT id, engine, opcode FROM Instruction ORDER BY id LIMIT 3"
    rows = list(csv.DictReader(io.StringIO(nkidev("query", REAL, sql, "--format", "csv").stdout)))
    assert [r["id"] for r in rows] == ["1000", "1001", "1002"] and set(rows[0]) == {"id", "engine", "opcode"}
    data = json.loads(nkidev("query", REAL, sql, "--format", "json").stdout)
    assert [r["id"] for r in data] == [1000, 1001, 1002]


def test_unknown_format_is_a_named_error():
    done = nkidev("query", REAL, "SELECT 1", "--format", "xml", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["name"] == "err_bad_argument"


def test_a_message_with_a_long_path_stays_on_one_line(tmp_path):
    """Piped output is 80 columns wide: a message naming a long path is not broken inside it (grep, copy-paste)."""
    deep = tmp_path / ("a_folder_with_a_rather_long_name_" * 3) / "kernel_file_with_a_long_name.py"
    deep.parent.mkdir()
    deep.write_text("import nki\n")
    done = nkidev("migrate", str(deep))
    assert done.returncode == 0, done.stderr
    assert f"{deep}: nothing to migrate" in done.stdout.splitlines()[0]
    missing = deep.with_name("missing_" + deep.name)
    done = nkidev("validate", str(missing))
    assert done.returncode == 2 and str(missing) in done.stderr.splitlines()[0]
