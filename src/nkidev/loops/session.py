"""An optimization session on disk: the keeper of `nkidev optimize` and of the MCP optimize_* tools.

    OUT/
      state.json            everything needed to continue: settings, baseline, iterations, best, budgets (atomic)
      original.py           the task file as it was at the start (every candidate is judged against it)
      candidates/NNN.py     each candidate as submitted
      candidates/NNN.json   its evaluation (validation, profile time, findings), written before state.json moves on
      best.py               the best correct candidate so far (the original until one is accepted)
      report.json, report.html

A candidate is accepted only if it passes the gate and is faster than the best so far. Identical sources are
never evaluated twice (the second is recorded as a duplicate). `state.json` is rewritten atomically after
every step; a run killed at any point continues with `Session.open(OUT)`: candidates written but not judged
are judged from their files, and an evaluation that finished (NNN.json exists) is reused, not rerun.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from nkidev.atomic import crash_point, write_bytes
from nkidev.errors import NkiError, NkiUsageError
from nkidev.hardware import get_target
from nkidev.loops.evaluate import evaluate_item
from nkidev.loops.tune import base_item, read_task_source
from nkidev.sandbox.limits import Limits

STATE_VERSION = 1
STOPS = ("target_met", "budget_exhausted", "provider_exhausted", "interrupted")
DEFAULT_ITERATIONS = 20
ITERATION_KEYS = ("index", "source", "accepted", "verdicts", "error", "total_time_ns", "speedup")  # when no budget at all is given


def sha(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def _write_json(path: Path, data) -> None:
    write_bytes(path, (json.dumps(data, indent=2, default=str) + "\n").encode("utf-8"))


def check_settings(settings: dict) -> dict:
    """Targets and budgets: positive numbers or None; with neither a budget nor a target, 20 iterations."""
    for key in ("target_speedup", "target_time_us", "target_peak_percent", "budget_iterations", "budget_minutes", "budget_usd"):
        value = settings.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
            raise NkiUsageError("err_invalid_argument", f"--{key.replace('_', '-')} {value!r}", "pass a positive number")
    width = settings.get("width", 1)
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= 64:
        raise NkiUsageError("err_invalid_argument", f"--width {width!r}", "pass 1 to 64 candidates per step")
    if not any(settings.get(k) for k in ("budget_iterations", "budget_minutes", "budget_usd")):
        settings["budget_iterations"] = DEFAULT_ITERATIONS
    return settings


class Session:
    """One optimization run in its directory (see the module docstring)."""

    def __init__(self, out: Path, state: dict):
        self.out = out
        self.state = state
        self._mark = time.monotonic()

    # ------------------------------------------------------------------ create / open / save

    @classmethod
    def create(cls, spec: str, out: str | Path, provider: str, settings: dict) -> Session:
        path, source, kernel, grid = read_task_source(spec)
        out = Path(out)
        if out.exists() and any(out.iterdir()):
            raise NkiUsageError("err_output_exists", f"{out} exists and is not empty", "choose another --out, or continue it with --resume")
        (out / "candidates").mkdir(parents=True, exist_ok=True)
        write_bytes(out / "original.py", source.encode("utf-8"))
        write_bytes(out / "best.py", source.encode("utf-8"))
        hw = get_target(settings.get("target"))
        state = {
            "version": STATE_VERSION,
            "kernel": f"{path}::{kernel}{grid}",
            "task_path": str(path.resolve()),
            "task_name": path.name,
            "kernel_name": kernel,
            "grid": grid,
            "target": hw.name,
            "provider": provider,
            "settings": check_settings(dict(settings, target=hw.name)),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "elapsed_s": 0.0,
            "usd": 0.0,
            "tokens": {"input": 0, "output": 0},
            "baseline": None,
            "proposed": 0,
            "pending": [],
            "iterations": [],
            "best": {"index": None, "total_time_ns": None, "speedup": 1.0, "peak_percent": None, "findings": []},
            "stopped": None,
        }
        session = cls(out, state)
        session.save()
        return session

    @classmethod
    def open(cls, out: str | Path) -> Session:
        out = Path(out)
        try:
            state = json.loads((out / "state.json").read_text())
        except FileNotFoundError:
            raise NkiUsageError(
                "err_bad_session", f"{out} has no state.json", "pass a directory written by `nkidev optimize --out`"
            ) from None
        except (OSError, ValueError) as e:
            raise NkiUsageError("err_bad_session", f"{out}/state.json cannot be read: {e}", "pass an intact optimize directory") from None
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise NkiUsageError("err_bad_session", f"{out}/state.json is not an nkidev optimize state", "pass an optimize directory")
        return cls(out, state)

    def save(self) -> None:
        now = time.monotonic()
        self.state["elapsed_s"] = round(self.state["elapsed_s"] + now - self._mark, 3)
        self._mark = now
        _write_json(self.out / "state.json", self.state)

    # ------------------------------------------------------------------ evaluation

    @property
    def settings(self) -> dict:
        return self.state["settings"]

    def original(self) -> str:
        return (self.out / "original.py").read_text()

    def item(self, source: str, display: str) -> dict:
        s = self.settings
        limits = Limits(s.get("timeout_s") or 600.0, s.get("memory_bytes"))
        path = Path(self.state["task_path"])
        st = self.state
        common = base_item(path, self.original(), st["kernel_name"], st["grid"], st["target"], s.get("case", 0), s.get("seeds", 3), limits)
        return {**common, "source": source, "display": display, "analyze": True}

    def evaluate_baseline(self, pool) -> dict:
        """Gate and profile the original kernel; it must pass (err_baseline_failed otherwise)."""
        if self.state["baseline"] is None:
            result = pool.map(evaluate_item, [self.item(self.original(), self.state["task_path"])])[0]
            _write_json(self.out / "candidates" / "baseline.json", result)
            if not result["passed"]:
                why = result["error"]["message"] if result["error"] else ", ".join(result["verdicts"])
                raise NkiError(
                    "err_baseline_failed",
                    f"{self.state['kernel']} does not pass validation itself ({why})",
                    "fix the kernel first (nkidev validate, or nkidev debug), then optimize it",
                    (result["error"] or {}).get("location"),
                )
            self.state["baseline"] = {k: result[k] for k in ("total_time_ns", "findings", "bottleneck_engine", "peak_percent")}
            self.state["best"].update(
                total_time_ns=result["total_time_ns"], peak_percent=result["peak_percent"], findings=result["findings"]
            )
            self.save()
        return self.state["baseline"]

    def add(self, sources: list[str]) -> list[int]:
        """Write candidates to candidates/NNN.py and mark them pending (before any is evaluated)."""
        indexes = []
        for source in sources:
            self.state["proposed"] += 1
            index = self.state["proposed"]
            write_bytes(self.candidate_path(index), source.encode("utf-8"))
            self.state["pending"].append(index)
            indexes.append(index)
        self.save()
        crash_point("optimize: candidates written")
        return indexes

    def candidate_path(self, index: int, suffix: str = ".py") -> Path:
        return self.out / "candidates" / f"{index:03d}{suffix}"

    def judge(self, pool) -> list[dict]:
        """Evaluate the pending candidates (reusing finished evaluations), record them, keep the best."""
        pending = list(self.state["pending"])
        tried = {it["sha256"]: it["index"] for it in self.state["iterations"]}
        todo, duplicates = [], {}
        for index in pending:
            digest = sha(self.candidate_path(index).read_text())
            if digest in tried:
                duplicates[index] = tried[digest]
            elif not self.candidate_path(index, ".json").exists():
                todo.append(index)
            tried.setdefault(digest, index)
        items = [self.item(self.candidate_path(i).read_text(), str(self.candidate_path(i))) for i in todo]
        for index, result in zip(todo, pool.map(evaluate_item, items)):
            _write_json(self.candidate_path(index, ".json"), result)
        crash_point("optimize: candidates evaluated")
        records = []
        for index in pending:
            if index in duplicates:
                records.append(self._record(index, None, duplicates[index]))
            else:
                records.append(self._record(index, json.loads(self.candidate_path(index, ".json").read_text()), None))
        self.state["pending"] = []
        self._check_target()
        self.save()
        crash_point("optimize: state saved")
        return records

    def _record(self, index: int, result: dict | None, duplicate_of: int | None) -> dict:
        best = self.state["best"]
        source = self.candidate_path(index).read_text()
        base = self.state["baseline"]["total_time_ns"]
        t = result["total_time_ns"] if result else None
        accepted = bool(result and result["passed"] and t is not None and t < best["total_time_ns"])
        it = {
            "index": index,
            "source": str(self.candidate_path(index)),
            "accepted": accepted,
            "verdicts": ["duplicate"] if duplicate_of else (result["verdicts"] if not result["passed"] else []),
            "error": result["error"] if result else None,
            "total_time_ns": t,
            "speedup": round(base / t, 4) if t else None,
            "peak_percent": result.get("peak_percent") if result else None,
            "reason": self._reason(result, duplicate_of, accepted),
            "sha256": sha(source),
            "duplicate_of": duplicate_of,
            "eval_s": result.get("eval_s") if result else None,
        }
        if accepted:
            write_bytes(self.out / "best.py", source.encode("utf-8"))
            best.update(index=index, total_time_ns=t, speedup=it["speedup"], peak_percent=it["peak_percent"], findings=result["findings"])
        self.state["iterations"].append(it)
        return {**it, "findings": result["findings"] if result else []}

    def _reason(self, result: dict | None, duplicate_of: int | None, accepted: bool) -> str:
        """What the proposer is told about this candidate."""
        if duplicate_of:
            return f"identical to candidate {duplicate_of}; not evaluated again"
        e = result["error"]
        if e:
            return f"{e['name']}: {e['message']}" + (f" at {e['location']}" if e.get("location") else "")
        if not result["passed"]:
            validation = result.get("validation") or {}
            reasons = [c["reason"] for c in validation.get("cases", []) if c.get("reason")]
            said = " ".join(reasons)
            reasons += [
                f"{c['verdict']}: {c['message']}"
                for c in validation.get("cheats", [])
                if c["severity"] == "fail" and c["verdict"] not in said
            ]
            return "; ".join(dict.fromkeys(reasons or result["verdicts"]))
        best = self.state["best"]["total_time_ns"]
        if accepted:
            return f"accepted: {result['total_time_ns'] / 1e3:.2f} us (was {best / 1e3:.2f} us)"
        return f"slower: {result['total_time_ns'] / 1e3:.2f} vs {best / 1e3:.2f} us"

    # ------------------------------------------------------------------ stopping

    def target_met(self) -> bool:
        s, best = self.settings, self.state["best"]
        if best["index"] is None:
            return False
        checks = []
        if s.get("target_speedup"):
            checks.append(best["speedup"] >= s["target_speedup"])
        if s.get("target_time_us"):
            checks.append(best["total_time_ns"] <= s["target_time_us"] * 1e3)
        if s.get("target_peak_percent"):
            checks.append((best["peak_percent"] or 0.0) >= s["target_peak_percent"])
        return bool(checks) and all(checks)

    def _check_target(self) -> None:
        if self.state["stopped"] is None and self.target_met():
            self.state["stopped"] = "target_met"

    def budget_left(self) -> bool:
        s, st = self.settings, self.state
        if s.get("budget_iterations") and len(st["iterations"]) >= s["budget_iterations"]:
            return False
        if s.get("budget_minutes") and st["elapsed_s"] + time.monotonic() - self._mark >= 60 * s["budget_minutes"]:
            return False
        return not (s.get("budget_usd") and st["usd"] >= s["budget_usd"])

    def stop_reason(self) -> str | None:
        if self.state["stopped"] == "target_met" or self.target_met():
            return "target_met"
        return None if self.budget_left() else "budget_exhausted"

    def width(self) -> int:
        """Candidates the next step may take (never past the iteration budget)."""
        s = self.settings
        left = s["budget_iterations"] - len(self.state["iterations"]) if s.get("budget_iterations") else s.get("width", 1)
        return max(1, min(s.get("width", 1), left))

    def finish(self, stopped: str) -> dict:
        from nkidev.loops.report import write_reports

        self.state["stopped"] = stopped
        self.save()
        result = self.result()
        write_reports(self, result)
        return result

    # ------------------------------------------------------------------ the public views

    def result(self) -> dict:
        """The `nkidev optimize --json` object."""
        st = self.state
        best = st["best"]
        return {
            "kernel": st["kernel"],
            "target": st["target"],
            "out": str(self.out),
            "baseline": {"total_time_ns": (st["baseline"] or {}).get("total_time_ns")},
            "iterations": [{k: it[k] for k in ITERATION_KEYS} for it in st["iterations"]],
            "best": {
                "index": best["index"],
                "path": str(self.out / "best.py"),
                "total_time_ns": best["total_time_ns"],
                "speedup": best["speedup"],
            },
            "stopped": st["stopped"],
        }

    def request(self, width: int) -> dict:
        """What a proposer gets: the original and the best source, the best's findings, why each candidate was rejected."""
        st = self.state
        return {
            "kernel": st["kernel_name"],
            "task_name": st["task_name"],
            "target": st["target"],
            "original": self.original(),
            "best_source": (self.out / "best.py").read_text(),
            "best": {k: st["best"][k] for k in ("index", "total_time_ns", "speedup", "peak_percent")},
            "baseline_time_ns": (st["baseline"] or {}).get("total_time_ns"),
            "findings": st["best"]["findings"],
            "bottleneck_engine": (st["baseline"] or {}).get("bottleneck_engine"),
            "history": [{k: it[k] for k in ("index", "accepted", "reason", "total_time_ns")} for it in st["iterations"]],
            "width": width,
            "proposed": st["proposed"],
        }
