"""nl dtypes are dataclass instances in nkidev, so dataclasses.asdict() of a test config holding one turns the
dtype into a dict ({'name': 'bfloat16', 'storage': ...}) and np.dtype()/np.issubdtype() of it then fails
("entry not a 2- or 3- tuple"). nki-library's test_attention_tkg.py calls
run_attention_tkg_test(**asdict(AttnTKGTestParams(dtype=nl.bfloat16, ...))).
Official nl dtypes are opaque values (not dataclass instances), so asdict() copies them as leaves.
Correct: asdict({dtype: nl.bfloat16})['dtype'] is still a dtype."""

import dataclasses

import nki.language as nl
from _common import expect, np


@dataclasses.dataclass
class Params:
    dtype: object = nl.bfloat16
    n: int = 4


def run():
    d = dataclasses.asdict(Params())["dtype"]
    return np.issubdtype(d, np.integer), d


expect("dtype_is_dataclass", run, lambda r: None if r[0] is False or r[0] is np.False_ else "wrong")
