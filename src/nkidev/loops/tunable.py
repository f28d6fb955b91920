"""TUNABLE: a task file's search space over a kernel's keyword arguments, read and applied as source text.

    TUNABLE = {"tile_rows": [32, 64, 128], "tile_cols": [256, 512]}            # the file's kernels share it
    TUNABLE = {"my_kernel": {"tile_rows": [32, 64, 128]}}                       # per kernel

Both the space and the kernel's defaults are read from the file's syntax tree (`ast.literal_eval`), so finding
out what to tune never runs the user's code in the caller's process. A config is applied by rewriting the
defaults of the kernel's parameters in the source (`with_defaults`): the result is a complete candidate module
that runs exactly like `kernel(*case.args, **case.kwargs, **params)` (what `nkidev.profile` times for that
config) and goes through the same gate as any other candidate. A case that passes a tuned parameter itself
(`Case(x, tile_rows=64)`) would override every config's default, so the timed case must not (err_bad_tunable).
"""

from __future__ import annotations

import ast
import itertools

from nkidev.errors import NkiUsageError

Value = int | float | str | bool | None


def _tree(source: str, where: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as e:
        raise NkiUsageError("err_bad_task_file", f"{where} does not parse at line {e.lineno}: {e.msg}", "fix the syntax error") from None


def _kernel_def(tree: ast.Module, kernel: str, where: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            return node
    raise NkiUsageError("err_kernel_not_found", f"{where} has no top-level function {kernel!r}", f"use {where}::<kernel name>")


def read_tunable(source: str, kernel: str, where: str) -> dict[str, list]:
    """The TUNABLE space of `kernel` (per-kernel form first); {} when the file declares none."""
    tree = _tree(source, where)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TUNABLE" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise NkiUsageError(
                    "err_bad_tunable",
                    f"{where}:{node.lineno}: TUNABLE is not a literal dict",
                    'write TUNABLE = {"param": [v1, v2, ...]} with literal values (numbers, strings, booleans, None)',
                    f"{where}:{node.lineno}",
                ) from None
            return _space(value, kernel, f"{where}:{node.lineno}")
    return {}


def _space(value, kernel: str, where: str) -> dict[str, list]:
    if isinstance(value, dict) and isinstance(value.get(kernel), dict):
        value = value[kernel]
    if not isinstance(value, dict) or not all(isinstance(v, list | tuple) for v in value.values()):
        raise NkiUsageError(
            "err_bad_tunable",
            f"{where}: TUNABLE must map parameter names to lists of values",
            'write TUNABLE = {"param": [v1, v2]} or {"KERNEL": {"param": [v1, v2]}}',
            where,
        )
    return {str(k): list(v) for k, v in value.items()}


def parse_param(text: str) -> tuple[str, list]:
    """--param NAME=v1,v2 -> (NAME, [v1, v2]); each value is a Python literal, else a string."""
    name, eq, values = text.partition("=")
    if not eq or not name.strip().isidentifier() or not values.strip():
        raise NkiUsageError("err_invalid_argument", f"--param {text!r}", "write --param NAME=v1,v2,... e.g. --param tile_rows=64,128")
    return name.strip(), [_literal(v.strip()) for v in values.split(",")]


def _literal(text: str) -> Value:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, Value) else text


def kernel_defaults(source: str, kernel: str, where: str) -> dict[str, Value]:
    """The kernel's parameters that have literal defaults, with those defaults."""
    fn = _kernel_def(_tree(source, where), kernel, where)
    out = {}
    for arg, default in _defaulted(fn):
        try:
            out[arg.arg] = ast.literal_eval(default)
        except ValueError:
            continue
    return out


def _defaulted(fn: ast.FunctionDef) -> list[tuple[ast.arg, ast.expr]]:
    positional = fn.args.posonlyargs + fn.args.args
    pairs = list(zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults))
    pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None]
    return pairs


def check_space(space: dict[str, list], defaults: dict[str, Value], kernel: str, where: str) -> None:
    """Every tuned parameter is a defaulted keyword argument of the kernel and every value is a plain literal."""
    for name, values in space.items():
        if name not in defaults:
            raise NkiUsageError(
                "err_bad_tunable",
                f"{where}: {kernel} has no parameter {name!r} with a literal default (tunable: {', '.join(defaults) or 'none'})",
                f"give the kernel a keyword argument `{name}=<default>` or drop it from TUNABLE / --param",
            )
        if not values:
            raise NkiUsageError("err_bad_tunable", f"{where}: TUNABLE[{name!r}] is empty", "list at least one value")
        for v in values:
            if not isinstance(v, Value) or ast.literal_eval(repr(v)) != v:
                raise NkiUsageError("err_bad_tunable", f"{where}: TUNABLE[{name!r}] value {v!r}", "use numbers, strings, booleans or None")


def configs(space: dict[str, list]) -> list[dict[str, Value]]:
    """Every combination, in the order of the space (the first parameter varies slowest)."""
    names = list(space)
    return [dict(zip(names, combo)) for combo in itertools.product(*(space[n] for n in names))]


def with_defaults(source: str, kernel: str, params: dict[str, Value], where: str) -> str:
    """The source with the defaults of `kernel`'s parameters replaced by `params` (other text unchanged)."""
    fn = _kernel_def(_tree(source, where), kernel, where)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")
    edits = []
    for arg, default in _defaulted(fn):
        if arg.arg in params:
            start = offsets[default.lineno - 1] + default.col_offset
            stop = offsets[default.end_lineno - 1] + default.end_col_offset
            edits.append((start, stop, repr(params[arg.arg]).encode("utf-8")))
    for start, stop, text in sorted(edits, reverse=True):
        data = data[:start] + text + data[stop:]
    return data.decode("utf-8")
