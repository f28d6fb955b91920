"""What an LLM provider is asked, and how its answer becomes a candidate module.

The prompt carries the NKI rules that matter most, the kernel (the original task file and the best source so
far), the analysis findings of the best with their source lines, the docs pages those findings and the last
errors point to (from nkidev's offline docs), and why each earlier candidate was rejected. The answer must be
one complete Python module in a ```python block; `extract_module` takes the last such block.
"""

from __future__ import annotations

import re

MAX_PAGE_CHARS = 3000
MAX_HISTORY = 12

RULES = """\
You write NKI kernels for AWS Trainium (`import nki`, `nki.language as nl`, `nki.isa as nisa`).
Rules the hardware enforces (nkidev checks each one and names the error):
- an on-chip tile has at most 128 partitions (the first dimension; nl.tile_size.pmax);
- a matmul writes at most 512 fp32 columns per PSUM bank (nl.tile_size.gemm_moving_fmax); the stationary operand
  has at most 128 columns; the contraction dimension is the partition dimension of both operands;
- DMA moves data between HBM and SBUF (nisa.dma_copy); PSUM is read by engines, never by DMA;
- outputs are nl.ndarray(..., buffer=nl.shared_hbm) and are returned; inputs must never be written;
- the kernel computes every output element itself from its inputs: no NumPy on kernel data, no calls to the
  task's reference() or cases(), no reaching into the emulator.
Performance on Trainium: load every input byte from HBM once when it fits in SBUF (24 MiB), move >= 2 KiB per
partition per DMA, keep the Tensor Engine busy, overlap loads with compute.
"""

TASK = """\
Rewrite the kernel `{kernel}` to run faster on {target} while computing exactly the same result.
Answer with ONE complete Python module in a ```python block that defines `{kernel}` with the same signature
(imports and helpers included). It is validated against the ORIGINAL task file's reference, cases and
tolerance with anti-cheat checks, then timed with nkidev's cost model; it is accepted only if it passes and is
faster than the best so far ({best_us}).
"""


def _docs(topics: list[str]) -> list[str]:
    from nkidev.docs.api import show
    from nkidev.errors import NkiError

    pages = []
    for topic in dict.fromkeys(topics):
        try:
            page = show(topic)
        except NkiError:
            continue
        pages.append(f"## docs: {page['title']}\n{page['body'][:MAX_PAGE_CHARS]}")
    return pages


DEBUG_TASK = """\
The kernel `{kernel}` in the task file below fails validation on nkidev's emulator:
{failure}
Fix it. Answer with ONE complete Python module in a ```python block: the whole task file, with the kernel fixed and
the reference, cases and TOLERANCE unchanged (the fix is validated against the original ones).
"""


def build_debug_prompt(request: dict) -> tuple[str, str]:
    parts = [DEBUG_TASK.format(kernel=request["kernel"], failure=request["failure"])]
    if request.get("simplify"):
        parts.append(f"You are stuck on the same failure. {request['simplify']}")
    parts.append(f"## The current source ({request['task_name']})\n```python\n{request['best_source']}\n```")
    if request.get("history"):
        parts.append("## Earlier attempts\n" + "\n".join(f"- #{h['index']}: {h['reason']}" for h in request["history"][-MAX_HISTORY:]))
    parts += _docs([e["name"] for e in request.get("errors") or [] if e])
    return RULES, "\n\n".join(parts)


def build_prompt(request: dict, errors: list[dict] = ()) -> tuple[str, str]:
    """(system, user) texts for one proposal (a fix when request["mode"] == "debug", else a faster rewrite)."""
    if request.get("mode") == "debug":
        return build_debug_prompt(request)
    best = request["best"]
    best_us = f"{best['total_time_ns'] / 1e3:.2f} us" if best.get("total_time_ns") else "the original"
    parts = [TASK.format(kernel=request["kernel"], target=request["target"], best_us=best_us)]
    parts.append(f"## The original task file ({request['task_name']})\n```python\n{request['original']}\n```")
    if best.get("index") is not None:
        parts.append(f"## The best candidate so far (#{best['index']}, {best_us})\n```python\n{request['best_source']}\n```")
    if request.get("findings"):
        lines = [f"- {f['kind']} ({f['severity']}): {f['summary']} [{', '.join(map(str, f.get('source_lines') or []))}]"
                 for f in request["findings"]]  # fmt: skip
        parts.append(f"## Analysis of the best (bottleneck: {request.get('bottleneck_engine')})\n" + "\n".join(lines))
    history = request.get("history") or []
    if history:
        parts.append("## Earlier candidates\n" + "\n".join(f"- #{h['index']}: {h['reason']}" for h in history[-MAX_HISTORY:]))
    topics = [f["kind"] for f in request.get("findings") or []] + [e["name"] for e in errors if e]
    parts += _docs(topics)
    return RULES, "\n\n".join(parts)


_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def extract_module(text: str) -> str | None:
    """The last fenced code block of an answer (None when there is none)."""
    blocks = _BLOCK.findall(text or "")
    return blocks[-1].strip() + "\n" if blocks else None
