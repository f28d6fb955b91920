"""NKI 0.6 -> 0.7, as LibCST rules ("Migrating from NKI 0.6.0 to NKI 0.7.0",
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.1/nki/migration/index.html):

- `for i in nl.dynamic_range(lo, hi, step): body` -> `def body(i): ...` + `nl.fori_loop(lo, hi, body, step)`;
- `while reg: body` -> `def body(reg): ...; return reg` + `nl.while_loop(reg, body)`;
- a VirtualRegister that is only loaded from a tile and read (`r = nisa.register_alloc(); nisa.register_load(r, t)`)
  -> an NkiScalar, `r = nisa.scalar_load(t)`;
- `nl.affine_range` / `sequential_range` / `static_range` (deprecated, Python ranges) -> `range`.

A loop body that rebinds names used outside it, or uses break / continue / return, cannot become a
function; it is listed with its line and left alone.
"""

from __future__ import annotations

import libcst as cst

from nkidev.emulator import versions
from nkidev.migrate.common import Notes, Rules, code, expr, imports, stmt

CURRENT_MODULES = {"nki": "nki", "nki.language": "language", "nki.isa": "isa"}


def current_modules(module: cst.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    for s in imports(module):
        if isinstance(s, cst.Import):
            for alias in s.names:
                full = code(alias.name)
                if full in CURRENT_MODULES:
                    names[code(alias.asname.name) if alias.asname else full] = CURRENT_MODULES[full]
        elif isinstance(s, cst.ImportFrom) and s.module is not None and code(s.module) == "nki" and not isinstance(s.names, cst.ImportStar):
            for alias in s.names:
                if code(alias.name) in ("language", "isa"):
                    names[code(alias.asname.name) if alias.asname else code(alias.name)] = code(alias.name)
    return names


class _Uses(cst.CSTVisitor):
    """Names read and names rebound (plain-name assignment targets) in a subtree; break/continue/return seen."""

    def __init__(self):
        self.read: set[str] = set()
        self.bound: set[str] = set()
        self.escapes = False

    def visit_Name(self, node: cst.Name) -> None:
        self.read.add(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        t = node.target
        for n in [t] if isinstance(t, cst.Name) else [e.value for e in getattr(t, "elements", [])]:
            if isinstance(n, cst.Name):
                self.bound.add(n.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.bound.add(node.target.value)

    def visit_Break(self, node) -> None:
        self.escapes = True

    def visit_Continue(self, node) -> None:
        self.escapes = True

    def visit_Return(self, node) -> None:
        self.escapes = True

    def visit_FunctionDef(self, node) -> bool:
        return False  # nested functions have their own scope


def _uses(node: cst.CSTNode) -> _Uses:
    u = _Uses()
    node.visit(u)
    return u


class To07(Rules):
    def __init__(self, notes: Notes, modules: dict[str, str]):
        super().__init__(notes, modules)
        self.counter = 0
        self.functions: list[cst.FunctionDef] = []
        self.scalar_registers: list[set[str]] = []

    def _target(self, func) -> tuple[str | None, str | None]:
        if isinstance(func, cst.Attribute):
            return self.module_of(func.value), func.attr.value
        return None, None

    # ---------------------------------------------------------------- registers that can be NkiScalars
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)
        self.scalar_registers.append(self._scalar_candidates(node))

    def leave_FunctionDef(self, original, updated):
        self.functions.pop()
        self.scalar_registers.pop()
        return updated

    def _scalar_candidates(self, fn: cst.FunctionDef) -> set[str]:
        """Registers allocated without a value and only register_load-ed and read as loop bounds / offsets."""
        allocated, other = set(), set()
        rules = self

        class Scan(cst.CSTVisitor):
            def visit_Assign(self_, node: cst.Assign):  # noqa: N805
                if isinstance(node.value, cst.Call) and rules._target(node.value.func) == ("isa", "register_alloc") and not node.value.args:
                    t = node.targets[0].target
                    if isinstance(t, cst.Name):
                        allocated.add(t.value)

            def visit_Call(self_, node: cst.Call):  # noqa: N805
                kind, name = rules._target(node.func)
                if kind == "isa" and name in ("register_move", "register_store") or kind == "language" and name == "while_loop":
                    other.update(a.value.value for a in node.args if isinstance(a.value, cst.Name))

            def visit_While(self_, node: cst.While):  # noqa: N805
                if isinstance(node.test, cst.Name):
                    other.add(node.test.value)

        fn.visit(Scan())
        return allocated - other

    def _scalars(self) -> set[str]:
        return self.scalar_registers[-1] if self.scalar_registers else set()

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if len(updated.body) != 1:
            return updated
        s = updated.body[0]
        if isinstance(s, cst.Assign) and isinstance(s.value, cst.Call) and self._target(s.value.func) == ("isa", "register_alloc"):
            t = s.targets[0].target
            if isinstance(t, cst.Name) and t.value in self._scalars():
                self.notes.changed(self.line(original), f"{t.value} = nisa.register_alloc()", "removed: the register becomes an NkiScalar")
                return cst.RemovalSentinel.REMOVE
        if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and self._target(s.value.func) == ("isa", "register_load"):
            args = s.value.args
            if len(args) == 2 and isinstance(args[0].value, cst.Name) and args[0].value.value in self._scalars():
                reg, src = args[0].value.value, code(args[1].value)
                self.notes.changed(
                    self.line(original), f"nisa.register_load({reg}, {src})", f"{reg} = nisa.scalar_load({src}) (an NkiScalar)"
                )
                return updated.with_changes(body=[stmt(f"{reg} = nisa.scalar_load({src})").body[0]])
        return updated

    # ---------------------------------------------------------------- the task file's pinned version
    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        t = updated.targets[0].target
        if self.functions or not (isinstance(t, cst.Name) and t.value == "NKI_VERSION" and isinstance(updated.value, cst.SimpleString)):
            return updated
        if not updated.value.evaluated_value.startswith("0.6"):
            return updated
        new = f'"{versions.NEWEST}"'
        self.notes.changed(self.line(original), f"NKI_VERSION = {code(updated.value)}", f"NKI_VERSION = {new}")
        return updated.with_changes(value=cst.SimpleString(new))

    # ---------------------------------------------------------------- loops
    def leave_Call(self, original: cst.Call, updated: cst.Call):
        kind, name = self._target(updated.func)
        if kind == "language" and name in ("affine_range", "sequential_range", "static_range"):
            self.notes.changed(self.line(original), f"nl.{name}", "range (deprecated in NKI 0.7: static loops are Python ranges)")
            return updated.with_changes(func=cst.Name("range"))
        return updated

    def leave_For(self, original: cst.For, updated: cst.For):
        it = updated.iter
        if not (isinstance(it, cst.Call) and self._target(it.func) == ("language", "dynamic_range")):
            return updated
        line = self.line(original)
        if not isinstance(updated.target, cst.Name):
            self.notes.manual(line, "for ... in nl.dynamic_range(...)", "use a single loop variable, then rewrite with nl.fori_loop")
            return updated
        problem = self._body_problem(original, original.body)
        if problem:
            self.notes.manual(
                line, "for ... in nl.dynamic_range(...)", f"rewrite as nl.fori_loop(lower, upper, body_fun) by hand: {problem}"
            )
            return updated
        args = [code(a.value) for a in it.args]
        lo, hi, step = ("0", args[0], None) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else None)
        self.counter += 1
        fn_name = f"_loop_body_{self.counter}"
        indexing = _ScalarIndex(updated.target.value)
        body = updated.body.visit(indexing)
        for construct in indexing.left:
            self.notes.manual(
                line,
                construct,
                f"{updated.target.value} is an NkiScalar in NKI 0.7: address with .ap(pattern, scalar_offset={updated.target.value})",
            )
        for construct in indexing.rewritten:
            self.notes.changed(line, construct, "an .ap() access pattern with scalar_offset= (NkiScalars do not index tensors)")
        func = cst.FunctionDef(name=cst.Name(fn_name), params=cst.Parameters(params=[cst.Param(updated.target)]), body=body)
        call = f"nl.fori_loop({lo}, {hi}, {fn_name}" + (f", step={step})" if step else ")")
        self.notes.changed(line, "for i in nl.dynamic_range(...)", f"{call} (removed in NKI 0.7)")
        return cst.FlattenSentinel([func.with_changes(leading_lines=original.leading_lines), stmt(call)])

    def leave_While(self, original: cst.While, updated: cst.While):
        test = updated.test
        if not isinstance(test, cst.Name) or not self._is_register(test.value):
            return updated
        line = self.line(original)
        problem = self._body_problem(original, original.body, allowed={test.value})
        if problem or original.orelse is not None:
            self.notes.manual(
                line, f"while {test.value}:", f"rewrite as nl.while_loop({test.value}, body_fun) by hand: {problem or 'an else: branch'}"
            )
            return updated
        self.counter += 1
        fn_name = f"_while_body_{self.counter}"
        body = updated.body.with_changes(body=[*updated.body.body, stmt(f"return {test.value}")])
        func = cst.FunctionDef(name=cst.Name(fn_name), params=cst.Parameters(params=[cst.Param(cst.Name(test.value))]), body=body)
        self.notes.changed(line, f"while {test.value}:", f"nl.while_loop({test.value}, {fn_name}) (removed in NKI 0.7)")
        return cst.FlattenSentinel(
            [func.with_changes(leading_lines=original.leading_lines), stmt(f"nl.while_loop({test.value}, {fn_name})")]
        )

    def _is_register(self, name: str) -> bool:
        if not self.functions:
            return False
        found = []
        rules = self

        class Scan(cst.CSTVisitor):
            def visit_Assign(self_, node: cst.Assign):  # noqa: N805
                t = node.targets[0].target
                if isinstance(t, cst.Name) and t.value == name and isinstance(node.value, cst.Call):
                    found.append(rules._target(node.value.func) == ("isa", "register_alloc"))

        self.functions[-1].visit(Scan())
        return any(found)

    def _body_problem(self, loop: cst.CSTNode, body: cst.CSTNode, allowed: set[str] = frozenset()) -> str | None:
        inner = _uses(body)
        if inner.escapes:
            return "the body uses break, continue or return"
        fn = self.functions[-1] if self.functions else None
        if fn is None:
            return None
        outside = _OutsideReads(loop)
        fn.visit(outside)
        shared = sorted((inner.bound - set(allowed)) & outside.read)
        if shared:
            return f"the body rebinds {', '.join(shared)}, which code outside the loop reads (carry such state in SBUF/HBM)"
        return None


class _ScalarIndex(cst.CSTTransformer):
    """In a loop body that becomes a fori_loop body: `t[i, :, :]` (the loop index first, full slices after) ->
    `t.ap([[stride, size], ...], offset=0, scalar_offset=i, indirect_dim=0)`, the same elements addressed through
    the NkiScalar. Other subscripts that read the index are listed for a manual step."""

    def __init__(self, index: str):
        super().__init__()
        self.index = index
        self.rewritten: list[str] = []
        self.left: list[str] = []

    def visit_FunctionDef(self, node) -> bool:
        return False

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript):
        if self.index not in _uses(cst.Tuple([cst.Element(e.slice) for e in original.slice if isinstance(e.slice, cst.Index)])).read:
            return updated
        first, *rest = original.slice
        full = all(
            isinstance(e.slice, cst.Slice) and e.slice.lower is None and e.slice.upper is None and e.slice.step is None for e in rest
        )
        if not (isinstance(first.slice, cst.Index) and code(first.slice.value) == self.index and rest and full):
            self.left.append(code(original))
            return updated
        t = code(original.value)
        dims = range(1, len(original.slice))
        stride = {d: " * ".join(f"{t}.shape[{k}]" for k in range(d + 1, len(original.slice))) or "1" for d in dims}
        pattern = ", ".join(f"[{stride[d]}, {t}.shape[{d}]]" for d in dims)
        self.rewritten.append(code(original))
        return expr(f"{t}.ap([{pattern}], offset=0, scalar_offset={self.index}, indirect_dim=0)")


class _OutsideReads(cst.CSTVisitor):
    """Names read anywhere in a function except inside one loop."""

    def __init__(self, loop: cst.CSTNode):
        self.loop = loop
        self.read: set[str] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.loop:
            return False
        if isinstance(node, cst.Name):
            self.read.add(node.value)
        return True


def uses_06_constructs(module: cst.Module, modules: dict[str, str]) -> bool:
    text = module.code
    return any(k in text for k in ("dynamic_range", "register_alloc", "affine_range", "sequential_range", "static_range"))
