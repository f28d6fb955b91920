"""`nkidev docs search|show` and `nkidev explain`: JSON output, text output and exit codes."""

from __future__ import annotations

from nkidev import exitcodes

from ..agents.helpers import run_cli, run_json


def test_docs_search_json():
    code, hits = run_json("docs search psum bank --limit 3 --json")
    assert code == exitcodes.OK and len(hits) == 3
    assert hits[0]["id"] == "errors/err_psum_bank_overflow"


def test_docs_search_text_lists_ids():
    code, out, _ = run_cli("docs search dma efficiency -n 2")
    assert code == exitcodes.OK and "guides/dma-efficiency" in out


def test_docs_show_json_and_text():
    code, page = run_json("docs show nc_matmul --json")
    assert code == exitcodes.OK and page["id"] == "isa/nc_matmul" and "stationary.T @ moving" in page["body"]
    code, out, _ = run_cli("docs show tiling")
    assert code == exitcodes.OK and "128" in out


def test_explain_json_and_text():
    code, info = run_json("explain err_free_size_mismatch --json")
    assert code == exitcodes.OK and info["name"] == "err_free_size_mismatch" and info["fix"]
    code, out, _ = run_cli("explain err_dma_from_psum")
    assert code == exitcodes.OK and "tensor_copy" in out


def test_unknown_topic_is_a_usage_error_not_a_traceback():
    code, payload = run_json("docs show no_such_page --json")
    assert code == exitcodes.USAGE and payload["error"]["name"] == "err_unknown_topic"
    code, out, err = run_cli("explain err_nope")
    assert code == exitcodes.USAGE and "err_unknown_topic" in err and "Traceback" not in out + err
