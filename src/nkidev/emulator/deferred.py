"""Overlap the kernel's Python with its GEMMs: instructions that read deferred matmul results run on a worker thread.

A K-tiled matmul's accumulation group is one large GEMM (psum.py), computed when something reads its PSUM
tile, usually a `tensor_copy` to SBUF followed by a `dma_copy` to HBM. Done in line, the kernel's Python (the
next group's loads, conversions, rule checks, the trace) waits for every GEMM. Instead, a *deferrable*
instruction (`declare(..., deferrable=True)`: its semantics neither warn nor read run-time values, and it returns
nothing) whose operands have values still to compute is queued on the run's worker thread, which computes the
groups and then runs the instruction; NumPy releases the GIL inside a GEMM, so the main thread goes on with the
kernel. The results are the same bits: each group is still one GEMM of the same shape on one BLAS thread (see
blas.py), and the worker runs the queued instructions one at a time, in program order.

Every storage a queued instruction accesses (reads and writes) is marked with it (`Storage.pending` holds the
last such task), so nothing on the main thread reads stale values or overwrites what the worker still reads:
- an instruction that is not deferrable and touches a marked storage, or whose operands are not all listed
  (an uncacheable call), first waits until the worker is idle;
- any other access to a marked storage (reading values through `stored_values`, writes through `store`, the
  DMA fast path) calls `Storage.flush`, which waits for the marking task;
- the run waits for the worker before it collects outputs, and stops it on every exit (launch.py).
The GEMMs themselves start when their reader is queued, on a small pool of threads (each GEMM on one BLAS
thread, so the same bits; two groups' GEMMs at once use both cores of a 2-core machine), and the queued reader
waits for them.
Finished tasks are released on the main thread, so storages are freed (and their bytes uncounted) there only.
An exception on the worker is raised on the main thread at the next wait, with a traceback whose kernel frame
is the line of the queued instruction (so err_internal / err_kernel_raised name it). Only a single-program run
with numerics overlaps (`Context.overlap`); SPMD programs share HBM and stay in line.
"""

from __future__ import annotations

import os
import threading
import types
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator.location import kernel_frame
from nkidev.emulator.tensor import UNFILLED, new_versions
from nkidev.errors import NkiError

_AHEAD = 4  # queued instructions the kernel may run ahead of the worker (bounds the group buffers in flight)
# Smaller GEMMs run in line: handing an instruction over and waiting for it costs ~100 us of CPU on the 2-core
# machine (a 128x128x128 group read at once by the next matmul: 350 against 220 us per iteration in line), while a
# 128x512x256 group's GEMM takes ~1 ms
_MIN_MACS = 1 << 24
# GEMMs of different groups run at once, each on one BLAS thread (blas.py: the same bits as in line)
_GEMM_THREADS = min(2, os.cpu_count() or 1)


class Task:
    """One queued instruction: the GEMMs of its operands' matmul groups (already started), then its semantics.
    Also the mark on the storages it accesses (`Storage.pending`)."""

    __slots__ = ("worker", "ticket", "impl", "args", "engine", "gemms", "storages", "frame", "lasti", "lineno")

    def __init__(self, worker: Worker, ticket: int, impl, args, engine: str, gemms: list, storages: list, frame):
        self.worker, self.ticket, self.impl, self.args, self.engine = worker, ticket, impl, args, engine
        self.gemms, self.storages = gemms, storages
        self.frame = frame  # the kernel frame and line that issued the instruction (for errors raised on the worker)
        self.lasti, self.lineno = (frame.f_lasti, frame.f_lineno) if frame is not None else (0, 0)

    def run(self, ctx) -> None:
        for gemm in self.gemms:
            gemm.result()  # raises the GEMM's exception here
        self.impl(self.args, ctx, self.engine)

    def settle(self) -> bool:
        """Storage.flush of a storage this task marks: on the main thread, wait for it (which clears the mark);
        on the worker, nothing: the tasks before this one are done, in order. Whether it waited."""
        if threading.get_ident() != self.worker.ident:
            self.worker.wait(self.ticket)
            return True
        return False


