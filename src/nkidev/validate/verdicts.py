"""The verdicts `nkidev validate` can give, as data: one stable name per way a kernel can fail.

`fail_*` verdicts say the numbers are wrong; `cheat_*` verdicts say the kernel passed (or could pass)
for a reason other than computing the answer on the device: it left memory unwritten, wrote its inputs,
ignored them, behaved differently run to run, computed in a cheaper dtype than the task asked for, or
reached around the emulator to NumPy, the reference or emulator internals. Names never change meaning.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    name: str
    summary: str
    fix: str


def _v(name: str, summary: str, fix: str) -> Verdict:
    return Verdict(name, summary, fix)


_TABLE = [
    _v(
        "fail_tolerance",
        "An output differs from the float64 reference by more than the tolerance "
        "(max |out - ref| > atol + rtol*|ref| somewhere, or relative L2 error > rel_l2, or cosine < cosine).",
        "fix the kernel's math at the index named; loosen TOLERANCE only if the reference itself is approximate",
    ),
    _v(
        "fail_nonfinite",
        "An output holds NaN/Inf where the reference is finite (overflow or invalid math, not unwritten memory).",
        "look for exp/reciprocal/rsqrt overflow or out-of-range activation inputs",
    ),
    _v(
        "fail_shape",
        "The kernel returns a different number of outputs, or outputs of different shapes, than the reference.",
        "return exactly what reference() returns, in the same order and shapes",
    ),
    _v(
        "fail_dtype",
        "An output holds integers where the reference returns floats, or the reverse.",
        "allocate the output with the kind of dtype the task expects",
    ),
    _v(
        "fail_output_not_written",
        "Some output elements hold memory the kernel never wrote (the emulator fills fresh allocations with NaN, "
        "4 for integers) while the rest was computed: most likely a bug such as a loop bound that drops the last "
        "partial tile or a tile stored before all its rows were computed. The message names the first such element "
        "and the line that allocated the output.",
        "write every output element: check loop bounds (ceil, not floor, for the last partial tile), slices that stop one short, "
        "and tiles copied out before being fully computed",
    ),
    _v(
        "cheat_output_not_written",
        "No element of an output was computed by the kernel: it returns memory it never wrote (the emulator fills "
        "fresh allocations with NaN, 4 for integers; the values change when that fill changes).",
        "compute the output and write every element of it",
    ),
    _v(
        "cheat_input_modified",
        "The kernel wrote one of its input tensors.",
        "write results into a new nl.ndarray(..., buffer=nl.shared_hbm); inputs are read-only "
        "(official: err_cannot_update_immutable_parameter)",
    ),
    _v(
        "cheat_input_independent",
        "The output did not change when an input changed, although the reference's output "
        "did: the kernel returns a constant or ignores that input.",
        "compute the result from the named input",
    ),
    _v(
        "cheat_nondeterministic",
        "Two identical runs gave different outputs (Python-side randomness, time or state kept between calls).",
        "make the kernel a pure function of its inputs",
    ),
    _v(
        "cheat_precision_downgrade",
        "Kernel math or intermediate storage ran in a float dtype less precise than the task's (e.g. bfloat16 matmuls in a float32 task).",
        "keep the task's precision, or declare the lower one with TOLERANCE = dict(precision='bfloat16', ...)",
    ),
    _v(
        "cheat_numpy_on_kernel_data",
        "The kernel called NumPy (or Python math) on device tensors instead of NKI instructions (the emulator's err_numpy_on_kernel_data).",
        "compute with nki.isa / nki.language instructions",
    ),
    _v(
        "cheat_emulator_internals",
        "The kernel's source reaches around the NKI API: emulator internals (._data, "
        ".storage), frame/garbage-collector introspection, eval/exec, dynamic attribute access or stdout capture.",
        "use only the nki / nki.isa / nki.language API and plain Python on shapes and scalars",
    ),
    _v(
        "cheat_calls_reference",
        "The kernel calls the task's reference() or cases() function.",
        "compute the answer on the device; the reference is only for checking",
    ),
    _v(
        "cheat_data_dependent_program",
        "The kernel issued different instructions for inputs of the same shapes: its "
        "Python code read device values (data-dependent control flow or host-computed constants), which cannot be "
        "compiled for Trainium.",
        "make control flow depend on shapes and scalar arguments only (or use nl.fori_loop with registers and allow this verdict)",
    ),
]

VERDICTS: dict[str, Verdict] = {v.name: v for v in _TABLE}


def is_verdict(name: str) -> bool:
    return name in VERDICTS
