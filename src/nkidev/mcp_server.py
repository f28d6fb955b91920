"""nkidev's MCP tool server: `nkidev mcp` serves these tools over stdio to Claude Code, Kiro, Cursor and
any other MCP client.

Each tool is a thin call into the same library function as the matching CLI command and returns the same
JSON that the command prints with `--json`. Errors come back as tool results flagged `is_error` holding
`{"error": {name, message, fix, location}}`; the server itself never stops on a bad call.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from nkidev import __version__
from nkidev.errors import NkiError

SERVER_NAME = "nkidev"
INSTRUCTIONS = (
    "nkidev emulates the AWS Trainium NKI API on the CPU. Typical loop: validate a kernel (FILE.py::KERNEL), fix "
    "named errors with explain/docs_show, profile it into a directory, analyze or query that directory. Tools "
    'return the same JSON as the nkidev CLI with --json; errors come back as {"error": {...}} with a fix.'
)
# The emulator swaps `import nki` and per-run state process-wide, so tool calls run one at a time.
_LOCK = threading.Lock()

Kernel = Annotated[
    str,
    Field(
        description="The kernel as FILE.py::KERNEL, e.g. examples/softmax.py::softmax_kernel "
        "(paths relative to the server's working directory)."
    ),
]
Target = Annotated[str | None, Field(description="Hardware generation: trn1, trn2 or trn3 (default trn2).")]
ProfileDir = Annotated[str, Field(description="A profile directory written by `profile` (or by neuron-explorer).")]


def _backend(module: str, name: str) -> Callable:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise NkiError(
            "err_internal",
            f"{module}.{name} is missing from this nkidev install",
            "upgrade nkidev; this tool's backend is not available in this version",
        ) from None


def _result(data: Any) -> CallToolResult:
    from nkidev.cli_common import to_json

    structured = data if isinstance(data, dict) else {"result": data}
    return CallToolResult(content=[TextContent(type="text", text=to_json(data))], structured_content=structured)


def _error(error: NkiError) -> CallToolResult:
    from nkidev.cli_common import to_json

    payload = {"error": error.to_dict()}
    return CallToolResult(content=[TextContent(type="text", text=to_json(payload))], structured_content=payload, is_error=True)


def _run(call: Callable[[], Any]) -> CallToolResult:
    """Run one library call; every failure becomes an error result, never an exception out of the server."""
    try:
        with _LOCK:
            data = call()
        return _result(data.to_dict() if hasattr(data, "to_dict") else data)
    except NkiError as e:
        return _error(e)
    except Exception as e:  # noqa: BLE001 - an nkidev bug must not take the server down
        return _error(NkiError("err_internal", f"{type(e).__name__}: {e}", "this is a bug in nkidev; please report it"))


# ---------------------------------------------------------------- tools


def validate(
    kernel: Kernel, target: Target = None, seeds: Annotated[int, Field(description="Random seeds of test inputs to try.", ge=1)] = 3
) -> CallToolResult:
    """Run a kernel on the emulator against its task file's reference and cases; report pass/fail per case, error
    metrics and any named hardware-rule error with its fix. Same as `nkidev validate FILE::KERNEL --json`."""
    return _run(lambda: _backend("nkidev.validate.api", "validate_task")(kernel, target=target, seeds=seeds))


def profile(
    kernel: Kernel,
    out: Annotated[str, Field(description="Directory to write the profile into (must not exist unless force is true).")],
    case: Annotated[int, Field(description="Index of the input case from the task file's cases().", ge=0)] = 0,
    target: Target = None,
    force: Annotated[bool, Field(description="Replace an existing profile directory.")] = False,
) -> CallToolResult:
    """Profile a kernel with nkidev's cost model: writes neuron-explorer-format Parquet tables and a Perfetto trace
    to `out` and returns the summary. Same as `nkidev profile FILE::KERNEL --out DIR --json`."""
    return _run(lambda: _backend("nkidev.profile.api", "profile_task")(kernel, case=case, target=target, out=out, force=force))


def analyze(profile_dir: ProfileDir) -> CallToolResult:
    """Analyze a profile: total time, memory/compute/pipeline bounds, the bottleneck engine and findings tied to
    kernel source lines. Same as `nkidev analyze DIR --json`."""
    return _run(lambda: _backend("nkidev.analysis.api", "analyze")(profile_dir))


def query(
    profile_dir: ProfileDir,
    sql: Annotated[
        str,
        Field(
            description="A DuckDB SELECT over the profile tables (Instruction, DmaPacket, "
            "Summary, ...), e.g. SELECT total_time FROM Summary."
        ),
    ],
) -> CallToolResult:
    """Run SQL over a profile's tables and return the rows. Same as `nkidev query DIR "SQL" --json`."""
    return _run(lambda: _backend("nkidev.analysis.api", "query")(profile_dir, sql))


def docs_search(
    query: Annotated[str, Field(description="A few words, e.g. 'psum bank matmul'.")],
    limit: Annotated[int, Field(description="Most results to return.", ge=1, le=50)] = 10,
) -> CallToolResult:
    """Search the offline docs: every nki.isa instruction (rules, cost), nki.language function, error name, hardware
    target and guide. Same as `nkidev docs search WORDS --json`."""
    from nkidev.docs.api import search

    return _run(lambda: search(query, limit=limit))


def docs_show(
    topic: Annotated[str, Field(description="A page id or name: nc_matmul, nl.ndarray, trn2, tiling, err_psum_bank_overflow, ...")],
) -> CallToolResult:
    """Return one docs page as Markdown with its metadata. Same as `nkidev docs show TOPIC --json`."""
    from nkidev.docs.api import show

    return _run(lambda: show(topic))


def explain(
    name: Annotated[str, Field(description="An error name such as err_psum_bank_overflow, or a whole error line.")],
) -> CallToolResult:
    """Explain an error name nkidev raises: what it means, how to fix it, which instructions raise it. Same as
    `nkidev explain NAME --json`."""
    from nkidev.docs.api import explain as run_explain

    return _run(lambda: run_explain(name))


TOOLS = (validate, profile, analyze, query, docs_search, docs_show, explain)


def build_server() -> MCPServer:
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    for tool in TOOLS:
        server.add_tool(tool)
    return server


def list_tools() -> list[dict]:
    """Name, description and input schema of every tool (`nkidev mcp --list-tools`)."""
    import anyio

    async def _tools():
        return await build_server().list_tools()

    return [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in anyio.run(_tools)]


def serve() -> None:
    """Serve the tools over stdio until the client disconnects."""
    build_server().run()
