// codegen: lowers one device partition of an ir::Graph to a device::Program for one NeuronCore,
// with the HBM arena layout the driver needs to bind inputs, outputs and constants.
//
//   auto part = codegen::compile_partition(g, p.nodes, p.inputs, p.outputs, target, {});
//   part.program;      // engine streams, semaphores, hbm_size
//   part.inputs;       // where each partition input goes in the arena (row-major, device dtype)
//   part.constants;    // bytes the driver places in the arena (weights, folded constants)
//
// Thread-safety: compile_partition is re-entrant; it reads the graph (never mutates it) and may
// run kernels' lowering on oneTBB workers. The output is byte-identical for any thread count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device/isa.h"
#include "device/target.h"
#include "ir/graph.h"

namespace neuronc::codegen {

// An unsupported node, a symbolic shape or a resource that does not fit. The message starts
// with the node (`node->describe()`) when one is involved.
class Error : public ir::Error {
 public:
  using ir::Error::Error;
};

// Where the ProgramEmitter puts each kernel's SBUF region (emitter.cpp, place_region).
enum class RegionPolicy : uint8_t {
  recent,  // overlap only the oldest recent kernels, leaving room for the next one
  ring,    // right after the previous region, wrapping around
};

struct CodegenOptions {
  // oneTBB workers used to lower kernels: 0 = oneTBB's default, 1 = serial. The Program is
  // byte-identical whatever the value.
  int threads = 0;
  // Store 2-D weights that only feed matmuls transposed ([in, out]) so TensorE's moving operand
  // loads contiguously. The constant's binding says so (`ConstantBinding::transposed`).
  bool transpose_matmul_weights = true;
  // Weights laid out from their payloads get a ConstantBinding::fill instead of bytes, made
  // when the artifact is written (the compiler's one-program, one-core compiles); otherwise
  // every binding holds its bytes.
  bool defer_constant_bytes = false;
  // Fuse single-use element-wise chains into one kernel and unary activations into the
  // producing matmul's epilogue (intermediates then never reach HBM).
  bool fuse = true;
  // Concatenation in place: a convolution, pooling, element-wise or group-norm kernel whose
  // result is only a cat input (once) writes straight into its slice of the cat's buffer, so
  // the cat moves no bytes for it.
  bool cat_in_place = true;
  // Column-blocked weights (ConstantBinding::column_block): a linear weight streamed in
  // n-blocks narrower than its rows is stored block by block, so each block loads as one
  // contiguous run (-O1 and up).
  bool block_weights = true;
  // Update in place: index_copy (a KV-cache update) writes its rows into self's own buffer when
  // self is whole, contiguous, not a partition output and read by nothing else (a partition
  // input: each device call has its own copy), so only the written rows move instead of a copy
  // of the whole tensor first (-O1 and up).
  bool update_in_place = true;
  // Residual epilogue: a convolution or matmul-family node (linear, addmm, mm, bmm, baddbmm,
  // matmul; optionally through a fused float cast) whose only use is `add.Tensor` (alpha 1)
  // with a tensor of the same shape and dtype, optionally followed by a unary activation, runs
  // as one kernel: the residual tile is loaded next to the PSUM result and added on the way
  // out. A matmul fuses only when the residual is defined before it and its view fits the
  // kernel's [batch, M, N] tile order. Requires `fuse`.
  bool fuse_residual = true;
  // Channel scale in the input load: `mul(x, s)` with s one value per (batch, channel) — the
  // squeeze-and-excitation rescale — whose only use is a convolution's input is applied to
  // each input band in SBUF (one VectorE per-partition multiply), so x * s never reaches HBM.
  // Only when the convolution keeps channels on the partitions and x, the product and the
  // convolution's SBUF operands share one dtype (no extra rounding). Requires `fuse`.
  bool fuse_channel_scale = true;
  // Narrowing store: matmul -> float cast -> unary activation -> narrowing float cast (gelu ->
  // bf16 under `--auto-cast matmul`) is one kernel that stores the activation's result in the
  // narrow dtype, instead of storing it wide for the next load DMA to convert. Same rounding
  // (ScalarE rounds its fp32 result once to the destination dtype). Requires `fuse`.
  bool fuse_narrowing_store = true;
  // Store-to-load forwarding (store_forwarding.h): a load of bytes a store wrote from an SBUF
  // tile that is still intact becomes an SBUF copy on GpSimdE, and a scratch store nothing
  // loads any more is dropped, so activations stay in SBUF between kernels (-O2 and up).
  bool forward_stores = true;
  // Instruction scheduling (scheduler.h): each kernel's instructions are list-scheduled over
  // the cost model into the dependency-respecting order estimated to finish first; then the
  // whole program's candidate orders across kernels (an instruction moving ahead of at most
  // each of `schedule_windows` others) are timed by the device model against the program order
  // and the fastest is kept (-O2 and up; -O3 searches three windows, 1024, 4096 and 16384).
  bool schedule = true;
  std::vector<size_t> schedule_windows = {4096};
  // With scheduling, the SBUF placements tried (each with every order above; the fastest
  // program is kept). Without, the first one.
  std::vector<RegionPolicy> region_policies = {RegionPolicy::recent, RegionPolicy::ring};
};

// A partition input or output: a row-major contiguous tensor of `dtype` at `offset` in the HBM
// arena. IR i64 is i32 on the device, bool is u8, f64 is f32 (the loader converts).
struct TensorBinding {
  std::string name;  // the IR value's name
  device::DType dtype = device::DType::f32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// Bytes codegen wants at `offset` in the arena before the program runs: a weight (graph input
// with a payload) converted to the device dtype, or a tensor codegen computed at compile time
// (arange, full, ...). `transposed` means the bytes hold the 2-D tensor's transpose, row-major.
struct ConstantBinding {
  std::string name;    // the IR value's name
  std::string target;  // parameter/buffer FQN when the value is a graph input, else ""
  device::DType dtype = device::DType::f32;
  std::vector<int64_t> shape;  // the IR shape (before any transposition)
  bool transposed = false;
  // Non-empty: the bytes hold the tensor permuted by it, row-major (stored dim i = IR dim
  // permutation[i]); convolution weights are stored [C/g, KH, KW, O]. `shape` stays the IR's.
  std::vector<int64_t> permutation;
  // Non-zero P: the rows of the first stored dim (R of them, R a multiple of P) are stored
  // interleaved, stored row p * (R / P) + q holding row q * P + p, so the rows one partition p
  // reads for every P-row chunk q lie back to back. Convolution weights with more than one
  // 128-channel chunk: one DMA per weight, full-rate per-engine runs (TRAINIUM.md §5.3).
  int64_t row_interleave = 0;
  // Non-zero W (with `transposed`): the [K, N] transpose is stored as column blocks of W
  // columns, block b = columns [b*W, min(N, b*W + W)) row-major [K, w_b], blocks back to back,
  // so the matmul's weight block for those columns is one contiguous run in HBM (a linear
  // weight too wide for whole rows in SBUF: TRAINIUM.md §5.3, full DMA rate from 32 KiB).
  int64_t column_block = 0;
  uint64_t offset = 0;
  // The bytes (numel x dtype size): held in `data`, or made by `fill` into the span it is given
  // (then `data` is empty) for a weight laid out from its payload, so the artifact writer
  // makes them where they go and no laid-out copy of the model is held (ConstantFill).
  std::vector<std::byte> data;
  std::function<void(std::span<std::byte>)> fill;
  // With `fill`, when the stored bytes are the payload's as they are (its dtype, row-major):
  // those bytes, which `fill` keeps alive (artifact::ConstantFill::as_is).
  std::span<const std::byte> as_is;
  void (*drop_as_is)(const std::byte*, size_t) = nullptr;  // the payload's drop_pages
  // The payload's read_bytes and its owner (artifact::ConstantFill::read_as_is).
  bool (*read_as_is)(const void*, const std::byte*, size_t, std::byte*) = nullptr;
  const void* as_is_owner = nullptr;
  // With `fill`: which payload bytes, in which dtype, it reads ("<dtype>@<address>+<offset>"),
  // the same for every binding of one weight within one compile (sharing between partitions).
  std::string fill_source;
  // The weight's bytes are absent (ir::ConstantPayload::absent: a weights-free export); `data`
  // is empty and the artifact is timing-only.
  bool absent = false;
  // The parameter/buffer FQN whose values it holds, through compile-time dtype conversions (a
  // weight cast to bf16 by --auto-cast); "" for constants codegen made up (creation ops). With
  // the dtype, shape and layout it identifies the constant across partitions and programs.
  std::string origin;
};

// What instruction debug_id `i` came from: debug_names[i].
struct DebugName {
  std::string node;      // IR node name, or "<output copy>" for copies codegen adds
  std::string op;        // "aten.linear.default"
  std::string location;  // node->location().to_string()
};

struct CodegenStats {
  std::array<uint64_t, device::kNumEngines> instructions{};  // per engine stream
  uint64_t dma_transfers = 0;
  uint64_t semaphore_waits = 0;
  uint64_t kernels = 0;
  uint64_t kernels_scheduled = 0;           // kernels whose instructions the scheduler reordered
  bool program_scheduled = false;           // a cross-kernel order beat the program order
  uint64_t hbm_bytes = 0;                   // arena size
  uint64_t hbm_scratch_bytes = 0;           // intermediates after liveness-based reuse
  uint64_t hbm_scratch_unshared_bytes = 0;  // the same without reuse
  uint32_t sbuf_peak_bytes = 0;             // per partition, largest kernel
  uint32_t psum_peak_bytes = 0;             // per partition, largest kernel
  uint64_t loads_forwarded = 0;             // loads that became SBUF copies (forward_stores)
  uint64_t stores_elided = 0;               // scratch stores nothing read any more
  uint64_t dma_bytes_forwarded = 0;         // DMA bytes those two no longer move
  double flops = 0;  // model matmul FLOPs (2*M*N*K), no transposes or one-hots
};

struct CompiledPartition {
  device::Program program;
  std::vector<TensorBinding> inputs;   // in the order of the `inputs` argument (no constants)
  std::vector<TensorBinding> outputs;  // in the order of the `outputs` argument
  std::vector<ConstantBinding> constants;
  std::vector<DebugName> debug_names;  // indexed by Instruction::debug_id
  CodegenStats stats;
};

// Compiles the device partition `nodes` (in execution order) of `g`. `inputs` are the values
// it reads from elsewhere (graph inputs, constants, other partitions' results); `outputs` the
// values it defines that are read elsewhere. Throws codegen::Error.
CompiledPartition compile_partition(const ir::Graph& g, const std::vector<const ir::Node*>& nodes,
                                    const std::vector<const ir::Value*>& inputs,
                                    const std::vector<const ir::Value*>& outputs,
                                    const device::Target& target, const CodegenOptions& opts);

// The bytes `cb` (a constant of a program compiled from another graph of the same structure)
// holds when the value it names is taken from `g` instead: the same layout over g's weights. A
// tensor-parallel compile builds one program and fills each core's constants from its own
// graph (passes::TensorParallel: the graphs differ only in their weights' bytes). Nullopt for a
// constant codegen made up (a creation op's), which is the same in every such graph. Throws
// codegen::Error when g has no such value or it is not computable from g's weights.
std::optional<std::vector<std::byte>> constant_bytes_for(const ConstantBinding& cb,
                                                         const ir::Graph& g);

// IR dtype -> device dtype (i64 -> i32, bool -> u8, f64 -> f32). Throws for complex.
device::DType device_dtype(ir::DType t);

}  // namespace neuronc::codegen
