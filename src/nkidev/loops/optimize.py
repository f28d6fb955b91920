"""`nkidev optimize FILE::KERNEL`: propose -> gate -> profile -> analyze -> keep best -> repeat.

    result = optimize("k.py::k", provider="replay:cands/", target_speedup=2.0, out="run/")
    result = optimize(resume="run/")                   # after a crash or kill -9: no candidate judged twice

Each step asks the provider for `width` candidates (complete modules), judges them on an executor against
the ORIGINAL task file (`session.Session`), and tells the provider why each was rejected and what the
analysis of the best says. It stops when the target is met (`target_speedup`, `target_time_us`,
`target_peak_percent`: all that are given), a budget ends (`budget_iterations`, `budget_minutes`,
`budget_usd` from the provider's token usage and `price_in` / `price_out` USD per million tokens), the
provider has nothing more (`provider_exhausted`) or the user interrupts (`interrupted`; state is saved).
The user's file is never modified unless `apply`: then FILE.orig gets its bytes first (refused if FILE.orig
exists, unless `force`) and best.py is written over FILE.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from nkidev.atomic import write_bytes
from nkidev.errors import NkiUsageError
from nkidev.executors import get_executor
from nkidev.loops.providers import get_provider
from nkidev.loops.session import Session
from nkidev.sandbox.limits import Limits, cli_limits

DEFAULT_ROOT = "nkidev-optimize"


def default_out(kernel: str, root: str | Path = DEFAULT_ROOT) -> Path:
    from nkidev.profile.api import default_out as fresh

    return fresh(kernel, root)


def optimize(
    spec: str | None = None,
    provider: str | None = None,
    *,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    target_speedup: float | None = None,
    target_time_us: float | None = None,
    target_peak_percent: float | None = None,
    budget_iterations: int | None = None,
    budget_minutes: float | None = None,
    budget_usd: float | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    width: int = 1,
    target: str | None = None,
    case: int = 0,
    seeds: int = 3,
    model: str | None = None,
    base_url: str | None = None,
    region: str | None = None,
    executor: str = "local",
    jobs: int | None = None,
    ray_address: str | None = None,
    limits: Limits | None = None,
    apply: bool = False,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Run (or continue, with `resume`) an optimization; returns the `nkidev optimize --json` object."""
    emit = progress or (lambda event: None)
    if resume is not None:
        session = Session.open(resume)
        session.state["stopped"] = None if session.state["stopped"] == "interrupted" else session.state["stopped"]
        provider = provider or session.state["provider"]
    else:
        if spec is None or provider is None:
            raise NkiUsageError("err_invalid_argument", "optimize needs FILE::KERNEL and --provider (or --resume DIR)", "pass both")
        if budget_usd and (price_in is None or price_out is None):
            raise NkiUsageError(
                "err_invalid_argument",
                "--budget-usd needs the provider's prices",
                "pass --price-in and --price-out (USD per million tokens)",
            )
        limits = limits or cli_limits()
        settings = {
            "target_speedup": target_speedup,
            "target_time_us": target_time_us,
            "target_peak_percent": target_peak_percent,
            "budget_iterations": budget_iterations,
            "budget_minutes": budget_minutes,
            "budget_usd": budget_usd,
            "price_in": price_in,
            "price_out": price_out,
            "width": width,
            "target": target,
            "case": case,
            "seeds": seeds,
            "timeout_s": limits.timeout_s,
            "memory_bytes": limits.memory_bytes,
        }
        from nkidev.loops.tune import read_task_source

        path, _, kernel, _ = read_task_source(spec)
        if apply:
            _check_backup(path.resolve(), force)  # refuse before any work, not after it
        session = Session.create(spec, out if out is not None else default_out(kernel), provider, settings)
    if apply:
        _check_backup(Path(session.state["task_path"]), force)
    proposer = get_provider(provider, model, base_url, region)
    stopped = "interrupted"
    with get_executor(executor, jobs, ray_address) as pool:
        try:
            emit({"event": "stage", "stage": "validating and profiling the original kernel"})
            session.evaluate_baseline(pool)
            if session.state["pending"]:
                session.judge(pool)  # candidates a killed run wrote but did not judge
            stopped = _loop(session, proposer, pool, emit)
        except KeyboardInterrupt:
            stopped = "interrupted"
    result = session.finish(stopped)
    if apply:
        result["applied"] = apply_best(session, force)
    return result


def _loop(session: Session, proposer, pool, emit) -> str:
    while True:
        reason = session.stop_reason()
        if reason:
            return reason
        request = session.request(session.width())
        request["errors"] = [it["error"] for it in session.state["iterations"][-3:] if it["error"]]
        emit({"event": "stage", "stage": f"asking {proposer.name} for candidate {session.state['proposed'] + 1}"})
        sources = proposer.propose(request)
        _charge(session, proposer)
        if not sources:
            return "provider_exhausted"
        indexes = session.add(sources)
        emit({"event": "stage", "stage": f"judging candidate(s) {', '.join(map(str, indexes))}"})
        for record in session.judge(pool):
            emit({"event": "iteration", "iteration": record, "line": iteration_line(record)})


def _charge(session: Session, proposer) -> None:
    """Account the provider's tokens (and their price, when known) in the state."""
    s = session.state
    s["tokens"] = dict(proposer.usage) if proposer.usage["input"] or proposer.usage["output"] else s["tokens"]
    if session.settings.get("price_in") is not None:
        s["usd"] = round(
            (s["tokens"]["input"] * session.settings["price_in"] + s["tokens"]["output"] * session.settings["price_out"]) / 1e6, 6
        )


def iteration_line(it: dict) -> str:
    mark = "ACCEPTED" if it["accepted"] else "rejected"
    return f"#{it['index']:03d} {mark}: {it['reason']}"


def _check_backup(path: Path, force: bool) -> Path:
    backup = path.with_name(path.name + ".orig")
    if backup.exists() and not force:
        raise NkiUsageError(
            "err_output_exists", f"{backup} exists, so --apply would overwrite an earlier backup", "move it away or pass --force"
        )
    return backup


def apply_best(session: Session, force: bool) -> dict:
    """Copy best.py over the original task file, after saving the file's current bytes to FILE.orig."""
    path = Path(session.state["task_path"])
    if session.state["best"]["index"] is None:
        return {"applied": False, "reason": "no candidate was accepted; the file is unchanged"}
    backup = _check_backup(path, force)
    write_bytes(backup, path.read_bytes())
    write_bytes(path, (session.out / "best.py").read_bytes())
    return {"applied": True, "file": str(path), "backup": str(backup), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
