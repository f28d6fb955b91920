"""The MCP server: tools listed with descriptions and typed parameters, the same JSON as the CLI, errors as tool
results, and a real stdio round trip."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from nkidev.cli_common import to_json
from nkidev.docs import api
from nkidev.mcp_server import build_server

from .helpers import EXAMPLES, backend_available

TOOL_NAMES = {"validate", "profile", "analyze", "compare", "query", "docs_search", "docs_show", "explain"}
TOOL_NAMES |= {"optimize_start", "optimize_submit", "optimize_status"}  # the optimization loop driven by the IDE agent
SOFTMAX = f"{EXAMPLES / 'softmax.py'}::softmax_kernel"
needs_validate = pytest.mark.skipif(
    not backend_available("nkidev.validate.api"), reason="validation backend nkidev.validate.api has not landed"
)


def _call(tool: str, args: dict):
    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(tool, args)

    return anyio.run(go)


def _tools():
    async def go():
        async with Client(build_server()) as client:
            return (await client.list_tools()).tools

    return anyio.run(go)


def test_every_tool_has_a_description_and_typed_described_parameters():
    tools = {t.name: t for t in _tools()}
    assert set(tools) == TOOL_NAMES
    for tool in tools.values():
        assert len(tool.description) > 40, tool.name
        props = tool.input_schema["properties"]
        assert props and set(tool.input_schema.get("required", [])) <= set(props)
        for name, prop in props.items():
            assert "type" in prop or "anyOf" in prop, (tool.name, name)
            assert prop.get("description"), (tool.name, name)


def test_docs_tools_return_the_cli_json():
    result = _call("docs_search", {"query": "psum bank", "limit": 3})
    assert not result.is_error
    assert json.loads(result.content[0].text) == api.search("psum bank", limit=3)
    assert result.content[0].text == to_json(api.search("psum bank", limit=3))
    result = _call("explain", {"name": "err_dma_from_psum"})
    assert result.structured_content == api.explain("err_dma_from_psum")
    result = _call("docs_show", {"topic": "tiling"})
    assert result.structured_content["id"] == "guides/tiling"


def test_errors_come_back_as_tool_results():
    async def go():
        async with Client(build_server()) as client:
            bad = await client.call_tool("docs_show", {"topic": "no_such_page"})
            typo = await client.call_tool("docs_search", {"query": "psum", "limit": "many"})
            missing = await client.call_tool("analyze", {"profile_dir": "/no/such/profile"})
            good = await client.call_tool("explain", {"name": "err_free_size_mismatch"})
            return bad, typo, missing, good

    bad, typo, missing, good = anyio.run(go)
    assert bad.is_error and json.loads(bad.content[0].text)["error"]["name"] == "err_unknown_topic"
    assert typo.is_error and "limit" in typo.content[0].text
    assert missing.is_error and json.loads(missing.content[0].text)["error"]["name"]
    assert not good.is_error  # the server keeps answering


@needs_validate
def test_validate_tool_on_an_example():
    result = _call("validate", {"kernel": SOFTMAX, "seeds": 1})
    assert not result.is_error, result.content[0].text
    assert isinstance(json.loads(result.content[0].text), dict)


def test_stdio_server_lists_tools_and_answers():
    server = StdioServerParameters(command=sys.executable, args=["-m", "nkidev", "mcp"])

    async def go():
        async with Client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            explained = await client.call_tool("explain", {"name": "err_psum_bank_overflow"})
            validated = (
                await client.call_tool("validate", {"kernel": SOFTMAX, "seeds": 1}) if backend_available("nkidev.validate.api") else None
            )
            return names, explained, validated

    names, explained, validated = anyio.run(go)
    assert names == TOOL_NAMES
    assert explained.structured_content["name"] == "err_psum_bank_overflow"
    if validated is not None:
        assert not validated.is_error, validated.content[0].text


def test_list_tools_cli():
    from .helpers import run_json

    code, tools = run_json("mcp --list-tools --json")
    assert code == 0 and {t["name"] for t in tools} == TOOL_NAMES


@pytest.mark.skipif(
    not (backend_available("nkidev.profile.api") and backend_available("nkidev.analysis.api")),
    reason="profiler (nkidev.profile.api) or analysis (nkidev.analysis.api) backend has not landed",
)
def test_profile_analyze_and_query_tools(tmp_path):
    from nkidev.analysis.api import query

    out = tmp_path / "run1"
    (tmp_path / "softmax.py").write_text((EXAMPLES / "softmax.py").read_text())  # paths must lie inside the server's root
    kernel = "softmax.py::softmax_kernel"

    async def go():
        async with Client(build_server(root=tmp_path)) as client:
            profiled = await client.call_tool("profile", {"kernel": kernel, "out": str(out)})
            again = await client.call_tool("profile", {"kernel": kernel, "out": str(out)})
            analyzed = await client.call_tool("analyze", {"profile_dir": str(out)})
            rows = await client.call_tool("query", {"profile_dir": str(out), "sql": "SELECT total_time FROM Summary"})
            return profiled, again, analyzed, rows

    profiled, again, analyzed, rows = anyio.run(go)
    assert not profiled.is_error, profiled.content[0].text
    assert again.is_error and json.loads(again.content[0].text)["error"]["name"] == "err_output_exists"
    assert not analyzed.is_error and analyzed.structured_content["bottleneck_engine"]
    assert json.loads(rows.content[0].text) == query(out, "SELECT total_time FROM Summary")


def test_validate_workers_and_profile_trace_options(tmp_path):
    shards = Path(__file__).parents[1] / "validate" / "tasks" / "shards.py"
    (tmp_path / "shards.py").write_text(shards.read_text())
    (tmp_path / "softmax.py").write_text((EXAMPLES / "softmax.py").read_text())

    async def go():
        async with Client(build_server(root=tmp_path)) as client:
            one = await client.call_tool("validate", {"kernel": "shards.py::copy_kernel", "seeds": 1})
            two = await client.call_tool("validate", {"kernel": "shards.py::copy_kernel", "seeds": 1, "workers": 2})
            many = await client.call_tool("validate", {"kernel": "shards.py::copy_kernel", "workers": 9})
            bare = await client.call_tool("profile", {"kernel": "softmax.py::softmax_kernel", "out": "p", "trace": "none"})
            bad = await client.call_tool("profile", {"kernel": "softmax.py::softmax_kernel", "out": "q", "trace": "some"})
            return one, two, many, bare, bad

    one, two, many, bare, bad = anyio.run(go)
    assert not one.is_error and not two.is_error, two.content[0].text
    assert json.loads(two.content[0].text) == json.loads(one.content[0].text)
    assert [c["passed"] for c in one.structured_content["cases"]] == [True, True, False, True, True]
    assert many.is_error and bad.is_error  # above the server's cap; not a trace mode
    assert not bare.is_error, bare.content[0].text
    assert (tmp_path / "p" / "Instruction.parquet").exists() and bare.structured_content["profile_dir"] == str(tmp_path / "p")
    assert not (tmp_path / "p" / "trace.json").exists() and not (tmp_path / "q").exists()
