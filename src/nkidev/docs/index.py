"""The offline full-text index: SQLite FTS5 (standard library) over every docs page, built in memory
on first use. A few hundred pages index in milliseconds, so there is no cache to go stale.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from functools import cache

from nkidev.docs.pages import Page, all_pages

# bm25 column weights: a hit in the title or an alias outranks one in the body.
_WEIGHTS = (10.0, 8.0, 4.0, 1.0)
_LOCK = threading.Lock()  # the MCP server answers from worker threads


@cache
def _index() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE pages USING fts5(title, aliases, summary, body, tokenize='unicode61 remove_diacritics 2')")
    db.executemany(
        "INSERT INTO pages(rowid, title, aliases, summary, body) VALUES (?, ?, ?, ?, ?)",
        [(i, p.title, " ".join(p.aliases), p.summary, p.body) for i, p in enumerate(all_pages())],
    )
    return db


def terms(query: str) -> list[str]:
    """The words of a query; FTS5 operators and punctuation are dropped so any text is a valid query."""
    return [w.lower() for w in re.findall(r"[A-Za-z0-9]+", query)]


def search(query: str, limit: int = 10) -> list[tuple[Page, str, float]]:
    """(page, snippet, score) best first: all words must match; if nothing does, any word may."""
    words = terms(query)
    if not words:
        return []
    quoted = [f'"{w}"*' for w in words]
    hits = _run(" AND ".join(quoted), limit)
    if not hits and len(words) > 1:
        hits = _run(" OR ".join(quoted), limit)
    return hits


def _run(match: str, limit: int) -> list[tuple[Page, str, float]]:
    pages = all_pages()
    sql = (
        f"SELECT rowid, snippet(pages, 3, '[', ']', ' ... ', 16), bm25(pages, {', '.join(map(str, _WEIGHTS))}) "
        "FROM pages WHERE pages MATCH ? ORDER BY 3 LIMIT ?"
    )
    with _LOCK:
        rows = _index().execute(sql, (match, limit)).fetchall()
    return [(pages[rowid], " ".join(snippet.split()), round(-score, 3)) for rowid, snippet, score in rows]
