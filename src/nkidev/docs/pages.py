"""The docs pages: generated from the op table, nki.language, the error catalogue and the hardware
specs, plus the hand-written guides bundled in `guides/`. Generated at first use, so the docs can
never drift from what the emulator checks.

Page ids look like `isa/nc_matmul`, `language/ndarray`, `errors/err_psum_bank_overflow`,
`hardware/trn2`, `guides/tiling`.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

KINDS = ("guide", "isa", "language", "error", "verdict", "finding", "ncc", "hardware")


@dataclass(frozen=True)
class Page:
    id: str
    kind: str
    title: str
    summary: str
    body: str  # Markdown
    aliases: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "summary": self.summary,
            "aliases": list(self.aliases),
            "body": self.body,
        }


@cache
def all_pages() -> tuple[Page, ...]:
    """Every page, guides first (they are the best answers to how-to questions)."""
    return (
        *guide_pages(),
        *isa_pages(),
        *language_pages(),
        *error_pages(),
        *verdict_pages(),
        *finding_pages(),
        *ncc_pages(),
        *hardware_pages(),
    )


# ---------------------------------------------------------------- nki.isa


def _ops() -> dict:
    from nkidev.emulator.ops import OPS

    return OPS


def _versions():
    from nkidev.emulator import versions

    return versions


def _operand_rules():
    from nkidev.emulator.rules import OPERAND_RULES

    return OPERAND_RULES


def isa_pages() -> list[Page]:
    return [_isa_page(op) for op in _ops().values()]


def _isa_page(op) -> Page:
    module = f"nki.{op.namespace}"
    short = {"isa": "nisa", "collectives": "ncc"}.get(op.namespace, module)
    lines = [f"# {module}.{op.name}", "", f"`{short}.{op.name}({op.params})`", "", op.summary, ""]
    if op.semantics:
        lines += ["## Semantics", "", op.semantics, ""]
    lines += ["## Engines", "", ", ".join(op.engines), ""]
    availability = f"Targets: {', '.join(op.available_on()) or 'none of the bundled targets'}."
    qualified = f"{module}.{op.name}"
    if qualified in _versions().API:  # an op only some NKI versions have
        availability += " " + _versions().availability_text(qualified)
    if not op.emulated:
        availability += (
            " Documented NKI API that nkidev does not emulate yet: calling it raises `err_not_supported_yet`; run it on Trainium."
        )
    lines += ["## Availability", "", availability, ""]
    if op.rules:
        lines += ["## Rules checked by nkidev", ""]
        lines += [f"- {rule.doc} (`{rule.error}`)" for rule in op.rules]
        lines.append("")
    if op.tiles:
        lines += ["## Operand checks", "", f"Applied to {', '.join(op.tiles)}:", ""]
        lines += [f"- {rule.doc} (`{rule.error}`)" for rule in _operand_rules()]
        lines.append("")
    lines += ["## Cost model", "", op.cost_doc, ""]
    lines += _terms(op)
    lines += ["See also: `nkidev docs search " + op.name.replace("_", " ") + "`."]
    return Page(
        f"isa/{op.name}",  # every op's page, nki.isa or nki.collectives
        "isa",
        f"{module}.{op.name}",
        op.summary,
        "\n".join(lines),
        (op.name, f"{short}.{op.name}", f"{module}.{op.name}"),
    )


def _terms(op) -> list[str]:
    """What each name in the op's cost formula means (the terms of nkidev.emulator.costs it uses)."""
    from nkidev.emulator.costs import TERMS

    words = set(re.findall(r"\w+", op.cost_doc))
    used = [t for t in TERMS if t.name in words]
    out = [f"- `{t.name}`: {t.meaning}" for t in used]
    if op.perf_modes is not None:
        out.append(f"- performance modes ({op.perf_modes.name}): {op.perf_modes.doc}")
    return [*out, ""] if out else []


# ---------------------------------------------------------------- nki.language


def _language():
    import nkidev.emulator.isa  # noqa: F401  (language imports isa; import it first to avoid the cycle)
    import nkidev.emulator.language as nl

    return nl


