"""Neuron compiler (neuronx-cc) error codes, NCC_<CATEGORY><NNN>, for `nkidev explain NCC_...`.

nkidev never raises these: they come from compiling on a machine with the Neuron SDK. Each entry says what
the code means and what to try, in our words, and links its public page (the index is
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/error-codes/index.html; each code has
compiler/error-codes/<CODE>.html there, CODE without the NCC_ prefix). Most codes concern whole-model
(XLA graph) compilation rather than writing an NKI kernel; the kernel-level ones are marked.
"""

from __future__ import annotations

from dataclasses import dataclass

DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/error-codes"
INDEX_URL = f"{DOCS}/index.html"


@dataclass(frozen=True)
class NccCode:
    code: str
    meaning: str
    fix: str
    kernel_level: bool = False  # raised for an NKI kernel itself, not for the surrounding model graph

    @property
    def url(self) -> str:
        return f"{DOCS}/{self.code.removeprefix('NCC_')}.html"


_TABLE = (
    ("NCC_EARG001", "the Logical NeuronCore (LNC) setting is not supported on the target", "use an LNC degree the instance supports", True),
    (
        "NCC_EBIR023",
        "an MLP kernel's intermediate size exceeds the supported maximum (4096)",
        "tile the intermediate dim or shard it with tensor parallelism",
        True,
    ),
    (
        "NCC_EBVF030",
        "the compiled program has more instructions than the limit",
        "split the graph (model parallelism) or the kernel into smaller parts",
        True,
    ),
    ("NCC_EHCA005", "a custom-call target name is not recognised", "use one of the custom-call targets the compiler lists"),
    ("NCC_EMOD025", "dynamic shapes are not supported", "make the shapes static before compiling"),
    (
        "NCC_EOOM001",
        "the model's tensors need more device (HBM) memory than there is",
        "smaller batch or tensors, tensor/pipeline parallelism, activation checkpointing",
    ),
    ("NCC_EOOM002", "a device memory limit was exceeded", "as for NCC_EOOM001: reduce sizes or shard the model"),
    ("NCC_ESFH002", "an unsigned 64-bit constant cannot be converted to 32 bits safely", "use 32-bit constants"),
    ("NCC_ESPP004", "a data type is not supported by code generation", "use fp32, fp16 or bf16"),
    ("NCC_ESPP047", "this 8-bit float type is not supported", "use fp16/bf16, or a supported fp8 type on NeuronCore-v3 and later"),
    ("NCC_EUOC002", "an operator is not supported", "express it with supported operators"),
    ("NCC_EVRF001", "an operator is not supported (verification)", "replace it; list the supported operators with neuronx-cc"),
    ("NCC_EVRF004", "complex data types are not supported", "keep real and imaginary parts in separate real tensors"),
    (
        "NCC_EVRF005",
        "the FNUZ fp8 variants (F8E4M3FNUZ, F8E4M3B11FNUZ, F8E5M2FNUZ) are not supported",
        "use bf16/fp16 or a supported fp8 type",
    ),
    ("NCC_EVRF006", "a random-number algorithm other than the default is used", "use the default RNG"),
    ("NCC_EVRF007", "the compiled program has more instructions than the limit", "partition the model or split the kernel", True),
    ("NCC_EVRF009", "activation tensors exceed device memory", "smaller batch, tensor/pipeline parallelism"),
    ("NCC_EVRF010", "input and kernel dilation are used together in a convolution", "use only one of them"),
    ("NCC_EVRF011", "a strided convolution has a dilated input", "drop the stride or the input dilation"),
    ("NCC_EVRF013", "TopK on 32/64-bit integers", "cast to float first"),
    (
        "NCC_EVRF015",
        "a custom-call target name is not recognised",
        "use a target the compiler recognises (AwsNeuronCustomNativeKernel for NKI kernels)",
    ),
    ("NCC_EVRF016", "scatter-reduce on integer or boolean data", "cast to float first"),
    ("NCC_EVRF017", "reduce-window with base dilation greater than 1", "set every base dilation to 1"),
    ("NCC_EVRF018", "reduce-window with window dilation greater than 1", "set every window dilation to 1"),
    ("NCC_EVRF019", "reduce-window with a number of operands other than two", "split it into single-operand reductions"),
    ("NCC_EVRF022", "arithmetic shift right on data that is not 32-bit", "cast to a 32-bit type first"),
    ("NCC_EVRF024", "an output tensor is larger than 4 GB", "reduce its size or shard it"),
    (
        "NCC_EVRF031",
        "scatter indices out of bounds (iota size does not match the operand dim)",
        "match the iota size to the operand dimension",
    ),
    ("NCC_EVRF035", "dot with 32/64-bit integer operands", "use float operands"),
    (
        "NCC_EVRF036",
        "QuantizeMX custom call: its backend_config is not valid JSON",
        "pass valid JSON with dtype, dim, block_size and scale_method",
        True,
    ),
    ("NCC_EVRF037", "QuantizeMX custom call: wrong number of operands (one expected)", "pass exactly one operand", True),
    (
        "NCC_EVRF038",
        "QuantizeMX custom call: the quantized dim is not valid (only the last two dims are)",
        "quantize along dim -1 or -2",
        True,
    ),
    ("NCC_EVRF039", "QuantizeMX custom call: block size other than 32", "use block size 32", True),
    ("NCC_EVRF040", "QuantizeMX custom call: scale method other than EMAX", "use the EMAX scale method", True),
    ("NCC_EVRF041", "QuantizeMX custom call: input is not BF16 or F16", "quantize from bf16 or fp16", True),
    (
        "NCC_EVRF042",
        "QuantizeMX custom call: the result dtype or shape does not match the config",
        "return fp8 data of the configured dtype and of the input's shape",
        True,
    ),
    ("NCC_EVRF043", "block-scaled dot: wrong number of operands (four expected)", "pass data and scales for both sides", True),
    ("NCC_EVRF044", "block-scaled dot: unsupported left-hand operand type", "use a supported MX operand type", True),
    ("NCC_EVRF045", "block-scaled dot: output is not F32 or BF16", "produce fp32 or bf16", True),
    ("NCC_EVRF046", "block-scaled dot: the left operand has rank below 2", "pass a matrix (reshape to 2-D or more)", True),
    ("NCC_EVRF047", "block-scaled dot: the right operand has rank below 2", "pass a matrix (reshape to 2-D or more)", True),
    ("NCC_EVRF048", "block-scaled dot: the batch sizes of the two operands differ", "make the products of the batch dims match", True),
    ("NCC_EVRF049", "block-scaled dot: its backend_config JSON cannot be parsed", "pass well-formed JSON", True),
    ("NCC_EVRF050", "block-scaled dot: the contracting dims have different sizes", "make the contracting sizes match", True),
    ("NCC_EVRF051", "F8E4M3FN is not supported on trn1/trn2", "use it on trn3, or another fp8 type", True),
    ("NCC_EVRF052", "F8E4M3 is not supported from trn3 on", "use F8E4M3FN on trn3", True),
    ("NCC_EVRF053", "block-scaled dot: a contracting dim is also a batch dim", "keep batch and contracting dims disjoint", True),
    ("NCC_EVRF054", "block-scaled dot: a batch dim index is out of range", "use indices 0 <= dim < rank", True),
    ("NCC_EVRF055", "block-scaled dot: a contracting dim index is out of range", "use indices 0 <= dim < rank", True),
    ("NCC_EVRF056", "gather indices out of bounds (iota mismatch)", "match the iota size to the operand dimension"),
    ("NCC_EVRF057", "QuantizeMX custom call: wrong number of outputs (two expected)", "return data and scales", True),
    ("NCC_EVRF058", "QuantizeMX custom call: the quantized dim is not divisible by 4", "pad that dimension to a multiple of 4", True),
    (
        "NCC_EVRF059",
        "the NKI kernel file referenced by the custom-native-kernel call does not exist",
        "ship the kernel file with the model",
        True,
    ),
    ("NCC_EVRF060", "scatter-compute on 32/64-bit integers (values above 2^24 lose precision in fp32)", "use float data or small integers"),
    ("NCC_EVRF061", "AllReduce on 32/64-bit integers (fp32 precision loss above 2^24)", "use float data or small integers"),
    ("NCC_EVRF062", "64-bit integer operands are downcast to 32 bits (power)", "use 32-bit integers"),
    ("NCC_EVRF063", "ReduceScatter on 32/64-bit integers (fp32 precision loss above 2^24)", "use float data or small integers"),
    ("NCC_EVRF064", "the HLO graph failed verification", "check the graph the framework produced"),
    (
        "NCC_EVRF065",
        "the NKI kernel was traced with an unsupported (legacy) NKI version",
        "port the kernel to the current `import nki` API",
        True,
    ),
    (
        "NCC_EVRF066",
        "the NKI kernel's LNC degree differs from the compiler's",
        "set the kernel's LNC to the one neuronx-cc uses (LNC=2 by default on trn2+)",
        True,
    ),
    ("NCC_EXSP001", "activation memory exceeds device memory (expansion)", "reduce sizes or use parallelism"),
    ("NCC_EXTP004", "the compiled program has more instructions than the limit (expansion)", "partition the model", True),
)

NCC_CODES: dict[str, NccCode] = {row[0]: NccCode(*row) for row in _TABLE}
