"""Which kernel source line is running (the first stack frame outside nkidev itself), and errors placed there.

The lowest layer of the emulator: it imports only the standard library and `nkidev.errors`.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import traceback
import types

from nkidev.errors import KernelRuleError, NkiError

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_EXAMPLES = _PKG + "examples" + os.sep
# Caches keyed by id(code): hashing a code object hashes its bytecode and constants (thousands of machine
# instructions, twice per instruction emulated). Each value holds its code object, so while an entry exists no
# other code object can have that id.
_internal: dict[int, tuple[types.CodeType, bool]] = {}  # id(code) -> (code, nkidev's own?)


def is_internal(filename: str) -> bool:
    """Frames of nkidev's own code (bundled example kernels count as user code)."""
    if filename.startswith("<nki."):  # the generated nki.isa wrappers
        return True
    return filename.startswith(_PKG) and not filename.startswith(_EXAMPLES)


def _is_library(code: types.CodeType) -> bool:
    """Frames that are neither nkidev's nor the user's: the standard library, NumPy and other installed packages,
    and the methods dataclasses generates with exec. Other "<string>" code is the user's: a kernel defined in
    `python -c` or exec'd source raises from there, and its own exception must reach the caller unchanged."""
    filename = code.co_filename
    if filename.startswith("<frozen"):
        return True
    if filename == "<string>":
        return code.co_qualname.startswith("__create_fn__.")
    return any(filename.startswith(p) for p in _LIBRARY_DIRS) and not is_internal(filename)


_LIBRARY_DIRS = tuple(
    sorted({os.path.dirname(os.__file__) + os.sep} | {p + os.sep for p in sys.path if p.endswith(("site-packages", "dist-packages"))})
)


def raised_in_nkidev(exc: BaseException) -> bool:
    """True when an exception that is not a named error comes from nkidev's own code: walking out from where it
    was raised, past library frames (NumPy, the standard library), the first frame is nkidev's, not the user's.
    Such an exception is an nkidev bug (err_internal), never the kernel's fault."""
    codes = []
    tb = exc.__traceback__
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    for code in reversed(codes):
        if is_internal(code.co_filename):
            return True
        if not _is_library(code):
            return False
    return False


def raised_at(exc: BaseException, kernel_file: str | None) -> str | None:
    """Where a kernel raised `exc`: its deepest line in the kernel's file, else in any user file."""
    tb, in_kernel, in_user = exc.__traceback__, None, None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == kernel_file:
            in_kernel = f"{name}:{tb.tb_lineno}"
        elif not is_internal(name) and not name.startswith("<"):
            in_user = f"{name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return in_kernel or in_user


def internal_error(what: str, exc: BaseException, location: str | None) -> NkiError:
    """`exc`, raised in nkidev's own code while running a kernel (raised_in_nkidev), as err_internal at the kernel
    line that was running (`location`, see raised_at): the user is told it is nkidev's bug, not theirs
    (NKIDEV_DEBUG=1 prints the traceback). The one place every entry point (run, profile, validate) builds it."""
    if os.environ.get("NKIDEV_DEBUG", "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    return NkiError(
        "err_internal",
        f"{what}: nkidev raised {type(exc).__name__}: {exc} while running the kernel",
        "this is a bug in nkidev, not in your kernel; please report it with the kernel line named here "
        "(NKIDEV_DEBUG=1 prints nkidev's traceback)",
        location,
    )


def _code_internal(code: types.CodeType) -> bool:
    hit = _internal.get(id(code))
    if hit is None:
        hit = _internal[id(code)] = (code, is_internal(code.co_filename))
    return hit[1]


def kernel_frame(depth: int = 2) -> types.FrameType | None:
    frame = sys._getframe(depth)
    while frame is not None and _code_internal(frame.f_code):
        frame = frame.f_back
    return frame


# (code, line, file) -> location text: one string object per kernel line (the trace interns locations by it); the
# file is part of the key because code objects compare equal across files (the same source loaded from two paths
# must report each its own path)
_SITES: dict[tuple[types.CodeType, int, str], str] = {}
# (id(code), bytecode offset) -> the site of that offset (see kernel_site), whose last item keeps the code alive so
# its id is not reused: `frame.f_lineno` scans the code's line table on every read, `f_lasti` is a plain field, and
# one offset always belongs to one line
_BY_OFFSET: dict[tuple[int, int], list] = {}
_UNSET = object()


def kernel_site(depth: int = 3) -> list | None:
    """The site of the innermost kernel frame at least `depth` frames out from this function's (`depth` - 1 out
    from the caller's), None when there is none: one list per bytecode offset of kernel code, [its
    "/path/kernel.py:LINE", the name the line assigns to (see site_name), a slot the allocator keeps what its
    last allocation there was in (tensor.allocate), the code object]. Frames skipped by `depth` get no frame
    objects (sys._getframe makes one for the frame it returns only), so callers start as far out as they can."""
    try:
        frame = sys._getframe(depth)
    except ValueError:  # a shallower stack than nkidev's own frames: no kernel frame
        return None
    internal = _internal
    while frame is not None:  # _code_internal inlined: this runs for every instruction and allocation
        code = frame.f_code
        hit = internal.get(id(code))
        if hit is None:
            _code_internal(code)
            hit = internal[id(code)]
        if not hit[1]:
            break
        frame = frame.f_back
    if frame is None:
        return None
    key = (id(code), frame.f_lasti)
    site = _BY_OFFSET.get(key)
    if site is None:
        if len(_BY_OFFSET) >= 100_000:  # code objects of reloaded task files must not pile up
            _BY_OFFSET.clear()
            _SITES.clear()
        line = (code, frame.f_lineno, code.co_filename)
        location = _SITES.get(line)
        if location is None:
            location = _SITES[line] = f"{code.co_filename}:{frame.f_lineno}"
        site = _BY_OFFSET[key] = [location, _UNSET, None, code]
    return site


def kernel_location(skip: int = 0) -> str | None:
    """ "/path/kernel.py:42" for the innermost user frame, or None when called from nkidev alone (one string
    object per kernel line: the trace interns locations by it). `skip`: frames above the caller known to be
    nkidev's own (the search starts past them)."""
    site = kernel_site(3 + skip)
    return None if site is None else site[0]


def site_name(site: list) -> str | None:
    """The variable a site's line assigns to (`x = nl.ndarray(...)` -> "x"), read from the source once per site."""
    name = site[1]
    if name is _UNSET:
        name = site[1] = assigned_name(site[0])
    return name


_ASSIGN = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*(?::[^=]+)?=[^=]")


def assigned_name(location: str | None) -> str | None:
    """The variable a kernel line assigns to (`x = nl.ndarray(...)` -> "x"), to name tensors."""
    if not location:
        return None
    path, _, line = location.rpartition(":")
    m = _ASSIGN.match(linecache.getline(path, int(line)))
    return m.group(1) if m else None


def strip_internal_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A traceback without nkidev's frames, so users see their kernel lines only."""
    frames = []
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            frames.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    new = None
    for frame, lasti, lineno in reversed(frames):
        new = types.TracebackType(new, frame, lasti, lineno)
    return new


def rule_error(name: str, message: str, fix: str | None = None) -> KernelRuleError:
    """A named hardware-rule error at the kernel line that is running."""
    return KernelRuleError(name, message, fix, kernel_location())
