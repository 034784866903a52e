// Static program verification (verifier.h). Each check names what was expected and what was
// found, with the numbers.
#include "device/verifier.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "device/replicate.h"

namespace neuronc::device {
namespace {

using std::to_string;

std::string ref_name(const MemRef& m) {
  return std::string(memory_name(m.memory)) + " " + std::string(dtype_name(m.dtype)) + " [" +
         to_string(m.partition_start) + ":" + to_string(m.partition_start + m.partition_count) +
         "] @" + to_string(m.offset);
}

Status check_alignment(const MemRef& m, const char* what) {
  const int n = m.partition_count;
  const int s = m.partition_start;
  if (engine_partitions_allowed(s, n)) return Status::ok();
  const char* expected = n > 64 ? "0" : n > 32 ? "0 or 64" : "0, 32, 64 or 96";
  return invalid_argument(std::string(what) + ": partition start " + to_string(s) +
                          " is not allowed for " + to_string(n) + " partitions: expected " +
                          expected);
}

}  // namespace

bool engine_partitions_allowed(int start, int count) {
  // ARCH2 (§3.2): 65-128 partitions start at 0; 33-64 at 0 or 64; 1-32 at 0/32/64/96.
  if (count > 64) return start == 0;
  if (count > 32) return start == 0 || start == 64;
  return start % 32 == 0;
}

namespace {

bool is_int(DType t) {
  return !dtype_is_float(t);
}

Status same_shape(const MemRef& a, const MemRef& b, const char* an, const char* bn) {
  if (a.partition_count != b.partition_count)
    return invalid_argument(std::string(an) + " has " + to_string(a.partition_count) +
                            " partitions but " + bn + " has " + to_string(b.partition_count));
  if (a.free_size() != b.free_size())
    return invalid_argument(std::string(an) + " has " + to_string(a.free_size()) +
                            " elements per partition but " + bn + " has " +
                            to_string(b.free_size()));
  return Status::ok();
}

Status scalar_operand(const ScalarOperand& s, const MemRef& data, const char* what) {
  if (const auto* m = std::get_if<MemRef>(&s)) {
    if (m->partition_count != data.partition_count)
      return invalid_argument(std::string(what) + " vector has " + to_string(m->partition_count) +
                              " partitions, expected " + to_string(data.partition_count));
    if (m->free_size() != 1)
      return invalid_argument(std::string(what) + " vector has " + to_string(m->free_size()) +
                              " elements per partition, expected 1");
  }
  return Status::ok();
}

bool engine_runs(Engine e, Opcode op) {
  switch (op) {
    case Opcode::matmul:
      return e == Engine::tensor;
    case Opcode::transpose:
      return e == Engine::tensor || e == Engine::vector;
    case Opcode::activation:
      return e == Engine::scalar;
    case Opcode::tensor_tensor:
      return e == Engine::vector || e == Engine::gpsimd;
    case Opcode::tensor_scalar:
    case Opcode::tensor_copy:
    case Opcode::memset:
      return e == Engine::vector || e == Engine::scalar || e == Engine::gpsimd;
    case Opcode::tensor_reduce:
      return e == Engine::vector || e == Engine::gpsimd;
    case Opcode::iota:
    case Opcode::affine_select:
    case Opcode::local_gather:
      return e == Engine::gpsimd;
    case Opcode::copy_predicated:
    case Opcode::select:
    case Opcode::tensor_tensor_scan:
      return e == Engine::vector;
    case Opcode::dma_copy:
    case Opcode::collective:
      return e != Engine::tensor;
    case Opcode::nop:
      return true;
  }
  return false;
}

// §3.5: which engine may touch which memory.
Status check_access(const Target& t, Engine e, Opcode op, const MemRef& m, bool write) {
  const bool dma = op == Opcode::dma_copy || op == Opcode::collective;
  // Who accesses, made only for an error.
  const auto who = [&] {
    return dma ? std::string("dma") : std::string(engine_name(e)) + " engine";
  };
  if (dma) {
    if (m.memory == MemoryKind::psum)
      return invalid_argument(who() + " cannot " + (write ? "write" : "read") +
                              " psum: expected hbm or sbuf");
    if (op == Opcode::collective && m.memory != MemoryKind::hbm)
      return invalid_argument("collective operands must be in hbm, found " +
                              std::string(memory_name(m.memory)));
    return Status::ok();
  }
  if (m.memory == MemoryKind::hbm)
    return invalid_argument(who() +
                            " cannot access hbm: expected sbuf or psum (hbm is reached "
                            "through dma_copy)");
  switch (e) {
    case Engine::tensor:
      if (write && m.memory != MemoryKind::psum)
        return invalid_argument("tensor engine writes only psum, found " +
                                std::string(memory_name(m.memory)));
      if (!write && m.memory != MemoryKind::sbuf)
        return invalid_argument("tensor engine reads only sbuf, found " +
                                std::string(memory_name(m.memory)));
      break;
    case Engine::gpsimd:
      if (m.memory == MemoryKind::psum)
        return invalid_argument("gpsimd engine cannot access psum: expected sbuf");
      break;
    default:
      break;
  }
  (void)t;
  return Status::ok();
}

}  // namespace

ByteRange footprint(const MemRef& m) {
  const int64_t size = dtype_size(m.dtype);
  int64_t lo = 0, hi = 0;
  for (int l = 0; l < m.num_levels && l < 4; ++l) {
    const int64_t span =
        static_cast<int64_t>(m.levels[l].stride) * (static_cast<int64_t>(m.levels[l].count) - 1);
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  if (m.memory == MemoryKind::hbm && m.partition_count > 1) {
    const int64_t span = m.partition_stride * (static_cast<int64_t>(m.partition_count) - 1);
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  ByteRange r;
  r.begin = static_cast<int64_t>(m.offset) + lo * size;
  r.end = static_cast<int64_t>(m.offset) + (hi + 1) * size;
  return r;
}

ByteRect byte_rect(const MemRef& m, uint16_t core) {
  const ByteRange r = footprint(m);
  if (m.memory == MemoryKind::hbm) return {m.memory, 0, 0, 1, r.begin, r.end};
  return {m.memory,          core,
          m.partition_start, static_cast<uint16_t>(m.partition_start + m.partition_count),
          r.begin,           r.end};
}

Status verify_memref(const Target& t, const MemRef& m, bool compute_operand, uint64_t hbm_size) {
  // The operand's name, made only for an error.
  const auto name = [&m] { return ref_name(m); };
  if (static_cast<int>(m.dtype) >= kNumDTypes)
    return invalid_argument(name() + ": unknown dtype " + to_string(static_cast<int>(m.dtype)));
  if (!is_engine_dtype(m.dtype))
    return invalid_argument(name() + ": dtype " + std::string(dtype_name(m.dtype)) +
                            " is not one the engines read or write");
  if (m.num_levels < 1 || m.num_levels > t.access_pattern_levels)
    return invalid_argument(name() + ": " + to_string(m.num_levels) +
                            " access-pattern levels, expected 1 to " +
                            to_string(t.access_pattern_levels));
  for (int l = 0; l < m.num_levels; ++l) {
    const AccessLevel& lv = m.levels[l];
    if (lv.count == 0)
      return invalid_argument(name() + ": access-pattern level " + to_string(l) + " has count 0");
    if (m.memory != MemoryKind::hbm) {
      // ARCH2 (§3.3): size is uint16, stride int16, in elements.
      if (lv.count > 65535)
        return invalid_argument(name() + ": access-pattern level " + to_string(l) + " count " +
                                to_string(lv.count) + " exceeds 65535");
      if (lv.stride < -32768 || lv.stride > 32767)
        return invalid_argument(name() + ": access-pattern level " + to_string(l) + " stride " +
                                to_string(lv.stride) + " is outside the int16 range");
    }
  }
  if (m.partition_count == 0) return invalid_argument(name() + ": partition count is 0");
  if (m.memory == MemoryKind::hbm) {
    const ByteRange r = footprint(m);
    if (r.begin < 0 || static_cast<uint64_t>(r.end) > hbm_size)
      return out_of_range(name() + ": hbm bytes [" + to_string(r.begin) + ", " + to_string(r.end) +
                          ") are outside the arena of " + to_string(hbm_size) + " bytes");
    return Status::ok();
  }
  if (m.partition_stride != 0)
    return invalid_argument(name() + ": partition stride " + to_string(m.partition_stride) +
                            " is only allowed for hbm (sbuf/psum partitions have no stride)");
  if (m.partition_start + m.partition_count > t.partitions)
    return out_of_range(name() + ": partitions [" + to_string(m.partition_start) + ", " +
                        to_string(m.partition_start + m.partition_count) + ") exceed the " +
                        to_string(t.partitions) + " partitions");
  const uint64_t cap =
      m.memory == MemoryKind::sbuf ? t.sbuf_partition_bytes : t.psum_partition_bytes;
  const ByteRange r = footprint(m);
  if (r.begin < 0 || static_cast<uint64_t>(r.end) > cap)
    return out_of_range(name() + ": bytes [" + to_string(r.begin) + ", " + to_string(r.end) +
                        ") are outside the " + to_string(cap) + "-byte " +
                        std::string(memory_name(m.memory)) + " partition");
  if (compute_operand) {
    if (!engine_partitions_allowed(m.partition_start, m.partition_count))
      return check_alignment(m, name().c_str());
    const uint64_t limit =
        m.memory == MemoryKind::sbuf ? t.max_free_elems_sbuf : t.max_free_elems_psum;
    if (m.free_size() > limit)
      return invalid_argument(name() + ": " + to_string(m.free_size()) +
                              " elements per partition exceed the " + to_string(limit) +
                              "-element limit of one instruction in " +
                              std::string(memory_name(m.memory)));
  }
  return Status::ok();
}

namespace {

// Where an instruction runs, for the per-opcode checks (check_op).
// What an instruction is checked against besides the target: its program's semaphore count and
// HBM size, and how many cores run the program (a collective's group).
struct ProgramShape {
  uint32_t num_semaphores = 0;
  uint64_t cores = 0;
  uint64_t hbm_size = 0;
};

struct OpCheck {
  const Target& target;
  const ProgramShape& program;
  Engine engine;
};

// Contraction on at most pe_rows partitions, the PE array and moving limits, the PSUM
// accumulation dtype, and (unless the target allows it) one PSUM bank.
Status check_op(const OpCheck& c, const MatMul& x) {
  const Target& t = c.target;
  const int k = x.stationary.partition_count;
  if (x.moving.partition_count != k)
    return invalid_argument("matmul contraction mismatch: stationary has " + to_string(k) +
                            " partitions, moving has " + to_string(x.moving.partition_count));
  if (k > t.pe_rows)
    return invalid_argument("matmul contraction " + to_string(k) + " exceeds " +
                            to_string(t.pe_rows) + " partitions");
  const uint64_t mm = x.stationary.free_size(), nn = x.moving.free_size();
  if (mm > static_cast<uint64_t>(t.pe_cols))
    return invalid_argument("matmul stationary free size " + to_string(mm) + " exceeds " +
                            to_string(t.pe_cols));
  if (nn > static_cast<uint64_t>(t.matmul_max_moving))
    return invalid_argument("matmul moving free size " + to_string(nn) + " exceeds " +
                            to_string(t.matmul_max_moving));
  if (x.dst.partition_count != mm || x.dst.free_size() != nn)
    return invalid_argument("matmul dst is [" + to_string(x.dst.partition_count) + ", " +
                            to_string(x.dst.free_size()) + "], expected [" + to_string(mm) + ", " +
                            to_string(nn) + "]");
  if (!dtype_is_float(x.stationary.dtype) || !dtype_is_float(x.moving.dtype))
    return invalid_argument("matmul inputs must be float types, found " +
                            std::string(dtype_name(x.stationary.dtype)) + " and " +
                            std::string(dtype_name(x.moving.dtype)));
  const bool s32 = x.stationary.dtype == DType::f32 || x.stationary.dtype == DType::tf32;
  const bool m32 = x.moving.dtype == DType::f32 || x.moving.dtype == DType::tf32;
  if (s32 != m32)
    return invalid_argument("matmul with one fp32/tf32 operand needs both: found " +
                            std::string(dtype_name(x.stationary.dtype)) + " and " +
                            std::string(dtype_name(x.moving.dtype)));
  if (x.dst.dtype != DType::f32 && !(t.psum_bf16_accumulate && x.dst.dtype == DType::bf16))
    return invalid_argument("matmul dst dtype " + std::string(dtype_name(x.dst.dtype)) +
                            (t.psum_bf16_accumulate ? " is not allowed: expected f32 or bf16"
                                                    : " is not allowed: expected f32"));
  if (x.dst.num_levels != 1 || x.dst.levels[0].stride != 1)
    return invalid_argument("matmul dst must be contiguous in psum");
  const uint64_t bytes = nn * dtype_size(x.dst.dtype);
  if (!t.matmul_may_span_banks) {
    const uint64_t in_bank = x.dst.offset % t.psum_bank_bytes;
    if (in_bank + bytes > t.psum_bank_bytes)
      return invalid_argument("matmul output crosses a psum bank: bank offset " +
                              to_string(in_bank) + " + " + to_string(bytes) + " bytes exceeds " +
                              to_string(t.psum_bank_bytes));
  }
  return Status::ok();
}

// TensorE transposes through the PE array (128 x 128); VectorE within one reshape block.
Status check_op(const OpCheck& c, const Transpose& x) {
  const Target& t = c.target;
  const Engine e = c.engine;
  const uint64_t p = x.src.partition_count, f = x.src.free_size();
  if (x.dst.partition_count != f || x.dst.free_size() != p)
    return invalid_argument("transpose of [" + to_string(p) + ", " + to_string(f) +
                            "] needs dst [" + to_string(f) + ", " + to_string(p) + "], found [" +
                            to_string(x.dst.partition_count) + ", " + to_string(x.dst.free_size()) +
                            "]");
  if (e == Engine::tensor && (p > 128 || f > 128))
    return invalid_argument("tensor transpose input [" + to_string(p) + ", " + to_string(f) +
                            "] exceeds [128, 128]");
  const uint64_t vb = static_cast<uint64_t>(t.vector_transpose_block);
  if (e == Engine::vector && (p > vb || f > vb))
    return invalid_argument("vector transpose input [" + to_string(p) + ", " + to_string(f) +
                            "] exceeds [" + to_string(vb) + ", " + to_string(vb) + "]");
  // Each reshape bank serves one group of partitions: src and dst stay inside it.
  if (e == Engine::vector && (x.src.partition_start / vb != (x.src.partition_start + p - 1) / vb ||
                              x.dst.partition_start / vb != x.src.partition_start / vb ||
                              (x.dst.partition_start + f - 1) / vb != x.src.partition_start / vb))
    return invalid_argument(
        "vector transpose moves partitions " + to_string(x.src.partition_start) + ".. to " +
        to_string(x.dst.partition_start) + "..: both must lie in one group of " + to_string(vb));
  return Status::ok();
}

Status check_op(const OpCheck&, const Activation& x) {
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.src, x.dst, "src", "dst"));
  NEURONC_DEVICE_RETURN_IF_ERROR(scalar_operand(x.scale, x.src, "scale"));
  NEURONC_DEVICE_RETURN_IF_ERROR(scalar_operand(x.bias, x.src, "bias"));
  if (x.accumulate_dst) {
    if (x.accumulate_dst->partition_count != x.src.partition_count ||
        x.accumulate_dst->free_size() != 1)
      return invalid_argument("activation accumulate_dst must be [" +
                              to_string(x.src.partition_count) + ", 1]");
  }
  if (static_cast<int>(x.function) > static_cast<int>(ActivationFunction::erf))
    return invalid_argument("unknown activation function " +
                            to_string(static_cast<int>(x.function)));
  return Status::ok();
}

Status check_op(const OpCheck&, const TensorTensor& x) {
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.in0, x.dst, "in0", "dst"));
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.in1, x.dst, "in1", "dst"));
  if (x.in0.memory == MemoryKind::psum && x.in1.memory == MemoryKind::psum)
    return invalid_argument("tensor_tensor inputs are both in psum: expected at most one");
  if (alu_op_is_bitwise(x.op) &&
      (!is_int(x.in0.dtype) || !is_int(x.in1.dtype) || !is_int(x.dst.dtype)))
    return invalid_argument("bitwise " + std::string(alu_op_name(x.op)) +
                            " needs integer operands");
  if (x.op == AluOp::bypass) return invalid_argument("tensor_tensor op bypass is not an operation");
  return Status::ok();
}