def language_pages() -> list[Page]:
    nl = _language()
    pages = [_language_page(name, getattr(nl, name)) for name in nl.__all__ if inspect.isfunction(getattr(nl, name))]
    return [*pages, _dtypes_page(nl), _buffers_page(), _tile_size_page(nl), _activations_page()]


def _activation_lines(name: str) -> list[str]:
    from nkidev.emulator.alu import ACTIVATION_DOCS

    if name not in ACTIVATION_DOCS:
        return []
    return [
        "## What nkidev computes",
        "",
        f"`{name}(x)` = {ACTIVATION_DOCS[name]}.",
        "",
        f"Also accepted as `nisa.activation(op=nl.{name}, ...)`. The Scalar Engine evaluates a piecewise polynomial "
        "fit (coefficients unpublished); nkidev evaluates the formula in fp32, so results are close to, not "
        "bit-exact with, the hardware. All activations: `nkidev docs show activations`.",
        "",
    ]


def _activations_page() -> Page:
    from nkidev.emulator.alu import ACTIVATION_DOCS

    rows = [f"| `nl.{name}` | {doc} |" for name, doc in ACTIVATION_DOCS.items()]
    body = "\n".join(
        [
            "# Activation functions",
            "",
            "The `op=` of `nisa.activation` (and the `nl` functions of the same names). Each row says what nkidev "
            "computes; the Scalar Engine itself evaluates unpublished piecewise polynomial fits, so nkidev's results "
            "are close to, not bit-exact with, the hardware. Outside the stated valid ranges the hardware's results "
            "are not valid. Sources: docs/sources.md, entry `activations`.",
            "",
            "| op | nkidev computes |",
            "|---|---|",
            *rows,
        ]
    )
    return Page(
        "language/activations",
        "language",
        "Activation functions",
        "Every activation op, the formula nkidev computes (which GELU) and its valid input range.",
        body,
        ("activations", "activation functions", "gelu formula"),
    )


def _language_page(name: str, fn) -> Page:
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n")[0] if doc else f"nki.language.{name}"
    try:
        signature = f"nl.{name}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        signature = f"nl.{name}(...)"
    lines = [f"# nki.language.{name}", "", f"`{signature}`", ""]
    if doc:
        lines += [doc, ""]
    lines += _activation_lines(name)
    lines.append("nki.language helpers run as nki.isa instructions; the trace and the profile show those instructions.")
    return Page(f"language/{name}", "language", f"nki.language.{name}", summary, "\n".join(lines), (f"nl.{name}", f"nki.language.{name}"))


def _dtypes_page(nl) -> Page:
    from nkidev.emulator import versions
    from nkidev.emulator.dtypes import DTYPES, NkiDType

    rows = [f"| `nl.{n}` | {getattr(nl, n).itemsize} |" for n in nl.__all__ if isinstance(getattr(nl, n), NkiDType)]
    # the dtypes only some versions have (served by nl.__getattr__, so not in nl.__all__)
    rows += [f"| `nl.{n}` | {DTYPES[n].itemsize} ({versions.availability_text(f'nki.language.{n}')}) |" for n in ("int64", "uint64")]
    body = "\n".join(
        [
            "# NKI data types",
            "",
            "| dtype | bytes |",
            "|---|---|",
            *rows,
            "",
            "Compute engines read inputs as fp32, compute in fp32 and cast to the dst dtype. DMA casts "
            "src -> fp32 -> dst. nc_matmul takes fp8/bf16/fp16/tf32/fp32 inputs; an fp32/tf32 operand "
            "needs an fp32/tf32 partner; its PSUM dst is fp32 (fp32 or bf16 on trn3).",
        ]
    )
    return Page(
        "language/dtypes",
        "language",
        "NKI data types",
        "The dtypes of nki.language and their sizes.",
        body,
        ("dtypes", "dtype", "nl.dtype"),
    )


