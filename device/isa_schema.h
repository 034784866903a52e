// The ISA's field schema: every instruction struct of device/isa.h described once, field by
// field, in artifact.fbs order with artifact.fbs names. The FlatBuffers codec
// (artifact_format/isa_codec.cpp) and the instruction text form (instruction_text.cpp) are
// derived from it, and so is for_each_operand (below): a memory operand carries its Access.
//
// A field's kind follows from its member type:
//   MemRef                  a required memory operand (an fbs MemRef struct)
//   std::optional<MemRef>   an optional memory operand (absent when the struct is absent)
//   ScalarOperand           two fbs fields: the float `<name>` and the MemRef `<name>_ref`
//   an enum E               a ubyte enum; EnumInfo<E> gives its count and names
//   bool, integers, floats  the scalar of the same width
//   std::array<int32_t, 4>  an Iota4 struct
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "device/isa.h"

namespace neuronc::device {

inline std::string_view reduce_op_name(ReduceOp op) {
  static constexpr std::string_view kNames[] = {"sum", "max", "min"};
  const auto i = static_cast<size_t>(op);
  return i < std::size(kNames) ? kNames[i] : "?";
}

inline std::string_view compare_op_name(CompareOp op) {
  static constexpr std::string_view kNames[] = {"eq", "ne", "gt", "ge", "lt", "le"};
  const auto i = static_cast<size_t>(op);
  return i < std::size(kNames) ? kNames[i] : "?";
}

// The enumerations instructions and MemRefs hold: how many values each has (all are dense from
// 0), the noun decode errors put before a field's name ("alu op0 30 is unknown") and the value
// names. The codec static_asserts every count against artifact.fbs.
template <class E>
struct EnumInfo;
template <>
struct EnumInfo<MemoryKind> {
  static constexpr int count = static_cast<int>(MemoryKind::psum) + 1;
  static constexpr std::string_view noun = "memory kind";
  static std::string_view name(MemoryKind v) { return memory_name(v); }
};
template <>
struct EnumInfo<Engine> {
  static constexpr int count = kNumEngines;
  static constexpr std::string_view noun = "engine";
  static std::string_view name(Engine v) { return engine_name(v); }
};
template <>
struct EnumInfo<AluOp> {
  static constexpr int count = static_cast<int>(AluOp::abs_max) + 1;
  static constexpr std::string_view noun = "alu";
  static std::string_view name(AluOp v) { return alu_op_name(v); }
};
template <>
struct EnumInfo<ActivationFunction> {
  static constexpr int count = static_cast<int>(ActivationFunction::erf) + 1;
  static constexpr std::string_view noun = "activation";
  static std::string_view name(ActivationFunction v) { return activation_name(v); }
};
template <>
struct EnumInfo<ReduceOp> {
  static constexpr int count = static_cast<int>(ReduceOp::min) + 1;
  static constexpr std::string_view noun = "reduce";
  static std::string_view name(ReduceOp v) { return reduce_op_name(v); }
};
template <>
struct EnumInfo<CompareOp> {
  static constexpr int count = static_cast<int>(CompareOp::le) + 1;
  static constexpr std::string_view noun = "compare op";
  static std::string_view name(CompareOp v) { return compare_op_name(v); }
};
template <>
struct EnumInfo<CollectiveKind> {
  static constexpr int count = static_cast<int>(CollectiveKind::reduce_scatter) + 1;
  static constexpr std::string_view noun = "collective";
  static std::string_view name(CollectiveKind v) { return collective_name(v); }
};
template <>
struct EnumInfo<Opcode> {
  static constexpr int count = static_cast<int>(std::variant_size_v<Operation>);
  static constexpr std::string_view noun = "opcode";
  static std::string_view name(Opcode v) { return opcode_name(v); }
};

// Member types that hold memory operands (the ones a Field gives an Access).
template <class M>
inline constexpr bool kIsMemoryField =
    std::is_same_v<M, MemRef> || std::is_same_v<M, std::optional<MemRef>> ||
    std::is_same_v<M, ScalarOperand>;

// One field of instruction struct T. `wire_default` is the value artifact.fbs declares as the
// field's default (the writer omits a field holding it): the default member initializer of T
// unless the schema says otherwise.
template <class T, class M>
struct Field {
  using Struct = T;
  using Member = M;
  std::string_view name;  // as in artifact.fbs and the text form
  M T::*member;
  Access access = Access::unused;           // memory operands: how the instruction uses it ...
  Access (*access_of)(const T&) = nullptr;  // ... or, when set, as a function of the others
  M wire_default;

