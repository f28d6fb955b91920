"""Named errors: every failure nkidev reports is a value with a name, a message, a fix and a place.

The catalogue below is the single list of names; rules, the CLI, `nkidev explain` and the docs
all read it. Official NKI names ([sources: nki-errors]) keep their spelling; names we had to coin
follow the same `err_*` style and are marked `official=False`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorInfo:
    name: str
    summary: str
    fix: str
    official: bool = False


def _e(name: str, summary: str, fix: str, official: bool = False) -> ErrorInfo:
    return ErrorInfo(name, summary, fix, official)


_CATALOGUE = [
    # --- official NKI error names (legacy error manual, [sources: nki-errors]) ---
    _e(
        "err_num_partition_exceed_arch_limit",
        "A tile's partition dimension is larger than the 128 partitions of SBUF/PSUM.",
        "split the partition dim into tiles of at most 128 (nl.tile_size.pmax) and loop over them",
        True,
    ),
    _e(
        "err_num_partition_mismatch",
        "Operands of one instruction use different numbers of partitions.",
        "slice the operands so they cover the same partition range",
        True,
    ),
    _e(
        "err_unsupported_memory",
        "An operand lives in a memory the instruction cannot access (HBM/SBUF/PSUM).",
        "move the data with nisa.dma_copy (HBM<->SBUF) or nisa.tensor_copy (PSUM->SBUF) first",
        True,
    ),
    _e(
        "err_tensor_access_out_of_bound",
        "An index or slice reaches outside the tensor.",
        "clamp the slice to the tensor's shape, e.g. min(start + size, dim) for the last tile",
        True,
    ),
    _e(
        "err_tensor_output_not_written_to",
        "A kernel output tensor was never written.",
        "write every returned tensor with nisa.dma_copy (or nl.store) before returning it",
        True,
    ),
    _e(
        "err_activation_bias_invalid_type",
        "Activation bias has an unsupported dtype or shape.",
        "pass bias as a [P, 1] SBUF/PSUM vector (or a float on trn2+), any dtype except tfloat32",
        True,
    ),
    _e(
        "err_activation_scale_invalid_type",
        "Activation scale is not float32.",
        "pass scale as a Python float or a float32 [P, 1] vector",
        True,
    ),
    _e(
        "err_activation_scale_scalar_or_vector",
        "Activation scale is neither a scalar nor a [P, 1] vector.",
        "pass scale as a Python float or a [P, 1] tile with the data's partition count",
        True,
    ),
    _e(
        "err_python_operator_on_tile",
        "A Python operator other than + - * / @ and unary - was applied to a tile (t[0, 0] > 0, t % 2, int(t), abs(t), ...): "
        "tile values exist only on the device, so Python cannot compare or convert them.",
        "compute on the device instead: nl.greater(t, 0) or nisa.tensor_scalar(..., op0=nl.greater, operand0=0.0) give a 0/1 "
        "tile, nl.where / nisa.tensor_copy_predicated select with it; for control flow load a register with nisa.scalar_load",
    ),
    _e(
        "err_ambiguous_tensor_truth_value",
        "A multi-element tensor was used as a Python bool.",
        "compare with nl.equal/nl.greater etc. and reduce, or test `is not None`",
        True,
    ),
    _e(
        "err_size_of_dimension_exceed_arch_limit",
        "A dimension exceeds an instruction's size limit.",
        "tile that dimension into chunks no larger than the limit named in the message",
        True,
    ),
    _e(
        "err_exceed_max_supported_dimension",
        "A tensor has more dimensions than the instruction supports.",
        "reshape/flatten the free dims so the tile has at most the supported rank",
        True,
    ),
    _e("err_nki_api_outside_of_nki_kernel", "An NKI API was called outside a kernel.", "call it from inside an @nki.jit function", True),
    _e(
        "err_shared_hbm_must_in_kernel_level",
        "shared_hbm tensors must be created at the top level of the kernel.",
        "allocate the output with nl.ndarray(..., buffer=nl.shared_hbm) in the kernel body",
        True,
    ),
    _e(
        "err_cannot_update_immutable_parameter",
        "A kernel input that must stay immutable was written.",
        "write results into a new nl.shared_hbm tensor instead of the input",
        True,
    ),
    _e(
        "err_store_dst_shape_smaller_than_other_shape",
        "The destination of an assignment is smaller than the source.",
        "slice source and destination to the same shape",
        True,
    ),
    _e(
        "err_1d_arange_not_supported",
        "A legacy (neuronxcc.nki) kernel indexes with a 1-d nl.arange; index expressions need an axis per tensor dimension.",
        "use nl.arange(n)[:, None] for the partition axis and nl.arange(n)[None, :] for a free axis (or nl.mgrid)",
    ),
    _e(
        "err_unsupported_mixing_basic_advanced_tensor_indexing",
        "A legacy (neuronxcc.nki) subscript mixes slices / ints with nl.arange index expressions.",
        "index every axis with nl.arange / nl.mgrid expressions, or every axis with slices",
    ),
    _e(
        "err_control_flow_condition_depending_on_arange",
        "A legacy (neuronxcc.nki) kernel uses an nl.arange expression in a Python if / while condition; index expressions "
        "have no value while the kernel is built.",
        "express the condition as a mask= on the instruction (a comparison of index expressions)",
    ),
    _e(
        "err_annotation_shape_mismatch",
        "A legacy (neuronxcc.nki) tensor does not have the shape its nt.tensor[...] annotation declares.",
        "pass an array of the annotated shape, or fix the annotation",
    ),
    _e(
        "err_failed_to_infer_tile_from_local_tensor",
        "A compute instruction received something that is not a tile.",
        "pass an SBUF/PSUM tensor whose first dim is the partition dim",
        True,
    ),
    _e(
        "err_unexpected_output_dependencies",
        "Several loop iterations or SPMD programs write the same output location.",
        "give each iteration/program its own output slice",
        True,
    ),
    _e(
        "err_hbm_tensor_with_init_value_not_supported",
        "HBM tensors cannot be created with an initial value.",
        "allocate with nl.ndarray and fill it from SBUF with nisa.dma_copy",
        True,
    ),
    _e(
        "err_nested_kernel_with_spmd_grid",
        "A kernel launched with an SPMD grid was called from inside a kernel.",
        "call the inner kernel without [grid], or launch it from the host",
        True,
    ),
    _e(
        "err_dynamic_control_flow_not_supported",
        "Python control flow depends on tensor values.",
        "use nl.fori_loop/nl.while_loop with registers, or compute both sides and select",
        True,
    ),
    # --- names coined by nkidev, same style ---
    _e(
        "err_free_size_mismatch",
        "Operands have different numbers of elements per partition; NKI never broadcasts implicitly.",
        "slice both operands to the same free size, or use nisa.tensor_scalar to broadcast a [P, 1] vector",
    ),
    _e("err_shape_mismatch", "Operand shapes are incompatible for this instruction.", "make the shapes agree as described in the message"),
    _e(
        "err_element_count_mismatch",
        "Source and destination hold different numbers of elements.",
        "slice or reshape so both sides have the same element count",
    ),
    _e("err_both_inputs_in_psum", "Both inputs of a two-input instruction are in PSUM.", "copy one input to SBUF first (nisa.tensor_copy)"),
    _e("err_dma_from_psum", "DMA cannot read PSUM.", "copy the PSUM tile to SBUF with nisa.tensor_copy, then DMA from SBUF"),
    _e(
        "err_gpsimd_cannot_access_psum",
        "The GpSimd engine cannot read or write PSUM.",
        "run the instruction on the Vector or Scalar engine, or move the data to SBUF",
    ),
    _e(
        "err_psum_bank_overflow",
        "A matmul output does not fit in one 2 KiB PSUM bank (512 fp32 per partition).",
        "tile the moving free dim to nl.tile_size.psum_bank_fmax (512) columns per nc_matmul",
    ),
    _e(
        "err_psum_tile_too_large",
        "A PSUM tile is larger than PSUM (16 KiB per partition).",
        "use tiles of at most 8 banks x 2 KiB per partition",
    ),
    _e(
        "err_sbuf_capacity_exceeded",
        "One SBUF tile, or the SBUF operands of one instruction, need more bytes per partition than the target provides "
        "(the compiler cannot place them; more live tiles than fit are spilled instead, see Trace.spills).",
        "split the tile along its free dims into tiles that fit",
    ),
    _e(
        "err_psum_capacity_exceeded",
        "The PSUM operands of one instruction need more than the 16 KiB per partition (8 banks) of PSUM together "
        "(more live PSUM tiles than fit are spilled to SBUF instead, see Trace.spills).",
        "use smaller PSUM tiles; copy results out to SBUF and reuse PSUM tiles",
    ),
    _e(
        "err_address_out_of_range",
        "An on-chip tensor placed with address=(partition_offset, byte_offset) reaches past the memory: its partitions "
        "past the 128 partitions, or its bytes per partition past a partition's capacity (SBUF per target, PSUM 16 KiB).",
        "place it lower (the message gives the largest offset that fits), or make the tile smaller",
    ),
    _e(
        "err_reduce_axis_invalid",
        "Reduction axes must be the last contiguous free dims; the partition axis cannot be reduced.",
        "reduce trailing free axes only; for a partition reduction transpose first or matmul with a ones vector",
    ),
    _e(
        "err_partition_start_alignment",
        "The tile starts on a partition the engine cannot address for its size.",
        "tiles with 64 < P <= 128 start at 0, 32 < P <= 64 at 0 or 64, P <= 32 at a multiple of 32",
    ),
    _e(
        "err_partition_stride_not_supported",
        "On-chip access patterns cannot stride across partitions.",
        "make the first .ap() pair [free_elements_per_partition, P] and index partitions contiguously",
    ),
    _e(
        "err_output_must_be_shared_hbm",
        "Kernel outputs must live in nl.shared_hbm.",
        "allocate returned tensors with nl.ndarray(shape, dtype, buffer=nl.shared_hbm)",
    ),
    _e(
        "err_kernel_io_must_be_hbm",
        "Kernel inputs and outputs must be HBM tensors.",
        "return HBM tensors; copy SBUF results out with nisa.dma_copy",
    ),
    _e(
        "err_matmul_dtype_mismatch",
        "nc_matmul inputs mix fp32/tf32 with a lower-precision dtype (or fp8 variants that cannot mix).",
        "cast both operands to the same family first (e.g. both bfloat16)",
    ),
    _e(
        "err_matmul_dst_dtype",
        "nc_matmul must write float32 PSUM on trn1/trn2 (float32 or bfloat16 on trn3).",
        "allocate the PSUM tile with dtype=nl.float32",
    ),
    _e(
        "err_unsupported_dtype",
        "The instruction does not accept this dtype.",
        "cast the operand to one of the dtypes listed in the message",
    ),
    _e("err_dtype_mismatch", "Operands must share a dtype for this instruction.", "cast one operand so both dtypes match"),
    _e(
        "err_unsupported_on_target",
        "The instruction or mode is not available on the target generation.",
        "pick a supported target (--target trn2|trn3) or use the alternative named in the message",
    ),
    _e("err_invalid_op", "The math operator is not valid for this instruction.", "use one of the operators listed in the message"),
    _e("err_invalid_argument", "An argument has an invalid value or type.", "pass a value of the kind named in the message"),
    _e(
        "err_transpose_too_large",
        "The transpose input is larger than the engine supports.",
        "TensorE transposes up to 128x128, VectorE up to 32x32; tile the transpose",
    ),
    _e(
        "err_reshape_incompatible",
        "The view cannot be reshaped without copying.",
        "reshape a contiguous tensor, or copy into a new tile of the wanted shape",
    ),
    _e(
        "err_memset_value_type",
        "memset value does not fit the destination dtype.",
        "use a value representable in the dtype (x4 packed types accept only 0)",
    ),
    _e(
        "err_uninitialized_read",
        "An instruction read memory that was never written.",
        "initialize the tile (memset or a copy) before reading it",
    ),
    _e(
        "err_not_supported_yet",
        "This documented NKI API is not emulated by nkidev yet.",
        "use an emulated alternative (see `nkidev docs search`) or run on Trainium",
    ),
    _e(
        "err_numpy_on_kernel_data",
        "A kernel called NumPy on device data instead of NKI instructions.",
        "compute with nki.isa / nki.language instructions; NumPy results would never run on Trainium",
    ),
    _e(
        "err_nested_kernel_call",
        "A @nki.jit kernel was called from inside another kernel.",
        "call the inner function without @nki.jit (plain Python helper)",
    ),
    # --- errors about nkidev's own inputs (CLI and API), not kernels ---
    _e("err_unknown_target", "Unknown hardware target.", "use trn1, trn2 or trn3 (or a target of NKIDEV_HARDWARE_PATH)"),
    _e(
        "err_bad_hardware_file",
        "A hardware file (<target>.toml) has an unknown or missing key, or a value of the wrong type.",
        "fix the key named in the message; every key of the bundled trn2.toml is required",
    ),
    _e(
        "err_bad_calibration_file",
        "A calibration file has an unknown section or key, a value of the wrong type, or is for another target.",
        "fix the key named in the message, or rerun `nkidev calibrate` to write a fresh calibration",
    ),
    _e(
        "err_calibration_failed",
        "`nkidev calibrate` could not fit: no usable measurement, or a profile that names no kernel to re-simulate.",
        "pass profiles written by `nkidev profile [--hardware]` (they record FILE::KERNEL and the case), "
        "or a JSON summary with kernel, case, target and total_time_ns",
    ),
    _e(
        "err_sdk_missing",
        "A hardware command needs the Neuron SDK (neuronx-cc, neuron-explorer) and a Trainium device, and one is missing.",
        "run on a Trainium instance with the Neuron SDK installed (pip install neuronx-cc; neuron-explorer on PATH), or drop --hardware",
    ),
    _e(
        "err_hardware_run_failed",
        "The Neuron SDK tool (neuronx-cc, the runtime or neuron-explorer) failed on the kernel.",
        "read the tool's output quoted in the message; the command line it ran is included",
    ),
    _e("err_bad_task_file", "The task file could not be loaded.", "fix the file named in the message"),
    _e("err_kernel_not_found", "No kernel with that name in the file.", "use FILE::KERNEL with a @nki.jit function name"),
    _e(
        "err_kernel_raised",
        "The kernel raised an exception of its own (not a named NKI rule) while being validated.",
        "fix the kernel line named in the message; rerun with NKIDEV_DEBUG=1 for the full traceback",
    ),
    _e(
        "err_reference_failed",
        "The reference raised, or returned NaN/Inf, so there is nothing trustworthy to compare with.",
        "fix the reference function or the case inputs named in the message (the reference runs in float64 on the CPU)",
    ),
    _e(
        "err_bad_argument",
        "A kernel argument has a type the emulator cannot take.",
        "pass NumPy arrays (or torch CPU tensors), Python scalars, enums or None",
    ),
    _e("err_output_exists", "The output path already exists.", "pass --force to replace it or choose another path"),
    _e("err_internal", "A bug in nkidev.", "rerun with NKIDEV_DEBUG=1 for the traceback and report it"),
    _e(
        "err_timeout",
        "The run took longer than its time limit and was stopped (the task file, cases(), the reference or the kernel, or a query).",
        "look for an endless loop; for a long but finite run raise the limit with --timeout SECONDS",
    ),
    _e(
        "err_memory_limit",
        "The run needed more memory than its limit (--memory, or the emulator's memory budget) and was stopped.",
        "use smaller shapes or fewer live tensors; raise the limit with --memory (e.g. --memory 16G) if the size is intended",
    ),
    _e(
        "err_child_exited",
        "The isolated process running the task ended without a result (os._exit, a signal, a crash in native code).",
        "remove the os._exit/exit call or the crashing native code from the task file or kernel; the message names the exit code",
    ),
    _e(
        "err_outside_root",
        "A path resolves outside the workspace root the MCP server was started with (symlinks are resolved).",
        "use a path inside the root, or restart the server with `nkidev mcp --root DIR` covering it",
    ),
    _e(
        "err_query_too_large",
        "The query returned more rows than the row cap.",
        "add a LIMIT or an aggregation, or raise the cap with --max-rows",
    ),
    _e(
        "err_hbm_capacity_exceeded",
        "Live HBM tensors need more bytes than one NeuronCore's share of the chip's HBM.",
        "use smaller tensors, or split the work over several kernel launches",
    ),
    _e("err_bad_profile", "The profile directory is missing tables or columns.", "point at a neuron-explorer or nkidev profile"),
    _e(
        "err_bad_query",
        "The profile query is not one read-only SELECT, or DuckDB rejected it.",
        "pass a single SELECT (or WITH ... SELECT) over the tables listed in the message",
    ),
    _e(
        "err_unknown_topic",
        "No docs page, op or error has that name.",
        "use one of the close matches in the message, or find the page with `nkidev docs search WORDS`",
    ),
    # --- NKI versions, NKI 0.7 scalars and tile grids, the legacy front end and the migration tool ---
    _e(
        "err_unknown_nki_version",
        "The NKI version given (--nki-version, nki_version=, NKIDEV_NKI_VERSION or a task file's NKI_VERSION) is not one nkidev emulates.",
        "use 0.6 or 0.7 (0.6.0 and 0.7.0 are accepted too); the default is the newest",
    ),
    _e(
        "err_removed_in_nki_version",
        "The kernel uses an API that the NKI version it is checked against no longer has.",
        "use the replacement named in the message (`nkidev migrate FILE` rewrites most of them), or check the kernel "
        "against the version it was written for with --nki-version",
    ),
    _e(
        "err_requires_nki_version",
        "The kernel uses an API that is newer than the NKI version it is checked against.",
        "check it against the version that adds the API (--nki-version, nki_version=, NKIDEV_NKI_VERSION), or avoid the API",
    ),
    _e(
        "err_nki_scalar_invalid",
        "nisa.scalar_load / nisa.scalar_store got an operand they do not accept (a 1x1 int32/int64 tile in SBUF or HBM, "
        "a scalar of the tile's width).",
        "load from and store to a (1, 1) nl.int32 or nl.int64 tile in SBUF or HBM; use nisa.memset for constants",
    ),
    _e(
        "err_nki_scalar_operation",
        "An NkiScalar was used in a way NKI 0.7 does not support (int64 comparisons or loop bounds, mixed dtypes, "
        "a comparison result, an int64 offset into SBUF/PSUM, an operator other than + - *).",
        "use int32 scalars for loop bounds and comparisons, scalars of one dtype per expression, and + - * only",
    ),
    _e(
        "err_nki_scalar_host_value",
        "Kernel Python code read an NkiScalar's value (if / while / int() / range() / indexing); scalars only exist on the device.",
        "pass the scalar to nl.fori_loop bounds or an access pattern's scalar_offset instead of reading it in Python",
    ),
    _e(
        "err_tile_grid_invalid",
        "nl.alloc_tiles / alloc_blocks / tiles / blocks (or a grid selection) got an invalid shape, buffer or index.",
        "pass tile_shape/element_shape/block_shape as tuples of positive Python ints (tile_shape at least 2-d, "
        "not longer than element_shape) and index grids within their shape",
    ),
    _e(
        "err_nested_kernel_config_mismatch",
        "A nested @nki.jit kernel's compile_config differs from the config of the kernel that calls it.",
        "give both the same nki.compiler.CompileConfig, or pass "
        "specialization_config=nki.compiler.SpecializationConfig(allow_nested_config_override=True) to the top-level kernel",
    ),
    _e(
        "err_lnc_mismatch",
        "The kernel's LNC degree differs from the one the compiler uses (NCC_EVRF066 in NKI 0.7).",
        "launch with the LNC degree of NEURON_LOGICAL_NC_CONFIG (drop the kernel[n] bracket, or make them agree)",
    ),
    _e(
        "err_legacy_index",
        "A legacy (neuronxcc.nki) index expression cannot be used here: 1-d aranges, basic and advanced indexing "
        "mixed in one subscript, non-affine indices, or a mask that is not a comparison of affine index expressions.",
        "index with nl.arange(n)[:, None] / [None, :] or nl.mgrid (or only slices), and build masks from comparisons of them joined with &",
    ),
    _e(
        "err_failed_to_infer_tile_from_local_tensor",
        "A legacy compute op got a tensor whose partition dim is not the first dim (a tensor with block dims).",
        "index away the block dimensions first, e.g. t[i] or t[i, j], to get a tile",
        True,
    ),
    _e(
        "err_migrate_missing_extra",
        "`nkidev migrate` needs LibCST, which is an optional extra.",
        "install it with: pip install 'nkidev[migrate]'",
    ),
    _e(
        "err_migrate_parse",
        "`nkidev migrate` could not parse the file as Python.",
        "fix the syntax error at the line named in the message, then rerun",
    ),
    _e("err_unknown_client", "Unknown agent client.", "use --target claude, kiro or cursor"),
    _e(
        "err_install_conflict",
        "A file nkidev installs or removes differs from the copy nkidev wrote (edited by you or another tool).",
        "compare the listed files; pass --force to overwrite (install) or delete (uninstall) them anyway",
    ),
    _e(
        "err_not_writable",
        "nkidev cannot write where it was asked to (an install directory, a profile --out directory).",
        "check the directory's permissions, choose another --out, or install with the other --scope (project or user)",
    ),
    _e(
        "err_not_installed",
        "There is no nkidev install manifest here, so nothing is known to remove.",
        "run the command from the directory you installed into (or pass the same --scope); nothing was changed",
    ),
    _e(
        "err_bad_tunable",
        "The task file's TUNABLE (or a --param) does not describe a search space over the kernel's keyword arguments.",
        'write TUNABLE = {"param": [v1, v2]} (or {"KERNEL": {...}}) with literal values, for parameters the kernel has with defaults',
    ),
    _e(
        "err_bad_session",
        "The optimize directory (--resume DIR, an MCP session) has no readable state.json written by nkidev.",
        "pass a directory written by `nkidev optimize --out`, or start a new run",
    ),
    _e(
        "err_baseline_failed",
        "The kernel to optimize does not pass its own validation, so there is no correct starting point to speed up.",
        "fix the kernel first (nkidev validate FILE::KERNEL, or nkidev debug FILE::KERNEL), then optimize it",
    ),
    _e(
        "err_provider_failed",
        "The candidate provider (an LLM API, a replay directory) could not produce a candidate.",
        "check the provider's settings (model, endpoint, credentials in the environment) or the replay directory named in the message",
    ),
    _e(
        "err_missing_extra",
        "The feature needs an optional dependency that is not installed (Ray, an LLM provider's SDK).",
        "install the extra named in the message, e.g. pip install 'nkidev[ray]'",
    ),
    _e(
        "err_bad_client_config",
        "An agent client's config file (.mcp.json, mcp.json) is not a valid JSON object.",
        "fix or remove the file named in the message, then rerun the command",
    ),
    _e("err_unknown_task", "No benchmark task has that name.", "run `nkidev bench list` for the task names"),
]

ERRORS: dict[str, ErrorInfo] = {e.name: e for e in _CATALOGUE}


class NkiValidationError(Exception):
    """Raised when hardware constraints are violated (the official `nki.isa.NkiValidationError`)."""


class NkiError(NkiValidationError):
    """A named nkidev error: `name: message; fix (file:line)`."""

    def __init__(self, name: str, message: str, fix: str | None = None, location: str | None = None):
        info = ERRORS.get(name)
        self.name = name
        self.message = message
        self.fix = fix if fix is not None else (info.fix if info else "")
        self.location = location
        super().__init__(str(self))

    @property
    def filename(self) -> str | None:
        return self.location.rsplit(":", 1)[0] if self.location else None

    @property
    def lineno(self) -> int | None:
        return int(self.location.rsplit(":", 1)[1]) if self.location else None

    def __str__(self) -> str:
        text = f"{self.name}: {self.message}"
        if self.fix:
            text += f"; {self.fix}"
        if self.location:
            path, _, line = self.location.rpartition(":")
            text += f" ({os.path.basename(path)}:{line})"
        return text

    def to_dict(self) -> dict:
        return {"name": self.name, "message": self.message, "fix": self.fix, "location": self.location}

    # The traceback of the user's own exception behind this error (err_kernel_raised): the CLI prints it when
    # NKIDEV_DEBUG=1. Set with `with_traceback_of`; None for errors nkidev detected itself.
    user_traceback: str | None = None

    def with_traceback_of(self, exc: BaseException) -> NkiError:
        """Keep the traceback of `exc` (the kernel's own exception): every frame of the user's code, none of nkidev's."""
        import traceback

        from nkidev.emulator.location import is_internal

        frames = [f for f in traceback.extract_tb(exc.__traceback__) if not is_internal(f.filename)]
        text = "Traceback (the kernel's frames; nkidev's are left out):\n" + "".join(traceback.format_list(frames))
        self.user_traceback = text + "".join(traceback.format_exception_only(type(exc), exc))
        return self


class KernelRuleError(NkiError, AssertionError):
    """A kernel broke a hardware rule. Also an AssertionError, like the official simulator's checks."""


class NkiNotSupportedError(NkiError, NotImplementedError):
    """A documented NKI API that nkidev does not emulate yet."""


class NkiVersionError(NkiError, TypeError):
    """The kernel uses an API its NKI version does not have (also a TypeError, like the 0.7 tracer's errors)."""


class NkiVersionAttributeError(NkiVersionError, AttributeError):
    """A module name the NKI version lacks, looked up (also an AttributeError, so `hasattr` is False as in that version)."""


class KernelTypeError(KernelRuleError, TypeError):
    """A kernel rule error the official API raises as TypeError (NkiScalar host reads, grid shapes)."""


class KernelValueError(KernelRuleError, ValueError):
    """A kernel rule error the official API raises as ValueError (grid shape values)."""


class NkiUsageError(NkiError):
    """Bad input to nkidev itself (a CLI flag, a task file, a path), not a kernel bug."""


class NkiWarning(UserWarning):
    """Emulator warnings (undefined-on-hardware behaviour that still produced a value)."""
