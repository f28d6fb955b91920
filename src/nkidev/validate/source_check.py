"""Static check of the kernel's source: does it reach around the NKI API?

A kernel only ever receives emulator tensors, and NumPy on them raises err_numpy_on_kernel_data. The
ways around that are few and visible in the source: private attributes (`x._data`, `x.storage`), dunders
(`__dict__`, `__reduce_ex__`, `__globals__`), frame and heap introspection (inspect, sys, gc, ctypes),
eval/exec/globals()/vars(), dynamic getattr, capturing stdout (io, contextlib: device_print output),
files (open, np.load), nkidev's own internals, and calling the task's reference() or cases(). The scan
covers the kernel and every same-file function it references, transitively. Names are resolved in the
kernel's globals, so aliases (`from inspect import currentframe as f`, `ref = reference`) are caught.
The dynamic side (tripwire on reference/cases, err_numpy_on_kernel_data) is in guard.py and the runner.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import sys
import sysconfig
import textwrap
import threading
import types
from dataclasses import dataclass

from nkidev.emulator.location import is_internal

_PARSE_LOCK = threading.Lock()

BANNED_MODULES = {
    "inspect",
    "sys",
    "gc",
    "ctypes",
    "traceback",
    "importlib",
    "builtins",
    "weakref",
    "pickle",
    "copyreg",
    "marshal",
    "io",
    "contextlib",
    "types",
    "subprocess",
    "pathlib",
    "nkidev",
}
BANNED_CALLS = {"eval", "exec", "compile", "globals", "locals", "vars", "__import__", "open", "breakpoint"}
DYNAMIC_ATTR_CALLS = {"getattr", "setattr", "delattr", "hasattr"}
FRAME_ATTRS = {"storage", "f_back", "f_locals", "f_globals", "f_code", "gi_frame", "cr_frame", "tb_frame", "tb_next"}
ALLOWED_DUNDERS = {"__name__", "__qualname__", "__doc__"}
NUMPY_FILE_READERS = {"load", "loadtxt", "fromfile", "genfromtxt", "memmap", "frombuffer", "fromregex"}


@dataclass(frozen=True)
class SourceFinding:
    verdict: str  # cheat_emulator_internals | cheat_calls_reference
    message: str
    location: str


def _nki_public() -> set[int]:
    """ids of the nki modules and of the public functions, classes and values they expose."""
    from nkidev.emulator.nki_api import MODULES

    ids = {id(m) for m in MODULES.values()}
    for m in MODULES.values():
        ids.update(id(v) for k, v in vars(m).items() if not k.startswith("_") and not isinstance(v, types.ModuleType))
    return ids


def _root(name: str) -> str:
    return str(name).split(".")[0]


def _banned_object(obj, public: set[int]) -> str | None:
    """Why a global the kernel uses is off limits (None if it is fine)."""
    if id(obj) in public:
        return None
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}" if _root(obj.__name__) in BANNED_MODULES else None
    if isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType):
        module = getattr(obj, "__module__", None) or ""
        if _root(module) in BANNED_MODULES - {"builtins"}:  # builtins are judged by BANNED_CALLS
            return f"{module}.{getattr(obj, '__name__', '?')}"
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, scope: dict, forbidden: dict[int, str], public: set[int], path: str, local_names: set[str]):
        self.scope, self.forbidden, self.public, self.path = scope, forbidden, public, path
        self.locals = local_names
        self.owners: list[str] = []  # `self` names of the methods being visited (their private state is fine)
        self.findings: list[SourceFinding] = []
        self.helpers: list = []

    def flag(self, node, message: str, verdict: str = "cheat_emulator_internals") -> None:
        self.findings.append(SourceFinding(verdict, message, f"{self.path}:{node.lineno}"))

    def resolve(self, name: str):
        if name in self.locals:
            return None
        if name in self.scope:
            return self.scope[name]
        return getattr(builtins, name, None)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.args.args:
                self.owners.append(item.args.args[0].arg)
                self.visit(item)
                self.owners.pop()
            else:
                self.visit(item)
        for expr in node.bases + node.decorator_list:
            self.visit(expr)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        obj = self.resolve(node.id)
        if obj is None:
            return
        if id(obj) in self.forbidden:
            self.flag(node, f"uses {self.forbidden[id(obj)]}() (as `{node.id}`)", "cheat_calls_reference")
        elif node.id in BANNED_CALLS and obj is getattr(builtins, node.id, None):
            self.flag(node, f"uses {node.id}()")
        else:
            why = _banned_object(obj, self.public)
            if why:
                self.flag(node, f"uses {why} (as `{node.id}`)")
            elif _user_code(obj):
                self.helpers.append(obj)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        own = isinstance(node.value, ast.Name) and node.value.id in self.owners
        dunder = attr.startswith("__") and attr.endswith("__")
        if attr in FRAME_ATTRS or (attr.startswith("_") and not dunder and not own):
            self.flag(node, f"reads attribute .{attr}")
        elif dunder and attr not in ALLOWED_DUNDERS:
            self.flag(node, f"reads attribute .{attr}")
        elif attr in NUMPY_FILE_READERS and isinstance(node.value, ast.Name):
            base = self.resolve(node.value.id)
            if isinstance(base, types.ModuleType) and _root(base.__name__) == "numpy":
                self.flag(node, f"reads data from a file with numpy.{attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Name) and f.id in DYNAMIC_ATTR_CALLS and self.resolve(f.id) is getattr(builtins, f.id, None):
            self._dynamic_attr(node, f.id)
        self.generic_visit(node)

    def _dynamic_attr(self, node: ast.Call, fn: str) -> None:
        name = node.args[1] if len(node.args) > 1 else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            if name.value.startswith("_") or name.value in FRAME_ATTRS:
                self.flag(node, f"uses {fn}(..., {name.value!r})")
            return
        target = node.args[0] if node.args else None
        base = self.resolve(target.id) if isinstance(target, ast.Name) else None
        if base is None or id(base) not in self.public:  # computed names are fine only on the nki modules
            self.flag(node, f"uses {fn}() with a computed attribute name")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _root(alias.name) in BANNED_MODULES:
                self.flag(node, f"imports {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and _root(node.module) in BANNED_MODULES:
            self.flag(node, f"imports from {node.module}")


_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _source_file(obj) -> str | None:
    obj = getattr(obj, "fn", obj)  # @nki.jit helpers wrap the function in .fn
    if isinstance(obj, types.FunctionType):
        return obj.__code__.co_filename
    if isinstance(obj, type):
        module = sys.modules.get(obj.__module__)
        return getattr(module, "__file__", None)
    return None


def _user_code(obj) -> bool:
    """Functions and classes written by the user (any file outside the standard library, installed packages
    and nkidev): the kernel's helpers, wherever they live, are scanned too."""
    path = _source_file(obj)
    if not path or path.startswith("<"):
        return False
    path = os.path.abspath(path)
    return not path.startswith(_LIBRARY_DIRS) and not is_internal(path)


