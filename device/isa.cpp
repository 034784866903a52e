// Names, sizes and operand lists of the device ISA (isa.h).
#include "device/isa.h"

#include <algorithm>
#include <cstdint>

namespace neuronc::device {

std::string_view memory_name(MemoryKind m) {
  switch (m) {
    case MemoryKind::hbm:
      return "hbm";
    case MemoryKind::sbuf:
      return "sbuf";
    case MemoryKind::psum:
      return "psum";
  }
  return "?";
}

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::tensor:
      return "tensor";
    case Engine::vector:
      return "vector";
    case Engine::scalar:
      return "scalar";
    case Engine::gpsimd:
      return "gpsimd";
    case Engine::sync:
      return "sync";
  }
  return "?";
}

std::string_view alu_op_name(AluOp op) {
  static constexpr std::string_view kNames[] = {
      "bypass",      "add",        "subtract",    "multiply",    "divide",      "max",
      "min",         "pow",        "mod",         "is_equal",    "not_equal",   "is_gt",
      "is_ge",       "is_lt",      "is_le",       "logical_and", "logical_or",  "logical_xor",
      "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",  "shift_right", "abs_max"};
  auto i = static_cast<size_t>(op);
  return i < std::size(kNames) ? kNames[i] : "?";
}

bool alu_op_is_bitwise(AluOp op) {
  return op == AluOp::bitwise_and || op == AluOp::bitwise_or || op == AluOp::bitwise_xor ||
         op == AluOp::shift_left || op == AluOp::shift_right;
}

std::string_view activation_name(ActivationFunction f) {
  static constexpr std::string_view kNames[] = {
      "identity", "relu",  "gelu_erf",   "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log",
      "sqrt",     "rsqrt", "reciprocal", "square",    "abs",  "sign",    "sin",  "cos", "erf"};
  auto i = static_cast<size_t>(f);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string_view opcode_name(Opcode op) {
  static constexpr std::string_view kNames[] = {"matmul",
                                                "transpose",
                                                "activation",
                                                "tensor_tensor",
                                                "tensor_scalar",
                                                "tensor_reduce",
                                                "tensor_copy",
                                                "memset",
                                                "iota",
                                                "affine_select",
                                                "copy_predicated",
                                                "select",
                                                "local_gather",
                                                "dma_copy",
                                                "collective",
                                                "nop",
                                                "tensor_tensor_scan"};
  auto i = static_cast<size_t>(op);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string_view collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
  }
  return "?";
}

uint64_t MemRef::free_size() const {
  uint64_t n = 1;
  for (int i = 0; i < num_levels && i < 4; ++i) n *= levels[i].count;
  return n;
}

namespace {
MemRef contiguous(MemoryKind kind, uint16_t start, uint16_t parts, uint64_t offset, DType dtype,
                  uint32_t free_elems) {
  MemRef r;
  r.memory = kind;
  r.dtype = dtype;
  r.partition_start = start;
  r.partition_count = parts;
  r.offset = offset;
  r.num_levels = 1;
  r.levels[0] = {1, free_elems};
  return r;
}
}  // namespace

MemRef sbuf(uint16_t partition_start, uint16_t partitions, uint64_t offset, DType dtype,
            uint32_t free_elems) {
  return contiguous(MemoryKind::sbuf, partition_start, partitions, offset, dtype, free_elems);
}

MemRef psum(uint16_t partition_start, uint16_t partitions, uint64_t offset, DType dtype,
            uint32_t free_elems) {
  return contiguous(MemoryKind::psum, partition_start, partitions, offset, dtype, free_elems);
}

MemRef hbm(uint64_t offset, DType dtype, uint16_t rows, uint32_t cols, int64_t row_stride) {
  MemRef r = contiguous(MemoryKind::hbm, 0, rows, offset, dtype, cols);
  r.partition_stride = row_stride;
  return r;
}

MemRef indirect_table_footprint(const DmaCopy& d) {
  const MemRef& row = d.scatter ? d.dst : d.src;
  MemRef m = row;
  if (row.num_levels >= 4 || row.partition_stride < INT32_MIN || row.partition_stride > INT32_MAX)
    return m;  // not expressible; the verifier refuses such a transfer
  m.partition_count = 1;
  m.partition_stride = 0;
  m.num_levels = static_cast<uint8_t>(row.num_levels + 1);
  m.levels[0] = {static_cast<int32_t>(row.partition_stride), std::max<uint32_t>(1, d.table_rows)};
  for (int l = 0; l < row.num_levels; ++l) m.levels[l + 1] = row.levels[l];
  return m;
}

Operands operands(const Operation& op) {
  Operands o;
  for_each_operand(op, [&](const MemRef& m, Access a) {
    if (a == Access::read || a == Access::read_write) o.reads.push_back(m);
    if (a == Access::write || a == Access::read_write) o.writes.push_back(m);
  });
  if (const auto* d = std::get_if<DmaCopy>(&op); d && d->row_index) {
    if (d->scatter)
      o.writes.front() = indirect_table_footprint(*d);  // dst is the only write
    else
      o.reads.front() = indirect_table_footprint(*d);  // the schema lists src first
  }
  return o;
}

}  // namespace neuronc::device
