"""Root-cause classification of corpus failures.

category: (a) nkidev emulator gap/bug (reproducer under bench/corpus/repros/: `PYTHONPATH=src python
bench/corpus/repros/NAME.py` prints BUG/OK and exits 1 while the bug is present), (b) kernel needs something
unavailable here (real hardware, the Neuron compiler, collectives), (c) harness / upstream-repo problem (nothing
nkidev can fix). Rules are tried in order; the first whose `id` regex matches the result id and whose `msg` regex
matches its message wins. `python bench/corpus/causes.py RESULTS.json` re-classifies a results file in place.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CAUSES = {
    "nc_version_ordering": (
        "a",
        "repros/nc_version_ordering.py",
        "nisa.nc_version members are not ordered: get_nc_version() >= / <= nc_version.genN raises TypeError",
    ),
    "indirect_offset_reshaped": (
        "a",
        "repros/indirect_offset_reshaped.py",
        "scalar_offset/vector_offset on a reshaped (or strided) view scaled by the original tensor's stride: wrong rows gathered",
    ),
    "lnc2_shared_init_race": (
        "a",
        "repros/lnc2_shared_init_race.py",
        "LNC=2 programs run one after the other: program 1's initialization of a shared output wipes program 0's results",
    ),
    "sbuf_capacity_rebind": (
        "a",
        "repros/sbuf_capacity_rebind.py",
        "false err_sbuf/psum_capacity_exceeded: live bytes follow Python object lifetime (tile rebound next iteration / kept in a list)",
    ),
    "float4_x4_itemsize": (
        "a",
        "repros/float4_x4_itemsize.py",
        "nl.float4_e2m1fn_x4.itemsize is 4 (should be 2): uint16-packed fp4 tensors get half their elements -> false out-of-bound",
    ),
    "mx_ops_not_emulated": ("a", "repros/mx_ops_not_emulated.py", "nisa.nc_matmul_mx / nisa.quantize_mx raise err_not_supported_yet"),
    "nl_range_missing": ("a", "repros/nl_range_missing.py", "nl.range missing (AttributeError)"),
    "tensor_truthiness": (
        "a",
        "repros/tensor_truthiness.py",
        "`if tensor_arg:` treated as a data read (err_dynamic_control_flow_not_supported)",
    ),
    "empty_slice": ("a", "repros/empty_slice.py", "empty slice t[a:a] / nl.ds(x, 0) rejected at creation"),
    "view_bounds_at_creation": (
        "a",
        "repros/view_bounds_at_creation.py",
        "out-of-range .ap() view rejected at creation, though never accessed",
    ),
    "nl_broadcast_column": (
        "a",
        "repros/nl_broadcast_column.py",
        "nl.add/nl.subtract refuse a [P,1] operand (nl wrappers should broadcast)",
    ),
    "perf_mode_string": ("a", "repros/perf_mode_string.py", "perf_mode='double_row' (string) not treated as matmul_perf_mode.double_row"),
    "nc_find_index8_duplicates": ("a", "repros/nc_find_index8_duplicates.py", "nc_find_index8 gives every duplicate val the first match"),
    "address_ignored": (
        "a",
        "repros/sbuf_address_alias_capacity.py + repros/psum_address_alias.py",
        "nl.ndarray(address=...) ignored: tiles placed at one SBUF/PSUM address are separate storage -> no aliasing, and false capacity "
        "errors for ModularAllocator's rotating slots",
    ),
    "lnc2_error_while_peer_in_sendrecv": (
        "a",
        "repros/lnc2_error_while_peer_in_sendrecv.py",
        "LNC=2: an exception in one program while the other waits in sendrecv hangs the run",
    ),
    "range_select_fp32_min_literal": (
        "a",
        "repros/range_select_fp32_min_literal.py",
        "range_select(on_false_value=-3.4028235e38) refused: FP32_MIN compared in float64, not as the fp32 immediate (the docstring's "
        "own literal)",
    ),
    "dtype_is_dataclass": (
        "a",
        "repros/dtype_is_dataclass.py",
        "nl dtypes are dataclass instances: dataclasses.asdict(cfg) turns nl.bfloat16 into a dict, np.dtype() of it fails",
    ),
    "dataclass_nkiobject_unannotated": (
        "a",
        "repros/dataclass_nkiobject_unannotated.py",
        "@dataclass subclass of nl.NKIObject with un-annotated fields rejects keyword construction (TypeError)",
    ),
    "nkiobject_field_default_none": (
        "a",
        "repros/nkiobject_field_default_none.py",
        "@dataclass NKIObject built without a declared field: Python's dataclass raises TypeError, the NKI compiler's initializer "
        "defaults it to None (language guide, Class Support); e.g. MLPTKGConstantsDimensionSizes.remainderIFused",
    ),
    "onchip_integer_index_rank": (
        "a",
        "repros/onchip_integer_index_keeps_2d.py",
        "t[:, i] of an SBUF/PSUM tile dropped to rank 1; NKI keeps on-chip views at least 2-D (last free dim kept at size 1), so "
        "re-slicing it as [:p, :1] was refused",
    ),
    "needs_compiler_trace": (
        "b",
        None,
        "test is @pytest.mark.trace_only: it traces/compiles with the Neuron compiler (nki.compiler.frontend), not a simulation test",
    ),
    "needs_collectives": (
        "b",
        None,
        "kernel uses nki.collectives / multi-rank communication (not emulated, nor by the official simulator)",
    ),
    "harness_single_rank_simulation": (
        "c",
        None,
        "multi-rank test (InferenceArgs.collective_ranks > 1): nki-library's simulation path runs one launch with one input dict, "
        "so per-rank inputs (PerRankLazyInputGenerator), per-rank output directories (output_worker_N) and ranks beyond the "
        "launch's LNC programs exist only on hardware; nkidev's collectives run across the programs of one launch",
    ),
    "upstream_test_bug": ("c", None, "nki-library test bug at this commit (input generator lacks a key the output descriptor reads)"),
    "upstream_syntax_error": (
        "c",
        None,
        "nki-library source does not import at this commit (IndentationError in core/mlp/mlp.py docstring)",
    ),
    "upstream_missing_module": (
        "c",
        None,
        "nki-library test imports a module absent from the public checkout (nkilib.experimental.subkernels)",
    ),
    "upstream_nameerror": (
        "c",
        None,
        "nki-library test module raises NameError at import (core/qkv/test_qkv_tkg.py uses Platforms in a decorator, never imports it)",
    ),
    "kernel_uses_removed_kwarg": (
        "c",
        None,
        "kernel passes nisa.tensor_copy(dtype=...), which the current API (aws-neuron-sdk stub) does not have; nkidev's TypeError is "
        "correct",
    ),
    "sbuf_true_overflow": (
        "c",
        None,
        "kernel configuration really exceeds SBUF: cross_entropy.py:231's tensor_scalar reads batch_chunk and writes batch_exp_chunk, "
        "two distinct (64, 65535) bf16 tiles of 131070 bytes per partition, 262144 with its [64, 1] operand, over trn2's 229376 "
        "physical (28 MB NeuronCore-v3 SRAM / 128) and 212984 usable bytes; the kernel's validation checks only PB*CS*dtype bytes "
        "against 24 MiB (8.4 MB here), a whole-SBUF figure, and its backward docstring's own per-partition rule (two chunk tiles "
        "within 229376 bytes) excludes CS=65535 in bf16; with CS=32768 the same shapes run and match numpy (checked with 64 "
        "positions). The official simulator does not check capacity; nkidev's error is right",
    ),
    "harness_worker_oom": (
        "c?",
        None,
        "pytest-xdist worker OOM-killed (kernel log: 14-18 GB RSS per worker; 24 GiB machine, 2 workers) in a test not known to have "
        "oversized inputs (the cross-entropy ones are test_inputs_too_big)",
    ),
    "kernel_targets_older_nki": (
        "c",
        None,
        "kernel written for an older NKI uses an API the version it ran under removed (err_removed_in_nki_version); run its repository "
        "under the version it targets (repos.py nki_version / run.py --nki-version)",
    ),
    "test_inputs_too_big": (
        "c",
        None,
        "the test's own input generator (np.random.randn(B*T, V) in float64, then a cast) peaks at 10 bytes per logit (measured: "
        "1.01 GB for 1.04e8 logits, forward and backward alike), 20-21 GB for the five cross-entropy fast cases with B*T*V ~ 2.0-2.1e9 "
        "(qwen3 T-13000/T-14000, gpt_oss B-3_T-3413, llama4 B-5_T-2047): it times out, raises MemoryError ('Unable to allocate "
        "15.4 GiB ... float64') or is OOM-killed (a pytest-xdist worker crash) before the kernel starts; nothing nkidev runs",
    ),
    "test_inputs_over_memory_cap": (
        "c",
        None,
        "MemoryError ('Unable to allocate ...') inside the test's own input generator (e.g. moe_tkg's default_tensor_generator, "
        "float64 weights of 6-9 GiB for e-128 h-3072 i-1024/1536), before the kernel starts: the run's per-process memory cap "
        "(e.g. prlimit --as=8G around run.py) is below what the test's inputs need; nothing nkidev runs",
    ),
    "validation_over_memory_cap": (
        "c",
        None,
        "the test's own output check (nki-library's OutputValidator, torch's CPU allocator) could not allocate after the kernel "
        "ran: 'DefaultCPUAllocator: can't allocate memory' under the run's per-process memory cap (prlimit --as=8G: the 4 "
        "test_ranged_attn_cte_sweep_*_manual cases with s_kv 25600 asked for 0.6-1.8 GB more; with --as=14G all 18 -m fast "
        "ranged_attn cases pass); nothing nkidev runs",
    ),
    "too_slow": (
        "?",
        None,
        "the kernel runs but needs more than the per-test timeout on this 2-core machine (time measured with a longer --timeout in "
        "the notes)",
    ),
    "timeout": ("?", None, "no result within the per-test timeout (300 s)"),
    "unclassified": ("?", None, "not yet classified"),
}

RULES = [
    (r"", r"not supported between instances of 'nc_version'", "nc_version_ordering"),
    (r"", r"nki\.compiler\.frontend|nki\.compiler\.ncc_driver", "needs_compiler_trace"),
    (r"test_dynamic_select", r"", "indirect_offset_reshaped"),
    (r"", r"dynamic offset \d+ puts row \d+ of '(expert_affinities|k_prior|v_prior)'", "indirect_offset_reshaped"),
    (r"", r"'PerRankLazyInputGenerator' object has no attribute 'items'", "harness_single_rank_simulation"),
    (r"collectives", r"No output files found for rank \d+|are not programs of this launch", "harness_single_rank_simulation"),
    (r"", r"Can't pickle <class 'nkidev\.emulator\.nki_api\.ReplicaGroup'>", "needs_collectives"),
    # before the collectives rule: the orchestrator's source in such tracebacks mentions ranks and collectives
    (r"", r"ValidationException: .*DefaultCPUAllocator: can't allocate memory", "validation_over_memory_cap"),
    (r"folded_load_store_dst_batch\[lnc-2", r"", "lnc2_shared_init_race"),
    (r"test_moe_cte_unified.*vnc-2", r"Validation failed", "lnc2_shared_init_race"),
    (r"", r"KeyError: 'mask_out_hbm'", "upstream_test_bug"),
    (r"", r"IndentationError", "upstream_syntax_error"),
    (r"", r"__init__\(\) missing \d+ required positional argument", "nkiobject_field_default_none"),
    (r"test_cross_entropy_forward", r"test_cross_entropy_forward\.py:118: Failed", "test_inputs_too_big"),
    (
        r"test_cross_entropy_(forward|backward).*(B-1_T-1[34]000_V-151936|B-3_T-3413_V-201088|B-5_T-2047_V-202408)",
        r"worker '\w+' crashed|Unable to allocate|MemoryError",
        "test_inputs_too_big",
    ),
    # the allocation failed in nki-library's own test code: its traceback ends under test/ or passes a test input generator
    (
        r"",
        r"Unable to allocate [\d.]+ [GMK]iB(.|\n)*\ntest/\S+\.py:\d+: (MemoryError\s*$|in \w*(generator|generate_\w*inputs)\b)",
        "test_inputs_over_memory_cap",
    ),
    (r"test_moe_blockwise_mm_shard_h_lnc2\[_manual_cfg__tok-1024_hid-7168_int-32_exp-256_bs-512_", r"Timeout \(>", "too_slow"),
    (r"test_topk_unit\[lnc-2_b-1024_s-1_v-3568_K-2048|test_attn_tkg_fast\[bs_128-qh_1-sa_1-sp_1024-spf_10240", r"Timeout \(>", "too_slow"),
    (r"", r"Timeout \(>", "timeout"),
    (r"", r"err_removed_in_nki_version", "kernel_targets_older_nki"),
    (r"", r"2 indices for tensor '\w+' of rank 1", "onchip_integer_index_rank"),
    (r"", r"No module named 'nkilib_src\.nkilib\.experimental\.subkernels'", "upstream_missing_module"),
    (r"", r"NameError: name 'Platforms'", "upstream_nameerror"),
    (r"", r"tensor_copy\(\) got an unexpected keyword argument 'dtype'", "kernel_uses_removed_kwarg"),
    (r"", r"entry not a 2- or 3- tuple", "dtype_is_dataclass"),
    (r"", r"__init__\(\) got an unexpected keyword argument", "dataclass_nkiobject_unannotated"),
    (r"", r"on_false_value must be FP32_MIN", "range_select_fp32_min_literal"),
    (r"", r"err_sbuf_capacity_exceeded: allocating \(64, 65535\) bfloat16", "sbuf_true_overflow"),
    # the same overflow as nkidev names it now: the one instruction's SBUF operands together, not one allocation
    (
        r"",
        r"err_sbuf_capacity_exceeded: the SBUF operands of this instruction need .*'batch_exp_chunk' \(131070\), 'batch_chunk' \(131070\)",
        "sbuf_true_overflow",
    ),
    (r"", r"capacity_exceeded.*modular_allocator\.py", "address_ignored"),
    (r"", r"err_sbuf_capacity_exceeded|err_psum_capacity_exceeded", "sbuf_capacity_rebind"),
    (r"", r"err_tensor_access_out_of_bound: access pattern .* of 'w_sbuf'|of 'block_to_expert'", "view_bounds_at_creation"),
    (r"", r"worker '\w+' crashed", "harness_worker_oom"),
    (r"", r"nc_matmul_mx is not emulated|quantize_mx is not emulated", "mx_ops_not_emulated"),
    (r"float4_e2m1fn|fp4|float4", r"err_tensor_access_out_of_bound", "float4_x4_itemsize"),
    (r"", r"has no attribute 'range'", "nl_range_missing"),
    (r"", r"err_dynamic_control_flow_not_supported", "tensor_truthiness"),
    (r"", r"is empty; keep slices", "empty_slice"),
    (r"", r"Regex pattern did not match", "needs_compiler_trace"),
    (r"", r"perf_mode", "perf_mode_string"),
    (r"", r"collectives|all_gather|all_reduce|ReplicaGroup", "needs_collectives"),
]


def classify(rec: dict) -> str:
    if rec["status"] in ("PASS", "SKIP"):
        return ""
    for id_re, msg_re, cause in RULES:
        if re.search(id_re, rec["id"]) and re.search(msg_re, rec.get("message", "") or ""):
            return cause
    return "unclassified"


def classify_all(results: list[dict]) -> None:
    for r in results:
        c = classify(r)
        r["cause"] = c
        if c:
            r["category"] = CAUSES[c][0]


if __name__ == "__main__":  # re-classify a results file in place: python bench/corpus/causes.py RESULTS.json
    path = Path(sys.argv[1])
    data = json.loads(path.read_text())
    classify_all(data["results"])
    path.write_text(json.dumps(data, indent=1))
