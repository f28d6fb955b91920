"""The docs cover everything the emulator declares: every op, rule, error, target and guide has a page."""

from __future__ import annotations

import re

import pytest

from nkidev.docs import api
from nkidev.docs.pages import KINDS, all_pages
from nkidev.errors import ERRORS
from nkidev.hardware import TARGET_NAMES

from ..agents.helpers import REPO

PAGES = {p.id: p for p in all_pages()}
REQUIRED_GUIDES = ("tiling", "psum-and-matmul", "dma-efficiency", "softmax", "reading-a-profile")


def _ops():
    import nkidev.emulator.isa  # noqa: F401
    from nkidev.emulator.opdef import OPS

    return OPS


def test_page_ids_are_unique_and_complete():
    assert len(PAGES) == len(all_pages())
    for page in all_pages():
        assert page.title and page.summary and page.body.startswith("# "), page.id
        assert page.kind in KINDS


@pytest.mark.parametrize("name", sorted(_ops()))
def test_every_op_has_a_page_with_its_rules_and_cost(name):
    op = _ops()[name]
    page = PAGES[f"isa/{name}"]
    short = {"isa": "nisa", "collectives": "ncc"}[op.namespace]
    assert f"{short}.{name}({op.params})" in page.body
    assert op.summary in page.body
    assert ", ".join(op.engines) in page.body
    for rule in op.rules:
        assert f"- {rule.doc} (`{rule.error}`)" in page.body
        assert f"errors/{rule.error}" in PAGES, f"{name} raises {rule.error}, which has no page"
    if op.cost_doc:
        assert op.cost_doc in page.body
    if not op.emulated:
        assert "err_not_supported_yet" in page.body


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_every_error_has_a_page_and_an_explanation(name):
    info = ERRORS[name]
    page = PAGES[f"errors/{name}"]
    assert info.summary in page.body and info.fix in page.body
    explained = api.explain(name)
    assert (explained["name"], explained["fix"], explained["page"]) == (name, info.fix, f"errors/{name}")


def test_every_rule_is_listed_on_its_errors_page():
    for op in _ops().values():
        for rule in op.rules:
            assert f"`nisa.{op.name}`: {rule.doc}" in PAGES[f"errors/{rule.error}"].body


def test_every_error_name_the_emulator_raises_is_explained():
    names = set()
    for path in (REPO / "src" / "nkidev").rglob("*.py"):
        names |= set(re.findall(r"[\"'](err_[a-z0-9_]+)[\"']", path.read_text(encoding="utf-8")))
    missing = sorted(n for n in names if n not in ERRORS)
    assert not missing, f"error names used in the source but missing from nkidev.errors: {missing}"


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_every_target_has_a_page(target):
    from nkidev.hardware import get_target

    t = get_target(target)
    body = PAGES[f"hardware/{target}"].body
    assert str(t.sbuf.usable_bytes_per_partition) in body and str(t.psum.bank_bytes) in body


@pytest.mark.parametrize("slug", REQUIRED_GUIDES)
def test_required_guides_exist(slug):
    assert PAGES[f"guides/{slug}"].kind == "guide"


def test_language_pages_cover_the_public_functions():
    import inspect

    import nkidev.emulator.isa  # noqa: F401
    import nkidev.emulator.language as nl

    functions = [n for n in nl.__all__ if inspect.isfunction(getattr(nl, n))]
    assert functions
    assert all(f"language/{n}" in PAGES for n in functions)
    assert PAGES["language/tile_size"].body.count("nl.tile_size.") >= 5


def test_cross_references_in_pages_resolve():
    refs = set()
    for page in all_pages():
        refs |= set(re.findall(r"nkidev docs show ([a-z0-9_./-]+)`", page.body))
        for name in re.findall(r"nkidev explain (err_[a-z0-9_]+)", page.body):
            api.explain(name)
    for ref in refs:
        api.show(ref)


def test_every_validation_verdict_has_a_page_and_an_explanation():
    from nkidev.docs.api import explain
    from nkidev.validate.verdicts import VERDICTS

    for name, verdict in VERDICTS.items():
        assert PAGES[f"verdicts/{name}"].summary == verdict.summary
        assert explain(name)["fix"] == verdict.fix
