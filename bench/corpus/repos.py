"""The public repositories of the corpus, pinned by commit, and the step that fetches them.

The kernels are never copied into nkidev: `fetch(work)` clones each repository into `work/src/<name>` and
checks out the pinned commit (a clone already at that commit is left alone).

Each repository also names the NKI version its kernels target: its runs get NKIDEV_NKI_VERSION set to it (run.py's
--nki-version overrides it for every repository), so a kernel written for 0.6 is not failed for using an API 0.7
removed.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Repo:
    name: str  # directory under work/src, and the `corpus` of its results
    github: str  # owner/name on GitHub
    commit: str
    nki_version: str | None = None  # the NKI version its kernels target; None: nkidev's default (the newest)


REPOS = (
    # nki-library at this commit (April 2026, before NKI 0.7) targets NKI 0.6: e.g. experimental/dynamic_shapes uses
    # nl.dynamic_range, which 0.7 removed (migration guide 0.6 -> 0.7), so under 0.7 those tests fail by design.
    Repo("nki-library", "aws-neuron/nki-library", "d2ad3a579498d1888aa8740af97fd325dd5f2740", nki_version="0.6"),
    Repo("nki-samples", "aws-neuron/nki-samples", "6905a68a122f937e68403727759f035ddd144f95"),
    Repo("aws-neuron-sdk", "aws-neuron/aws-neuron-sdk", "81ce03ae261e12925e53437a0f690478e6366155"),
    Repo("nki-autotune", "awslabs/nki-autotune", "d57bcc3be3318f9cec05c7f48c162d3d2b1706e0"),
)


def nki_version_for(name: str, override: str | None = None) -> str | None:
    """The NKI version a repository's kernels run under: `override` (run.py --nki-version), else the repository's own."""
    if override:
        return override
    return next((r.nki_version for r in REPOS if r.name == name), None)


class FetchError(Exception):
    """A named failure of the fetch step: `name` says which, the message what to do."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


def _git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    return proc.stdout.strip()


def head_commit(path: Path) -> str | None:
    try:
        return _git("-C", str(path), "rev-parse", "HEAD")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def fetch_one(repo: Repo, src: Path, url: str | None = None) -> Path:
    """Clone `repo` into src/<name> (unless there) and check out its pinned commit; return the path."""
    dest = src / repo.name
    if head_commit(dest) == repo.commit:
        return dest
    url = url or f"https://github.com/{repo.github}.git"
    try:
        if not (dest / ".git").exists():
            if dest.exists() and any(dest.iterdir()):
                raise FetchError("corpus_dir_not_a_clone", f"{dest} exists but is not a git clone; remove it or pick another --work")
            src.mkdir(parents=True, exist_ok=True)
            _git("clone", "--quiet", url, str(dest))
        try:
            _git("-C", str(dest), "checkout", "--quiet", "--detach", repo.commit)
        except subprocess.CalledProcessError:  # a clone older than the pin: fetch, then check out
            _git("-C", str(dest), "fetch", "--quiet", "origin")
            _git("-C", str(dest), "checkout", "--quiet", "--detach", repo.commit)
    except subprocess.CalledProcessError as e:
        raise FetchError(
            "corpus_fetch_failed",
            f"`{' '.join(e.cmd)}` failed ({(e.stderr or '').strip()[-300:]}); check the network "
            f"(or clone {url} into {dest} by hand at commit {repo.commit})",
        ) from e
    return dest


def fetch(work: Path, urls: dict[str, str] | None = None) -> dict[str, str]:
    """Fetch every corpus repository into work/src; return {name: commit}."""
    if shutil.which("git") is None:
        raise FetchError("corpus_git_missing", "the fetch step needs git on PATH (e.g. `apt-get install git`)")
    src = work / "src"
    out = {}
    for repo in REPOS:
        fetch_one(repo, src, (urls or {}).get(repo.name))
        out[repo.name] = repo.commit
    return out
