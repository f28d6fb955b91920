"""nkidev's MCP tool server: `nkidev mcp [--root DIR]` serves these tools over stdio to Claude Code, Kiro,
Cursor and any other MCP client.

Each tool is a thin call into the same library function as the matching CLI command and returns the same
JSON that the command prints with `--json`. Errors come back as tool results flagged `is_error` holding
`{"error": {name, message, fix, location}}`; the server itself never stops on a bad call.

Agents call these tools without a person approving each call, so the server is confined:
- every path argument is resolved (symlinks included) against the workspace root (`--root`, default the
  server's working directory) and refused with err_outside_root when it lands outside; profiles are
  written inside it (by default under ROOT/nkidev-profiles/), kernel source lines are read only from it;
- `validate` and `profile` execute the task file's Python code, so they run in an isolated child process
  (nkidev.sandbox) with a time and a memory limit (default 120 s, min(8 GiB, half the RAM)); one hung call
  is stopped by its limit and never blocks the others. `validate(workers=N)` splits the cases over N such
  children (at most MCP_MAX_WORKERS), each with the full limits. Several calls run at once: nothing is locked
  except the docs index's first build;
- `optimize_start` / `optimize_submit` / `optimize_status` keep optimization sessions on disk under
  ROOT/nkidev-optimize/<session>/ (nkidev.loops.agent_session); every candidate is judged in an isolated child;
- `query` and `analyze` open the profile read-only with DuckDB's file access off, a statement timeout and
  a row cap (nkidev.analysis.tables).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from nkidev import __version__
from nkidev.errors import NkiError, NkiUsageError
from nkidev.sandbox.limits import Limits, mcp_limits

SERVER_NAME = "nkidev"
INSTRUCTIONS = (
    "nkidev emulates the AWS Trainium NKI API on the CPU. Typical loop: validate a kernel (FILE.py::KERNEL), fix "
    "named errors with explain/docs_show, profile it into a directory, analyze or query that directory. To make a "
    "kernel faster: optimize_start, then optimize_submit complete rewrites until target_met. Tools "
    'return the same JSON as the nkidev CLI with --json; errors come back as {"error": {...}} with a fix. '
    "validate and profile import and run the task file's Python code (in an isolated, time- and memory-limited "
    "process); every path must lie inside the server's workspace root."
)
MCP_MAX_WORKERS = 8  # each worker may use the full memory limit, so an agent gets fewer than the CLI's 64
_DOCS_LOCK = threading.Lock()  # the docs index is built lazily on first use; everything else runs concurrently

Kernel = Annotated[
    str,
    Field(
        description="The kernel as FILE.py::KERNEL (FILE.py::KERNEL[4] or [2,2] for an SPMD grid), e.g. "
        "examples/softmax.py::softmax_kernel; FILE is relative to the workspace root and must lie inside it."
    ),
]
Target = Annotated[str | None, Field(description="Hardware generation: trn1, trn2 or trn3 (default trn2).")]
ProfileDir = Annotated[
    str, Field(description="A profile directory written by `profile` (or by neuron-explorer), inside the workspace root.")
]


class Workspace:
    """The root every path argument must resolve into."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root if root is not None else os.getcwd()).resolve()
        if not self.root.is_dir():
            raise NkiUsageError(
                "err_bad_argument", f"workspace root {self.root} is not a directory", "pass an existing directory to --root"
            )

    def path(self, value: str | os.PathLike, what: str) -> Path:
        """`value` (relative to the root, or absolute) resolved with symlinks; err_outside_root if it leaves the root."""
        resolved = (self.root / Path(value).expanduser()).resolve()
        if not resolved.is_relative_to(self.root):
            raise NkiUsageError(
                "err_outside_root",
                f"{what} {str(value)!r} resolves to {resolved}, outside the workspace root {self.root}",
                "use a path inside the workspace root, or restart the server with `nkidev mcp --root DIR` covering it",
            )
        return resolved

    def spec(self, spec: str) -> str:
        """A FILE::KERNEL[grid] spec with FILE resolved inside the root."""
        file, sep, rest = str(spec).partition("::")
        return f"{self.path(file, 'task file')}{sep}{rest}"


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


