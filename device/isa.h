// The device instruction set as plain data: the contract codegen emits, the artifact format
// serialises field by field and the loader feeds back to the simulator. No pointers, no
// virtuals: every type is a value, equality-comparable and copyable. Semantics follow nki.isa
// (TRAINIUM.md §4); encodings are our own and make no claim of NEFF compatibility.
//
// Serialisation rule: append fields and enumerators only; never reorder or reuse them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "neuronc/dtype.h"

namespace neuronc::device {

// ---------------------------------------------------------------------------------------------
// Data types: the project's one vocabulary (neuronc/dtype.h). Engines read and write the types
// is_engine_dtype accepts; the program verifier refuses an operand of any other. Stored
// little-endian; the compiler stores bool as u8.
using DType = ::neuronc::DType;
using ::neuronc::dtype_is_float;
using ::neuronc::dtype_name;
using ::neuronc::dtype_size;
using ::neuronc::is_engine_dtype;

// ---------------------------------------------------------------------------------------------
// Memory references.
enum class MemoryKind : uint8_t { hbm = 0, sbuf = 1, psum = 2 };
std::string_view memory_name(MemoryKind m);

// One free-dimension level of an access pattern: `count` steps of `stride` elements (ARCH2:
// count is uint16 and stride int16 on hardware; the verifier checks those limits).
struct AccessLevel {
  int32_t stride = 1;
  uint32_t count = 1;
  bool operator==(const AccessLevel&) const = default;
};

// A tensor operand: a run of partitions [partition_start, partition_start + partition_count),
// each starting at the same byte `offset` (SBUF/PSUM: within the partition; HBM: into the HBM
// arena), and up to 4 free levels, outermost first. Element (p, i0..i3) lives at byte
// offset + (p - start) * partition_stride * size (HBM only; 0 for SBUF/PSUM)
//        + sum_j(i_j * levels[j].stride) * size.
struct MemRef {
  MemoryKind memory = MemoryKind::sbuf;
  DType dtype = DType::f32;
  uint16_t partition_start = 0;
  uint16_t partition_count = 1;
  uint64_t offset = 0;
  int64_t partition_stride = 0;  // elements between partition rows; HBM only
  uint8_t num_levels = 1;        // 1..4 used entries of `levels`
  std::array<AccessLevel, 4> levels{};

