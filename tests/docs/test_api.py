"""The docs library: search ranking, topic lookup, explanations and named errors for unknown names."""

from __future__ import annotations

import time

import pytest

from nkidev.docs import api
from nkidev.errors import NkiUsageError


def _ids(hits):
    return [h["id"] for h in hits]


def test_search_finds_the_obvious_page_first():
    assert _ids(api.search("nc_matmul"))[0] == "isa/nc_matmul"
    assert _ids(api.search("err_psum_bank_overflow"))[0] == "errors/err_psum_bank_overflow"
    assert "guides/psum-and-matmul" in _ids(api.search("psum bank matmul accumulate"))[:3]
    assert "guides/dma-efficiency" in _ids(api.search("dma efficiency"))[:3]
    assert "guides/tiling" in _ids(api.search("128 partition tiling"))[:3]


def test_search_results_have_the_documented_fields():
    hit = api.search("softmax", limit=3)[0]
    assert set(hit) == {"id", "title", "kind", "summary", "snippet", "score"}
    assert hit["score"] > 0 and "[" in hit["snippet"]


def test_search_respects_limit_and_falls_back_to_any_word():
    assert len(api.search("tensor", limit=4)) == 4
    assert api.search("psum xyzzyqqq")  # no page has both words: any word matches


@pytest.mark.parametrize("query", ["", "   ", "\"'(*)", "AND OR NOT", "nc_matmul)*:"])
def test_search_never_fails_on_odd_text(query):
    assert isinstance(api.search(query), list)


def test_search_limit_must_be_positive():
    with pytest.raises(NkiUsageError) as e:
        api.search("psum", limit=0)
    assert e.value.name == "err_invalid_argument"


def test_search_is_fast():
    start = time.perf_counter()
    for _ in range(20):
        api.search("psum bank overflow matmul")
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "topic,page",
    [
        ("nc_matmul", "isa/nc_matmul"),
        ("nisa.nc_matmul", "isa/nc_matmul"),
        ("nki.isa.nc_matmul", "isa/nc_matmul"),
        ("isa/nc_matmul", "isa/nc_matmul"),
        ("NC_MATMUL", "isa/nc_matmul"),
        ("nl.ndarray", "language/ndarray"),
        ("trn2", "hardware/trn2"),
        ("gen4", "hardware/trn3"),
        ("tiling", "guides/tiling"),
        ("softmax", "guides/softmax"),
        ("nl.softmax", "language/softmax"),
        ("tile_size", "language/tile_size"),
        ("err_dma_from_psum", "errors/err_dma_from_psum"),
        ("psum", "language/buffers"),
    ],
)
def test_show_resolves_names_and_aliases(topic, page):
    shown = api.show(topic)
    assert shown["id"] == page
    assert set(shown) == {"id", "kind", "title", "summary", "aliases", "body"}


def test_show_unknown_topic_suggests_close_matches():
    with pytest.raises(NkiUsageError) as e:
        api.show("nc_matmull")
    assert e.value.name == "err_unknown_topic"
    assert "isa/nc_matmul" in e.value.message and "nkidev docs search" in e.value.fix


def test_explain_accepts_a_whole_error_line():
    line = "err_psum_bank_overflow: nc_matmul: dst (128, 1024) crosses a bank; tile N (kernel.py:12)"
    info = api.explain(line)
    assert info["name"] == "err_psum_bank_overflow"
    assert any("nc_matmul" in r for r in info["raised_by"])
    assert api.explain("nki.errors.err_num_partition_exceed_arch_limit")["official"] is True


def test_explain_unknown_names_are_named_errors_with_suggestions():
    with pytest.raises(NkiUsageError) as e:
        api.explain("err_psum_bank_overfow")
    assert e.value.name == "err_unknown_topic" and "err_psum_bank_overflow" in e.value.message
    with pytest.raises(NkiUsageError) as e:
        api.explain("nc_matmul")
    assert "nkidev docs show nc_matmul" in e.value.message
