"""The emulator's modules form layers: the import graph (imports inside functions included) has no cycle,
and no function imports a module of the emulator to dodge one."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "nkidev" / "emulator"
OPTIONAL = {"torch"}  # optional dependencies may be imported where they are used


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _targets(node, module: str, is_pkg: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_pkg else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts) + (f".{base}" if base else "")
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _graph():
    mods = _modules()
    graph, in_functions = {}, []
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                deps |= {t for t in _targets(node, name, path.name == "__init__.py") if t in mods and t != name}
        # A package importing its own submodules is how packages work; a submodule importing its package is not an edge.
        graph[name] = {d for d in deps if not name.startswith(d + ".")}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        top = _targets(node, name, path.name == "__init__.py")[0].split(".")[0]
                        if top not in OPTIONAL:
                            in_functions.append(f"{name}.{fn.name}: {ast.unparse(node)}")
    return graph, in_functions


def _cycle(graph: dict) -> list[str] | None:
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return stack[stack.index(v) :] + [v]
            if v not in state:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state:
            found = visit(u)
            if found:
                return found
    return None


def test_emulator_import_graph_is_acyclic():
    graph, _ = _graph()
    assert "nkidev.emulator.tensor" in graph and graph["nkidev.emulator.tensor"]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_no_imports_inside_functions():
    _, found = _graph()
    assert found == [], "import at module level, in layer order: " + "; ".join(found)


def test_lowest_layers_import_nothing_above_them():
    graph, _ = _graph()
    emu = "nkidev.emulator."
    assert not graph[emu + "location"]
    assert graph[emu + "tensor"] <= {emu + m for m in ("context", "dtypes", "location", "registers", "trace")}
    assert emu + "language" not in graph[emu + "isa"]