def _run(call: Callable[[], Any], lock: threading.Lock | None = None) -> CallToolResult:
    """Run one in-process library call; every failure becomes an error result, never an exception out of the server."""
    try:
        if lock is not None:
            with lock:
                data = call()
        else:
            data = call()
        return _result(data.to_dict() if hasattr(data, "to_dict") else data)
    except NkiError as e:
        return _error(e)
    except Exception as e:  # noqa: BLE001 - an nkidev bug must not take the server down
        return _error(NkiError("err_internal", f"{type(e).__name__}: {e}", "this is a bug in nkidev; please report it"))


async def _isolated(function: str, kwargs: dict, limits: Limits, label: str, cwd: Path) -> CallToolResult:
    """Run a library function in the sandbox, off the event loop; a cancelled call kills its child."""
    from nkidev import sandbox

    try:
        job = sandbox.start(function, kwargs, limits, label=label, cwd=cwd, warm=True, spare=True)
    except NkiError as e:
        return _error(e)
    try:
        return _result(await anyio.to_thread.run_sync(job.result, abandon_on_cancel=True))
    except NkiError as e:
        return _error(e)
    except anyio.get_cancelled_exc_class():
        job.cancel()
        raise
    except Exception as e:  # noqa: BLE001 - an nkidev bug must not take the server down
        return _error(NkiError("err_internal", f"{type(e).__name__}: {e}", "this is a bug in nkidev; please report it"))
    finally:
        job.worker.kill()


async def _threaded(call: Callable[[], Any]) -> CallToolResult:
    """A library call that starts isolated children itself (the optimize tools), run off the event loop."""
    return await anyio.to_thread.run_sync(lambda: _run(call), abandon_on_cancel=True)