Status check_op(const OpCheck&, const TensorTensorScan& x) {
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.in0, x.dst, "in0", "dst"));
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.in1, x.dst, "in1", "dst"));
  if (alu_op_is_bitwise(x.op0) || alu_op_is_bitwise(x.op1) || x.op0 == AluOp::bypass ||
      x.op1 == AluOp::bypass)
    return invalid_argument("tensor_tensor_scan needs two arithmetic ops, found (" +
                            std::string(alu_op_name(x.op0)) + ", " +
                            std::string(alu_op_name(x.op1)) + ")");
  return Status::ok();
}

// Both ops arithmetic or both bitwise (VectorE, integers); trn2 ScalarE takes only
// (multiply, add), (multiply) and (add).
Status check_op(const OpCheck& c, const TensorScalar& x) {
  const Target& t = c.target;
  const Engine e = c.engine;
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.src, x.dst, "src", "dst"));
  NEURONC_DEVICE_RETURN_IF_ERROR(scalar_operand(x.operand0, x.src, "operand0"));
  NEURONC_DEVICE_RETURN_IF_ERROR(scalar_operand(x.operand1, x.src, "operand1"));
  const bool b0 = alu_op_is_bitwise(x.op0);
  const bool b1 = x.op1 != AluOp::bypass && alu_op_is_bitwise(x.op1);
  if (x.op1 != AluOp::bypass && b0 != b1)
    return invalid_argument("tensor_scalar ops must both be arithmetic or both bitwise");
  if (b0 && (e != Engine::vector || !is_int(x.src.dtype) || !is_int(x.dst.dtype)))
    return invalid_argument(
        "bitwise tensor_scalar runs only on the vector engine with "
        "integer operands");
  if (e == Engine::scalar && t.core_generation == 3) {
    // ISA226: Trn2 ScalarE accepts only (mult, add), (mult), (add).
    const bool ok = (x.op0 == AluOp::multiply && (x.op1 == AluOp::add || x.op1 == AluOp::bypass)) ||
                    (x.op0 == AluOp::add && x.op1 == AluOp::bypass);
    if (!ok)
      return invalid_argument(
          "trn2 scalar engine tensor_scalar accepts (multiply, add), "
          "(multiply) or (add), found (" +
          std::string(alu_op_name(x.op0)) + ", " + std::string(alu_op_name(x.op1)) + ")");
  }
  return Status::ok();
}

