"""Standalone current-API kernels of the corpus (nki-samples, aws-neuron-sdk, awslabs/nki-autotune).

Each spec: name, repo, file (relative to the fetched repository), and either
  mode="script": run the file's own `__main__` (it builds inputs, runs the kernel on the simulator and
                 asserts against its own NumPy reference), PASS if it exits cleanly; or
  mode="call":   kernel=<function name>, inputs=<callable(rng) -> args tuple>, kwargs,
                 ref=<callable(*args) -> output(s)> ("repo:" in ref_source when the reference is the repo's
                 own), tol=(atol, rtol); expect_error=<substring> for kernels the docs show failing.
Kernels whose file is legacy-API (neuronxcc.nki) are excluded from the corpus (listed in EXCLUDED).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np

# where the fetch step put the repositories (run.py sets CORPUS_SRC for its children)
SRC = Path(os.environ.get("CORPUS_SRC", Path.home() / ".cache" / "nkidev" / "corpus" / "src"))


def _bf16(rng, shape):
    import ml_dtypes

    return rng.random(shape, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def _mm_ref(lhsT, rhs):
    return _f32(lhsT).T @ _f32(rhs)


def repo_functions(repo: str, file: str, names: list[str], extra_globals: dict):
    """The repo's own reference functions, taken from a module that cannot be imported here (it imports
    device-only packages such as torch_xla at the top): only the named function definitions are executed."""
    tree = ast.parse((SRC / repo / file).read_text())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    ns = dict(extra_globals)
    exec(compile(ast.Module(body=body, type_ignores=[]), str(SRC / repo / file), "exec"), ns)  # noqa: S102
    return [ns[n] for n in names]


def _mamba_ref(delta, u, A, B, C):
    import torch

    (layer,) = repo_functions(
        "aws-neuron-sdk", "nki/examples/fused_mamba/mamba_torch.py", ["associative_scan", "mamba_layer"], {"torch": torch}
    )[-1:]
    t = lambda x: torch.from_numpy(np.asarray(x, np.float32))  # noqa: E731
    return layer(t(delta), t(A), t(B), t(u), t(C)).numpy()


def _mamba_inputs(rng, batch=1, seq_len=512, channels=256, state_size=16):
    delta = rng.random((batch, channels, seq_len), dtype=np.float32) * 0.1
    u = rng.standard_normal((batch, channels, seq_len), dtype=np.float32)
    A = -rng.random((channels, state_size), dtype=np.float32)
    B = rng.standard_normal((batch, state_size, seq_len), dtype=np.float32)
    C = rng.standard_normal((batch, state_size, seq_len), dtype=np.float32)
    return delta, u, A, B, C


def _maxpool_ref(x, pool):
    c, h, w = x.shape
    return _f32(x).reshape(c, h // pool, pool, w // pool, pool).max(axis=(2, 4))


def _rmsnorm_matmul_ref(lhs, rhs, eps=1e-6):
    x = _f32(lhs)
    rms = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    return (x * rms) @ _f32(rhs)


SDK = "aws-neuron-sdk"
SAMPLES = "nki-samples"
AUTOTUNE = "nki-autotune"
MM_SDK = "nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py"
MM_SAMPLES = "src/nki_samples/tutorials/matrix_multiplication/matrix_multiplication_nki_kernels.py"
BF16_TOL = (1e-2, 2e-2)  # the tutorial's own check is torch.allclose(atol=1e-4, rtol=1e-2) on bf16 outputs


def _mm_specs(repo, file):
    out = [
        dict(
            name=f"{repo}:nki_matmul_basic_",
            repo=repo,
            file=file,
            mode="call",
            kernel="nki_matmul_basic_",
            inputs=lambda rng: (_bf16(rng, (128, 64)), _bf16(rng, (128, 512))),
            ref=_mm_ref,
            ref_source="repo: matrix_multiplication_torch.py (torch.matmul(lhs, rhs))",
            tol=BF16_TOL,
        )
    ]
    for k in ("nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_", "nki_matmul_fully_optimized_"):
        shape = ((1024, 4096), (1024, 2048)) if k != "nki_matmul_fully_optimized_" else ((1024, 4096), (1024, 2048))
        out.append(
            dict(
                name=f"{repo}:{k}",
                repo=repo,
                file=file,
                mode="call",
                kernel=k,
                inputs=lambda rng, s=shape: (_bf16(rng, s[0]), _bf16(rng, s[1])),
                ref=_mm_ref,
                ref_source="repo: matrix_multiplication_torch.py (4096x1024 @ 1024x2048)",
                tol=BF16_TOL,
            )
        )
    return out


SPECS = (
    [
        # ---- aws-neuron-sdk nki/examples (current API)
        dict(name="sdk:simulate/add_kernel", repo=SDK, file="nki/examples/simulate/nki_simulate_example.py", mode="script"),
        dict(
            name="sdk:getting_started_baremetal",
            repo=SDK,
            file="nki/examples/getting_started_baremetal.py",
            mode="call",
            kernel="nki_tensor_add_kernel",
            inputs=lambda rng: (np.ones((4, 3), np.float16), np.ones((4, 3), np.float16)),
            ref=lambda a, b: a.astype(np.float32) + b,
            ref_source="docstring (a + b)",
            tol=(1e-3, 1e-3),
        ),
        dict(
            name="sdk:index-case-1/tensor_split",
            repo=SDK,
            file="nki/examples/index-case-1.py",
            mode="call",
            kernel="tensor_split_kernel_",
            inputs=lambda rng: (np.arange(20, dtype=np.float32).reshape(4, 5),),
            ref=lambda x: (x[:, 0::2], x[:, 1::2]),
            ref_source="docstring (even / odd columns)",
            tol=(0, 0),
        ),
        dict(
            name="sdk:index-case-3/maxpool",
            repo=SDK,
            file="nki/examples/index-case-3.py",
            mode="call",
            kernel="tensor_maxpool_kernel_",
            inputs=lambda rng: (np.arange(2 * 6 * 6, dtype=np.float32).reshape(2, 6, 6), 2),
            ref=_maxpool_ref,
            ref_source="docstring (2D max pool)",
            tol=(0, 0),
        ),
        dict(
            name="sdk:layout-pass/exp",
            repo=SDK,
            file="nki/examples/layout-pass.py",
            mode="call",
            kernel="tensor_exp_kernel_",
            inputs=lambda rng: (rng.standard_normal((128, 512), dtype=np.float32),),
            ref=np.exp,
            ref_source="docstring (elementwise exp)",
            tol=(1e-5, 1e-4),
        ),
        dict(
            name="sdk:layout-violation/exp-256",
            repo=SDK,
            file="nki/examples/layout-violation.py",
            mode="call",
            kernel="tensor_exp_kernel_",
            inputs=lambda rng: (rng.standard_normal((256, 512), dtype=np.float32),),
            expect_error="partition",
            ref_source="docs: this example shows the 128-partition violation",
        ),
        dict(
            name="sdk:tensor_addition/nki_tensor_add",
            repo=SDK,
            file="nki/examples/tensor_addition/tensor_addition_nki_kernels.py",
            mode="call",
            kernel="nki_tensor_add",
            inputs=lambda rng: (_bf16(rng, (256, 1024)), _bf16(rng, (256, 1024))),
            ref=lambda a, b: _f32(a) + _f32(b),
            ref_source="repo: tensor_addition_torch.py (a + b)",
            tol=BF16_TOL,
        ),
        dict(name="sdk:transpose2d", repo=SDK, file="nki/examples/transpose2d/transpose2d_nki_kernels.py", mode="script"),
        dict(name="sdk:average_pool2d", repo=SDK, file="nki/examples/average_pool2d/average_pool2d_nki_kernels.py", mode="script"),
    ]
    + [
        dict(
            name=f"sdk:fused_mamba/{v}",
            repo=SDK,
            file="nki/examples/fused_mamba/mamba_nki_kernels.py",
            mode="call",
            kernel=v,
            inputs=_mamba_inputs,
            ref=_mamba_ref,
            ref_source="repo: mamba_torch.py mamba_layer",
            tol=(1e-3, 1e-3),
        )
        for v in ("mamba_v1", "mamba_v2", "mamba_v3")
    ]
    + _mm_specs(SDK, MM_SDK)
    + _mm_specs(SAMPLES, MM_SAMPLES)
    + [
        # ---- awslabs/nki-autotune kernel_library (hand-tuned current-API kernels, 2048^3 bf16)
        dict(
            name="autotune:matmul_lhsT_rhs_nkigym",
            repo=AUTOTUNE,
            file="kernel_library/matmul/lhsT_rhs/kernel_hand_90.92mfu.py",
            mode="call",
            kernel="matmul_lhsT_rhs_nkigym",
            inputs=lambda rng: (_bf16(rng, (2048, 2048)), _bf16(rng, (2048, 2048))),
            ref=_mm_ref,
            ref_source="repo: examples/matmul_lhsT_rhs.py f_numpy (lhs_T.T @ rhs)",
            tol=(2e-2, 2e-2),
        ),
        dict(
            name="autotune:matmul_lhs_rhs_nkigym",
            repo=AUTOTUNE,
            file="kernel_library/matmul/lhs_rhs/kernel_handtuned_89.26mfu.py",
            mode="call",
            kernel="matmul_lhs_rhs_nkigym",
            inputs=lambda rng: (_bf16(rng, (2048, 2048)), _bf16(rng, (2048, 2048))),
            ref=lambda a, b: _f32(a) @ _f32(b),
            ref_source="kernel name/docstring (lhs @ rhs)",
            tol=(2e-2, 2e-2),
        ),
        dict(
            name="autotune:rmsnorm_matmul_online",
            repo=AUTOTUNE,
            file="kernel_library/rmsnorm_matmul/kernel_hand_online.py",
            mode="call",
            kernel="rmsnorm_matmul_online",
            inputs=lambda rng: (_bf16(rng, (2048, 2048)), _bf16(rng, (2048, 2048))),
            ref=_rmsnorm_matmul_ref,
            ref_source="module docstring (rmsnorm(lhs) @ rhs, eps assumed 1e-6)",
            tol=(5e-2, 5e-2),
        ),
    ]
)

# mxfp-matmul (nki-samples tutorials and aws-neuron-sdk deep-dives): trn3-only MX kernels whose driver
# (mx_toplevel.py) needs torch_xla; they run here on target trn3 through their own CPU golden (mx_cpu_utils).
_MX_CALLS = [
    ("run_offline_quantized_matmul_mx_test", ("float8_e5m2",)),
    ("run_offline_quantized_matmul_mx_test", ("float4_e2m1fn",)),
    ("run_on_device_quantize_matmul_mx_test", ("float4_e2m1fn", "float8_e5m2")),
    ("run_on_device_quantize_matmul_mx_test", ("float8_e5m2", "float8_e5m2")),
    ("run_copy_strided_test", ("float8_e5m2", True)),
    ("run_copy_strided_test", ("float8_e5m2", False)),
]
for _repo, _dir in ((SAMPLES, "src/nki_samples/tutorials/mxfp-matmul"), (SDK, "nki/deep-dives/src/mxfp-matmul")):
    for _fn, _args in _MX_CALLS:
        SPECS.append(
            dict(
                name=f"{_repo}:mxfp/{_fn}{_args}".replace("'", ""),
                repo=_repo,
                file=f"{_dir}/mx_toplevel.py",
                mode="mx",
                fn=_fn,
                args=_args,
                target="trn3",
                ref_source="repo: mx_toplevel.py test driver + mx_cpu_utils.py goldens (torch_xla device -> CPU)",
            )
        )

EXCLUDED = {
    "aws-neuron-sdk nki/examples/layout-loop.py": "legacy API (torch_neuronx.nki_jit)",
    "aws-neuron-sdk nki/examples/layout-dynamic-loop.py": "doc fragment: not valid Python (unclosed paren, undefined k)",
    "aws-neuron-sdk nki/examples/getting_started_{jax,torch}.py": "need jax / torch_xla devices (kernel = getting_started_baremetal)",
    "nki-samples (everything else)": "legacy API (neuronxcc.nki): attention_fwd_performance, average_pool2d, fused_mamba, "
    "tensor_addition, transpose2d tutorials, contributed/*, test/unit/*",
    "aws-neuron-sdk nki/test/*.py": "legacy API (neuronxcc.nki) doc-example tests",
}
