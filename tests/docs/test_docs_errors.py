"""Docs listing, short names, activation formulas, the tensor-views page, `explain` for every kind of name,
and NKIDEV_DEBUG=1 printing the kernel's own traceback."""

import json
import os
import re
import subprocess
import sys

import pytest

from nkidev.analysis.investigations import KINDS
from nkidev.docs.api import explain, listing, show
from nkidev.docs.ncc import NCC_CODES
from nkidev.emulator.alu import ACTIVATION_DOCS, ACTIVATIONS
from nkidev.errors import NkiUsageError
from nkidev.validate.verdicts import VERDICTS


def test_docs_list_has_every_page_and_kinds_filter():
    everything = listing()
    assert len({p["id"] for p in everything}) == len(everything) > 300
    findings = listing("finding")
    assert {p["id"] for p in findings} == {f"findings/{k}" for k in KINDS}
    with pytest.raises(NkiUsageError) as e:
        listing("nope")
    assert e.value.name == "err_invalid_argument"


@pytest.mark.parametrize(
    "short,page", [("gelu", "language/gelu"), ("ndarray", "language/ndarray"), ("tensor-views", "guides/tensor-views")]
)
def test_unique_short_names_resolve(short, page):
    assert show(short)["id"] == page


def test_every_activation_states_what_nkidev_computes():
    assert set(ACTIVATION_DOCS) == set(ACTIVATIONS)
    body = show("activations")["body"]
    for name in ACTIVATIONS:
        assert f"`nl.{name}`" in body
    gelu = show("gelu")["body"]
    assert "erf(x / sqrt(2))" in gelu and "approximate='none'" in gelu and "no formula" in gelu


def test_tensor_views_page_covers_every_view_method():
    from nkidev.emulator.tensor import NkiTensor

    body = show("tensor-views")["body"]
    views = ["reshape", "reshape_dim", "flatten_dims", "expand_dim", "squeeze_dim", "broadcast", "permute", "slice", "select"]
    views += ["ap", "vector_select", "view", "reinterpret_cast", "rearrange", "get_pattern", "is_contiguous", "is_indirect", "indirect"]
    for name in views:
        assert callable(getattr(NkiTensor, name)), name
        assert f"t.{name}(" in body, name


@pytest.mark.parametrize(
    "name,kind",
    [("err_psum_bank_overflow", "error"), ("cheat_input_modified", "verdict"), ("fail_output_not_written", "verdict")]
    + [(k, "finding") for k in KINDS]
    + [("NCC_EVRF007", "ncc"), ("EVRF065", "ncc")],
)
def test_explain_knows_every_kind_of_name(name, kind):
    info = explain(name)
    assert info["kind"] == kind and info["summary"] and info["fix"]
    assert show(info["page"])["id"] == info["page"]


def test_every_ncc_code_links_its_public_page():
    for c in NCC_CODES.values():
        assert re.fullmatch(r"NCC_[A-Z]{4}\d{3}", c.code)
        assert c.url == f"https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/error-codes/{c.code[4:]}.html"
    assert explain("NCC_EVRF007")["url"].endswith("/EVRF007.html")


def test_every_verdict_has_a_page_and_unknown_names_are_named_errors():
    for v in VERDICTS:
        assert explain(v)["kind"] == "verdict"
    with pytest.raises(NkiUsageError) as e:
        explain("redundant_lod")
    assert e.value.name == "err_unknown_topic" and "redundant_load" in e.value.message


RAISES = """\
import nki
import nki.language as nl
import numpy as np


def helper(n):
    return [1, 2][n]


@nki.jit
def boom(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    helper(5)
    return out


def reference(x):
    return x


def cases():
    return [(np.zeros((4, 4), np.float32),)]
"""


@pytest.mark.parametrize("command", ["validate", "profile"])
def test_nkidev_debug_prints_the_kernels_traceback(tmp_path, command):
    task = tmp_path / "raises.py"
    task.write_text(RAISES)
    args = [sys.executable, "-m", "nkidev", command, f"{task}::boom", "--json"]
    if command == "profile":
        args += ["--out", str(tmp_path / "p")]
    plain = subprocess.run(args, capture_output=True, text=True, timeout=120, env={**os.environ, "NKIDEV_DEBUG": "0"})
    debug = subprocess.run(args, capture_output=True, text=True, timeout=120, env={**os.environ, "NKIDEV_DEBUG": "1"})
    assert plain.returncode == debug.returncode == 3
    assert json.loads(debug.stdout)["error"]["name"] == "err_kernel_raised"  # stdout stays one JSON object
    assert "Traceback" not in plain.stderr
    assert "Traceback (the kernel's frames" in debug.stderr
    assert "line 13, in boom" in debug.stderr and "line 7, in helper" in debug.stderr and "IndexError" in debug.stderr
    assert "nkidev/emulator" not in debug.stderr  # nkidev's own frames are left out