Status check_op(const OpCheck&, const TensorReduce& x) {
  if (x.num_axes < 1 || x.num_axes > x.src.num_levels)
    return invalid_argument("tensor_reduce over " + to_string(x.num_axes) + " axes of a " +
                            to_string(x.src.num_levels) + "-level operand");
  uint64_t outer = 1;
  for (int l = 0; l < x.src.num_levels - x.num_axes; ++l) outer *= x.src.levels[l].count;
  if (x.dst.partition_count != x.src.partition_count || x.dst.free_size() != outer)
    return invalid_argument("tensor_reduce dst is [" + to_string(x.dst.partition_count) + ", " +
                            to_string(x.dst.free_size()) + "], expected [" +
                            to_string(x.src.partition_count) + ", " + to_string(outer) + "]");
  return Status::ok();
}

Status check_op(const OpCheck&, const TensorCopy& x) {
  return same_shape(x.src, x.dst, "src", "dst");
}

Status check_op(const OpCheck&, const AffineSelect& x) {
  return same_shape(x.src, x.dst, "src", "dst");
}

Status check_op(const OpCheck&, const CopyPredicated& x) {
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.src, x.dst, "src", "dst"));
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.predicate, x.dst, "predicate", "dst"));
  if (x.src.dtype != x.dst.dtype)
    return invalid_argument(
        "copy_predicated src and dst dtypes differ: " + std::string(dtype_name(x.src.dtype)) +
        " and " + std::string(dtype_name(x.dst.dtype)));
  if (x.predicate.dtype != DType::u8 && x.predicate.dtype != DType::u16 &&
      x.predicate.dtype != DType::u32)
    return invalid_argument("predicate dtype " + std::string(dtype_name(x.predicate.dtype)) +
                            " is not allowed: expected u8, u16 or u32");
  if (x.src.memory == MemoryKind::psum && x.predicate.memory == MemoryKind::psum)
    return invalid_argument("copy_predicated src and predicate are both in psum");
  return Status::ok();
}

