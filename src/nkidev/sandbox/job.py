"""The parent's side of one isolated run: a worker process, its message pipe and its captured output.

A `Worker` is a child interpreter started with `subprocess` (never a fork of this process, which may hold
locks: the MCP server runs tools on threads) in a new session, so that killing its process group on a
timeout or a cancel also stops whatever the kernel started. Its messages are read by a thread into a queue;
`Job.result()` consumes them on the caller's thread, so progress callbacks run where the caller expects.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nkidev.errors import NkiError
from nkidev.sandbox.limits import Limits
from nkidev.sandbox.wire import decode, error_from_wire

OUTPUT_CAP = 256 << 10  # bytes of stdout / stderr kept per run (the head; the rest is counted, not kept)
_EOF = object()
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding this nkidev package


class _Output:
    """A bounded capture of one stream of the child."""

    def __init__(self, stream):
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            room = OUTPUT_CAP - self.kept
            self.chunks.append(chunk[:room]) if room > 0 else None
            self.kept += min(len(chunk), max(room, 0))
            self.dropped += max(0, len(chunk) - max(room, 0))
        stream.close()

    def text(self) -> str:
        self.thread.join(timeout=1.0)
        text = b"".join(self.chunks).decode("utf-8", errors="replace")
        return text + (f"\n... ({self.dropped} more bytes not kept)" if self.dropped else "")


def child_env() -> dict:
    """The child's environment: ours, with this nkidev first on the path (the child imports the same code)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


class Worker:
    """A started child interpreter, warm once it has said "ready"; it runs one job and exits."""

    def __init__(self, memory_bytes: int | None = None, preload: tuple[str, ...] = (), cwd: str | None = None):
        read_fd, write_fd = os.pipe()
        argv = [sys.executable, "-m", "nkidev.sandbox.child", "--fd", str(write_fd)]
        if memory_bytes:
            argv += ["--memory", str(memory_bytes)]
        for module in preload:
            argv += ["--preload", module]
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd,),
                start_new_session=True,  # its own process group: a kill reaches everything it started
                cwd=cwd,
                env=child_env(),
            )
        finally:
            os.close(write_fd)
        self.memory_bytes = memory_bytes
        self.preload = preload
        self.messages: queue.Queue = queue.Queue()
        self.ready = threading.Event()
        self.stdout = _Output(self.process.stdout)
        self.stderr = _Output(self.process.stderr)
        self._reader = threading.Thread(target=self._read, args=(read_fd,), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for line in pipe:
                message = decode(line)
                if message is None:
                    continue
                if message["kind"] == "ready":
                    self.ready.set()
                else:
                    self.messages.put(message)
        self.messages.put(_EOF)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """Stop the child and everything in its process group."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.process.stdin.close() if self.process.stdin and not self.process.stdin.closed else None

    def retire(self) -> None:
        """A spare that will not be used: let it see end-of-file and exit (kill it if it lingers)."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class Job:
    """One function call in a worker. `result()` waits for it (running progress callbacks), `cancel()` stops it."""

    def __init__(
        self, worker: Worker, function: str, kwargs: dict, limits: Limits, on_event: Callable[[dict], None] | None = None, label: str = ""
    ):
        self.worker = worker
        self.function = function
        self.limits = limits
        self.on_event = on_event
        self.label = label or function
        self.last_event: dict | None = None
        self.cancelled = False
        self.started = time.monotonic()
        self._send({"function": function, "kwargs": kwargs, "memory_bytes": limits.memory_bytes, "timeout_s": limits.timeout_s})

    def _send(self, job: dict) -> None:
        try:
            self.worker.process.stdin.write((json.dumps(job) + "\n").encode("utf-8"))
            self.worker.process.stdin.flush()
            self.worker.process.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the child is gone; result() reports how it ended

    @property
    def stdout(self) -> str:
        return self.worker.stdout.text()

    @property
    def stderr(self) -> str:
        return self.worker.stderr.text()

    def cancel(self) -> None:
        self.cancelled = True
        self.worker.kill()

    def result(self):
        """The function's plain-data return value; its named error re-raised; err_timeout / err_memory_limit /
        err_child_exited when the child was stopped or ended without an answer."""
        deadline = self.started + self.limits.timeout_s if self.limits.timeout_s else None
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                self.worker.kill()
                raise self._timeout()
            try:
                message = self.worker.messages.get(timeout=wait)
            except queue.Empty:
                continue
            if message is _EOF:
                self.worker.kill()  # reap it (and anything it left running)
                raise self._ended()
            if message["kind"] == "event":
                self.last_event = message.get("event")
                if self.on_event is not None and isinstance(self.last_event, dict):
                    self.on_event(self.last_event)
            elif message["kind"] == "result":
                self._reap()
                return message.get("value")
            elif message["kind"] == "error":
                self._reap()
                raise error_from_wire(message.get("error") or {})

    def _reap(self) -> None:
        try:
            self.worker.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.worker.kill()
        else:
            self.worker.kill()  # the child exited: stop whatever it started in its group

    def _where(self) -> str:
        stage = (self.last_event or {}).get("stage")
        return f" while {stage}" if stage else ""

    def _timeout(self) -> NkiError:
        return NkiError(
            "err_timeout",
            f"{self.label}: stopped after {self.limits.timeout_s:g} s{self._where()} (the time limit); the process and "
            "everything it started were killed",
            "look for an endless loop in the task file, cases(), the reference or the kernel; "
            "for a long but finite run raise the limit with --timeout SECONDS",
        )

    def _ended(self) -> NkiError:
        code = self.worker.process.returncode
        if self.cancelled:
            return NkiError("err_child_exited", f"{self.label}: cancelled", "rerun the call")
        tail = self.stderr[-2000:]
        if "MemoryError" in tail or (code == -signal.SIGKILL and self.limits.memory_bytes):
            return NkiError(
                "err_memory_limit",
                f"{self.label}: the process ran out of memory{self._where()} under its limit of {self.limits.memory_bytes or 0:,} bytes",
            )
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return NkiError(
            "err_child_exited",
            f"{self.label}: the isolated process {how}{self._where()} without returning a result (os._exit, exit() in a thread, "
            f"or a crash in native code){_stderr_hint(tail)}",
        )


def _stderr_hint(tail: str) -> str:
    lines = [line for line in tail.strip().splitlines() if line.strip()]
    return f"; its last output: {lines[-1][:300]}" if lines else ""
