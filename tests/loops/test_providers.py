"""Providers: replay order, SDK extras named when missing, keys never echoed, prompts carry rules, findings' docs
and the reasons for earlier rejections; the answer's last code block is the candidate."""

from __future__ import annotations

import importlib.util

import pytest

from nkidev.errors import NkiUsageError
from nkidev.loops.prompt import build_prompt, extract_module
from nkidev.loops.providers import get_provider, redact


def test_replay_continues_where_the_run_stopped(tmp_path):
    for name, text in (("b.py", "B\n"), ("a.py", "A\n"), ("c.py", "C\n"), ("notes.txt", "x")):
        (tmp_path / name).write_text(text)
    provider = get_provider(f"replay:{tmp_path}")
    assert provider.propose({"proposed": 0, "width": 2}) == ["A\n", "B\n"]
    assert provider.propose({"proposed": 2, "width": 2}) == ["C\n"]
    assert provider.propose({"proposed": 3, "width": 1}) == []


def test_replay_of_a_missing_directory_is_a_named_error(tmp_path):
    with pytest.raises(NkiUsageError) as info:
        get_provider(f"replay:{tmp_path / 'none'}")
    assert info.value.name == "err_provider_failed"


@pytest.mark.parametrize(
    "name, module, extra", [("anthropic", "anthropic", "anthropic"), ("bedrock", "boto3", "bedrock"), ("openai", "openai", "openai")]
)
def test_a_missing_sdk_names_the_extra(name, module, extra):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    with pytest.raises(NkiUsageError) as info:
        get_provider(name, model="m")
    assert info.value.name == "err_missing_extra" and f"pip install 'nkidev[{extra}]'" in info.value.fix


def test_unknown_provider():
    with pytest.raises(NkiUsageError) as info:
        get_provider("gpt")
    assert info.value.name == "err_invalid_argument" and "replay:DIR" in info.value.fix


def test_redact_removes_keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plain-secret-value-123")
    text = redact("auth failed for plain-secret-value-123 with sk-abcdefghijklmnop and Bearer abcdefghijkl")
    assert "plain-secret-value-123" not in text and "sk-abcdefghijklmnop" not in text and "abcdefghijkl" not in text


def test_prompt_carries_rules_findings_docs_and_history():
    request = {
        "kernel": "k", "task_name": "k.py", "target": "trn2", "original": "ORIGINAL SOURCE", "best_source": "BEST SOURCE",
        "best": {"index": 2, "total_time_ns": 5000.0}, "history": [{"index": 1, "reason": "slower: 9.00 vs 8.00 us"}],
        "findings": [{"kind": "redundant_load", "severity": "high", "summary": "w loaded 8x", "source_lines": ["k.py:12"]}],
        "bottleneck_engine": "dma",
    }  # fmt: skip
    system, user = build_prompt(request)
    assert "128 partitions" in system
    assert "ORIGINAL SOURCE" in user and "BEST SOURCE" in user and "5.00 us" in user
    assert "slower: 9.00 vs 8.00 us" in user and "k.py:12" in user and "# redundant_load (profile finding)" in user


def test_extract_module_takes_the_last_block():
    assert extract_module("text\n```python\nfirst\n```\nmore\n```python\nimport nki\n```") == "import nki\n"
    assert extract_module("no code here") is None