Status check_op(const OpCheck&, const Select& x) {
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.on_true, x.dst, "on_true", "dst"));
  NEURONC_DEVICE_RETURN_IF_ERROR(same_shape(x.predicate, x.dst, "predicate", "dst"));
  return scalar_operand(x.on_false, x.dst, "on_false");
}

// GpSimd gathers within whole 16-partition groups, without a cast.
Status check_op(const OpCheck&, const LocalGather& x) {
  const uint32_t ee = x.elements_per_index;
  if (ee != 1 && ee != 2 && ee != 4 && ee != 8 && ee != 16 && ee != 32)
    return invalid_argument("local_gather elements per index " + to_string(ee) +
                            " is not one of 1, 2, 4, 8, 16, 32");
  if (x.src.partition_count % 16 != 0 || x.src.partition_start % 16 != 0)
    return invalid_argument("local_gather src partitions [" + to_string(x.src.partition_start) +
                            ", +" + to_string(x.src.partition_count) +
                            ") must be whole 16-partition groups");
  if (x.dst.partition_count != x.src.partition_count ||
      x.index.partition_count != x.src.partition_count)
    return invalid_argument("local_gather operands must span the same partitions");
  if (x.num_valid_indices > 4096)
    return invalid_argument("local_gather has " + to_string(x.num_valid_indices) +
                            " indices per core, expected at most 4096");
  if (x.index.dtype != DType::u16)
    return invalid_argument("local_gather index dtype " + std::string(dtype_name(x.index.dtype)) +
                            ", expected u16");
  if (x.src.dtype != x.dst.dtype)
    return invalid_argument("local_gather does not cast: src and dst dtypes differ");
  if (x.num_valid_indices > 16 * x.index.free_size())
    return invalid_argument("local_gather uses " + to_string(x.num_valid_indices) +
                            " indices but the index tile holds " +
                            to_string(16 * x.index.free_size()));
  if (uint64_t{x.num_valid_indices} * ee > 16 * x.dst.free_size())
    return invalid_argument("local_gather writes " + to_string(uint64_t{x.num_valid_indices} * ee) +
                            " elements per group but dst holds " +
                            to_string(16 * x.dst.free_size()));
  if (x.src.free_size() % ee != 0)
    return invalid_argument("local_gather src free size " + to_string(x.src.free_size()) +
                            " is not a multiple of " + to_string(ee));
  return Status::ok();
}

