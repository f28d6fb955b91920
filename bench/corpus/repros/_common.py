"""Shared by the repros: run under the nkidev emulator, report BUG / OK, exit 1 while the bug is present."""

import sys
import traceback

import numpy as np  # noqa: F401

import nkidev

nkidev.emulate()


def expect(name, fn, check=None):
    """fn() runs the kernel; check(result) returns None if correct or a string describing the wrong result."""
    try:
        res = fn()
    except Exception as e:  # noqa: BLE001
        print(f"BUG {name}: raised {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        if "-v" in sys.argv:
            traceback.print_exc()
        sys.exit(1)
    msg = check(res) if check else None
    if msg:
        print(f"BUG {name}: {msg}")
        sys.exit(1)
    print(f"OK {name}")
