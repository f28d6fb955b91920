"""@dataclass subclass of nl.NKIObject with un-annotated (default-only) fields cannot be constructed with
keyword arguments: Python's dataclass only turns *annotated* names into __init__ parameters, and nkidev's
NKIObject.__init__(**kwargs) is replaced by the dataclass-generated no-argument __init__.
nki-library core/attention/attention_cte.py:868-875:
    @dataclass
    class SectionParams(nl.NKIObject):
        section_idx = None ...
and calls SectionParams(section_idx=..., ...) -- it works on the official NKI, whose NKIObject accepts the
class attributes as keyword fields. Correct: the object is built with the given attribute values."""

from dataclasses import dataclass

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@dataclass
class SectionParams(nl.NKIObject):
    section_idx = None
    section_offset = None


@nki.jit
def kernel(a):
    p = SectionParams(section_idx=1, section_offset=4)
    out = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[p.section_offset : p.section_offset + 4, :])
    nisa.dma_copy(dst=out, src=t)
    return out


a = np.random.rand(8, 8).astype(np.float32)
expect("dataclass_nkiobject_unannotated", lambda: nki.simulate(kernel)(a), lambda r: None if np.array_equal(r, a[4:8]) else "wrong")