// A direct copy moves as many elements as it receives; an indirect one (row_index) gathers
// table rows into the destination's rows.
Status check_op(const OpCheck& c, const DmaCopy& x) {
  const Target& t = c.target;
  if (x.queue >= t.dma_queues_per_engine)
    return out_of_range("dma queue " + to_string(x.queue) + " but engines have " +
                        to_string(t.dma_queues_per_engine) + " queues");
  if (x.row_index) {
    const MemRef& ix = *x.row_index;
    // The table side (src for a gather, dst for a scatter) is one HBM row; the other side's
    // partitions are the rows moved.
    const MemRef& row = x.scatter ? x.dst : x.src;
    const MemRef& rows = x.scatter ? x.src : x.dst;
    const char* table_side = x.scatter ? "dst" : "src";
    if (row.memory != MemoryKind::hbm || row.partition_count != 1)
      return invalid_argument(std::string("indirect dma_copy: ") + table_side +
                              " must be one hbm row (partition count 1), found " +
                              std::string(memory_name(row.memory)) + " with " +
                              to_string(row.partition_count) + " partitions");
    if (x.table_rows == 0) return invalid_argument("indirect dma_copy: the table has 0 rows");
    const int64_t row_stride = row.partition_stride;
    if (row.num_levels >= 4 || row_stride < INT32_MIN || row_stride > INT32_MAX)
      return invalid_argument(
          "indirect dma_copy: a table row needs at most 3 levels and "
          "a row stride within int32, found " +
          to_string(row.num_levels) + " levels and stride " + to_string(row.partition_stride));
    if (ix.memory != MemoryKind::sbuf || !(ix.dtype == DType::i32 || ix.dtype == DType::u32 ||
                                           ix.dtype == DType::i16 || ix.dtype == DType::u16))
      return invalid_argument(
          "indirect dma_copy: row_index must be an i32/u32/i16/u16 "
          "sbuf tile, found " +
          std::string(dtype_name(ix.dtype)) + " in " + std::string(memory_name(ix.memory)));
    if (ix.partition_count != rows.partition_count)
      return invalid_argument("indirect dma_copy: " + to_string(ix.partition_count) +
                              " index partitions for " + to_string(rows.partition_count) +
                              (x.scatter ? " source rows" : " destination rows"));
    if (row.free_size() != rows.free_size())
      return invalid_argument("indirect dma_copy: table rows of " + to_string(row.free_size()) +
                              " elements " + (x.scatter ? "from" : "into") + " rows of " +
                              to_string(rows.free_size()));
    return Status::ok();
  }
  const uint64_t ns = x.src.free_size() * x.src.partition_count;
  const uint64_t nd = x.dst.free_size() * x.dst.partition_count;
  if (ns != nd)
    return invalid_argument("dma_copy moves " + to_string(ns) + " source elements into " +
                            to_string(nd) + " destination elements");
  if (x.queue >= t.dma_queues_per_engine)
    return out_of_range("dma queue " + to_string(x.queue) + " but engines have " +
                        to_string(t.dma_queues_per_engine) + " queues");
  return Status::ok();
}