class Worker:
    """The run's worker thread and its FIFO of tasks (created at the first deferred instruction)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.submitted = 0
        self.done = 0
        self.inflight: deque[Task] = deque()  # queued or finished, not yet released (main thread only)
        self.queue: deque[Task | None] = deque()
        self.cond = threading.Condition()
        self.error: tuple[Task, BaseException] | None = None
        self.raised = False
        self.gemm = ThreadPoolExecutor(_GEMM_THREADS, thread_name_prefix="nkidev-gemm")
        self.thread = threading.Thread(target=self._loop, name="nkidev-deferred", daemon=True)
        self.thread.start()
        self.ident = self.thread.ident

    # ---------------------------------------------------------------- the worker thread

    def _loop(self) -> None:
        _ctx.set_current(self.ctx)  # semantics may look the program's context up
        with np.errstate(all="ignore"):  # as the kernel's own thread (launch.py): NaN/Inf are the kernel's data
            while True:
                with self.cond:
                    while not self.queue:
                        self.cond.wait()
                    task = self.queue.popleft()
                if task is None:
                    return
                if self.error is None:  # after a failure the rest is skipped: the run is raising
                    try:
                        task.run(self.ctx)
                    except BaseException as e:  # raised on the main thread at its next wait
                        self.error = (task, e)
                ticket = task.ticket
                del task  # the main thread holds it (inflight) and releases it
                with self.cond:
                    self.done = ticket
                    self.cond.notify_all()

    # ---------------------------------------------------------------- the main thread

    def submit(self, op, a, engine: str, storages: list) -> None:
        self.submitted += 1
        gemms = []
        for st in storages:
            p = st.pending
            if p is not None and p.__class__ is dict:
                # Started now, in parallel with the queue: nothing queued touches this PSUM storage (its groups
                # were opened after every task that did was done) and the operands are the group's own rows.
                for group in p.values():
                    group.close()  # here: the pool's cache belongs to this thread
                    gemms.append(self.gemm.submit(_compute, group))
        task = Task(self, self.submitted, op.impl, a, engine, gemms, storages, kernel_frame(3))
        for st in storages:
            st.pending = task
        self.inflight.append(task)
        with self.cond:
            self.queue.append(task)
            self.cond.notify_all()
        if self.submitted - self.done > _AHEAD:
            self.wait(self.submitted - _AHEAD)

    def wait(self, ticket: int) -> None:
        """Block until the task `ticket` is done; release finished tasks; raise the worker's error."""
        if self.done < ticket:
            with self.cond:
                while self.done < ticket:
                    self.cond.wait()
        self.release()

    def release(self) -> None:
        """Drop finished tasks (here, on the main thread) and the marks they still hold."""
        done = self.done
        inflight = self.inflight
        while inflight and inflight[0].ticket <= done:
            task = inflight.popleft()
            for st in task.storages:
                if st.pending is task:
                    st.pending = UNFILLED if st.unfilled is not None else None  # a fresh storage written in part
        if self.error is not None:  # raised at every wait: what the queue skipped since is not there to read
            task, e = self.error
            if not self.raised:
                self.raised = True
                e = _at_kernel_line(task, e)
            raise e

    def drain(self) -> None:
        self.wait(self.submitted)

    def stop(self) -> None:
        """End the thread (after the queued tasks)."""
        with self.cond:
            self.queue.append(None)
            self.cond.notify_all()
        self.thread.join()
        self.gemm.shutdown(wait=True, cancel_futures=True)
        self.inflight.clear()


def _at_kernel_line(task: Task, e: BaseException) -> BaseException:
    """The worker's exception, placed at the kernel line that issued the instruction."""
    if isinstance(e, NkiError) and e.location is None and task.frame is not None:
        e.location = f"{task.frame.f_code.co_filename}:{task.lineno}"
    if task.frame is not None:
        e = e.with_traceback(types.TracebackType(e.__traceback__, task.frame, task.lasti, task.lineno))
    task.frame = None
    return e


def execute(op, a, ctx, engine: str, storages: list | None, written: list):
    """Run the semantics of one instruction of a run that may overlap (dispatch calls it instead of op.impl).
    `storages`: every tile operand's storage (None: not all are known, an uncacheable call); `written`: those
    it writes (their versions change once nothing queued reads them any more)."""
    worker = ctx.worker
    if worker is not None and worker.inflight:
        worker.release()
        if storages is None:
            worker.drain()
            new_versions(written)
            return op.impl(a, ctx, engine)
    elif storages is None:
        new_versions(written)
        return op.impl(a, ctx, engine)
    marked = False
    macs = 0
    for st in storages:
        p = st.pending
        if p is not None:
            if p.__class__ is dict:
                for group in p.values():
                    macs += group.macs()
            elif p is not UNFILLED:  # (left UNFILLED by dispatch: a lazy copy the semantics take in line if needed)
                marked = True
    if op.deferrable and (marked or macs >= _MIN_MACS):
        if worker is None:
            worker = ctx.worker = Worker(ctx)
        new_versions(written)  # before the worker can run it (a DMA's copy records where its values come from)
        worker.submit(op, a, engine, storages)
        return None
    if marked:
        worker.drain()
    new_versions(written)
    return op.impl(a, ctx, engine)


def finish(ctx) -> None:
    """The kernel returned or raised: wait for the queued instructions and end the worker. Their error is raised
    (at its instruction's line) even over the kernel's own: in line, it would have come first."""
    worker = ctx.worker
    if worker is not None:
        ctx.worker = None
        try:
            worker.drain()
        finally:
            worker.stop()


def _compute(group) -> None:
    with np.errstate(all="ignore"):  # as on the kernel's thread (launch.py)
        group.compute()
