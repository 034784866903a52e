// Instruction text form (instruction_text.h), derived from the field schema of
// device/isa_schema.h: `name=value` per field in schema order. A true bool prints as its bare
// name, a false one not at all; an absent optional operand and a ScalarOperand the instruction
// does not use (Access::unused) are left out.
#include "artifact_format/instruction_text.h"

#include <cstdio>
#include <type_traits>

#include "device/isa_schema.h"

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

// Appends field `f` of `x` to `s`.
template <class T, class M>
void field_text(const d::Field<T, M>& f, const T& x, std::string& s) {
  const M& v = x.*f.member;
  const std::string key = " " + std::string(f.name);
  if constexpr (std::is_same_v<M, d::MemRef>) {
    s += key + "=" + memref_text(v);
  } else if constexpr (std::is_same_v<M, std::optional<d::MemRef>>) {
    if (v) s += key + "=" + memref_text(*v);
  } else if constexpr (std::is_same_v<M, d::ScalarOperand>) {
    if (f.access_in(x) != d::Access::unused) s += key + "=" + scalar(v);
  } else if constexpr (std::is_enum_v<M>) {
    s += key + "=" + std::string(d::EnumInfo<M>::name(v));
  } else if constexpr (std::is_same_v<M, bool>) {
    if (v) s += key;
  } else if constexpr (std::is_same_v<M, std::array<int32_t, 4>>) {
    s += key + "=" + pattern(v);
  } else if constexpr (std::is_floating_point_v<M>) {
    s += key + "=" + num(v);
  } else {
    static_assert(std::is_integral_v<M>, "a field kind the text form does not know");
    s += key + "=" + std::to_string(v);
  }
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
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        d::for_each_field<T>([&](const auto& f) { field_text(f, x, s); });
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