  constexpr Access access_in(const T& x) const { return access_of ? access_of(x) : access; }
  // The same field with another artifact.fbs default.
  constexpr Field with_wire_default(M v) const {
    Field f = *this;
    f.wire_default = v;
    return f;
  }
};

// A non-memory field.
template <class T, class M>
requires(!kIsMemoryField<M>) constexpr Field<T, M> field(std::string_view name, M T::*m) {
  return {name, m, Access::unused, nullptr, T{}.*m};
}
// A memory operand with a fixed Access.
template <class T, class M>
requires kIsMemoryField<M>
constexpr Field<T, M> field(std::string_view name, M T::*m, Access a) {
  return {name, m, a, nullptr, T{}.*m};
}
// A memory operand whose Access depends on other fields.
template <class T, class M>
requires kIsMemoryField<M>
constexpr Field<T, M> field(std::string_view name, M T::*m,
                            std::type_identity_t<Access (*)(const T&)> access_of) {
  return {name, m, Access::unused, access_of, T{}.*m};
}

// The field list of each instruction, in artifact.fbs order. A new opcode needs one overload.
constexpr auto schema(std::type_identity<MatMul>) {
  using T = MatMul;
  return std::tuple{
      field("dst", &T::dst,
            [](const T& x) { return x.accumulate ? Access::read_write : Access::write; }),
      field("stationary", &T::stationary, Access::read),
      field("moving", &T::moving, Access::read),
      field("accumulate", &T::accumulate),
  };
}
constexpr auto schema(std::type_identity<Transpose>) {
  using T = Transpose;
  return std::tuple{field("dst", &T::dst, Access::write), field("src", &T::src, Access::read)};
}
constexpr auto schema(std::type_identity<Activation>) {
  using T = Activation;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("src", &T::src, Access::read),
      field("function", &T::function),
      field("scale", &T::scale, Access::read),
      field("bias", &T::bias, Access::read),
      field("accumulate_dst", &T::accumulate_dst, Access::write),
  };
}
constexpr auto schema(std::type_identity<TensorTensor>) {
  using T = TensorTensor;
  return std::tuple{
      field("dst", &T::dst, Access::write), field("in0", &T::in0, Access::read),
      field("in1", &T::in1, Access::read),
      field("op", &T::op).with_wire_default(AluOp::bypass),  // artifact.fbs: the enum's 0
  };
}
constexpr auto schema(std::type_identity<TensorScalar>) {
  using T = TensorScalar;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("src", &T::src, Access::read),
      field("op0", &T::op0),
      field("operand0", &T::operand0, Access::read),
      field("reverse0", &T::reverse0),
      field("op1", &T::op1),
      field("operand1", &T::operand1,
            [](const T& x) { return x.op1 != AluOp::bypass ? Access::read : Access::unused; }),
      field("reverse1", &T::reverse1),
  };
}
constexpr auto schema(std::type_identity<TensorReduce>) {
  using T = TensorReduce;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("src", &T::src, Access::read),
      field("op", &T::op),
      field("num_axes", &T::num_axes),
      field("negate", &T::negate),
  };
}
constexpr auto schema(std::type_identity<TensorCopy>) {
  using T = TensorCopy;
  return std::tuple{field("dst", &T::dst, Access::write), field("src", &T::src, Access::read)};
}
constexpr auto schema(std::type_identity<Memset>) {
  using T = Memset;
  return std::tuple{field("dst", &T::dst, Access::write), field("value", &T::value)};
}
constexpr auto schema(std::type_identity<Iota>) {
  using T = Iota;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("offset", &T::offset),
      field("channel_multiplier", &T::channel_multiplier),
      field("pattern", &T::pattern),
  };
}
constexpr auto schema(std::type_identity<AffineSelect>) {
  using T = AffineSelect;
  return std::tuple{
      field("dst", &T::dst, Access::write), field("src", &T::src, Access::read),
      field("offset", &T::offset),          field("channel_multiplier", &T::channel_multiplier),
      field("pattern", &T::pattern),        field("compare", &T::compare),
      field("on_false", &T::on_false),
  };
}
constexpr auto schema(std::type_identity<CopyPredicated>) {
  using T = CopyPredicated;
  return std::tuple{
      field("dst", &T::dst, Access::read_write),
      field("src", &T::src, Access::read),
      field("predicate", &T::predicate, Access::read),
      field("reverse", &T::reverse),
  };
}
constexpr auto schema(std::type_identity<Select>) {
  using T = Select;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("predicate", &T::predicate, Access::read),
      field("on_true", &T::on_true, Access::read),
      field("on_false", &T::on_false, Access::read),
  };
}
constexpr auto schema(std::type_identity<LocalGather>) {
  using T = LocalGather;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("src", &T::src, Access::read),
      field("index", &T::index, Access::read),
      field("elements_per_index", &T::elements_per_index),
      field("num_valid_indices", &T::num_valid_indices),
  };
}
constexpr auto schema(std::type_identity<DmaCopy>) {
  using T = DmaCopy;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("src", &T::src, Access::read),  // an indirect copy reads rows of it
      field("queue", &T::queue),
      field("row_index", &T::row_index, Access::read),
      field("table_rows", &T::table_rows),
      field("scatter", &T::scatter),
  };
}
constexpr auto schema(std::type_identity<Collective>) {
  using T = Collective;
  return std::tuple{
      field("kind", &T::kind),
      field("op", &T::op),
      field("dst", &T::dst, Access::write),
      field("src", &T::src, Access::read),
  };
}
constexpr auto schema(std::type_identity<Nop>) {
  return std::tuple{};
}
constexpr auto schema(std::type_identity<TensorTensorScan>) {
  using T = TensorTensorScan;
  return std::tuple{
      field("dst", &T::dst, Access::write),
      field("in0", &T::in0, Access::read),
      field("in1", &T::in1, Access::read),
      field("initial", &T::initial),
      field("op0", &T::op0),
      field("op1", &T::op1),
  };
}

