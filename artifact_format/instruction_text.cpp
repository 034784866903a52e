// Instruction text form (instruction_text.h).
#include "artifact_format/instruction_text.h"

#include <cstdio>
#include <type_traits>

namespace neuronc::artifact {
namespace {

namespace d = ::neuronc::device;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string scalar(const d::ScalarOperand& s) {
  if (const float* f = std::get_if<float>(&s)) return num(*f);
  return memref_text(std::get<d::MemRef>(s));
}

std::string pattern(const std::array<int32_t, 4>& p) {
  return "[" + std::to_string(p[0]) + "," + std::to_string(p[1]) + "," + std::to_string(p[2]) +
         "," + std::to_string(p[3]) + "]";
}

std::string alu(d::AluOp op) {
  return std::string(d::alu_op_name(op));
}

}  // namespace

std::string memref_text(const d::MemRef& m) {
  std::string s = std::string(d::memory_name(m.memory)) + ":" +
                  std::string(d::dtype_name(m.dtype)) + "[" + std::to_string(m.partition_start) +
                  ":" + std::to_string(m.partition_start + m.partition_count);
  if (m.memory == d::MemoryKind::hbm && m.partition_stride != 0)
    s += "/" + std::to_string(m.partition_stride);
  s += "]@" + std::to_string(m.offset) + "{";
  for (int l = 0; l < m.num_levels && l < 4; ++l) {
    if (l) s += ",";
    s += std::to_string(m.levels[l].count);
    if (m.levels[l].stride != 1) s += "/" + std::to_string(m.levels[l].stride);
  }
  return s + "}";
}

std::string instruction_text(const d::Instruction& inst) {
  std::string s(d::opcode_name(inst.opcode()));
  auto f = [&](const char* k, const std::string& v) { s += std::string(" ") + k + "=" + v; };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, d::MatMul>) {
          f("dst", memref_text(x.dst));
          f("stationary", memref_text(x.stationary));
          f("moving", memref_text(x.moving));
          if (x.accumulate) s += " accumulate";
        } else if constexpr (std::is_same_v<T, d::Transpose> || std::is_same_v<T, d::TensorCopy>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
        } else if constexpr (std::is_same_v<T, d::Activation>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("function", std::string(d::activation_name(x.function)));
          f("scale", scalar(x.scale));
          f("bias", scalar(x.bias));
          if (x.accumulate_dst) f("accumulate", memref_text(*x.accumulate_dst));
        } else if constexpr (std::is_same_v<T, d::TensorTensor>) {
          f("dst", memref_text(x.dst));
          f("in0", memref_text(x.in0));
          f("in1", memref_text(x.in1));
          f("op", alu(x.op));
        } else if constexpr (std::is_same_v<T, d::TensorScalar>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("op0", alu(x.op0) + (x.reverse0 ? "(rev)" : ""));
          f("operand0", scalar(x.operand0));
          if (x.op1 != d::AluOp::bypass) {
            f("op1", alu(x.op1) + (x.reverse1 ? "(rev)" : ""));
            f("operand1", scalar(x.operand1));
          }
        } else if constexpr (std::is_same_v<T, d::TensorReduce>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("op", x.op == d::ReduceOp::sum ? "sum" : x.op == d::ReduceOp::max ? "max" : "min");
          f("axes", std::to_string(x.num_axes));
          if (x.negate) s += " negate";
        } else if constexpr (std::is_same_v<T, d::Memset>) {
          f("dst", memref_text(x.dst));
          f("value", num(x.value));
        } else if constexpr (std::is_same_v<T, d::Iota>) {
          f("dst", memref_text(x.dst));
          f("offset", std::to_string(x.offset));
          f("channel_multiplier", std::to_string(x.channel_multiplier));
          f("pattern", pattern(x.pattern));
        } else if constexpr (std::is_same_v<T, d::AffineSelect>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("offset", std::to_string(x.offset));
          f("channel_multiplier", std::to_string(x.channel_multiplier));
          f("pattern", pattern(x.pattern));
          f("compare", std::to_string(static_cast<int>(x.compare)));
          f("on_false", num(x.on_false));
        } else if constexpr (std::is_same_v<T, d::CopyPredicated>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("predicate", memref_text(x.predicate));
          if (x.reverse) s += " reverse";
        } else if constexpr (std::is_same_v<T, d::Select>) {
          f("dst", memref_text(x.dst));
          f("predicate", memref_text(x.predicate));
          f("on_true", memref_text(x.on_true));
          f("on_false", scalar(x.on_false));
        } else if constexpr (std::is_same_v<T, d::LocalGather>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("index", memref_text(x.index));
          f("elements_per_index", std::to_string(x.elements_per_index));
          f("num_valid_indices", std::to_string(x.num_valid_indices));
        } else if constexpr (std::is_same_v<T, d::DmaCopy>) {
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
          f("queue", std::to_string(x.queue));
          if (x.row_index) {
            f("row_index", memref_text(*x.row_index));
            f("table_rows", std::to_string(x.table_rows));
          }
        } else if constexpr (std::is_same_v<T, d::Collective>) {
          f("kind", std::string(d::collective_name(x.kind)));
          f("dst", memref_text(x.dst));
          f("src", memref_text(x.src));
        } else if constexpr (std::is_same_v<T, d::TensorTensorScan>) {
          f("dst", memref_text(x.dst));
          f("in0", memref_text(x.in0));
          f("in1", memref_text(x.in1));
          f("initial", num(x.initial));
          f("op0", alu(x.op0));
          f("op1", alu(x.op1));
        }
      },
      inst.op);
  for (const auto& w : inst.waits)
    s += " wait(s" + std::to_string(w.semaphore) + ">=" + std::to_string(w.value) + ")";
  for (const auto& g : inst.signals)
    s += " signal(" +
         (g.core == d::kThisCore ? std::string() : "core" + std::to_string(g.core) + ".") + "s" +
         std::to_string(g.semaphore) + "+=" + std::to_string(g.increment) + ")";
  return s;
}

}  // namespace neuronc::artifact
