"""Write the corpus report (markdown tables) from a results JSON of run.py.

    python bench/corpus/report.py RESULTS.json [--report corpus.md]

The pass-count table has two rates: over every test that ran, and "adjusted", which leaves out of the
denominator the trace_only (compiler) tests and failures whose cause is category (c) (upstream test/kernel
bugs, machine OOM): what nkidev could pass at best.
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from collections.abc import Iterator
from pathlib import Path

from causes import CAUSES

RAN = ("PASS", "FAIL-numeric", "ERROR", "TIMEOUT")


def subsets(res: list[dict]) -> Iterator[tuple[str, str, list[dict]]]:
    by = collections.defaultdict(list)
    for r in res:
        by[r["corpus"]].append(r)
    for corpus, rs in sorted(by.items()):
        if corpus == "nki-library":
            yield corpus, "simple kernels (-m fast)", [r for r in rs if r.get("simple")]
            yield corpus, "other kernels (-m fast)", [r for r in rs if not r.get("simple")]
            yield corpus, "all (-m fast)", rs
        else:
            yield corpus, "all", rs


def excluded(r: dict) -> bool:
    """Not counted by the adjusted rate: a failure nkidev cannot fix (compiler-only test, upstream bug)."""
    c = r.get("cause")
    return r["status"] != "PASS" and bool(c) and (c == "needs_compiler_trace" or CAUSES.get(c, ("?",))[0].startswith("c"))


def _passes(rs: list[dict]) -> str:
    """PASS count; passes whose test compared no output (the orchestrator skipped validation) are called out."""
    n = sum(1 for r in rs if r["status"] == "PASS")
    u = sum(1 for r in rs if r["status"] == "PASS" and r.get("unvalidated"))
    return f"{n} ({u} unvalidated)" if u else str(n)


def _rate(p: int, n: int) -> str:
    return f"{p}/{n} = {100 * p / n:.0f}%" if n else "-"


def pass_table(res: list[dict]) -> list[str]:
    L = ["| corpus | subset | PASS | FAIL-numeric | ERROR | TIMEOUT | SKIP (repo's own slow-sim skip) | pass rate (run) "
         "| adjusted (excl. trace_only + upstream (c)) |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for corpus, sub, rs in subsets(res):
        c = collections.Counter(r["status"] for r in rs)
        run = [r for r in rs if r["status"] in RAN]
        adj = [r for r in run if not excluded(r)]
        cells = [corpus, sub, _passes(rs), c["FAIL-numeric"], c["ERROR"], c["TIMEOUT"], c["SKIP"]]
        cells += [_rate(c["PASS"], len(run)), _rate(c["PASS"], len(adj))]
        L.append("| " + " | ".join(str(x) for x in cells) + " |")
    return L


def cause_table(res: list[dict]) -> list[str]:
    L = ["| cause | cat. | blocks (nkilib / standalone) | repro | description |", "|---|---|---|---|---|"]
    cnt: collections.Counter = collections.Counter()
    cnt_sa: collections.Counter = collections.Counter()
    for r in res:
        if r.get("cause"):
            (cnt if r["corpus"] == "nki-library" else cnt_sa)[r["cause"]] += 1
    for c in sorted(set(cnt) | set(cnt_sa), key=lambda c: -(cnt[c] + cnt_sa[c])):
        cat, repro, desc = CAUSES[c]
        L.append(f"| `{c}` | ({cat}) | {cnt[c]} / {cnt_sa[c]} | {('`' + repro + '`') if repro else '-'} | {desc} |")
    return L


def standalone_table(res: list[dict]) -> list[str]:
    L = ["| kernel | repo | status | cause | message |", "|---|---|---|---|---|"]
    for r in res:
        if r["corpus"] != "nki-library":
            msg = (r.get("message") or "").replace("|", "\\|").replace("\n", " ")[:160]
            L.append(f"| `{r['id']}` | {r['corpus']} | {r['status']} | {r.get('cause', '')} | {msg} |")
    return L


def nkilib_tables(res: list[dict]) -> list[str]:
    L = ["| file | simple | PASS | FAIL-numeric | ERROR | TIMEOUT | SKIP | causes |", "|---|---|---|---|---|---|---|---|"]
    files = collections.defaultdict(list)
    for r in res:
        if r["corpus"] == "nki-library":
            files[r["file"]].append(r)
    for f, rs in sorted(files.items(), key=lambda kv: (not kv[1][0].get("simple"), kv[0])):
        c = collections.Counter(r["status"] for r in rs)
        cz = collections.Counter(r.get("cause") for r in rs if r.get("cause"))
        cs = ", ".join(f"{k} x{v}" for k, v in cz.most_common())
        simple = "y" if rs[0].get("simple") else ""
        L.append(f"| {f} | {simple} | {_passes(rs)} | {c['FAIL-numeric']} | {c['ERROR']} | {c['TIMEOUT']} | {c['SKIP']} | {cs} |")
    L.append("")
    simple_fail = [r for r in res if r["corpus"] == "nki-library" and r.get("simple") and r["status"] in RAN[1:]]
    listed = [r for r in simple_fail if r.get("cause") != "needs_compiler_trace"]
    if simple_fail:
        L += ["## nki-library simple kernels: every failure\n"]
        L += [f"({len(simple_fail) - len(listed)} `needs_compiler_trace` tests are counted above, not listed)\n"]
        L += ["| test | status | cause (cat.) |", "|---|---|---|"]
        for r in sorted(listed, key=lambda r: (r.get("cause", ""), r["id"])):
            tid = r["id"].split("::", 1)[-1]
            L.append(f"| `{r['file'].split('/')[-1]}::{tid[-110:]}` | {r['status']} | {r.get('cause')} ({r.get('category')}) |")
        L.append("")
    return L


def write_report(path: Path, report: Path) -> None:
    data = json.loads(path.read_text())
    res, meta = data["results"], data["meta"]
    L = ["# Corpus run: public current-API NKI kernels on nkidev\n"]
    L.append(
        f"Generated {time.strftime('%Y-%m-%d %H:%M')} by `bench/corpus/report.py` from `{path.name}`. "
        f"nkidev: `{meta.get('nkidev', '?')}`. Re-run: `python bench/corpus/run.py` (see its --help).\n"
    )
    L.append("## Repositories (commits)\n")
    nki = meta.get("nki_versions", {})
    L += [f"- `{k}` {v}" + (f" (NKI {nki[k]})" if k in nki else "") for k, v in sorted(meta.get("repos", {}).items())] + [""]
    L += ["## Pass counts\n"] + pass_table(res) + [""]
    L += ["## Failures by root cause\n"] + cause_table(res) + [""]
    L += ["## Per-kernel results (non-nki-library)\n"] + standalone_table(res) + [""]
    if any(r["corpus"] == "nki-library" for r in res):
        L += ["## nki-library: per test file\n"] + nkilib_tables(res)
    report.parent.mkdir(parents=True, exist_ok=True)
    tmp = report.with_suffix(".tmp")
    tmp.write_text("\n".join(L) + "\n")
    tmp.replace(report)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path)
    ap.add_argument("--report", type=Path, help="markdown file to write (default: corpus.md next to RESULTS)")
    a = ap.parse_args()
    write_report(a.results, a.report or a.results.with_name("corpus.md"))
    print("wrote", a.report or a.results.with_name("corpus.md"))
