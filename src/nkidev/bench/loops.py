"""`nkidev bench tune` and `nkidev bench optimize`: the optimization loops run over the suite, scored like `bench run`.

tune: every selected task that declares TUNABLE is searched with `nkidev.loops.tune.tune` (same strategy and budget
for each); the best config's module (the task file with the kernel's defaults rewritten) is then evaluated as a
solution. optimize: `nkidev.loops.optimize.optimize` on every task's baseline with the same provider and budgets,
one session directory per task under `out`; its best.py is evaluated as a solution. Both return the `bench run`
object (same rows, summary and stamps), so `bench compare` reads them like any other run.
"""

from __future__ import annotations

from pathlib import Path

from nkidev.bench import registry
from nkidev.bench.run import ROW_KEYS, evaluate_isolated, summarize
from nkidev.bench.stamp import stamp
from nkidev.errors import NkiUsageError
from nkidev.executors import get_executor
from nkidev.hardware import get_target
from nkidev.sandbox.limits import Limits


def _score(sources: dict[str, str], hw, quick, seeds, limits, executor, jobs, ray_address, **meta) -> dict:
    item = {"target": hw.name, "quick": quick, "seeds": seeds, "timeout_s": limits.timeout_s, "memory_bytes": limits.memory_bytes}
    items = [{"task": n, "source": s, **item} for n, s in sources.items()]
    with get_executor(executor, jobs, ray_address) as ex:
        rows = ex.map(evaluate_isolated, items)
    return {
        "tasks": [{k: row[k] for k in ROW_KEYS} for row in rows],
        "summary": summarize(rows),
        "details": {row["task"]: {k: v for k, v in row.items() if k not in ROW_KEYS} for row in rows},
        "meta": stamp(hw, quick=quick, seeds=seeds, executor=executor, **meta),
    }


def tune_suite(
    tasks=None,
    target=None,
    quick=True,
    strategy="exhaustive",
    budget=None,
    executor="local",
    jobs=None,
    ray_address=None,
    seeds=1,
    limits: Limits | None = None,
) -> dict:
    """The `bench run` object of the best TUNABLE config of every selected task that declares one."""
    from nkidev.loops.tunable import with_defaults
    from nkidev.loops.tune import tune

    hw, limits = get_target(target), limits or Limits()
    names = [n for n in registry.select(tasks) if registry.load(n)[0].tunable]
    if not names:
        raise NkiUsageError(
            "err_bad_tunable", "none of the selected tasks declares TUNABLE", "pick tasks with TUNABLE (nkidev bench show TASK)"
        )
    sources, searched = {}, {}
    for name in names:
        info, _ = registry.load(name)
        result = tune(
            info.spec,
            strategy=strategy,
            budget=budget,
            target=hw.name,
            seeds=seeds,
            executor=executor,
            jobs=jobs,
            ray_address=ray_address,
            limits=limits,
        )
        best = result["best"]["params"] if result["best"] else result["baseline"]["params"]
        sources[name] = with_defaults(info.path.read_text(), info.entry, best, str(info.path))
        searched[name] = {"best_params": best, "configs": len(result["configs"])}
    out = _score(sources, hw, quick, seeds, limits, executor, jobs, ray_address, loop="tune", strategy=strategy)
    for name, extra in searched.items():
        out["details"][name] |= extra
    return out


def optimize_suite(
    provider: str,
    out: str | Path,
    tasks=None,
    target=None,
    quick=True,
    budget_iterations=None,
    budget_minutes=None,
    executor="local",
    jobs=None,
    ray_address=None,
    seeds=1,
    limits: Limits | None = None,
    **provider_options,
) -> dict:
    """The `bench run` object of the best candidate `optimize` found for every selected task's baseline."""
    from nkidev.loops.optimize import optimize

    hw, limits = get_target(target), limits or Limits()
    sources, sessions = {}, {}
    for name in registry.select(tasks):
        info, _ = registry.load(name)
        session = Path(out) / name
        result = optimize(
            info.spec,
            provider,
            out=session,
            budget_iterations=budget_iterations,
            budget_minutes=budget_minutes,
            target=hw.name,
            seeds=seeds,
            executor=executor,
            jobs=jobs,
            ray_address=ray_address,
            limits=limits,
            **provider_options,
        )
        sources[name] = (session / "best.py").read_text()
        sessions[name] = {"session": str(session), "stopped": result.get("stopped")}
    res = _score(sources, hw, quick, seeds, limits, executor, jobs, ray_address, loop="optimize", provider=provider)
    for name, extra in sessions.items():
        res["details"][name] |= extra
    return res
