"""The analysis reads only documented columns, and SCHEMA.md documents what it returns."""

from importlib import resources

import pytest

from nkidev.analysis.investigations import KINDS
from nkidev.analysis.tables import COLUMNS

SCHEMA_MD = resources.files("nkidev.analysis").joinpath("SCHEMA.md").read_text()


def test_read_columns_exist_in_the_profile_schema():
    schema = pytest.importorskip("nkidev.profile.schema")
    for table, cols in COLUMNS.items():
        documented = set(schema.column_names(table))
        assert set(cols) <= documented, (table, set(cols) - documented)


@pytest.mark.parametrize(
    "name",
    [
        *KINDS,
        "bottleneck_engine",
        "total_time_ns",
        "bn_speedup",
        "source_lines",
        "time_gap_ns",
        "memory_bound_ideal_no_reloads_ns",
        "te_utilization",
    ],
)
def test_schema_doc_mentions(name):
    assert f"`{name}`" in SCHEMA_MD