// Element counts of all_reduce, all_gather and reduce_scatter over the program's cores.
Status check_op(const OpCheck& c, const Collective& x) {
  const uint64_t n = c.program.cores;
  const uint64_t ns = x.src.free_size() * x.src.partition_count;
  const uint64_t nd = x.dst.free_size() * x.dst.partition_count;
  const uint64_t want = x.kind == CollectiveKind::all_reduce   ? ns
                        : x.kind == CollectiveKind::all_gather ? ns * n
                                                               : ns / n;
  if (nd != want || (x.kind == CollectiveKind::reduce_scatter && ns % n != 0))
    return invalid_argument(std::string(collective_name(x.kind)) + " over " + to_string(n) +
                            " cores with " + to_string(ns) + " source elements needs " +
                            to_string(want) + " destination elements, found " + to_string(nd));
  return Status::ok();
}
// Opcodes with no checks beyond their operands' (memset, iota, nop).
template <typename Op>
Status check_op(const OpCheck&, const Op&) {
  return Status::ok();
}

// Semaphore indices of the waits and signals, and the cores signalled.
Status check_sync(const ProgramShape& prog, const Instruction& inst) {
  for (const auto& w : inst.waits)
    if (w.semaphore >= prog.num_semaphores)
      return out_of_range("wait on semaphore " + to_string(w.semaphore) + " but the program has " +
                          to_string(prog.num_semaphores));
  for (const auto& s : inst.signals) {
    if (s.semaphore >= prog.num_semaphores)
      return out_of_range("signal of semaphore " + to_string(s.semaphore) +
                          " but the program has " + to_string(prog.num_semaphores));
    if (s.core != kThisCore && s.core >= prog.cores)
      return out_of_range("signal to core " + to_string(s.core) + " but the program has " +
                          to_string(prog.cores) + " cores");
  }
  return Status::ok();
}