def _buffers_page() -> Page:
    body = "\n".join(
        [
            "# Buffers: nl.sbuf, nl.psum, nl.shared_hbm",
            "",
            "Allocate with `nl.ndarray(shape, dtype, buffer=nl.sbuf | nl.psum | nl.shared_hbm)`.",
            "",
            "- `nl.shared_hbm`: device memory. Kernel outputs must be allocated here and returned.",
            "- `nl.sbuf`: on-chip working memory, 128 partitions; the first dim of an SBUF tile is the partition dim.",
            "- `nl.psum`: 16 KiB per partition in 8 banks of 2 KiB; nc_matmul writes here. DMA cannot read PSUM: "
            "copy to SBUF with `nisa.tensor_copy` first (`err_dma_from_psum`).",
            "",
            "nkidev fills new SBUF/PSUM tensors with NaN (integers: 4) so reading unwritten memory shows up.",
        ]
    )
    return Page(
        "language/buffers",
        "language",
        "Buffers (SBUF, PSUM, HBM)",
        "Where tensors live and which instructions can reach them.",
        body,
        ("buffers", "nl.sbuf", "nl.psum", "nl.shared_hbm", "nl.hbm", "sbuf", "psum", "hbm"),
    )


def _tile_size_page(nl) -> Page:
    names = [n for n in dir(nl.tile_size) if not n.startswith("_")]
    rows = [f"| `nl.tile_size.{n}` | {getattr(nl.tile_size, n)} |" for n in names]
    body = "\n".join(
        [
            "# nl.tile_size",
            "",
            "Values on the default target (trn2); they follow NEURON_PLATFORM_TARGET_OVERRIDE.",
            "",
            "| constant | value |",
            "|---|---|",
            *rows,
        ]
    )
    return Page(
        "language/tile_size",
        "language",
        "nl.tile_size",
        "Tile-size constants: pmax 128, psum_bank_fmax 512, gemm_stationary_fmax 128, gemm_moving_fmax 512.",
        body,
        ("tile_size", "nl.tile_size", "pmax"),
    )


# ---------------------------------------------------------------- errors


def raisers() -> dict[str, list[str]]:
    """error name -> lines naming the op rules (and operand checks) that raise it."""
    out: dict[str, list[str]] = {}
    for op in _ops().values():
        for rule in op.rules:
            out.setdefault(rule.error, []).append(f"`nisa.{op.name}`: {rule.doc}")
    for rule in _operand_rules():
        out.setdefault(rule.error, []).append(f"every instruction with tile operands: {rule.doc}")
    return out


def error_pages() -> list[Page]:
    from nkidev.errors import ERRORS

    by_error = raisers()
    return [_error_page(info, by_error.get(name, [])) for name, info in ERRORS.items()]


def _error_page(info, raised_by: list[str]) -> Page:
    origin = "an official NKI error name" if info.official else "named by nkidev in the style of the official names"
    lines = [f"# {info.name}", "", info.summary, "", f"**Fix:** {info.fix}", "", f"This is {origin}.", ""]
    if raised_by:
        lines += ["## Raised by", ""] + [f"- {line}" for line in raised_by] + [""]
    lines.append(f"Explain it from the shell: `nkidev explain {info.name}`.")
    return Page(f"errors/{info.name}", "error", info.name, info.summary, "\n".join(lines), (info.name,))


# ---------------------------------------------------------------- hardware


def verdict_pages() -> list[Page]:
    """One page per `nkidev validate` verdict (fail_* and cheat_*), from the validator's own table."""
    from nkidev.validate.verdicts import VERDICTS

    return [
        Page(
            f"verdicts/{v.name}",
            "verdict",
            v.name,
            v.summary,
            f"# {v.name}\n\n{v.summary}\n\n## Fix\n\n{v.fix}\n\nReported by `nkidev validate`; "
            "`--allow NAME` turns a cheat verdict into a warning.\n",
            (v.name,),
        )
        for v in VERDICTS.values()
    ]


