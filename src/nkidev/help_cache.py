"""A cache of the top-level help: `nkidev --help`, bare `nkidev` and `nkidev --version` print typer's own earlier output.

Rendering the top-level help imports typer, rich and every command module and lays the panels out with rich:
~0.4 s CPU, for text that changes only when nkidev, typer, rich or click change, or when the terminal does.
The first run renders it as usual and records what it wrote (stdout, stderr, exit code); later runs with the
same key print the recording without importing any of them. The key covers what the output depends on: the
nkidev sources (size and mtime of every module), the typer/rich/click installs, the Python version, whether
stdout is a terminal and its size and encoding, and the environment variables rich, typer and click read.

The cache lives in $XDG_CACHE_HOME/nkidev (else ~/.cache/nkidev); NKIDEV_HELP_CACHE=0 turns it off. It is
written atomically and only ever read back as bytes to print: a damaged or foreign entry is ignored.
"""

from __future__ import annotations

import os
import sys
import zlib

CACHED_ARGS = ((), ("--help",), ("--version",))  # the top-level help, no_args_is_help and the version
# What rich, typer and click read from the environment to lay out and colour their output.
ENV_VARS = (
    "COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "PY_COLORS", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
    "TERMINAL_WIDTH", "JUPYTER_COLUMNS", "JUPYTER_LINES", "DATABRICKS_RUNTIME_VERSION", "GITHUB_ACTIONS", "UNICODE_VERSION",
    "TYPER_USE_RICH", "_TYPER_FORCE_DISABLE_TERMINAL",
)  # fmt: skip
LIBRARIES = ("typer", "rich", "click")
MAX_ENTRIES = 32
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nkidev")


def applies(args: list[str]) -> bool:
    """True for the invocations whose output the cache holds (not during shell completion)."""
    if os.environ.get("NKIDEV_HELP_CACHE") == "0" or any(k.startswith(("_NKIDEV_COMPLETE", "_TYPER_COMPLETE")) for k in os.environ):
        return False
    return tuple(args) in CACHED_ARGS


def _tree_stamp(root: str) -> list:
    stamp = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                stamp.append([entry.name, _tree_stamp(entry.path)])
        elif entry.name.endswith((".py", ".toml")):
            st = entry.stat()
            stamp.append([entry.name, st.st_size, st.st_mtime_ns])
    return stamp


def _library_stamp(name: str) -> list:
    """Where a library's package is installed and when it changed, found on sys.path without importing it."""
    for entry in sys.path:
        init = os.path.join(entry or ".", name, "__init__.py")
        try:
            st = os.stat(init)
        except OSError:
            continue
        return [init, st.st_size, st.st_mtime_ns]
    return [name, None]


def _terminal() -> list:
    out = sys.stdout
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    size = None
    if tty:
        try:
            size = tuple(os.get_terminal_size(out.fileno()))
        except (OSError, ValueError):
            size = None
    return [tty, size, getattr(out, "encoding", None), getattr(sys.stderr, "encoding", None)]


def key(args: list[str]) -> str:
    """64 bits of checksum over everything the output depends on (zlib, not hashlib or json: this runs before
    every cached help, and those imports cost more than printing it)."""
    parts = [
        list(args),
        sys.version,
        sys.executable,
        _tree_stamp(_PACKAGE_DIR),
        [_library_stamp(name) for name in LIBRARIES],
        _terminal(),
        {name: os.environ.get(name) for name in ENV_VARS},
    ]
    text = repr(parts).encode()
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


def _path(args: list[str]) -> str:
    return os.path.join(cache_dir(), f"help-{key(args)}.txt")


_MAGIC = "nkidev-help-1"  # header line: magic, exit code, length of the stdout part; then stdout + stderr


def serve(args: list[str]) -> int | None:
    """Print the recorded output for `args` and return its exit code; None when there is no recording."""
    try:
        with open(_path(args), encoding="utf-8", newline="") as f:
            magic, code, n = f.readline().split()
            text = f.read()
        if magic != _MAGIC:
            return None
        stdout, stderr, code = text[: int(n)], text[int(n) :], int(code)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


class _Tee:
    """Forwards everything to the real stream (so rich sees the same terminal) and keeps a copy of the text."""

    def __init__(self, stream):
        self._stream = stream
        self.text: list[str] = []

    def write(self, s: str) -> int:
        n = self._stream.write(s)  # first: a bytes probe (click's binary-stream check) must fail as on the real stream
        self.text.append(s)
        return n

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def record(args: list[str], run) -> None:
    """Run the CLI (`run()`) with its output teed, then store what it printed for the next identical call."""
    path = _path(args)
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out, err
    code: object = 0
    try:
        run()
    except SystemExit as e:
        code = e.code
        raise
    finally:
        sys.stdout, sys.stderr = out._stream, err._stream
        if isinstance(code, int) and code in (0, 2):  # help printed (2: click's no-args help); never cache a failure
            _store(path, code, "".join(out.text), "".join(err.text))


def _store(path: str, code: int, stdout: str, stderr: str) -> None:
    try:
        from nkidev.atomic import write_bytes

        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_bytes(path, f"{_MAGIC} {code} {len(stdout)}\n{stdout}{stderr}".encode())
        _prune(os.path.dirname(path))
    except OSError:
        pass  # a read-only home only costs the next run the full rendering


def _prune(directory: str) -> None:
    """Keep the newest MAX_ENTRIES recordings: every source edit or terminal size makes a new one."""
    names = [e for e in os.scandir(directory) if e.name.startswith("help-") and e.name.endswith(".txt")]
    entries = sorted((e.stat().st_mtime_ns, e.path) for e in names)
    for _, stale in entries[:-MAX_ENTRIES]:
        os.remove(stale)