// The field list of instruction struct T.
template <class T>
inline constexpr auto kSchema = schema(std::type_identity<T>{});

// Calls f(field) for every field of T, in schema order.
template <class T, class F>
constexpr void for_each_field(F&& f) {
  std::apply([&](const auto&... fd) { (f(fd), ...); }, kSchema<T>);
}

// The one operand schema of the ISA: calls `f(MemRef&, Access)` for every memory operand of `op`
// (MemRef scalar operands and present optional operands included), reads before writes, each
// group in schema order. `Op` is Operation or const Operation. operands(), every relocation
// (codegen's emitter, the compiler's arena placement) and the race checker's footprints derive
// from it, so a new opcode is described once, by its schema() overload.
template <class X, class T, class M, class F>
void visit_operand(X& x, const Field<T, M>& fd, bool writes, F& f) {
  if constexpr (kIsMemoryField<M>) {
    const Access a = fd.access_in(x);
    if ((a == Access::write || a == Access::read_write) != writes) return;
    auto& v = x.*fd.member;  // const when x is
    if constexpr (std::is_same_v<M, MemRef>) {
      f(v, a);
    } else if constexpr (std::is_same_v<M, std::optional<MemRef>>) {
      if (v) f(*v, a);
    } else if (auto* m = std::get_if<MemRef>(&v)) {
      f(*m, a);
    }
  }
}

template <class Op, class F>
void for_each_operand(Op& op, F&& f) {
  std::visit(
      [&](auto& x) {
        using T = std::remove_cvref_t<decltype(x)>;
        for (const bool writes : {false, true})
          for_each_field<T>([&](const auto& fd) { visit_operand(x, fd, writes, f); });
      },
      op);
}

// The memory operands instruction T's schema lists.
template <class T>
constexpr size_t memory_field_count() {
  size_t n = 0;
  for_each_field<T>([&](const auto& fd) {
    if constexpr (kIsMemoryField<typename std::remove_cvref_t<decltype(fd)>::Member>) ++n;
  });
  return n;
}
template <size_t... I>
constexpr size_t max_memory_fields(std::index_sequence<I...>) {
  return std::max({memory_field_count<std::variant_alternative_t<I, Operation>>()...});
}
// The most memory operands any one instruction has (over every opcode's schema).
inline constexpr size_t kMaxMemoryOperands =
    max_memory_fields(std::make_index_sequence<std::variant_size_v<Operation>>{});

// One instruction's reads or writes, held in place (no allocation: the simulator asks for them
// for every instruction it issues). for_each_operand visits each memory field at most once per
// group, so kMaxMemoryOperands always holds them.
class MemRefs {
 public:
  void push_back(const MemRef& m) { items_[size_++] = m; }  // size_ < kMaxMemoryOperands
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const MemRef* begin() const { return items_.data(); }
  const MemRef* end() const { return items_.data() + size_; }
  const MemRef& operator[](size_t i) const { return items_[i]; }
  MemRef& front() { return items_[0]; }
  const MemRef& front() const { return items_[0]; }
  friend bool operator==(const MemRefs& a, const MemRefs& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<MemRef, kMaxMemoryOperands> items_{};
  size_t size_ = 0;
};

struct Operands {
  MemRefs reads;
  MemRefs writes;
};
// The bytes `op` reads and writes (from for_each_operand; an indirect DMA reads the footprint
// of its table, indirect_table_footprint).
Operands operands(const Operation& op);

}  // namespace neuronc::device
