"""The docs library behind `nkidev docs search|show` and `nkidev explain` (and the MCP tools).

    search("psum bank")            -> [{id, title, kind, summary, snippet, score}, ...]
    show("nc_matmul")              -> {id, kind, title, summary, aliases, body}
    explain("err_psum_bank_overflow") -> {name, summary, fix, official, raised_by, page}

Unknown names raise `err_unknown_topic` with the closest matches in the message.
"""

from __future__ import annotations

import difflib
import re
from functools import cache

from nkidev.docs import index
from nkidev.docs.pages import Page, all_pages, raisers
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
    """What an error name means and how to fix it. Accepts a bare name, `nki.errors.<name>` or a whole error line."""
    found = _ERROR_NAME.search(name.strip().lower())
    key = found.group(0) if found else name.strip()
    info = ERRORS.get(key)
    if info is None:
        verdict = _verdict(name.strip())
        if verdict is not None:
            return verdict
        page = _lookup().get(_key(name))
        hint = f"; {name!r} is a docs page, not an error: run `nkidev docs show {name}`" if page else _suggest(key, {n: n for n in ERRORS})
        raise NkiUsageError(
            "err_unknown_topic",
            f"no error named {name!r}{hint}",
            "error names start with err_; `nkidev docs search error WORDS` lists them",
        )
    return {
        "name": info.name,
        "summary": info.summary,
        "fix": info.fix,
        "official": info.official,
        "raised_by": raisers().get(info.name, []),
        "page": f"errors/{info.name}",
    }


def _verdict(name: str) -> dict | None:
    """`nkidev explain cheat_input_modified` explains validation verdicts too."""
    from nkidev.validate.verdicts import VERDICTS

    v = VERDICTS.get(name)
    if v is None:
        return None
    return {
        "name": v.name,
        "summary": v.summary,
        "fix": v.fix,
        "official": False,
        "raised_by": ["nkidev validate"],
        "page": f"verdicts/{v.name}",
    }


def topics() -> list[str]:
    """Every page id."""
    return [page.id for page in all_pages()]


@cache
def _lookup() -> dict[str, Page]:
    """Lower-case id or alias -> page; the first page claiming an alias keeps it (guides and nki.isa first)."""
    table: dict[str, Page] = {}
    for page in all_pages():
        for key in (page.id, page.title, *page.aliases):
            table.setdefault(_key(key), page)
    return table


def _key(text: str) -> str:
    return text.strip().lower().removeprefix("nki.errors.")


def _suggest(word: str, table: dict) -> str:
    close = difflib.get_close_matches(_key(word), list(table), n=5, cutoff=0.6)
    names = list(dict.fromkeys(table[c].id if isinstance(table[c], Page) else table[c] for c in close))
    return f"; close matches: {', '.join(names)}" if names else ""
