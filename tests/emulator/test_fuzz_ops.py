"""Every op call, well- or badly-typed, ends in a value or a named error (tests/emulator/fuzzing.py).

A few hundred derandomized examples run in the suite; `pytest -m slow` and `python bench/fuzz_ops.py N` run
thousands. Plus the crashes the issue listed, each pinned to its named error and kernel line."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from nkidev.emulator import isa as nisa  # noqa: E402
from nkidev.emulator import language as nl  # noqa: E402
from nkidev.errors import NkiError  # noqa: E402

from .fuzzing import Tally, call_once, calls, fresh_context, ops_under_test  # noqa: E402
from .helpers import empty  # noqa: E402

OPS = ops_under_test()


def _fuzz(examples: int) -> Tally:
    tally = Tally()

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        fresh_context()
        name, kwargs = data.draw(calls(OPS))
        call_once(name, OPS[name], kwargs, tally)

    run()
    return tally


def _report(tally: Tally) -> str:
    lines = [tally.summary()]
    for kind, n in tally.kinds.most_common(20):
        kwargs, tb = tally.examples[kind]
        lines.append(f"{n}x {kind}\n   args: { {k: repr(v)[:60] for k, v in kwargs.items()} }\n{tb}")
    return "\n".join(lines)


def test_every_op_call_is_a_value_or_a_named_error():
    tally = _fuzz(300)
    assert tally.calls == 300 and tally.named > 0 and tally.ok > 0
    assert tally.internal == 0, _report(tally)


@pytest.mark.slow
def test_every_op_call_is_a_value_or_a_named_error_thousands():
    tally = _fuzz(5000)
    assert tally.internal == 0, _report(tally)


CRASHES = {
    "nl.mean axis out of range": (lambda: nl.mean(empty((2, 2)), axis=5), "err_invalid_argument"),
    "nl.sum of a 3-d tile on axis 5 (used to reduce axis 2)": (lambda: nl.sum(empty((2, 3, 4)), axis=5), "err_invalid_argument"),
    "nl.expand_dims past the rank": (lambda: nl.expand_dims(empty((2, 3)), 4), "err_invalid_argument"),
    "topk n above the snake's 16 x free size": (
        lambda: nisa.topk(val_dst=empty((16, 9), "bfloat16"), idx_dst=empty((16, 9), "uint32"), src=empty((16, 8), "bfloat16"), n=129),
        "err_invalid_argument",
    ),
    "memset NaN into int": (lambda: nisa.memset(dst=empty((2, 8), "int32"), value=float("nan")), "err_memset_value_type"),
    "nl.rms_norm n=0": (lambda: nl.rms_norm(empty((2, 8)), empty((2, 8)), axis=1, n=0), "err_invalid_argument"),
    "nl.broadcast_to to an int shape": (lambda: nl.broadcast_to(empty((2, 1)), 4), "err_invalid_argument"),
    "nl.empty_like transpose_axes not a tuple": (lambda: nl.empty_like(empty((2, 8)), transpose_axes=True), "err_invalid_argument"),
    "a rule reading a non-tile": (
        lambda: nisa.tensor_tensor(dst=empty((2, 8)), data1=3.0, data2=empty((2, 8)), op=nl.add),
        "err_failed_to_infer_tile_from_local_tensor",
    ),
    "a required tile passed as None": (lambda: nisa.reciprocal(dst=None, data=None), "err_failed_to_infer_tile_from_local_tensor"),
    "a (128, 4000, 4000) SBUF tile": (lambda: nl.ndarray((128, 4000, 4000), nl.float32, buffer=nl.sbuf), "err_sbuf_capacity_exceeded"),
    "HBM beyond one NeuronCore": (lambda: nl.ndarray((1 << 16, 1 << 16), nl.float32, buffer=nl.shared_hbm), "err_hbm_capacity_exceeded"),
    "beyond the emulator budget": (lambda: nl.ndarray((1 << 20, 1 << 18), nl.float32, buffer=nl.shared_hbm), "err_memory_limit"),
}


@pytest.mark.parametrize("case", sorted(CRASHES))
def test_former_crashes_are_named_errors_at_the_calling_line(case):
    call, name = CRASHES[case]
    with pytest.raises(NkiError) as e:
        call()
    assert e.value.name == name
    path, _, line = e.value.location.rpartition(":")
    assert path == __file__ and int(line) > 0


@pytest.mark.parametrize("buffer", ["sbuf", "psum"])
def test_a_tile_too_big_for_a_partition_is_refused_before_its_array_exists(buffer):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(NkiError) as e:
            nl.ndarray((128, 4000, 4000), nl.float32, buffer=getattr(nl, buffer))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.name == {"sbuf": "err_sbuf_capacity_exceeded", "psum": "err_psum_tile_too_large"}[buffer]
    assert peak < 64 << 20  # the 8 GB array was never allocated