  uint64_t free_size() const;  // product of the used counts
  bool operator==(const MemRef&) const = default;
};

// Convenience constructors for the common cases (contiguous free dims).
MemRef sbuf(uint16_t partition_start, uint16_t partitions, uint64_t offset, DType dtype,
            uint32_t free_elems);
MemRef psum(uint16_t partition_start, uint16_t partitions, uint64_t offset, DType dtype,
            uint32_t free_elems);
// HBM view of a row-major [rows, cols] region starting at `offset` with `row_stride` elements
// between rows: rows map to partitions.
MemRef hbm(uint64_t offset, DType dtype, uint16_t rows, uint32_t cols, int64_t row_stride);

// ---------------------------------------------------------------------------------------------
// Engines and synchronisation.
enum class Engine : uint8_t { tensor = 0, vector = 1, scalar = 2, gpsimd = 3, sync = 4 };
inline constexpr int kNumEngines = 5;
std::string_view engine_name(Engine e);

// Wait until semaphore `semaphore` of this core is >= `value` (assumption: the only
// comparison, TRAINIUM.md §4.2). Semaphores only count up.
struct SemaphoreWait {
  uint16_t semaphore = 0;
  uint32_t value = 0;
  bool operator==(const SemaphoreWait&) const = default;
};
// Add `increment` to `semaphore` of core `core` (kThisCore = the issuing core) at completion.
inline constexpr uint16_t kThisCore = 0xffff;
struct SemaphoreSignal {
  uint16_t semaphore = 0;
  uint32_t increment = 1;
  uint16_t core = kThisCore;
  bool operator==(const SemaphoreSignal&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Operators.
enum class AluOp : uint8_t {
  bypass = 0,  // no operation (second op of tensor_scalar unused)
  add,
  subtract,
  multiply,
  divide,
  max,
  min,
  pow,
  mod,
  is_equal,
  not_equal,
  is_gt,
  is_ge,
  is_lt,
  is_le,
  logical_and,
  logical_or,
  logical_xor,
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  shift_left,
  shift_right,
  abs_max,
};
std::string_view alu_op_name(AluOp op);
bool alu_op_is_bitwise(AluOp op);

enum class ActivationFunction : uint8_t {
  identity = 0,
  relu,
  gelu_erf,
  gelu_tanh,
  silu,
  sigmoid,
  tanh,
  exp,
  log,
  sqrt,
  rsqrt,
  reciprocal,
  square,
  abs,
  sign,
  sin,
  cos,
  erf,
};
std::string_view activation_name(ActivationFunction f);

enum class ReduceOp : uint8_t { sum = 0, max, min };
enum class CompareOp : uint8_t { eq = 0, ne, gt, ge, lt, le };

// An fp32 immediate or a per-partition [P, 1] vector operand.
using ScalarOperand = std::variant<float, MemRef>;

// ---------------------------------------------------------------------------------------------
// Instructions (one struct per opcode). Shapes use the operands' partition counts and free
// sizes; the verifier checks that they agree.

// TensorE LoadStationary + MultiplyMoving. stationary [K, M] and moving [K, N] in SBUF (K the
// partitions), dst [M, N] in PSUM: dst[m][n] (+)= sum_k stationary[k][m] * moving[k][n].
struct MatMul {
  MemRef dst, stationary, moving;
  bool accumulate = false;  // false: first write of a group overwrites; true: adds
  bool operator==(const MatMul&) const = default;
};

// Swap partition and free axes. TensorE: src <= [128,128] SBUF, dst PSUM, computed as a matmul
// with the identity (v2 spreads NaN/Inf, TRAINIUM.md §7). VectorE: 32x32 blocks.
struct Transpose {
  MemRef dst, src;
  bool operator==(const Transpose&) const = default;
};

// ScalarE: dst = func(src * scale + bias); optional per-partition sum of the results into
// `accumulate_dst` ([P, 1] fp32 or other float dtype).
struct Activation {
  MemRef dst, src;
  ActivationFunction function = ActivationFunction::identity;
  ScalarOperand scale = 1.0f;
  ScalarOperand bias = 0.0f;
  std::optional<MemRef> accumulate_dst;
  bool operator==(const Activation&) const = default;
};

// dst = in0 op in1 element-wise.
struct TensorTensor {
  MemRef dst, in0, in1;
  AluOp op = AluOp::add;
  bool operator==(const TensorTensor&) const = default;
};

// t = reverse0 ? operand0 op0 x : x op0 operand0; y = op1 == bypass ? t : (t op1 operand1,
// reversed likewise).
struct TensorScalar {
  MemRef dst, src;
  AluOp op0 = AluOp::multiply;
  ScalarOperand operand0 = 1.0f;
  bool reverse0 = false;
  AluOp op1 = AluOp::bypass;
  ScalarOperand operand1 = 0.0f;
  bool reverse1 = false;
  bool operator==(const TensorScalar&) const = default;
};

// Reduce the innermost `num_axes` free levels of src (fp32), optionally negated. dst holds the
// remaining outer levels per partition.
struct TensorReduce {
  MemRef dst, src;
  ReduceOp op = ReduceOp::sum;
  uint8_t num_axes = 1;
  bool negate = false;
  bool operator==(const TensorReduce&) const = default;
};

// Copy with cast (bit-exact when the dtypes match, except v2 ScalarE which goes through fp32).
struct TensorCopy {
  MemRef dst, src;
  bool operator==(const TensorCopy&) const = default;
};

struct Memset {
  MemRef dst;
  double value = 0.0;  // converted to dst dtype (integers exactly)
  bool operator==(const Memset&) const = default;
};

// GpSimd: dst[p, i...] = offset + p * channel_multiplier + sum_j i_j * pattern[j] (int32 math),
// where i_j runs over dst's access-pattern counts.
struct Iota {
  MemRef dst;
  int32_t offset = 0;
  int32_t channel_multiplier = 0;
  std::array<int32_t, 4> pattern{};
  bool operator==(const Iota&) const = default;
};

// GpSimd: v = iota expression; dst = compare(v, 0) ? src : on_false.
struct AffineSelect {
  MemRef dst, src;
  int32_t offset = 0;
  int32_t channel_multiplier = 0;
  std::array<int32_t, 4> pattern{};
  CompareOp compare = CompareOp::ge;
  float on_false = 0.0f;
  bool operator==(const AffineSelect&) const = default;
};

// VectorE tensor_copy_predicated: dst = (pred != 0) != reverse ? src : dst.
struct CopyPredicated {
  MemRef dst, src, predicate;
  bool reverse = false;
  bool operator==(const CopyPredicated&) const = default;
};

// VectorE select: dst = pred != 0 ? on_true : on_false.
struct Select {
  MemRef dst, predicate, on_true;
  ScalarOperand on_false = 0.0f;
  bool operator==(const Select&) const = default;
};

// GpSimd local_gather (ISA226): per 16-partition group, index (u16, partition-major) selects a
// partition j of the group's src slice; elements_per_index contiguous elements are copied.
struct LocalGather {
  MemRef dst, src, index;
  uint32_t elements_per_index = 1;  // 1, 2, 4, 8, 16 or 32
  uint32_t num_valid_indices = 0;   // per 16-partition group
  bool operator==(const LocalGather&) const = default;
};

// DMA transfer (HBM<->SBUF, HBM<->HBM, SBUF<->SBUF; never PSUM), cast through fp32 when the
// dtypes differ. Triggered by the engine whose stream holds it; runs on DMA queue `queue`;
// waits apply to the trigger, signals fire when the whole transfer is done.
//
// With `row_index` it is an indirect DMA (descriptors generated from data: software DGE on
// GpSimd on NC-v2, hardware DGE on NC-v3/v4, TRAINIUM.md §2.1, DGE): `src` is one row of a table
// of `table_rows` rows in HBM, row r starting `r * src.partition_stride` elements after
// src.offset with src's access pattern (src.partition_count is 1); partition p of dst receives
// row row_index[p], the first element of partition p of `row_index` (an integer tile in SBUF with
// dst's partition count). An index outside [0, table_rows) stops the run with an error.
// With `scatter` as well it runs the other way (an indirect store, TRAINIUM.md §4.2 dma_copy:
// software DGE "supports gather / scatter with a vector offset"): `dst` is one row of a table of
// `table_rows` rows in HBM (row stride dst.partition_stride), and partition p of `src` is written
// to row row_index[p] (row_index has src's partition count). Rows are written in partition
// order, so of two partitions naming the same row the later one's data stays.
struct DmaCopy {
  DmaCopy() = default;
  DmaCopy(const MemRef& d, const MemRef& s, uint16_t q = 0) : dst(d), src(s), queue(q) {}
  MemRef dst, src;
  uint16_t queue = 0;  // 0..15
  std::optional<MemRef> row_index;
  uint32_t table_rows = 0;
  bool scatter = false;  // with row_index: the index addresses dst rows (format 1.3)
  bool operator==(const DmaCopy&) const = default;
};

// The HBM bytes an indirect DMA may touch: every row of its table (a bounding pattern with the
// row as the outermost level; the table row must have at most 3 levels and a row stride in
// int32). The table is src for a gather, dst for a scatter.
MemRef indirect_table_footprint(const DmaCopy& d);

enum class CollectiveKind : uint8_t { all_reduce = 0, all_gather, reduce_scatter };
std::string_view collective_name(CollectiveKind k);

// Collective over all cores of the program (HBM operands). Each core's stream holds the same
// sequence of collectives; the n-th collective of every core forms one operation. all_gather:
// dst = concat(src of core 0..N-1); reduce_scatter: dst = chunk `core` of the reduction.
struct Collective {
  CollectiveKind kind = CollectiveKind::all_reduce;
  ReduceOp op = ReduceOp::sum;
  MemRef dst, src;
  bool operator==(const Collective&) const = default;
};

// Only waits and signals (a barrier on one engine).
struct Nop {
  bool operator==(const Nop&) const = default;
};

// VectorE tensor_tensor_scan (ISA226): along the free axis of each partition,
// state = initial; state = (in0[i] op0 state) op1 in1[i]; dst[i] = state.
struct TensorTensorScan {
  MemRef dst, in0, in1;
  float initial = 0.0f;
  AluOp op0 = AluOp::multiply;
  AluOp op1 = AluOp::add;
  bool operator==(const TensorTensorScan&) const = default;
};

using Operation = std::variant<MatMul, Transpose, Activation, TensorTensor, TensorScalar,
                               TensorReduce, TensorCopy, Memset, Iota, AffineSelect, CopyPredicated,
                               Select, LocalGather, DmaCopy, Collective, Nop, TensorTensorScan>;

// Opcode = the variant index, stable for serialisation.
enum class Opcode : uint8_t {
  matmul = 0,
  transpose,
  activation,
  tensor_tensor,
  tensor_scalar,
  tensor_reduce,
  tensor_copy,
  memset,
  iota,
  affine_select,
  copy_predicated,
  select,
  local_gather,
  dma_copy,
  collective,
  nop,
  tensor_tensor_scan,
};
std::string_view opcode_name(Opcode op);

inline constexpr uint32_t kNoDebugId = 0xffffffffu;

struct Instruction {
  Operation op;
  std::vector<SemaphoreWait> waits;      // all must hold before the instruction issues
  std::vector<SemaphoreSignal> signals;  // applied when it completes
  uint32_t debug_id = kNoDebugId;        // index of the IR node (filled by codegen)

  Opcode opcode() const { return static_cast<Opcode>(op.index()); }
  bool operator==(const Instruction&) const = default;
};

// One NeuronCore's program: an in-order stream per engine.
struct CoreProgram {
  std::array<std::vector<Instruction>, kNumEngines> streams;
  std::vector<Instruction>& stream(Engine e) { return streams[static_cast<int>(e)]; }
  const std::vector<Instruction>& stream(Engine e) const { return streams[static_cast<int>(e)]; }
  bool operator==(const CoreProgram&) const = default;
};

// A whole device program. HBM is one arena shared by all cores; the caller binds inputs,
// weights and outputs at byte offsets inside it.
struct Program {
  std::vector<CoreProgram> cores;
  uint32_t num_semaphores = 0;  // per core
  uint64_t hbm_size = 0;        // bytes of the HBM arena
  bool operator==(const Program&) const = default;
};

// --- The operand schema -------------------------------------------------------------------
// How an instruction uses one of its memory operands.
enum class Access : uint8_t {
  read,
  write,
  read_write,  // read, then written (an accumulating or predicated destination)
  unused,      // held by the instruction but not touched (TensorScalar's operand1 under bypass)
};

}  // namespace neuronc::device

// The field schema of every instruction, for_each_operand and operands() derive from it.
#include "device/isa_schema.h"  // IWYU pragma: export
