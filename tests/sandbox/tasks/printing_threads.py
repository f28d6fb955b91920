"""A correct kernel that leaves a non-daemon thread running and prints at import: validate must still end."""

import threading
import time

import nki
import nki.isa as nisa
import nki.language as nl
from base import copy_reference as reference  # noqa: F401
from base import one_case as cases  # noqa: F401

print("hello from the task file")


@nki.jit
def threaded_copy(x):
    threading.Thread(target=time.sleep, args=(3600,)).start()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
