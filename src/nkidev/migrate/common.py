"""What every migration rule shares: the notes it leaves (a change made, or a manual step it could not make),
source rendering of CST nodes, and which local names refer to which NKI module."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import PositionProvider

_EMPTY = cst.Module([])


def code(node: cst.CSTNode) -> str:
    """The source text of a node."""
    return _EMPTY.code_for_node(node).strip()


def literal_int(node: cst.BaseExpression) -> int | None:
    """The value of an integer literal (`3`, `-3`); None for any other expression."""
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def stmt(text: str) -> cst.BaseStatement:
    return cst.parse_statement(text)


@dataclass(frozen=True)
class Note:
    """One thing the migration did (`kind` = "changed") or could not do (`kind` = "manual")."""

    kind: str
    line: int
    construct: str
    step: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "line": self.line, "construct": self.construct, "step": self.step}


@dataclass
class Notes:
    items: list[Note] = field(default_factory=list)

    def changed(self, line: int, construct: str, step: str) -> None:
        self.items.append(Note("changed", line, construct, step))

    def manual(self, line: int, construct: str, step: str) -> None:
        self.items.append(Note("manual", line, construct, step))


class Rules(cst.CSTTransformer):
    """A transformer that knows each node's source line and which names are the NKI modules."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, notes: Notes, modules: dict[str, str]):
        super().__init__()
        self.notes = notes
        self.modules = modules  # local name -> "language" | "isa" | "nki" | "typing" | "compiler"

    def line(self, node: cst.CSTNode) -> int:
        try:
            return self.get_metadata(PositionProvider, node).start.line
        except KeyError:
            return 0

    def module_of(self, node: cst.BaseExpression) -> str | None:
        """For `nl.exp` (with nl bound to neuronxcc.nki.language): "language"."""
        if isinstance(node, cst.Name):
            return self.modules.get(node.value)
        if isinstance(node, cst.Attribute):
            dotted = code(node)
            for prefix, kind in (("nki.language", "language"), ("nki.isa", "isa"), ("nki.typing", "typing"), ("nki.compiler", "compiler")):
                if dotted in (prefix, f"neuronxcc.{prefix}"):
                    return kind
            if self.modules.get(code(node.value)) == "nki" and node.attr.value in ("language", "isa", "typing", "compiler"):
                return node.attr.value
        return None

    def call_name(self, call: cst.Call) -> tuple[str | None, str | None]:
        """("language", "load") for nl.load(...); (None, None) for anything else."""
        func = call.func
        if isinstance(func, cst.Attribute):
            return self.module_of(func.value), func.attr.value
        if isinstance(func, cst.Name) and func.value in self.modules and self.modules[func.value].startswith("fn:"):
            kind, name = self.modules[func.value][3:].split(".")
            return kind, name
        return None, None


_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """A `name=value` argument written the PEP 8 way (LibCST's default puts spaces around the `=`)."""
    return cst.Arg(keyword=cst.Name(name), value=value, equal=_TIGHT)


def kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def without_kwargs(call: cst.Call, names: set[str]) -> cst.Call:
    args = [a for a in call.args if a.keyword is None or a.keyword.value not in names]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def arg_value(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    """A call's argument by keyword, else by position (among positional arguments)."""
    found = kwarg(call, name)
    if found is not None:
        return found.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if position < len(positional) else None


def imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    """Every import statement of a file (kernels sometimes repeat their imports inside the kernel)."""
    found: list = []

    class Finder(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

    module.visit(Finder())
    return found
