"""LNC=2: if one program raises while the other is blocked in nisa.sendrecv, the run hangs forever.
Correct: the kernel's own exception (here a ValueError from program 1) reaches the caller, as nkidev's README
promises ("a kernel's own exceptions reach you unchanged"); the peer waiting in sendrecv must be released.
Run with a timeout: a hang is reported as BUG after 60 s."""

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import numpy as np, nkidev
    nkidev.emulate()
    import nki, nki.isa as nisa, nki.language as nl

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        pid = nl.program_id(0)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        if pid == 1:
            raise ValueError("program 1 failed before its sendrecv")
        nisa.sendrecv(src=t, dst=r, send_to_rank=1 - pid, recv_from_rank=1 - pid, pipe_id=0)
        nisa.dma_copy(dst=out, src=r)
        return out

    try:
        nki.simulate(kernel)[2](np.ones((8, 8), np.float32))
        print("NO-ERROR")
    except ValueError as e:
        print("RAISED", e)
""")
try:
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    if "RAISED program 1 failed" in p.stdout:
        print("OK lnc2_error_while_peer_in_sendrecv")
        sys.exit(0)
    print("BUG lnc2_error_while_peer_in_sendrecv: wrong outcome:", out.strip().splitlines()[-1:])
    sys.exit(1)
except subprocess.TimeoutExpired:
    print("BUG lnc2_error_while_peer_in_sendrecv: hung (no result after 60 s); program 0 waits in sendrecv forever")
    sys.exit(1)