Status check_instruction(const Target& t, const ProgramShape& prog, Engine e,
                         const Instruction& inst) {
  const Opcode op = inst.opcode();
  if (!engine_runs(e, op))
    return invalid_argument(std::string(engine_name(e)) + " engine cannot execute " +
                            std::string(opcode_name(op)));
  NEURONC_DEVICE_RETURN_IF_ERROR(check_sync(prog, inst));
  const bool dma = op == Opcode::dma_copy || op == Opcode::collective;
  const Operands o = operands(inst.op);
  const MatMul* matmul = std::get_if<MatMul>(&inst.op);
  for (const auto& m : o.reads) {
    NEURONC_DEVICE_RETURN_IF_ERROR(verify_memref(t, m, !dma, prog.hbm_size));
    // An accumulating matmul reads its own PSUM destination (near-memory read-add-write).
    if (matmul && matmul->accumulate && m == matmul->dst) continue;
    NEURONC_DEVICE_RETURN_IF_ERROR(check_access(t, e, op, m, false));
  }
  for (const auto& m : o.writes) {
    NEURONC_DEVICE_RETURN_IF_ERROR(verify_memref(t, m, !dma, prog.hbm_size));
    NEURONC_DEVICE_RETURN_IF_ERROR(check_access(t, e, op, m, true));
  }
  const OpCheck where{t, prog, e};
  return std::visit([&](const auto& x) -> Status { return check_op(where, x); }, inst.op);
}

