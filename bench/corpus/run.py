#!/usr/bin/env python3
"""Corpus harness: run public current-API NKI kernels unchanged on this checkout's nkidev; report the pass rate.

    python bench/corpus/run.py [--work DIR] [--only nkilib|standalone] [--files SUBSTR ...] [--timeout 300]
                               [--out results.json] [--report corpus.md] [--all-nkilib] [--workarounds] [--no-fetch]
                               [--nki-version 0.6|0.7] [-k PYTEST_EXPR]

Fetch step: clones aws-neuron/nki-library, aws-neuron/nki-samples, aws-neuron/aws-neuron-sdk and
awslabs/nki-autotune into DIR/src (default ~/.cache/nkidev/corpus) at the commits pinned in repos.py; the
kernels are never copied into this repository. Then every kernel / test file runs in a subprocess of this
interpreter with this checkout's src/ first on PYTHONPATH (so the nkidev tested is the checkout's, not an
installed one) and the stand-ins of shims/, under the NKI version its repository targets (repos.py: nki-library
0.6, the others nkidev's default; --nki-version VERSION runs every repository under VERSION instead). Results go
to --out (default DIR/results.json; a run with --only/--files updates an existing file), the markdown report to
--report (default DIR/corpus.md).

Beyond nkidev, the harness (nki-library's own test utilities) needs, in the interpreter that runs it:
    pip install torch pytest pytest-xdist pytest-timeout pytest-html pytest-metadata pandas filelock \
        allpairspy plotext boto3 fabric2 aws-embedded-metrics scipy ml_dtypes
(measured with torch 2.13.0+cpu). The full corpus takes about 45 min on 2 cores; `--only standalone` a few
minutes; one nki-library file: `--only nkilib --files test_cumsum`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from causes import classify_all
from harness import checkout_env, effective_nki_version, nkidev_version, run_nkilib, run_standalone, with_nki_version
from report import write_report
from repos import REPOS, FetchError, fetch, head_commit, nki_version_for

DEFAULT_WORK = Path.home() / ".cache" / "nkidev" / "corpus"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK, help="where the repositories and outputs go")
    ap.add_argument("--only", choices=["nkilib", "standalone"])
    ap.add_argument("--files", nargs="*", help="only nki-library test files / standalone names containing these")
    ap.add_argument("--timeout", type=int, default=300, help="per-test / per-kernel timeout in seconds")
    ap.add_argument("--all-nkilib", action="store_true", help="run every nki-library test, not only -m fast")
    ap.add_argument("-k", dest="select", help="pytest -k expression selecting nki-library tests (their records replace the old ones)")
    ap.add_argument("--out", type=Path, help="results JSON (default WORK/results.json)")
    ap.add_argument("--report", type=Path, help="markdown report (default WORK/corpus.md)")
    ap.add_argument("--no-fetch", action="store_true", help="use WORK/src as it is (no git)")
    ap.add_argument(
        "--nki-version",
        help="NKI version every repository runs under (NKIDEV_NKI_VERSION; default: each repository's own, see repos.py)",
    )
    ap.add_argument(
        "--workarounds",
        action="store_true",
        help="probe mode: patch already-known nkidev bugs at run time (shims/corpus_nkilib_plugin.py) to see what fails behind them",
    )
    return ap.parse_args(argv)


def merge(prev: dict | None, results: list[dict], meta: dict) -> tuple[list[dict], dict]:
    """A partial run (--only / --files) replaces its own records in the previous results and keeps the rest."""
    if not prev:
        return results, meta
    keep = {r["id"]: r for r in prev["results"]}
    keep.update({r["id"]: r for r in results})
    return list(keep.values()), {**prev.get("meta", {}), **meta}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.work.expanduser().resolve()
    out = args.out or work / "results.json"
    report = args.report or work / "corpus.md"
    try:
        repos = {r.name: head_commit(work / "src" / r.name) or "unknown" for r in REPOS} if args.no_fetch else fetch(work)
    except FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    env = checkout_env(work / "src")
    if args.workarounds:
        env["CORPUS_WORKAROUNDS"] = "1"
    meta = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.executable, "nkidev": nkidev_version(env)}
    meta.update(repos=repos, timeout_s=args.timeout)
    versions = {r.name: effective_nki_version(with_nki_version(env, nki_version_for(r.name, args.nki_version))) for r in REPOS}
    bad = {k: v for k, v in versions.items() if v.startswith("error:")}
    if bad:
        print(f"error: --nki-version {args.nki_version!r}: {next(iter(bad.values()))}", file=sys.stderr)
        return 2
    meta["nki_versions"] = versions
    print("nkidev:", meta["nkidev"], "NKI versions:", versions, flush=True)
    results = []
    if args.only in (None, "standalone"):
        results += run_standalone(env, args.timeout, args.files, args.nki_version)
    if args.only in (None, "nkilib"):
        nkilib_env = with_nki_version(env, nki_version_for("nki-library", args.nki_version))
        results += run_nkilib(work / "src", nkilib_env, args.timeout, args.files, args.all_nkilib, work / "out", args.select)
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    partial = (args.files or args.only or args.select) and out.exists()
    results, meta = merge(json.loads(out.read_text()) if partial else None, results, meta)
    classify_all(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    tmp.replace(out)
    summary: dict[str, dict[str, int]] = {}
    for r in results:
        counts = summary.setdefault(r["corpus"], {})
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(json.dumps(summary, indent=1))
    write_report(out, report)
    print("wrote", out, "and", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
