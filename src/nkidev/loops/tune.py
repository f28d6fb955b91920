"""`nkidev tune FILE::KERNEL`: a deterministic search over the kernel's TUNABLE keyword arguments (no LLM).

Every config becomes a candidate module (the task file with the kernel's defaults rewritten,
`tunable.with_defaults`) judged by `evaluate.evaluate_item` on an executor: the full validation gate on every
case, then a cost-model profile of one case. Its time is what `nkidev.profile(kernel, *case.args, **case.kwargs,
**params)` gives for that config alone (a timed case that passes a tuned parameter itself is err_bad_tunable).
Configs that break a rule or fail validation are reported with their named error or verdicts and never chosen. Strategies:
- `exhaustive` (default): every config.
- `random`: `budget` configs drawn without replacement (`seed`), plus the defaults.
- `successive-halving`: a profile-only screen of every config (trace and cost model, no numerics), then the
  full gate for the fastest half (or `budget`) of the configs the screen did not reject, fastest first.
The baseline is the kernel's own defaults (always evaluated with the full gate).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Iterable
from pathlib import Path

from nkidev.errors import NkiUsageError
from nkidev.executors import get_executor
from nkidev.hardware import get_target
from nkidev.loops import tunable
from nkidev.loops.evaluate import evaluate_item
from nkidev.sandbox.limits import Limits, cli_limits
from nkidev.taskfile import kernel_spec

STRATEGIES = ("exhaustive", "random", "successive-halving")


def read_task_source(spec: str) -> tuple[Path, str, str, str]:
    """(path, source text, kernel name, grid suffix) of FILE::KERNEL, read without running the file."""
    parsed = kernel_spec(spec)
    if not parsed.path.is_file():
        raise NkiUsageError("err_bad_task_file", f"no such file: {parsed.path}", "check the path (FILE::KERNEL)")
    source = parsed.path.read_text()
    name = parsed.name or _only_kernel(source, parsed.path)
    grid = f"[{','.join(map(str, parsed.grid))}]" if parsed.grid else ""
    return parsed.path, source, name, grid


def _only_kernel(source: str, path: Path) -> str:
    tree = ast.parse(source)
    names = [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in n.decorator_list)  # @nki.jit, @jit, @nki.jit(...)
    ]
    if len(names) != 1:
        raise NkiUsageError(
            "err_kernel_not_found", f"{path} defines {len(names)} kernels ({', '.join(names) or 'none'})", "use FILE::KERNEL"
        )
    return names[0]


def base_item(path: Path, source: str, kernel: str, grid: str, target, case: int, seeds: int, limits: Limits) -> dict:
    """The fields every work item of one task shares (the task file travels as text)."""
    return {
        "task_text": source,
        "task_name": path.name,
        "task_display": str(path),
        "kernel": kernel,
        "grid": grid,
        "target": target,
        "case": case,
        "seeds": seeds,
        "timeout_s": limits.timeout_s,
        "memory_bytes": limits.memory_bytes,
    }


def tune(
    spec: str,
    params: Iterable[str] | dict | None = None,
    strategy: str = "exhaustive",
    budget: int | None = None,
    seed: int = 0,
    target: str | None = None,
    case: int = 0,
    seeds: int = 3,
    executor: str = "local",
    jobs: int | None = None,
    ray_address: str | None = None,
    limits: Limits | None = None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Search the TUNABLE space of FILE::KERNEL (overridden per parameter by `params`: "NAME=v1,v2" strings or a
    dict) and return the `nkidev tune --json` object (see the module docstring)."""
    if strategy not in STRATEGIES:
        raise NkiUsageError("err_invalid_argument", f"--strategy {strategy!r}", f"use one of: {', '.join(STRATEGIES)}")
    if budget is not None and (not isinstance(budget, int) or budget < 1):
        raise NkiUsageError("err_invalid_argument", f"--budget {budget!r}", "pass a number of configs of 1 or more")
    hw = get_target(target)
    path, source, kernel, grid = read_task_source(spec)
    where = str(path)
    space = tunable.read_tunable(source, kernel, where)
    overrides = dict(tunable.parse_param(p) for p in params) if params is not None and not isinstance(params, dict) else dict(params or {})
    space.update(overrides)
    if not space:
        raise NkiUsageError(
            "err_bad_tunable", f"{where} declares no TUNABLE for {kernel} and no --param was given", 'add TUNABLE = {"param": [v1, v2]}'
        )
    defaults = tunable.kernel_defaults(source, kernel, where)
    tunable.check_space(space, defaults, kernel, where)
    baseline_params = {name: defaults[name] for name in space}
    chosen = _select(tunable.configs(space), strategy, budget, seed)
    common = base_item(path, source, kernel, grid, hw.name, case, seeds, limits or cli_limits())
    emit = progress or (lambda event: None)

    def item(config: dict, gate: bool = True) -> dict:
        text = tunable.with_defaults(source, kernel, config, where)
        # same lines as the file: errors point into it; "tuned": the child refuses a case that pins one of them
        return {**common, "source": text, "gate": gate, "display": str(path), "tuned": list(config)}

    with get_executor(executor, jobs, ray_address) as pool:
        emit({"event": "stage", "stage": f"evaluating {len(chosen) + 1} configs on the {pool.name} executor ({pool.jobs} jobs)"})
        if strategy == "successive-halving":
            results = _halving(pool, chosen, item, budget, emit)
        else:
            results = dict(zip(map(_key, chosen), pool.map(evaluate_item, [item(c) for c in chosen])))
        baseline = results.get(_key(baseline_params)) or pool.map(evaluate_item, [item(baseline_params)])[0]
    configs = [_config(c, results[_key(c)]) for c in chosen]
    return {
        "kernel": f"{path}::{kernel}{grid}",
        "target": hw.name,
        "strategy": strategy,
        "configs": configs,
        "best": _best(configs, baseline),
        "baseline": _config(baseline_params, baseline),
    }