def finding_pages() -> list[Page]:
    """One page per `nkidev analyze` finding kind, from the investigation modules themselves."""
    from nkidev.analysis.investigations import modules

    pages = []
    for m in modules():
        doc = inspect.getdoc(m) or m.NAME
        cost = f"It costs {m.ENGINE} time" if m.ENGINE else "It costs the bottleneck engine's time"
        body = (
            f"# {m.NAME} (profile finding)\n\n{doc}\n\n## What to do\n\n{m.ADVICE}\n\n{cost}; a finding's "
            "`evidence.computed_as` gives its numbers. Reported by `nkidev analyze` (schema: "
            "`nkidev/analysis/SCHEMA.md`) and compared by `nkidev compare`.\n"
        )
        pages.append(Page(f"findings/{m.NAME}", "finding", m.NAME, doc.split("\n")[0], body, (m.NAME,)))
    return pages


def ncc_pages() -> list[Page]:
    """One page per Neuron compiler error code (NCC_...): raised by neuronx-cc on a Neuron machine, never by nkidev."""
    from nkidev.docs.ncc import INDEX_URL, NCC_CODES

    pages = []
    for c in NCC_CODES.values():
        scope = "an NKI-kernel-level error" if c.kernel_level else "mostly a whole-model (graph) compilation error"
        body = (
            f"# {c.code}\n\nNeuron compiler (neuronx-cc) error: {c.meaning}.\n\n**Try:** {c.fix}.\n\n"
            f"This is {scope}; nkidev's emulator does not run neuronx-cc, so you meet it only when compiling on a "
            f"Neuron machine. Public page: {c.url} (all codes: {INDEX_URL}).\n"
        )
        pages.append(Page(f"ncc/{c.code}", "ncc", c.code, c.meaning, body, (c.code, c.code.removeprefix("NCC_"))))
    return pages


def hardware_pages() -> list[Page]:
    from nkidev.hardware import get_target, target_names

    return [_hardware_page(get_target(name)) for name in target_names()]


def _hardware_page(t) -> Page:
    from dataclasses import fields, is_dataclass

    te = t.tensor_engine
    summary = (
        f"{t.name} (NeuronCore-v{t.nc_version}): {t.sbuf.partitions} partitions, "
        f"{t.sbuf.usable_bytes_per_partition} usable SBUF bytes per partition, PSUM {t.psum.banks} x "
        f"{t.psum.bank_bytes} B banks, TensorE {te.peak_flops / 1e12:.1f} bf16 TFLOPS."
    )
    lines = [
        f"# Hardware target {t.name}",
        "",
        summary,
        "",
        f"Aliases: {', '.join(t.aliases)}. Instance: {t.instance_type}. NeuronCores per chip: {t.neuroncores_per_chip}.",
        "",
        f"Derived: PSUM bank = {t.psum_bank_fmax} fp32 per partition (the nc_matmul moving free-size limit on "
        f"NeuronCore-v2/v3); DMA peak {t.dma.peak_bytes_per_s / 1e9:.0f} GB/s per NeuronCore.",
        "",
    ]
    for section in fields(t):
        value = getattr(t, section.name)
        if is_dataclass(value):
            lines += [f"## {section.name}", "", "| field | value |", "|---|---|"]
            lines += [f"| {f.name} | {getattr(value, f.name)} |" for f in fields(value)]
            lines.append("")
    lines.append(
        f"Every number is sourced in `nkidev/hardware/{t.name}.toml`, whose comments cite entries of `nkidev docs show sources` "
        f"(the public page and section of each). Pick it with `--target {t.name}`."
    )
    return Page(f"hardware/{t.name}", "hardware", f"Hardware target {t.name}", summary, "\n".join(lines), (t.name, *t.aliases))


# ---------------------------------------------------------------- guides


def guide_pages() -> list[Page]:
    root = resources.files("nkidev.docs") / "guides"
    pages = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            pages.append(_guide_page(entry.name[:-3], entry.read_text(encoding="utf-8")))
    return pages


def _guide_page(slug: str, text: str) -> Page:
    """A guide starts with `# Title`, then a one-paragraph summary."""
    lines = text.strip().split("\n")
    title = lines[0].lstrip("# ").strip()
    summary = next((line.strip() for line in lines[1:] if line.strip()), title)
    return Page(f"guides/{slug}", "guide", title, summary, text.strip(), (slug,))
