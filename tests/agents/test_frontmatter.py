"""The frontmatter reader accepts exactly the YAML subset skills and agents use, and rejects the rest."""

from __future__ import annotations

import pytest

from nkidev.agents.frontmatter import FrontmatterError, dump, parse

DOC = """---
name: nki-writing
description: "Write kernels: quoted because of the colon"
license: 'Apache-2.0'
metadata:
  project: nkidev
  version: 0.1.0
skills:
  - nki-writing
  - nki-docs
---
# Body
text
"""


def test_parse_reads_scalars_maps_and_lists():
    meta, body = parse(DOC)
    assert meta == {
        "name": "nki-writing",
        "description": "Write kernels: quoted because of the colon",
        "license": "Apache-2.0",
        "metadata": {"project": "nkidev", "version": "0.1.0"},
        "skills": ["nki-writing", "nki-docs"],
    }
    assert body == "# Body\ntext\n"


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter",
        "---\nname: x\n",  # not closed
        "---\nname: a: b\n---\n",  # ambiguous plain scalar
        "---\nname: [a, b]\n---\n",  # flow collection
        "---\nname: x\nname: y\n---\n",  # duplicate key
        "---\n  indented: first\n---\n",
        "---\nname: x # comment\n---\n",
        "---\nmetadata:\n---\n",  # no value
        '---\ndescription: "unterminated\n---\n',
    ],
)
def test_parse_rejects_what_strict_yaml_would_not_read_the_same(text):
    with pytest.raises(FrontmatterError):
        parse(text)


def test_dump_round_trips_and_quotes_when_needed():
    data = {"name": "a", "description": "needs: quoting # here", "readonly": True, "tags": ["x", "y: z"], "meta": {"k": "v"}}
    meta, _ = parse(f"---\n{dump(data)}\n---\n")
    assert meta == {**data, "readonly": "true"}
