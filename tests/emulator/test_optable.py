"""The op table is complete, and it is the only place facts about an op live.

- every op declares every fact (kind, profile opcode, cost, engines, rules with catalogued errors);
- no string outside the table names an nki.isa op (groups of ops are derived from the table);
- the cost docs are written from the expression the cost model evaluates: rendering a cost with each term's
  value and evaluating the text gives exactly what the cost model computes, on many sample instructions;
- no code outside nkidev/hardware compares NeuronCore versions: capabilities are hardware data.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from pathlib import Path

import pytest

from nkidev.emulator.costs import Cond, Env, Expr, Term, TransferCost
from nkidev.emulator.opdef import ENGINES, KINDS
from nkidev.emulator.ops import OPS
from nkidev.emulator.rules import OPERAND_RULES
from nkidev.emulator.trace import Access, Instruction
from nkidev.errors import ERRORS
from nkidev.hardware import get_target, target_names

SRC = Path(__file__).resolve().parents[2] / "src" / "nkidev"


def _param_names(op) -> set[str]:
    return {p.strip().split("=")[0].strip() for p in op.params.split(",") if p.strip()}


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_declares_every_fact(name):
    op = OPS[name]
    assert op.kind in KINDS, "what the op does to values"
    assert op.opcode and op.opcode == op.opcode.upper(), "its profile opcode"
    assert isinstance(op.cost, Expr | TransferCost) and op.cost_doc, "a cost that documents itself"
    assert set(op.engines) <= set(ENGINES) and op.engines
    assert op.is_dma == (op.engines == ("dma",)), "DMA ops (and only they) are timed as transfers"
    assert (op.load_cost is not None) == ("tensor" in op.engines), "TensorE ops declare their LoadStationary"
    assert op.summary and op.params
    assert set(op.tiles) <= _param_names(op) and set(op.writes) <= _param_names(op) | {"dst"}
    assert op.impl is not None or not op.emulated
    assert op.available_on(), "some target has it"
    for rule in op.rules:
        assert rule.error in ERRORS and rule.doc


def test_operand_rules_are_catalogued_and_documented():
    from nkidev.docs.pages import all_pages

    bodies = {p.id: p.body for p in all_pages()}
    for rule in OPERAND_RULES:
        assert rule.error in ERRORS
        assert rule.doc in bodies[f"errors/{rule.error}"]
        assert rule.doc in bodies["isa/tensor_tensor"]


def _docstrings(tree) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


# The op table itself, and nki.language (current and legacy), whose function names (nl.reciprocal, ...) are a separate vocabulary.
TABLE_FILES = ("emulator/ops", "emulator/alu.py", "emulator/language.py", "legacy/language.py")


def test_no_string_outside_the_table_names_an_op():
    stray = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(TABLE_FILES):
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if node.value in OPS:
                    stray.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert stray == [], "op facts belong in the op's declaration; derive groups with ops_where(): " + "; ".join(stray)


def test_no_neuroncore_version_comparisons_outside_hardware():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("hardware/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                names = [n.attr for part in (node.left, *node.comparators) for n in ast.walk(part) if isinstance(n, ast.Attribute)]
                if "nc_version" in names or "min_nc" in names:
                    found.append(f"{rel}:{node.lineno}")
    assert found == [], "ask the target's [features] instead: " + ", ".join(found)


# ---------------------------------------------------------------- cost docs equal the computed cost


def _access(buffer: str, dtype: str, role: str, p: int = 128, f: int = 512, contiguous: bool = True) -> Access:
    item = {"bfloat16": 2, "float32": 4, "float8_e4m3": 1, "float16": 2}[dtype]
    nbytes = p * f * item
    run = f * item if contiguous else item
    return Access(1, buffer, role, (p, f), dtype, nbytes, 0, p, 0, f * item, run)


def _samples():
    """Instructions that reach both sides of every condition of the cost expressions."""
    attr_sets = [
        {},
        {"op": "add", "op0": "subtract", "op1": "multiply", "value": 0, "reads_accumulator": True},
        {"op": "maximum", "reads_accumulator": False, "value": 1.5},
        {"M": 128, "N": 512, "fp32": False, "perf_mode": "none", "n": 8},
        {"M": 32, "N": 48, "fp32": True, "onezero": False, "perf_mode": "double_row", "F": 96},
        {"M": 16, "N": 8, "fp32": True, "onezero": True, "perf_mode": "none"},
    ]
    layouts = [
        ("sbuf", "sbuf", "bfloat16", True),
        ("psum", "sbuf", "float32", True),
        ("sbuf", "sbuf", "float32", False),
        ("sbuf", "psum", "bfloat16", False),
    ]
    for attrs, (rb, wb, dtype, contiguous), free in itertools.product(attr_sets, layouts, (7, 512, 4096)):
        reads = [_access(rb, dtype, "data", f=free, contiguous=contiguous), _access("sbuf", dtype, "data2", f=free)]
        writes = [_access(wb, dtype, "dst", f=free)]
        for engine in ("vector", "scalar", "gpsimd", "tensor"):
            yield Instruction(0, "x", engine, "k.py:1", reads, writes, 128, free, 1, 0, attrs)


def _spelled(expr: Expr, env: Env) -> str:
    def leaf(x):
        return repr(x.eval(env)) if isinstance(x, Term) else repr(bool(x.test(env))) if isinstance(x, Cond) else x

    return expr.render(leaf)


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if not op.is_dma))
def test_cost_doc_is_the_computed_cost(name):
    op = OPS[name]
    checked = 0
    for target in target_names():
        hw = get_target(target)
        for ins in _samples():
            if ins.engine not in op.engines:
                continue
            ins.opcode = name
            env = Env(ins, hw, op)
            for expr, computed in ((op.cost, op.cycles(ins, hw)), (op.load_cost, op.load_cycles(ins, hw))):
                if expr is None:
                    continue
                assert eval(_spelled(expr, env), {"max": max, "min": min}) == computed  # noqa: S307 - our own text
                checked += 1
    assert checked > 0
    assert op.cost.doc in op.cost_doc


def test_cost_terms_are_documented_on_the_op_pages():
    from nkidev.docs.pages import all_pages

    page = next(p for p in all_pages() if p.id == "isa/tensor_copy")
    assert "`RATE`:" in page.body and "performance modes" in page.body
    assert OPS["tensor_copy"].cost.doc in page.body


def test_op_groups_come_from_the_table():
    from nkidev.emulator.ops import ops_where

    isa = ops_where(lambda op: op.namespace == "isa")
    assert ops_where(lambda op: op.is_dma) & isa == {"dma_copy", "dma_transpose", "dma_compute", "sendrecv", "sendrecv_compute"}
    assert ops_where(lambda op: op.kind == "matmul") == {"nc_matmul", "nc_matmul_mx"}
    assert ops_where(lambda op: op.rendezvous) & isa == {"core_barrier", "sendrecv", "sendrecv_compute"}
    collectives = ops_where(lambda op: op.namespace == "collectives")
    assert {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute"} <= collectives
    assert collectives <= ops_where(lambda op: op.is_dma and op.rendezvous)  # core-to-core transfers
    assert {"memset", "iota", "rng"} <= ops_where(lambda op: op.kind == "constant")


def test_public_functions_carry_their_declaration():
    from nkidev.emulator import isa, nki_api

    modules = {"isa": isa, "collectives": nki_api.collectives}
    for name, op in OPS.items():
        fn = getattr(modules[op.namespace], name)
        assert fn.__nki_opdef__ is op
        assert list(inspect.signature(fn).parameters) == [p.split("=")[0].strip() for p in op.params.split(",")]
