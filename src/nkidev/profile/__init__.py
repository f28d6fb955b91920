"""nkidev.profile: predicted neuron-explorer profiles (Parquet tables + Perfetto trace.json) without hardware.

    nkidev.profile(kernel, *args, target="trn2", out="prof/")   # == nkidev.profile.api.profile
    nkidev.profile.api.profile_task("file.py::kernel", case=0, out="prof/")
    nkidev.profile.api.profile_case(kernel, nkidev.Case(x, eps=1e-6), out="prof/")  # kernel keywords kept apart
    nkidev.profile.schema.TABLES                                # table and column definitions

This package module is itself callable, so `nkidev.profile(...)` works whether `nkidev.profile` resolves
to the function (nkidev's lazy export) or to this package (after `import nkidev.profile.schema`).
"""

from __future__ import annotations

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from nkidev.profile.api import profile

        return profile(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
