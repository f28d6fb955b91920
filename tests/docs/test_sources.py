"""Every number's citation can be checked from the repository: the hardware files and docs cite entries of the
sources page (nkidev docs show sources), which gives the public URL and section of each; nothing points outside
the repository (../shared/...)."""

import re
from importlib import resources
from pathlib import Path

import pytest

from nkidev.docs.api import show

SRC = Path(__file__).resolve().parents[2] / "src" / "nkidev"
SOURCES = resources.files("nkidev.docs").joinpath("guides/sources.md").read_text()
KEYS = set(re.findall(r"^\| `([a-z0-9-]+)`", SOURCES, re.M)) | {"hw-trn2", "hw-trn3"}
CITE = re.compile(r"\[sources: ([a-z0-9-]+)")
OUTSIDE = re.compile(r"shared/reference|\b(hardware|nki-api|profiles|errors|agent-integration)\.md\b")


def test_sources_page_is_a_docs_page_with_urls():
    page = show("sources")
    assert page["id"] == "guides/sources"
    for key in ("arch-v2", "arch-v3", "arch-v4", "dma-overview", "dma-bandwidth", "isa-api", "mm-tutorial", "explorer-schema"):
        row = next(line for line in SOURCES.splitlines() if line.startswith(f"| `{key}`"))
        assert "https://" in row or "aws-neuron/" in row, key


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_every_hardware_number_cites_a_sources_entry_or_says_why_not(target):
    for n, line in enumerate((SRC / "hardware" / f"{target}.toml").read_text().splitlines(), 1):
        if not re.match(r"^\w+\s*=", line) or line.split("=")[0].strip() in ("name", "nc_version", "aliases", "instance_type"):
            continue
        comment = line.partition("#")[2]
        assert comment, f"{target}.toml:{n} has no source: {line}"
        cited = CITE.findall(comment)
        assert cited or re.search(r"\b(estimate|FITTED|every documented)\b", comment), f"{target}.toml:{n}: {line}"
        assert set(cited) <= KEYS, (f"{target}.toml:{n}", set(cited) - KEYS)


def test_nothing_cites_files_outside_the_repository():
    offenders = []
    for path in SRC.rglob("*"):
        if path.suffix in (".py", ".md", ".sql", ".toml") and "__pycache__" not in path.parts:
            text = path.read_text(errors="replace")
            hits = [m for m in OUTSIDE.finditer(text) if "on-hardware.md" not in text[m.start() - 3 : m.end()]]
            offenders += [f"{path.relative_to(SRC)}: {m.group(0)}" for m in hits]
            offenders += [f"{path.relative_to(SRC)}: [sources: {k}]" for k in CITE.findall(text) if k not in KEYS]
    assert offenders == []