// Each instruction of `core` (core `index` of a program of `prog`'s shape); the error names the
// core, engine, index and opcode.
Status check_core(const Target& t, const ProgramShape& prog, size_t index,
                  const CoreProgram& core) {
  for (int e = 0; e < kNumEngines; ++e) {
    const auto& stream = core.streams[e];
    for (size_t i = 0; i < stream.size(); ++i) {
      Status s = check_instruction(t, prog, static_cast<Engine>(e), stream[i]);
      if (!s.is_ok())
        return s.with_context(
            "core " + to_string(index) + " " + std::string(engine_name(static_cast<Engine>(e))) +
            "[" + to_string(i) + "] (" + std::string(opcode_name(stream[i].opcode())) + ")");
    }
  }
  return Status::ok();
}

Status check_semaphore_count(const Target& t, uint32_t num_semaphores) {
  if (num_semaphores > static_cast<uint32_t>(t.semaphores_per_core))
    return invalid_argument("program uses " + to_string(num_semaphores) +
                            " semaphores per core but " + std::string(t.name) + " has " +
                            to_string(t.semaphores_per_core));
  return Status::ok();
}

}  // namespace

Status verify_instruction(const Target& t, const Program& prog, int core, Engine e,
                          const Instruction& inst) {
  (void)core;
  return check_instruction(t, {prog.num_semaphores, prog.cores.size(), prog.hbm_size}, e, inst);
}

Status verify_program(const Target& t, const Program& prog) {
  if (prog.cores.empty()) return invalid_argument("program has no cores");
  NEURONC_DEVICE_RETURN_IF_ERROR(check_semaphore_count(t, prog.num_semaphores));
  const ProgramShape shape{prog.num_semaphores, prog.cores.size(), prog.hbm_size};
  for (size_t c = 0; c < prog.cores.size(); ++c)
    NEURONC_DEVICE_RETURN_IF_ERROR(check_core(t, shape, c, prog.cores[c]));
  return Status::ok();
}

Status verify_replicated_program(const Target& t, const Program& prog, uint32_t cores,
                                 uint64_t core_stride) {
  if (prog.cores.empty()) return invalid_argument("program has no cores");
  NEURONC_DEVICE_RETURN_IF_ERROR(check_replication(cores, core_stride));
  NEURONC_DEVICE_RETURN_IF_ERROR(check_semaphore_count(t, prog.num_semaphores));
  // Copy r's HBM operands are core 0's moved by r * core_stride, so each copy stays in its own
  // [r * core_stride, (r + 1) * core_stride) exactly when core 0 stays in [0, core_stride).
  const CoreProgram& base = prog.cores[0];
  NEURONC_DEVICE_RETURN_IF_ERROR(check_core(t, {prog.num_semaphores, cores, core_stride}, 0, base));
  for (int e = 0; e < kNumEngines; ++e) {
    const auto& stream = base.streams[e];
    for (size_t i = 0; i < stream.size(); ++i)
      for (const SemaphoreSignal& s : stream[i].signals)
        if (!signals_its_own_core(s))
          return invalid_argument(
              "core 0 " + std::string(engine_name(static_cast<Engine>(e))) + "[" + to_string(i) +
              "] (" + std::string(opcode_name(stream[i].opcode())) + ") signals core " +
              to_string(s.core) + ": a replicated program's core 0 may signal only itself");
  }
  return Status::ok();
}

}  // namespace neuronc::device