class Tools:
    """The tools of one server, bound to its workspace and limits (each method is one MCP tool)."""

    def __init__(self, workspace: Workspace, limits: Limits):
        self.workspace = workspace
        self.limits = limits

    async def validate(
        self,
        kernel: Kernel,
        target: Target = None,
        seeds: Annotated[int, Field(description="Random seeds of test inputs to try.", ge=0, le=100)] = 3,
        workers: Annotated[
            int,
            Field(
                description="Isolated processes to split the cases over (each with the full time and memory limit); "
                "the merged result is the same as with 1.",
                ge=1,
                le=MCP_MAX_WORKERS,
            ),
        ] = 1,
    ) -> CallToolResult:
        """Run a kernel on the emulator against its task file's reference and cases; report pass/fail per case, error
        metrics and any named hardware-rule error with its fix. EXECUTES THE TASK FILE'S PYTHON CODE (in an isolated
        process with a time and memory limit). Same as `nkidev validate FILE::KERNEL --json [--workers N]`."""
        try:
            spec = self.workspace.spec(kernel)
        except NkiError as e:
            return _error(e)
        kwargs = {"spec": spec, "target": target, "seeds": seeds}
        if workers > 1:
            return await self._validate_parallel(kwargs, workers)
        return await _isolated("nkidev.validate.api:validate_task_data", kwargs, self.limits, kernel, self.workspace.root)

    async def _validate_parallel(self, kwargs: dict, workers: int) -> CallToolResult:
        """`validate_parallel` off the event loop; a cancelled call kills its children, as `_isolated` does."""
        from nkidev.validate.parallel import validate_parallel

        jobs: list = []
        options = {k: v for k, v in kwargs.items() if k != "spec"}

        def call() -> dict:
            return validate_parallel(kwargs["spec"], options, self.limits, workers, cwd=self.workspace.root, started=jobs)[0]

        try:
            return await anyio.to_thread.run_sync(lambda: _run(call), abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            for job in list(jobs):
                job.cancel()
            raise

    async def profile(
        self,
        kernel: Kernel,
        out: Annotated[
            str | None,
            Field(
                description="Directory to write the profile into, inside the workspace root (default: a fresh nkidev-profiles/ directory)."
            ),
        ] = None,
        case: Annotated[int, Field(description="Index of the input case from the task file's cases().", ge=0)] = 0,
        target: Target = None,
        force: Annotated[bool, Field(description="Replace an existing profile directory (only one nkidev wrote).")] = False,
        trace: Annotated[
            Literal["auto", "full", "none"],
            Field(
                description="What trace.json (Perfetto) holds: auto = every track, the DMA packet tracks only up to 200,000 "
                "packets; full = every packet; none = no trace.json (the Parquet tables have every event)."
            ),
        ] = "auto",
    ) -> CallToolResult:
        """Profile a kernel with nkidev's cost model: writes neuron-explorer-format Parquet tables and a Perfetto trace
        to `out` and returns the summary. EXECUTES THE TASK FILE'S PYTHON CODE (in an isolated process with a time and
        memory limit). Same as `nkidev profile FILE::KERNEL --out DIR --json`."""
        from nkidev.profile.api import default_out
        from nkidev.taskfile import kernel_spec

        try:
            spec = self.workspace.spec(kernel)
            name = kernel_spec(spec).name or "kernel"
            dest = self.workspace.path(out, "out") if out is not None else default_out(name, self.workspace.root / "nkidev-profiles")
        except NkiError as e:
            return _error(e)
        kwargs = {"spec": spec, "case": case, "target": target, "out": str(dest), "force": force, "trace": trace}
        return await _isolated("nkidev.profile.api:profile_task_data", kwargs, self.limits, kernel, self.workspace.root)

    async def optimize_start(
        self,
        kernel: Kernel,
        target: Target = None,
        target_speedup: Annotated[float | None, Field(description="Stop once the best is this many times faster.", gt=0)] = None,
        target_time_us: Annotated[float | None, Field(description="Stop once the best takes at most this many microseconds.", gt=0)] = None,
        target_peak_percent: Annotated[
            float | None, Field(description="Stop once the best reaches this percent of its roofline.", gt=0)
        ] = None,
        budget_iterations: Annotated[int | None, Field(description="Most candidates to judge (default 20).", ge=1)] = None,
        case: Annotated[int, Field(description="Index of the case candidates are timed on.", ge=0)] = 0,
        seeds: Annotated[int, Field(description="Extra random inputs per case in the validation gate.", ge=0, le=100)] = 3,
    ) -> CallToolResult:
        """Start an optimization session for a kernel: validates and profiles the original, returns the session id, the
        baseline time and the analysis findings (bottleneck, findings with source lines) to steer your first rewrite.
        Then write complete candidate modules and judge each with optimize_submit. EXECUTES THE TASK FILE'S PYTHON CODE
        (in an isolated process with a time and memory limit). Like `nkidev optimize` with you as the provider."""
        from nkidev.loops import agent_session

        settings = dict(target=target, target_speedup=target_speedup, target_time_us=target_time_us, case=case, seeds=seeds)
        settings.update(target_peak_percent=target_peak_percent, budget_iterations=budget_iterations)
        return await _threaded(lambda: agent_session.start(self.workspace.spec(kernel), self.workspace.root, self.limits, settings))

    async def optimize_submit(
        self,
        session: Annotated[str, Field(description="The session id optimize_start returned.")],
        source: Annotated[
            str, Field(description="A complete Python module defining the kernel under the same name (imports and helpers included).")
        ],
    ) -> CallToolResult:
        """Judge one candidate of a session: validated against the ORIGINAL task file's reference, cases and tolerance
        with every anti-cheat check (the candidate's own reference or cases are ignored), then timed. Returns accepted
        (passed and faster than the best so far), the verdicts or error with its line, the time, the speedup, the
        findings of the best and target_met. EXECUTES THE CANDIDATE'S PYTHON CODE (in an isolated process with a time
        and memory limit)."""
        from nkidev.loops import agent_session

        return await _threaded(lambda: agent_session.submit(self.workspace.root, session, source))

    def optimize_status(self, session: Annotated[str, Field(description="The session id optimize_start returned.")]) -> CallToolResult:
        """The state of an optimization session: the best so far (index, time, speedup, path of best.py), every candidate
        with its verdicts and the reason it was accepted or rejected, and stopped ("target_met" once a submission met the
        target, "budget_exhausted", or null)."""
        from nkidev.loops import agent_session

        return _run(lambda: agent_session.status(self.workspace.root, session))

    def analyze(self, profile_dir: ProfileDir) -> CallToolResult:
        """Analyze a profile: total time, memory/compute/pipeline bounds, the bottleneck engine and findings tied to
        kernel source lines (read only from files inside the workspace root). Same as `nkidev analyze DIR --json`."""
        ws = self.workspace
        return _run(lambda: _backend("nkidev.analysis.api", "analyze")(ws.path(profile_dir, "profile_dir"), source_root=ws.root))

    async def compare(
        self,
        before: Annotated[str, Field(description="A profile directory or FILE::KERNEL spec, inside the workspace root.")],
        after: Annotated[str, Field(description="A profile directory or FILE::KERNEL spec, inside the workspace root.")],
        case: Annotated[int, Field(description="Input case of a FILE::KERNEL spec's task file.", ge=0)] = 0,
        target: Target = None,
    ) -> CallToolResult:
        """Compare two profiles (before, after): kernel time and speedup, per-engine deltas, bounds, findings fixed and
        introduced, cost change per source line. A FILE::KERNEL side is profiled with the cost model, which
        EXECUTES THE TASK FILE'S PYTHON CODE (in an isolated process with a time and memory limit). Same as
        `nkidev compare A B --json`."""
        ws = self.workspace

        def side(value: str) -> str:
            return ws.spec(value) if "::" in value and not ws.path(value, "profile").is_dir() else str(ws.path(value, "profile"))

        try:
            a, b = side(before), side(after)
        except NkiError as e:
            return _error(e)
        kwargs = {"a": a, "b": b, "case": case, "target": target, "source_root": str(ws.root), "limits": self.limits}
        call = _backend("nkidev.analysis.compare", "compare")
        return await anyio.to_thread.run_sync(lambda: _run(lambda: call(**kwargs)))

    def query(
        self,
        profile_dir: ProfileDir,
        sql: Annotated[
            str,
            Field(
                description="A DuckDB SELECT over the profile tables (Instruction, DmaPacket, "
                "Summary, ...), e.g. SELECT total_time FROM Summary. Read-only: no file access, a statement timeout and a row cap."
            ),
        ],
    ) -> CallToolResult:
        """Run SQL over a profile's tables and return the rows. Same as `nkidev query DIR "SQL" --json`."""
        ws = self.workspace
        return _run(lambda: _backend("nkidev.analysis.api", "query")(ws.path(profile_dir, "profile_dir"), sql))

    def docs_search(
        self,
        query: Annotated[str, Field(description="A few words, e.g. 'psum bank matmul'.")],
        limit: Annotated[int, Field(description="Most results to return.", ge=1, le=50)] = 10,
    ) -> CallToolResult:
        """Search the offline docs: every nki.isa instruction (rules, cost), nki.language function, error name, hardware
        target and guide. Same as `nkidev docs search WORDS --json`."""
        from nkidev.docs.api import search

        return _run(lambda: search(query, limit=limit), _DOCS_LOCK)

    def docs_show(
        self,
        topic: Annotated[str, Field(description="A page id or name: nc_matmul, nl.ndarray, trn2, tiling, err_psum_bank_overflow, ...")],
    ) -> CallToolResult:
        """Return one docs page as Markdown with its metadata. Same as `nkidev docs show TOPIC --json`."""
        from nkidev.docs.api import show

        return _run(lambda: show(topic), _DOCS_LOCK)

    def explain(
        self,
        name: Annotated[str, Field(description="An error name such as err_psum_bank_overflow, or a whole error line.")],
    ) -> CallToolResult:
        """Explain an error name nkidev raises: what it means, how to fix it, which instructions raise it. Same as
        `nkidev explain NAME --json`."""
        from nkidev.docs.api import explain as run_explain

        return _run(lambda: run_explain(name), _DOCS_LOCK)


TOOL_NAMES = (
    "validate",
    "profile",
    "analyze",
    "compare",
    "query",
    "docs_search",
    "docs_show",
    "explain",
    "optimize_start",
    "optimize_submit",
    "optimize_status",
)
TOOLS = tuple(getattr(Tools, name) for name in TOOL_NAMES)


def build_server(root: str | os.PathLike | None = None, limits: Limits | None = None) -> MCPServer:
    """A server whose tools are confined to `root` (default: the working directory) and run under `limits`."""
    tools = Tools(Workspace(root), limits or mcp_limits())
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    for name in TOOL_NAMES:
        server.add_tool(getattr(tools, name))
    return server


def list_tools() -> list[dict]:
    """Name, description and input schema of every tool (`nkidev mcp --list-tools`)."""

    async def _tools():
        return await build_server().list_tools()

    return [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in anyio.run(_tools)]


def serve(root: str | os.PathLike | None = None, limits: Limits | None = None) -> None:
    """Serve the tools over stdio until the client disconnects."""
    build_server(root, limits).run()