def _select(all_configs: list[dict], strategy: str, budget: int | None, seed: int) -> list[dict]:
    if strategy == "random" and budget is not None and budget < len(all_configs):
        picked = sorted(random.Random(seed).sample(range(len(all_configs)), budget))
        return [all_configs[i] for i in picked]
    return all_configs


def _halving(pool, chosen: list[dict], item, budget: int | None, emit) -> dict:
    """Screen every config with the trace and the cost model; gate the fastest half (or `budget`) of the survivors."""
    screened = dict(zip(map(_key, chosen), pool.map(evaluate_item, [item(c, gate=False) for c in chosen])))
    for r in screened.values():
        r["stage"] = "screened"
    alive = sorted((c for c in chosen if screened[_key(c)]["error"] is None), key=lambda c: screened[_key(c)]["total_time_ns"])
    keep = alive[: budget if budget is not None else max(1, (len(alive) + 1) // 2)]
    emit({"event": "stage", "stage": f"screened {len(chosen)} configs; gating the fastest {len(keep)}"})
    gated = dict(zip(map(_key, keep), pool.map(evaluate_item, [item(c) for c in keep])))
    return {**screened, **gated}


def _key(config: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


def _config(params: dict, result: dict) -> dict:
    return {
        "params": params,
        "passed": bool(result["passed"]),
        "verdicts": result["verdicts"],
        "error": result["error"],
        "total_time_ns": result["total_time_ns"],
        "stage": result.get("stage", "gated"),
    }


def _best(configs: list[dict], baseline: dict) -> dict | None:
    passed = [c for c in configs if c["passed"] and c["total_time_ns"] is not None]
    if not passed:
        return None
    best = min(passed, key=lambda c: c["total_time_ns"])  # ties: the first in the space's order
    base = baseline["total_time_ns"] if baseline["passed"] else None
    return {
        "params": best["params"],
        "total_time_ns": best["total_time_ns"],
        "speedup": round(base / best["total_time_ns"], 4) if base else None,
    }
