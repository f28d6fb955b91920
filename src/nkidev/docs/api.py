"""The docs library behind `nkidev docs search|show` and `nkidev explain` (and the MCP tools).

    search("psum bank")            -> [{id, title, kind, summary, snippet, score}, ...]
    show("nc_matmul")              -> {id, kind, title, summary, aliases, body}   (also a unique short name: "gelu")
    listing(kind=None)             -> [{id, kind, title, summary}, ...]
    explain("err_psum_bank_overflow") -> {name, kind, summary, fix, official, raised_by, page}
                                      (also verdicts, finding kinds such as redundant_load, and NCC_ codes)

Unknown names raise `err_unknown_topic` with the closest matches in the message.
"""

from __future__ import annotations

import difflib
import inspect
import re
from functools import cache

from nkidev.docs import index
from nkidev.docs.pages import KINDS, Page, all_pages, raisers
from nkidev.errors import ERRORS, NkiUsageError

_ERROR_NAME = re.compile(r"\berr_[a-z0-9_]+")


def search(query: str, limit: int = 10) -> list[dict]:
    """Pages matching every word of `query` (any word if none match all), best first."""
    if limit < 1:
        raise NkiUsageError("err_invalid_argument", f"limit must be at least 1, got {limit}", "pass --limit 1 or more")
    hits = index.search(query, limit)
    exact = _lookup().get(_key(query))
    if exact is not None:  # a query that names a page exactly gets that page first
        top = next(((p, snip, score) for p, snip, score in hits if p is exact), (exact, exact.summary, 0.0))
        hits = [top, *(h for h in hits if h[0] is not exact)][:limit]
    return [
        {"id": page.id, "title": page.title, "kind": page.kind, "summary": page.summary, "snippet": snippet, "score": score}
        for page, snippet, score in hits
    ]


def show(topic: str) -> dict:
    """The page for an id (`isa/nc_matmul`), a name (`nc_matmul`, `nl.ndarray`, `trn2`, an error) or a guide."""
    page = _lookup().get(_key(topic))
    if page is None:
        raise NkiUsageError(
            "err_unknown_topic",
            f"no docs page {topic!r}{_suggest(topic, _lookup())}",
            f"run `nkidev docs search {' '.join(index.terms(topic)) or 'WORDS'}` to find the page",
        )
    return page.to_dict()


def explain(name: str) -> dict:
    """What a name nkidev (or the Neuron compiler) reports means and what to do: an error (bare, `nki.errors.<name>`
    or a whole error line), a validation verdict, an analysis finding kind, or an NCC_ compiler code."""
    text = name.strip()
    found = _ERROR_NAME.search(text.lower())
    key = found.group(0) if found else text
    info = ERRORS.get(key)
    if info is not None:
        return {
            "name": info.name,
            "kind": "error",
            "summary": info.summary,
            "fix": info.fix,
            "official": info.official,
            "raised_by": raisers().get(info.name, []),
            "page": f"errors/{info.name}",
        }
    for lookup in (_verdict, _finding, _ncc):
        hit = lookup(text)
        if hit is not None:
            return hit
    page = _lookup().get(_key(name))
    known = {n: n for n in (*ERRORS, *_verdict_names(), *_finding_names(), *_ncc_names())}
    hint = f"; {name!r} is a docs page, not an error: run `nkidev docs show {name}`" if page else _suggest(key, known)
    raise NkiUsageError(
        "err_unknown_topic",
        f"nothing named {name!r} to explain{hint}",
        "explain takes an error (err_...), a verdict (cheat_..., fail_...), a finding (redundant_load, ...) or an NCC_ code; "
        "`nkidev docs list` lists them all",
    )


def _verdict(name: str) -> dict | None:
    """`nkidev explain cheat_input_modified` explains validation verdicts too."""
    from nkidev.validate.verdicts import VERDICTS

    v = VERDICTS.get(name)
    if v is None:
        return None
    return {
        "name": v.name,
        "kind": "verdict",
        "summary": v.summary,
        "fix": v.fix,
        "official": False,
        "raised_by": ["nkidev validate"],
        "page": f"verdicts/{v.name}",
    }


def _verdict_names() -> list[str]:
    from nkidev.validate.verdicts import VERDICTS

    return list(VERDICTS)


def _finding_names() -> list[str]:
    from nkidev.analysis.investigations import KINDS

    return list(KINDS)


def _ncc_names() -> list[str]:
    from nkidev.docs.ncc import NCC_CODES

    return list(NCC_CODES)


def _finding(name: str) -> dict | None:
    """`nkidev explain redundant_load`: a finding kind of `nkidev analyze`."""
    from nkidev.analysis.investigations import modules

    m = next((m for m in modules() if m.NAME == name), None)
    if m is None:
        return None
    return {
        "name": m.NAME,
        "kind": "finding",
        "summary": (inspect.getdoc(m) or m.NAME).split("\n")[0],
        "fix": m.ADVICE,
        "official": False,
        "raised_by": ["nkidev analyze", "nkidev compare"],
        "page": f"findings/{m.NAME}",
    }


def _ncc(name: str) -> dict | None:
    """`nkidev explain NCC_EVRF007` (also `EVRF007`): a Neuron compiler error code."""
    from nkidev.docs.ncc import NCC_CODES

    key = name.upper()
    c = NCC_CODES.get(key) or NCC_CODES.get(f"NCC_{key}")
    if c is None:
        return None
    return {
        "name": c.code,
        "kind": "ncc",
        "summary": c.meaning,
        "fix": c.fix,
        "official": True,
        "raised_by": ["neuronx-cc (the Neuron compiler, on a Neuron machine; not nkidev)"],
        "page": f"ncc/{c.code}",
        "url": c.url,
    }


def topics() -> list[str]:
    """Every page id."""
    return [page.id for page in all_pages()]


def listing(kind: str | None = None) -> list[dict]:
    """Every page (of one kind: guide, isa, language, error, verdict, finding, ncc, hardware), in index order."""
    if kind is not None and kind not in KINDS:
        raise NkiUsageError("err_invalid_argument", f"no page kind {kind!r}", f"use one of: {', '.join(KINDS)}")
    return [{"id": p.id, "kind": p.kind, "title": p.title, "summary": p.summary} for p in all_pages() if kind is None or p.kind == kind]


@cache
def _lookup() -> dict[str, Page]:
    """Lower-case id or alias -> page; the first page claiming an alias keeps it (guides and nki.isa first).
    A short name (the id after its '/', e.g. `gelu` for `language/gelu`) resolves when exactly one page has it."""
    table: dict[str, Page] = {}
    for page in all_pages():
        for key in (page.id, page.title, *page.aliases):
            table.setdefault(_key(key), page)
    short: dict[str, list[Page]] = {}
    for page in all_pages():
        short.setdefault(_key(page.id.rsplit("/", 1)[-1]), []).append(page)
    for name, pages in short.items():
        if len(pages) == 1:
            table.setdefault(name, pages[0])
    return table


def _key(text: str) -> str:
    return text.strip().lower().removeprefix("nki.errors.")


def _suggest(word: str, table: dict) -> str:
    close = difflib.get_close_matches(_key(word), list(table), n=5, cutoff=0.6)
    names = list(dict.fromkeys(table[c].id if isinstance(table[c], Page) else table[c] for c in close))
    return f"; close matches: {', '.join(names)}" if names else ""
