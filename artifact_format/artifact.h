// The contents of a neuronc artifact as plain C++ values: what the writer serialises and what
// the reader hands back after decoding and checking. One struct per table of artifact.fbs; the
// device programs are device::Program values (device/isa.h is the contract). No FlatBuffers
// type appears here. Thread-safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "device/isa.h"
#include "kernels/arg.h"

namespace neuronc::artifact {

// Format version this build writes and the newest it reads (docs/ARTIFACT_FORMAT.md).
inline constexpr uint16_t kFormatMajor = 1;
// 1.1: indirect dma_copy (row_index). 1.2: state (Signature::states, ValueKind::state) and
// entries. 1.3: indirect scatter (DmaCopy::scatter) and absent constants (timing-only
// artifacts). 1.4: replicated programs (DeviceProgram::replicas). 1.5: symbol values
// (ValueKind::symbol: a program reads a dynamic dim's size as data). A writer stamps the lowest
// minor whose readers understand the file (format_minor_needed), so an artifact without state
// stays readable by 1.1 loaders.
inline constexpr uint16_t kFormatMinor = 5;

// Element types of plan values: the project's one vocabulary (neuronc/dtype.h), whose first
// kNumTensorDTypes numbers are artifact.fbs TensorDType (isa_codec.cpp checks they agree).
using TensorDType = ::neuronc::DType;
using ::neuronc::kNumTensorDTypes;

// A dimension: `value` when symbol < 0, else coeff * (value of symbols[symbol]).
struct Dim {
  int64_t value = 0;
  int32_t symbol = -1;
  int64_t coeff = 1;
  static Dim constant(int64_t v) { return {v, -1, 1}; }
  static Dim sym(int32_t s, int64_t coeff = 1) { return {0, s, coeff}; }
  bool is_constant() const { return symbol < 0; }
  bool operator==(const Dim&) const = default;
};

struct Symbol {
  std::string name;
  int64_t min = 1;
  int64_t max = std::numeric_limits<int64_t>::max();  // inclusive
  bool operator==(const Symbol&) const = default;
};

// state: a value the loader's Session keeps from one run to the next (Signature::states).
// symbol (format 1.5): a one-element value holding the real value of signature symbol `index`
// in the run (not a bucket's padded value), which the loader writes in the value's dtype: a
// program that reads a dynamic dim's size as data (`x / x.size(1)`) reads it here.
enum class ValueKind : uint8_t { intermediate = 0, input, constant, state, symbol };
inline constexpr uint8_t kNumValueKinds = 5;

// A tensor of the execution plan: always contiguous row-major.
struct Value {
  std::string name;
  TensorDType dtype = TensorDType::f32;
  std::vector<Dim> dims;
  ValueKind kind = ValueKind::intermediate;
  uint32_t index = 0;  // signature input, constant, state or symbol index
  bool operator==(const Value&) const = default;
};

// The values an integer input may hold: [lo, hi), because every element indexes `what`.
struct IndexBound {
  int64_t lo = 0;
  int64_t hi = 0;    // exclusive
  std::string what;  // "rows of embedding table 'wte.weight' (node 'embedding')"
  bool operator==(const IndexBound&) const = default;
};

struct TensorSpec {
  std::string name;
  uint32_t value = 0;                                    // index into ExecutionPlan::values
  std::optional<IndexBound> index_bound = std::nullopt;  // inputs only
  bool operator==(const TensorSpec&) const = default;
};

// A tensor the program reads and rewrites, kept by the Session across runs (a KV cache,
// BatchNorm's running statistics): plan value `value` holds it when a run starts, `update` its
// new content when the run ends (== value when a run leaves it as it is), and constant
// `initial` what a new Session starts from. Static shape; `update` has value's dtype and dims.
struct StateSpec {
  std::string name;  // the buffer's FQN ("model.layers.0.self_attn.k_cache")
  uint32_t value = 0;
  uint32_t update = 0;
  uint32_t initial = 0;  // index into ArtifactContents::constants
  bool operator==(const StateSpec&) const = default;
};

// One of several programs an artifact holds over the same constants and states (format 1.2): a
// prefill and a decode program, the shape buckets of one model. Its steps are
// [first_step, first_step + num_steps) of the plan; it reads its own `inputs` (indices into
// Signature::inputs) and writes its own `outputs` (into Signature::outputs); `state_updates`
// gives, per Signature::states entry, the plan value holding its new content after the entry
// runs (the state's own value when the entry leaves it). With entries, every input, output and
// step belongs to exactly one, names are unique within an entry, and StateSpec::update is the
// state's value. Without, the plan is one implicit entry.
// How a shape bucket's symbol runs smaller values: only its own value (exact), or padded at the
// end of its dims with zeros or with copies of the last real index (edge).
enum class BucketPadding : uint8_t { exact = 0, zeros, edge };
inline constexpr int kNumBucketPaddings = 3;

// A shape bucket (EntrySpec::bucket): the entry is program `group` compiled with symbol
// symbols[i] (Signature::symbols) bound to values[i]; unless padding[i] is exact it also runs
// any smaller value, its inputs padded at the end of that symbol's dims and its outputs cut back.
// input_dims / output_dims: per entry input / output, its declared dims (coeff x symbol or
// constant), each equal to the entry's plan value dim at the bucket's values.
struct ShapeBucket {
  std::string group;
  std::vector<uint32_t> symbols;
  std::vector<int64_t> values;
  std::vector<BucketPadding> padding;
  std::vector<std::vector<Dim>> input_dims;
  std::vector<std::vector<Dim>> output_dims;
  bool operator==(const ShapeBucket&) const = default;
};

struct EntrySpec {
  std::string name;
  uint32_t first_step = 0;
  uint32_t num_steps = 0;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<uint32_t> state_updates;
  std::optional<ShapeBucket> bucket;
  bool operator==(const EntrySpec&) const = default;
};

struct Signature {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<Symbol> symbols;
  std::vector<StateSpec> states;   // format 1.2
  std::vector<EntrySpec> entries;  // format 1.2
  bool operator==(const Signature&) const = default;
};

// Copy of a whole plan value to/from the HBM arena at `hbm_offset`.
struct Binding {
  uint32_t value = 0;
  uint64_t hbm_offset = 0;
  bool operator==(const Binding&) const = default;
};

struct DeviceCall {
  uint32_t program = 0;
  std::vector<Binding> inputs;
  std::vector<Binding> outputs;
  bool operator==(const DeviceCall&) const = default;
};

// Host-op arguments: the host kernels' own vocabulary (kernels/arg.h).
using kernels::Arg;
using kernels::arg_kind_name;
using kernels::ArgKind;
using kernels::kNumArgKinds;

// A host-fallback operation: ATen name and overload ("aten.cumsum.default"), its arguments in
// schema order, the plan values it defines.
struct HostOp {
  std::string op;
  std::vector<Arg> args;
  std::vector<uint32_t> outputs;
  uint32_t debug_id = device::kNoDebugId;
  bool operator==(const HostOp&) const = default;
  const Arg* arg(std::string_view name) const;
};

using Step = std::variant<DeviceCall, HostOp>;

struct ExecutionPlan {
  std::vector<Value> values;
  std::vector<Step> steps;
  bool operator==(const ExecutionPlan&) const = default;
};

struct DeviceProgram {
  std::string name;
  device::Program program;
  uint32_t sbuf_peak_bytes = 0;  // per partition
  uint32_t psum_peak_bytes = 0;
  // A tensor-parallel program (format 1.4): 0, or the number of cores that run copies of core 0,
  // copy r with its HBM operands moved by r * replica_stride (device/replicate.h). The file
  // holds core 0 only. `program` is then either core 0 alone, with hbm_size <= replica_stride
  // (as the compiler hands it to the writer, and read_artifact returns it unverified or with
  // ReadOptions::expand_replicas false, for what only times it), or every copy, with hbm_size =
  // replicas * replica_stride (as read_artifact returns it by default, so whatever runs it sees
  // every core).
  uint32_t replicas = 0;
  uint64_t replica_stride = 0;
  // Whether `program` is core 0 alone of a replicated program.
  bool holds_core0_alone() const { return replicas > 0 && program.cores.size() == 1; }
  // The HBM bytes the program runs in: all copies' when replicated.
  uint64_t hbm_size() const {
    return replicas > 0 ? uint64_t{replicas} * replica_stride : program.hbm_size;
  }
  bool operator==(const DeviceProgram&) const = default;
};

inline constexpr uint64_t kHostOnly = std::numeric_limits<uint64_t>::max();
// Constant::segment of a weight the file does not hold (format 1.3): the program was compiled
// from a weights-free export, so the artifact is timing-only (ArtifactContents::timing_only).
inline constexpr uint32_t kAbsentSegment = std::numeric_limits<uint32_t>::max();

struct Constant {
  std::string name;
  uint32_t value = 0;    // the plan value it backs
  uint32_t segment = 0;  // index into segments
  uint64_t offset = 0;   // within the segment's raw bytes
  uint64_t size = 0;
  uint64_t hbm_offset = kHostOnly;  // placed in the HBM arena of every session unless kHostOnly
  bool absent() const { return segment == kAbsentSegment; }
  bool operator==(const Constant&) const = default;
};

struct MemoryPlan {
  uint64_t hbm_arena_bytes = 0;
  uint32_t sbuf_peak_bytes = 0;
  uint32_t psum_peak_bytes = 0;
  bool operator==(const MemoryPlan&) const = default;
};

struct DebugNode {
  std::string name;
  std::string op;
  std::string file;
  int32_t line = 0;
  std::string stack;
  bool operator==(const DebugNode&) const = default;
};

struct Producer {
  std::string name = "neuronc";
  std::string version;
  bool operator==(const Producer&) const = default;
};

inline constexpr size_t kSourceSha256Bytes = 32;  // Source::sha256, when known

struct Source {
  std::string container;
  std::string schema_version;
  std::string torch_version;
  std::vector<uint8_t> sha256;  // kSourceSha256Bytes bytes, or empty
  std::string file_name;
  bool operator==(const Source&) const = default;
};

struct CompileOptions {
  std::string auto_cast = "none";
  int32_t opt_level = 2;
  std::vector<std::pair<std::string, std::string>> extra;  // sorted by key
  bool operator==(const CompileOptions&) const = default;
};

enum class Compression : uint8_t { none = 0, zstd = 1 };

struct SegmentInfo {
  std::string name;
  uint64_t offset = 0;  // relative to the segment region (FileHeader::segments_offset)
  uint64_t stored_size = 0;
  uint64_t raw_size = 0;
  Compression compression = Compression::none;
  uint32_t crc32c = 0;  // of the stored bytes
  bool operator==(const SegmentInfo&) const = default;
};

// Everything in the root table. Segment bytes live outside (see reader.h / writer.h).
struct ArtifactContents {
  uint16_t format_major = kFormatMajor;
  uint16_t format_minor = kFormatMinor;
  Producer producer;
  Source source;
  std::string target = "trn1";
  uint32_t num_cores = 1;
  CompileOptions options;
  Signature signature;
  ExecutionPlan plan;
  std::vector<DeviceProgram> programs;
  MemoryPlan memory_plan;
  std::vector<Constant> constants;
  std::vector<DebugNode> debug_nodes;
  std::vector<SegmentInfo> segments;
  // A constant's bytes are absent: compiled from a weights-free export, the artifact has its
  // programs and costs but computes no outputs (loaders time it; they do not run it).
  bool timing_only() const;
  bool operator==(const ArtifactContents&) const = default;
};

// Plan steps [first, first + count) of entry `e`: the whole plan when there are no entries.
struct StepRange {
  uint32_t first = 0;
  uint32_t count = 0;
};
StepRange entry_steps(const ArtifactContents& c, size_t e);
// The name loaders give the one program of an artifact without entries.
inline constexpr const char* kImplicitEntryName = "main";
// The index of entry `name` of `c` (0 for kImplicitEntryName when it has no entries), or nullopt.
std::optional<size_t> find_entry(const ArtifactContents& c, std::string_view name);

// The lowest format minor (of kFormatMajor) whose readers understand `c`.
uint16_t format_minor_needed(const ArtifactContents& c);

// Static element count of a value; nullopt when a dim is symbolic.
std::optional<uint64_t> static_numel(const Value& v);

}  // namespace neuronc::artifact
