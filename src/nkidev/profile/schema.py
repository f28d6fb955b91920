"""The profile tables nkidev writes: neuron-explorer's table and column names, Arrow types and units.

Column names, types and units follow neuron-explorer's profile schema (schema version 7.4.0, as
published in tools/neuron-explorer/profile-schema-reference.rst); the descriptions are ours. A
profile directory holds one `<Table>.parquet` per table (real profiles may split a large table into
`<Table>_0.parquet`, `<Table>_1.parquet`, ...). Readers (nkidev.analysis) import this module:

    TABLES["Instruction"]          -> list[Column] in file order
    arrow_schema("Instruction")    -> pyarrow.Schema
    column_names("Instruction")    -> list[str]

Units: every `*_ts` and `*_ns` column is integer nanoseconds since the kernel start; `Summary` times
(`total_time`, `*_active_time`, ...) are float **seconds**, as in neuron-explorer; bandwidths are
bytes per second; clocks are GHz. Engine names: `Instruction.engine` and `OpcodeSummary.engine` are
capitalized (`Tensor`, `Vector`, `Scalar`, `GpSimd`, `Sync`), `ActiveTime.engine` is lowercase
(`tensor`, `vector`, `scalar`, `gpsimd`, `sync`). "number (float)" columns are written as float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = "7.4.0"  # the neuron-explorer schema these names follow

# Values that link tables (constants so readers and writers agree).
INSTRUCTION_ENGINES = ("Tensor", "Vector", "Scalar", "GpSimd", "Sync")  # Instruction.engine
ACTIVE_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")  # ActiveTime.engine
FLOW_INSTRUCTION = "instruction"  # Flow.in_table of an Instruction row
FLOW_DMA = "dma_block"  # Flow.out_table of a DmaPacketAggregated row
FLOW_DMA_TRIGGER = "DMA_TRIGGER"  # Flow.dependency_type: the instruction issued that DMA
DMA_TRIGGER_OPCODE = "DMA_TRIGGER"  # Instruction.opcode of the row that issues a DMA
TENSOR_IN, TENSOR_OUT = "IN", "OUT"  # TensorInfo.type
THROTTLE_TYPE = "didt"  # Throttle.type of the cost model's TensorE dI/dt limit
THROTTLE_ALL = "all"  # ThrottleSummary.throttle_type of the row that sums every kind
THROTTLE_LEVELS = 64  # Throttle.n nkidev writes
THROTTLE_STEPS = 4  # Throttle rows per ramp of the limit from its start to full rate
DMA_QUEUE_TYPES = ("instruction", "input", "output", "data", "software_dynamic", "hardware_dynamic", "unknown")


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    unit: str  # "" when the value has no unit
    description: str
    required: bool = False

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES[self.type]


_TYPES = {"i64": pa.int64(), "i32": pa.int32(), "f64": pa.float64(), "str": pa.string(), "bool": pa.bool_()}
_TYPE_NAMES = {pa.int64(): "integer", pa.int32(): "integer", pa.float64(): "number", pa.string(): "string", pa.bool_(): "boolean"}
_UNITS = {
    "-": "",
    "ns": "nanoseconds",
    "s": "seconds",
    "B": "bytes",
    "B/s": "bytes_per_second",
    "GHz": "gigahertz",
    "%": "percent",
    "flops": "flops",
    "cycles": "cycles",
}


def _parse(spec: str) -> list[Column]:
    """One column per line: `name type[!] unit description` ('!' = always present, '-' = no unit)."""
    cols = []
    for line in spec.strip().splitlines():
        name, typ, unit, desc = line.split(maxsplit=3)
        cols.append(Column(name, _TYPES[typ.rstrip("!")], _UNITS[unit], desc, typ.endswith("!")))
    return cols


_INSTRUCTION = """
start_ts i64! ns Start of the instruction, ns since the kernel started.
end_ts i64! ns End of the instruction, ns since the kernel started.
duration_ns i64! ns end_ts - start_ts.
engine str! - Engine that ran it: Tensor, Vector, Scalar, GpSimd, or Sync for DMA triggers.
timeline_track str - Track the instruction is drawn on (engine or DMA queue name).
pcore_idx i64 - Physical NeuronCore inside a logical NeuronCore (the SPMD program for nkidev).
opcode str! - Hardware opcode (MATMUL, LDWEIGHTS, TENSOR_TENSOR, ACTIVATE, DMA_TRIGGER, ...).
operands str! - Operands in the profiler's compact syntax; MATMUL ends with '<M>*<K>'.
compiler_opcode str - The nki.isa call that produced the instruction.
compiler_operands str - Arguments of that call, summarized.
id i64! - Unique instruction row id.
pc i64! - Position of the instruction in its engine's instruction stream.
compiler_pc i64 - Index of the nki.isa call in the emulator trace.
penguin_id str - Penguin IR id (not produced by nkidev).
raw_penguin_id i64 - Penguin IR id as an integer (not produced by nkidev).
bir_id str! - Id of the nki.isa call the row came from (LDWEIGHTS and MATMUL of one nc_matmul share it).
raw_bir_id i64 - bir_id as an integer.
bir_instruction_name str - Name of the nki.isa call and its trace index.
kernel_instruction_name str - The nki.isa function name.
crc_in i64 - Input checksum (not produced by nkidev).
crc_out i64 - Output checksum (not produced by nkidev).
evt_wait_time_ns i64 ns Time the instruction was ready in program order but waited for a dependency (semaphore).
hlo_attrs str - HLO attributes (not produced by nkidev).
hlo_name str - HLO op name (not produced by nkidev).
raw_hlo_id i64 - HLO id (not produced by nkidev).
raw_framework_id i64 - Framework op id (not produced by nkidev).
layer str - Framework layer (not produced by nkidev).
stack_frame_ids str - Stack frame ids (not produced by nkidev).
nki_source_location str - Kernel source line that issued the instruction, '/path/kernel.py:LINE'.
bir_debug_info_source_location str - Same source line, as the compiler debug info reports it.
dma_trigger_start_ts i64 - Start of the DMA this row triggered (DMA_TRIGGER rows).
dma_trigger_end_ts i64 - End of the DMA this row triggered (DMA_TRIGGER rows).
dma_wait_time_ns i64 ns Time a DMA waited between its trigger and its first packet.
instruction_chain str - Instruction chain (not produced by nkidev).
hbm_read_bytes i64 - Bytes read from HBM.
hbm_write_bytes i64 - Bytes written to HBM.
sbuf_read_bytes i64 - Bytes read from SBUF.
sbuf_write_bytes i64 - Bytes written to SBUF.
spill_save_bytes i64 - Bytes the compiler spills from SBUF to HBM right after this instruction (the tensor's last access before its gap).
spill_reload_bytes i64 - Bytes the compiler reloads from HBM into SBUF right before this instruction (the spilled tensor's next access).
psum_read_bytes i64 - Bytes read from PSUM.
psum_write_bytes i64 - Bytes written to PSUM.
psum_read_sbuf_write_bytes i64 - Bytes moved from PSUM to SBUF by this instruction.
input_queue_bytes i64 - Bytes moved on input DMA queues.
output_queue_bytes i64 - Bytes moved on output DMA queues.
weight_queue_bytes i64 - Bytes moved on weight DMA queues.
performance_mode str - Vector/Scalar performance mode used ('2x' or '4x'); null at 1x.
tensor_instruction_type str - REGULAR or TRANSPOSE for Tensor Engine rows.
tensor_elements i64 - Elements the Tensor Engine processed (M x N for MATMUL).
raw_flops i64 - Floating-point operations (2 per multiply-accumulate).
adjusted_flops i64 - raw_flops scaled to bf16 throughput (x1 bf16/fp16/tf32, x4 fp32, x0.5 fp8 on trn2/trn3).
tensor_elements_transpose i64 - tensor_elements of TRANSPOSE rows, else 0.
flops_transpose i64 - raw_flops of TRANSPOSE rows, else 0.
adjusted_flops_transpose i64 - adjusted_flops of TRANSPOSE rows, else 0.
scalar_activation_fn str - Activation function of ACTIVATE rows.
"""

_DMA_PACKET = """
start_ts i64! ns Start of the packet.
end_ts i64! ns End of the packet.
duration_ns i64! ns end_ts - start_ts.
pcore_idx i64 - Physical NeuronCore (SPMD program).
id i64! - Unique packet id.
packet_idx i32! - Index of the packet within its aggregated DMA.
packet_aggregation_id i64! - DmaPacketAggregated.id this packet belongs to.
engine_idx i64 - DMA engine (0-15) that moved the packet.
read_bytes i64! B Bytes read.
write_bytes i64! B Bytes written.
transfer_bytes i64! B Bytes moved.
throughput f64! B/s transfer_bytes / duration.
queue_type str! - Queue kind: input, output, data, software_dynamic, hardware_dynamic, instruction, unknown.
variable str - Tensor name of the HBM (or source) side.
queue_name str - DMA queue name.
queue_idx i64 - DMA queue index.
crc i64! - Checksum (0: not produced by nkidev).
"""

_DMA_PACKET_AGGREGATED = """
start_ts i64! ns Start of the first packet of the transfer.
end_ts i64! ns End of the last packet of the transfer.
duration_ns i64! ns end_ts - start_ts.
id i64! - Unique transfer id (DmaPacket.packet_aggregation_id).
pcore_idx i64 - Physical NeuronCore (SPMD program).
block_id i32! - Transfer index within its queue.
queue_idx i64! - DMA queue index.
queue_name str! - DMA queue name.
queue_type str - Queue kind (see DmaPacket.queue_type).
op str! - read (HBM to on-chip), write (on-chip to HBM) or copy.
variable str! - Tensor name of the HBM (or source) side.
read_bytes i64! B Bytes read.
write_bytes i64! B Bytes written.
transfer_bytes i64! B Bytes moved.
throughput f64! B/s transfer_bytes / duration.
source str! - Source memory: [[INPUT]] / [INPUT], [[OUTPUT]] / [OUTPUT], [[SB]], [[HBM]], [[VIRTUAL]] / [VIRTUAL] (a spill buffer in HBM).
dest str! - Destination memory, same vocabulary as source.
semaphore_id str! - Semaphore the transfer signals on completion.
modular_flow_function str - Modular flow function (not produced by nkidev).
read_sbuf_partitions str! - SBUF partitions read, 'first-last' (empty when the source is HBM).
read_num_sbuf_partitions i32! - Number of SBUF partitions read.
read_shape str! - Shape of the source access.
read_offset str! - Byte offset of the source access.
read_steps str! - Innermost contiguous bytes of the source access.
write_sbuf_partitions str! - SBUF partitions written, 'first-last' (empty when the destination is HBM).
write_num_sbuf_partitions i32! - Number of SBUF partitions written.
write_shape str! - Shape of the destination access.
write_offset str! - Byte offset of the destination access.
write_steps str! - Innermost contiguous bytes of the destination access.
is_transpose_mode bool - True for DMA transposes.
transpose_element_size str - Element size of a DMA transpose.
transpose_shape str - Shape of a DMA transpose.
transpose_from_shape str - Source shape of a DMA transpose.
transpose_to_shape str - Destination shape of a DMA transpose.
transpose_unroll_factor str - Unroll factor of a DMA transpose (not produced by nkidev).
trigger i64 - Start of the instruction that triggered the transfer.
completion i64 - End of the instruction that triggered the transfer.
"""

_FLOW = """
in_id i64! - Id of the earlier row (Instruction.id).
out_id i64! - Id of the later row (DmaPacketAggregated.id).
in_table str! - Table of in_id ('instruction').
out_table str! - Table of out_id ('dma_block' = DmaPacketAggregated).
dependency_type str - Kind of edge ('DMA_TRIGGER').
gap_time i64 ns Time between the end of the earlier row and the start of the later one.
"""

_ACTIVE_TIME = """
start_ts i64! ns Start of a busy interval.
end_ts i64! ns End of a busy interval.
engine str! - tensor, vector, scalar, gpsimd or sync (lowercase).
pcore_idx i64! - Physical NeuronCore (SPMD program).
duration_ns i64! ns end_ts - start_ts.
"""

_TENSOR_INFO = """
variable_name str - Tensor name.
type str - IN (kernel input) or OUT (kernel output).
format str - Memory layout (null).
shape str - Shape, space separated.
size i64 B Size in bytes.
node i64 - Storage id of the tensor in the emulator trace.
pcore_idx i64 - Physical NeuronCore (0).
load_to_sbuf_avg_size_bytes i64 - Average bytes per DMA that loaded this tensor into SBUF.
load_to_sbuf_total_size_bytes i64 - Bytes loaded from this tensor into SBUF.
load_to_sbuf_dma_count i64 - DMAs that loaded from this tensor into SBUF.
load_to_sbuf_repeat_factor f64 - load_to_sbuf_total_size_bytes / size (1.0 = every byte loaded once).
"""

_OPCODE_SUMMARY = """
engine str! - Engine (capitalized, as in Instruction.engine).
opcode str! - Opcode.
instruction_count i64! - Instructions with this engine and opcode.
instruction_time_ns i64! ns Sum of their durations.
active_time_ns i64! ns Union of their intervals.
active_time_percent f64! - active_time_ns as a percentage of the kernel time.
"""

_WARNING = """
message str! - What is missing or approximate.
category str! - Kind of warning.
"""

_DMA_QUEUES_INFO = """
name str! - Queue name.
type str! - Queue kind (see DmaPacket.queue_type).
pcore_idx i64! - Physical NeuronCore.
idx i64! - Queue index.
engine_idx i64! - DMA engine (-1: the queue spreads over all engines).
axi_port i64! - AXI port (-1: not modelled).
dram_channel i64! - DRAM channel (-1: not modelled).
"""

# Throttle / ThrottleSummary: the documented columns ([sources: explorer-schema] "Throttle", "ThrottleSummary"). nkidev
# writes the cost model's TensorE dI/dt limit (costmodel/throttle.py) as steps of THROTTLE_STEPS per ramp, each
# at the limit of its midpoint as k / THROTTLE_LEVELS (exact for a ramp from 50%), and `type` THROTTLE_TYPE.
_THROTTLE = """
duration i64! ns How long this utilization limit was in force.
k i32! - Allowed utilization level: the limit is k/n of full rate (throttling = 1 - k/n).
n i32! - Utilization levels (nkidev: 64).
timestamp i64! ns When the limit came into force, ns since the kernel started.
type str! - Kind of throttling: hardware writes activity_0, activity_1, ...; nkidev writes 'didt' (its TensorE dI/dt model).
pcore_idx i64 - Physical NeuronCore (SPMD program).
"""

_THROTTLE_SUMMARY = """
nc_idx i32! - NeuronCore (SPMD program for nkidev).
throttle_type str - Kind of throttling as in Throttle.type; 'all' sums every kind.
throttle_active_time_ns i64 ns Total time a limit below full rate was in force (sum of Throttle.duration).
throttle_active_time_percent f64 % throttle_active_time_ns as a percentage of the kernel time.
max_achievable_util_with_throttling_percent f64 % Time-weighted mean of k/n while throttled, a fraction (1.0: no throttling) as documented.
"""

_SCHEMA_FIELDS = """
table_name str! - Table name.
table_description str! - What a row of the table is.
field_name str! - Column name.
field_description str! - What the column holds.
field_example str - Example value.
field_type str! - integer, number, string or boolean.
field_required bool! - Whether the column is always filled.
field_format str - Arrow type (int64, int32, double, string, bool).
field_unit str - Unit (nanoseconds, seconds, bytes, bytes_per_second, gigahertz, percent, flops, cycles).
field_minimum f64 - Smallest allowed value.
field_maximum f64 - Largest allowed value.
field_enum_values str - Allowed values, comma separated.
"""

_METADATA = """
profile_schema_version str! - Schema version these tables follow.
ntff_version i32! - NTFF version (0: no device trace).
num_physical_cores i32! - NeuronCores in the launch (SPMD programs).
vnc_enabled bool! - Logical NeuronCore grouping in use.
first_hw_timestamp i64! ns First timestamp (0).
last_hw_timestamp i64! ns Last timestamp (kernel end).
first_ts str! - First timestamp, as text.
last_ts str! - Last timestamp, as text.
dma_ddr_bandwidth f64! B/s DMA bandwidth of one NeuronCore, all DMA engines together.
num_dma_engines_per_neuroncore i32! - DMA engines per NeuronCore.
hbm_ddr_bandwidth f64! B/s HBM bandwidth available to one NeuronCore.
tensor_engine_num_rows i64! - Tensor Engine PE rows.
tensor_engine_num_cols i64! - Tensor Engine PE columns.
tensor_engine_clock_freq f64! GHz Tensor Engine clock.
vector_engine_clock_freq f64! GHz Vector Engine clock.
vector_engine_num_channels i64! - Vector Engine lanes.
scalar_engine_clock_freq f64! GHz Scalar Engine clock.
scalar_engine_num_channels i64! - Scalar Engine lanes.
gpsimd_engine_clock_freq f64! GHz GpSimd Engine clock.
gpsimd_engine_num_channels i64! - GpSimd lanes.
neuroncore_clock_freq f64! GHz NeuronCore clock (the Tensor Engine clock).
ticks_per_nanosec i64! - Timestamp ticks per ns (1).
instance_type str - Instance type of the modelled target.
runtime_version str - Neuron runtime version (null).
collectives_version str - Collectives version (null).
driver_version str - Driver version (null).
explorer_version str - Version of the tool that wrote the profile ('nkidev <version>').
compiler_version str - Compiler version (null).
neuroncore_idx i64 - NeuronCore index (0).
neuron_device_idx i64 - Device index (0).
ultraserver_id i64 - UltraServer id (null).
ultraserver_type str - UltraServer type (null).
ultraserver_size i32 - UltraServer size (null).
ultraserver_instance_index i32 - UltraServer instance index (null).
s3_bucket_path str - S3 path (null).
profile_name str - Kernel name.
explorer_build_time str - When the profile was written (UTC, ISO 8601).
is_simulation bool - True: the timeline comes from nkidev's cost model, not from hardware.
"""


def _summary_spec() -> str:
    lines = [
        """
total_time f64 s Kernel time: from the first instruction or packet start to the last end.
neuroncore_cycle_count i64 cycles total_time in NeuronCore (Tensor Engine) cycles.
model_flops i64 flops FLOPs of the math the kernel computes: hardware_flops - transpose_flops.
hardware_flops i64 flops Sum of raw_flops of MATMUL rows (transposes included).
transpose_flops i64 flops Sum of raw_flops of TRANSPOSE rows (0 when there are none).
adjusted_hardware_flops i64 flops Sum of adjusted_flops of MATMUL rows.
adjusted_transpose_flops i64 flops Sum of adjusted_flops of TRANSPOSE rows.
mm_arithmetic_intensity f64 - (adjusted_hardware_flops - adjusted_transpose_flops) / (hbm_read_bytes + hbm_write_bytes).
peak_flops_bandwidth_ratio f64 - Tensor Engine peak FLOP/s over DMA bandwidth (the roofline ridge point).
trace_count i64 - Traces in the profile (1).
event_count i64 - Instruction and DMA packet rows.
total_row_count i64 - Rows written over all timeline tables.
dma_active_cycles i64 cycles dma_active_time in NeuronCore cycles.
dma_active_time f64 s Union of DMA packet intervals.
dma_active_time_percent f64 % dma_active_time / total_time.
static_dma_active_time f64 s DMA active time of compiler-generated (static) transfers.
dynamic_dma_active_time_percent f64 % Share of DMA active time from dynamic (DGE) transfers.
static_dma_active_time_percent f64 % Share of DMA active time from static transfers.
dma_transfer_average_bytes f64 B dma_transfer_total_bytes / dma_transfer_count.
dma_packet_time f64 s Sum of packet durations.
dma_transfer_time f64 s Sum of transfer (aggregated DMA) durations.
dma_transfer_count i64 - DMA transfers (DmaPacketAggregated rows).
dma_transfer_total_bytes i64 B Bytes moved by DMA.
dma_queue_count i64 - DMA queues used.
inputs_and_weights_size_bytes i64 B Bytes of the kernel inputs.
inputs_outputs_weights_size_bytes i64 B Bytes of the kernel inputs and outputs (the data that must move at least once).
weight_size_bytes i64 B Bytes of weights (0: kernels have inputs only).
static_dma_packet_count i64 - Packets of static transfers.
static_dma_size i64 B Bytes of static transfers.
dynamic_dma_packet_percent f64 % Share of packets from dynamic transfers.
static_dma_packet_percent f64 % Share of packets from static transfers.
dynamic_dma_size_percent f64 % Share of bytes from dynamic transfers.
static_dma_size_percent f64 % Share of bytes from static transfers.
mbu_estimated_percent f64 % HBM bytes moved / (total_time x dma_ddr_bandwidth).
mbu_min_read_util_percent f64 % Kernel input bytes / (total_time x dma_ddr_bandwidth).
hbm_write_bytes i64 B Bytes written to HBM.
hbm_read_bytes i64 B Bytes read from HBM.
sbuf_write_bytes i64 B Bytes written to SBUF.
sbuf_read_bytes i64 B Bytes read from SBUF.
spill_save_bytes i64 B Bytes spilled from SBUF to HBM when live SBUF demand exceeds capacity (PSUM-to-SBUF spills not counted).
spill_reload_bytes i64 B Spilled bytes reloaded from HBM into SBUF (both directions are DMAs on the spill queues).
psum_write_bytes i64 B Bytes written to PSUM.
psum_read_bytes i64 B Bytes read from PSUM.
psum_read_sbuf_write_count i64 - Instructions that move PSUM data into SBUF.
psum_read_sbuf_write_bytes i64 B Bytes moved from PSUM into SBUF.
input_queue_bytes i64 B Bytes on input queues.
output_queue_bytes i64 B Bytes on output queues.
weight_queue_bytes i64 B Bytes on weight queues (0).
""".strip()
    ]
    for kind, label in (("software_dynamic", "software DGE (GpSimd-generated)"), ("hardware_dynamic", "hardware DGE")):
        lines += [
            f"{kind}_dma_active_time f64 s DMA active time of {label} transfers.",
            f"{kind}_dma_active_time_percent f64 % Share of DMA active time from {label} transfers.",
            f"{kind}_dma_packet_count i64 - Packets of {label} transfers.",
            f"{kind}_dma_size i64 B Bytes of {label} transfers.",
            f"{kind}_dma_packet_percent f64 % Share of packets from {label} transfers.",
            f"{kind}_dma_size_percent f64 % Share of bytes from {label} transfers.",
        ]
    lines += _engine_lines("tensor", "Tensor Engine")
    lines += [
        "matmul_instruction_count i64 - MATMUL rows.",
        "mfu_estimated_percent f64 % (adjusted_hardware_flops - adjusted_transpose_flops) / (bf16 peak x total_time).",
        "mfu_max_achievable_estimated_percent f64 % MFU if the kernel ran at its Tensor Engine busy time.",
        "mfu_hlo_estimated_percent f64 % MFU from HLO FLOPs (null).",
        "mfu_hlo_max_achievable_estimated_percent f64 % Max MFU from HLO FLOPs (null).",
        "mfu_inst_estimated_percent f64 % MFU from instruction FLOPs (same as mfu_estimated_percent).",
        "mfu_inst_max_achievable_estimated_percent f64 % Same as mfu_max_achievable_estimated_percent.",
        "hfu_estimated_percent f64 % adjusted_hardware_flops / (bf16 peak x total_time).",
    ]
    lines += _engine_lines("vector", "Vector Engine") + _engine_lines("scalar", "Scalar Engine")
    lines += ["activate_instruction_time f64 s Sum of ACTIVATE durations.", "activate_instruction_count i64 - ACTIVATE rows."]
    lines += _engine_lines("sync", "Sync engine (DMA triggers)") + _engine_lines("gpsimd", "GpSimd Engine")
    lines += [
        "cc_op_time f64 s Collective op time (0: not modelled).",
        "cc_op_active_time f64 s Collective op active time (0).",
        "cc_op_active_time_percent f64 % Collective op active share (0).",
        "cc_op_count i64 - Collective ops (0).",
        "cc_cores_instruction_time f64 s CC-core instruction time (0).",
        "cc_cores_instruction_active_time f64 s CC-core active time (0).",
        "cc_cores_instruction_active_time_percent f64 % CC-core active share (0).",
        "cc_cores_instruction_count i64 - CC-core instructions (0).",
        "total_exec_time f64 s Same as total_time.",
        "total_active_time f64 s Union of all engine and DMA busy intervals.",
        "total_active_time_percent f64 % total_active_time / total_time.",
    ]
    return "\n".join(lines)


def _engine_lines(engine: str, label: str) -> list[str]:
    return [
        f"{engine}_engine_instruction_time f64 s Sum of {label} instruction durations.",
        f"{engine}_engine_active_time f64 s Union of {label} busy intervals.",
        f"{engine}_engine_active_time_percent f64 % {engine}_engine_active_time / total_time.",
        f"{engine}_engine_instruction_count i64 - {label} instructions.",
    ]


TABLE_DOCS: dict[str, str] = {
    "Instruction": "One row per engine instruction (an nc_matmul gives an LDWEIGHTS and a MATMUL row; a DMA gives a DMA_TRIGGER row).",
    "DmaPacket": "One row per share of a DMA transfer moved by one DMA engine.",
    "DmaPacketAggregated": "One row per DMA transfer (one nisa.dma_copy / dma_transpose / dma_compute).",
    "Flow": "Edges from the instruction that triggered a DMA to that DMA.",
    "ActiveTime": "Merged busy intervals per engine.",
    "TensorInfo": "Kernel inputs and outputs.",
    "Summary": "One row of whole-kernel metrics; times in seconds.",
    "OpcodeSummary": "Instruction count and time per engine and opcode.",
    "Metadata": "Profile provenance and the hardware numbers the cost model used.",
    "SchemaFields": "One row per table column: type, unit and description.",
    "Warning": "What the profile leaves out or approximates; read first.",
    "DmaQueuesInfo": "The DMA queues the transfers used.",
    "Throttle": "One row per utilization limit the Tensor Engine ran under (nkidev: its dI/dt ramp, in steps); empty: never throttled.",
    "ThrottleSummary": "Per NeuronCore and kind of throttling: how long a limit was in force and its mean; empty: never throttled.",
}

TABLES: dict[str, list[Column]] = {
    "Instruction": _parse(_INSTRUCTION),
    "DmaPacket": _parse(_DMA_PACKET),
    "DmaPacketAggregated": _parse(_DMA_PACKET_AGGREGATED),
    "Flow": _parse(_FLOW),
    "ActiveTime": _parse(_ACTIVE_TIME),
    "TensorInfo": _parse(_TENSOR_INFO),
    "Summary": _parse(_summary_spec()),
    "OpcodeSummary": _parse(_OPCODE_SUMMARY),
    "Metadata": _parse(_METADATA),
    "SchemaFields": _parse(_SCHEMA_FIELDS),
    "Warning": _parse(_WARNING),
    "DmaQueuesInfo": _parse(_DMA_QUEUES_INFO),
    "Throttle": _parse(_THROTTLE),
    "ThrottleSummary": _parse(_THROTTLE_SUMMARY),
}

TRACE_FILE = "trace.json"  # Chrome trace (Perfetto) next to the tables
HARDWARE_FILE = "hardware.json"  # every hardware number the cost model used (nkidev profiles only)
KERNEL_FILE = "nkidev-kernel.json"  # {"spec": "FILE::KERNEL", "case": N, "target": ...}: what was profiled (calibrate re-simulates it)
MARKER_FILE = "nkidev-profile.json"  # written last: says nkidev wrote this complete profile (what --force may replace)


def column_names(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type, nullable=not c.required) for c in TABLES[table]])


def schema_field_rows() -> dict[str, list]:
    """The SchemaFields table as columns (describes every table above, itself included)."""
    names = column_names("SchemaFields")
    out: dict[str, list] = {n: [] for n in names}
    for table, cols in TABLES.items():
        for c in cols:
            row = {
                "table_name": table,
                "table_description": TABLE_DOCS[table],
                "field_name": c.name,
                "field_description": c.description,
                "field_example": None,
                "field_type": c.type_name,
                "field_required": c.required,
                "field_format": str(c.type),
                "field_unit": c.unit or None,
                "field_minimum": None,
                "field_maximum": None,
                "field_enum_values": ",".join(DMA_QUEUE_TYPES) if c.name == "queue_type" else None,
            }
            for n in names:
                out[n].append(row[n])
    return out