def _parse(obj) -> tuple[ast.AST, str, dict] | None:
    """(tree, file, globals) of a function or class, line numbers as in the file."""
    obj = getattr(obj, "fn", obj)
    try:
        lines, first = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    try:
        with _PARSE_LOCK:  # CPython 3.11/3.12's AST constructor keeps per-interpreter state: concurrent parses fail
            tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    ast.increment_lineno(tree, first - 1)
    if isinstance(obj, type):
        return tree, _source_file(obj), vars(sys.modules[obj.__module__])
    return tree, obj.__code__.co_filename, obj.__globals__


def _local_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def scan(kernel, forbidden: dict[str, object]) -> tuple[list[SourceFinding], bool]:
    """Findings for the kernel and the user functions and classes it references, transitively; the bool says
    whether the kernel's own source was found. `forbidden` maps a label ("reference", "cases") to a function
    the kernel must not use."""
    public = _nki_public()
    banned = {id(obj): label for label, obj in forbidden.items() if obj is not None}
    root = getattr(kernel, "fn", kernel)
    todo, seen, findings, found_root = [root], set(), [], False
    while todo:
        item = todo.pop()
        obj = getattr(item, "fn", item)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        parsed = _parse(obj)
        if parsed is None:
            continue
        found_root = found_root or obj is root
        tree, path, scope = parsed
        scanner = _Scanner(scope, banned, public, path, _local_names(tree))
        scanner.visit(tree)
        findings.extend(scanner.findings)
        todo.extend(scanner.helpers)
    unique = {(f.verdict, f.location, f.message): f for f in findings}
    return list(unique.values()), found_root
