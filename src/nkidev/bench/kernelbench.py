"""KernelBench-style problems as bench tasks: `nkidev bench run --kernelbench problem.py --kernels DIR`.

A problem file follows KernelBench's convention: a PyTorch `Model(nn.Module)` built from `get_init_inputs()`,
whose `forward` takes `get_inputs()`. The adapter appends the task-file names to the problem's own source, so the
child process imports one ordinary task file:
- cases: one case per seed, `(*get_inputs(), *parameters, *buffers)` as NumPy arrays (model and inputs drawn under
  `torch.manual_seed(seed)`); the kernel receives the model's weights as trailing arguments, in
  `named_parameters()` then `named_buffers()` order, since an NKI kernel has no module state;
- reference: the module's forward in float64 on the CPU with those weights (`torch.func.functional_call`);
- TOLERANCE: KernelBench's fp32 check (atol = rtol = 1e-2); FLOPS: the matmul/convolution FLOPs torch's
  FlopCounterMode counts (run on the Tensor Engine); MIN_BYTES: the arguments plus the outputs in fp32.
The solution is DIR/<problem stem>.py with a kernel named after the stem. There is no baseline kernel, so
speedup and fast_p are None; % of peak is reported as for the suite's tasks. torch is the optional extra
`nkidev[kernelbench]`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from nkidev.bench.run import ROW_KEYS, evaluate_isolated, summarize
from nkidev.bench.stamp import stamp
from nkidev.errors import NkiUsageError
from nkidev.hardware import get_target
from nkidev.sandbox.limits import Limits

INSTALL = "pip install 'nkidev[kernelbench]'"
ADAPTER = """

# ---- appended by `nkidev bench run --kernelbench`: the task-file names, from Model / get_inputs / get_init_inputs
from nkidev.bench.kernelbench import task_names as _nkidev_task_names  # noqa: E402

globals().update(_nkidev_task_names(Model, get_inputs, get_init_inputs, {entry!r}))
"""
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}


def require_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        raise NkiUsageError("err_missing_extra", "--kernelbench needs PyTorch, which is not installed", f"install the extra: {INSTALL}")


def task_source(problem: Path) -> str:
    """The problem file's text with the adapter appended: a task file whose ENTRY is the problem's stem."""
    return problem.read_text() + ADAPTER.format(entry=problem.stem)


def task_names(model_cls, get_inputs, get_init_inputs, entry: str) -> dict:
    """The names a bench task file defines, for one KernelBench problem (see the module docstring)."""
    import torch
    from torch.func import functional_call

    def build(seed: int):
        torch.manual_seed(seed)
        model = model_cls(*get_init_inputs())
        return model, list(get_inputs())

    model0, inputs0 = build(0)
    n_inputs = len(inputs0)
    names = [n for n, _ in model0.named_parameters()] + [n for n, _ in model0.named_buffers()]

    def state(model) -> list:
        return [t.detach() for _, t in model.named_parameters()] + [t.detach() for _, t in model.named_buffers()]

    def quick_cases(seed=0):
        model, inputs = build(seed)
        return [tuple(_numpy(t) for t in [*inputs, *state(model)])]

    def forward(args, dtype):
        tensors = [torch.as_tensor(np.asarray(a)) for a in args]
        tensors = [t.to(dtype) if t.is_floating_point() else t for t in tensors]
        model = model0.to(dtype)
        with torch.no_grad():
            return functional_call(model, dict(zip(names, tensors[n_inputs:])), tuple(tensors[:n_inputs]))

    def reference(*args):
        out = forward(args, torch.float64)
        return tuple(o.numpy() for o in out) if isinstance(out, tuple | list) else out.numpy()

    def flops(*args):
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            forward(args, torch.float32)
        return {"tensor": int(counter.get_total_flops())}

    def min_bytes(*args):
        out = forward(args, torch.float32)
        outs = out if isinstance(out, tuple | list) else (out,)
        return int(sum(np.asarray(a).nbytes for a in args) + sum(o.numel() * o.element_size() for o in outs))

    return {
        "FAMILY": "kernelbench",
        "ENTRY": entry,
        "DTYPES": ["float32"],
        "TOLERANCE": dict(TOLERANCE),
        "reference": reference,
        "quick_cases": quick_cases,
        "full_cases": quick_cases,
        "cases": quick_cases,
        "FLOPS": flops,
        "MIN_BYTES": min_bytes,
    }


def _numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def run_kernelbench(
    problem: str | Path, kernels: str | Path | None, target: str | None = None, seeds: int = 1, limits: Limits | None = None
) -> dict:
    """`bench run --kernelbench`: the problem's solution DIR/<stem>.py validated and timed like a suite task."""
    require_torch()
    problem = Path(problem)
    if not problem.is_file():
        raise NkiUsageError("err_bad_task_file", f"--kernelbench {problem}: no such file", "pass a KernelBench-style problem .py file")
    if kernels is None:
        raise NkiUsageError("err_bad_argument", "--kernelbench needs --kernels DIR", f"put the solution in DIR/{problem.stem}.py")
    solution = Path(kernels) / f"{problem.stem}.py"
    if not solution.is_file():
        raise NkiUsageError(
            "err_bad_task_file", f"no solution {solution}", f"write DIR/{problem.stem}.py with an @nki.jit kernel named {problem.stem}"
        )
    hw = get_target(target)
    limits = limits or Limits()
    item = {
        "task": problem.stem,
        "source": solution.read_text(),
        "task_source": task_source(problem),
        "target": hw.name,
        "quick": True,
        "seeds": seeds,
        "timeout_s": limits.timeout_s,
        "memory_bytes": limits.memory_bytes,
    }
    row = evaluate_isolated(item)
    return {
        "tasks": [{k: row[k] for k in ROW_KEYS}],
        "summary": summarize([row]),
        "details": {row["task"]: {k: v for k, v in row.items() if k not in ROW_KEYS}},
        "meta": stamp(hw, quick=True, seeds=seeds, kernels=str(kernels), kernelbench=str(problem), executor="local"),
    }
