// Non-tensor operator arguments: the scalar and list values of an ATen schema.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace neuronc::ir {

struct NoneAttr {
  friend bool operator==(const NoneAttr&, const NoneAttr&) = default;
};
struct DeviceAttr {
  std::string type = "cpu";  // "cpu", "cuda", "meta", ...
  int64_t index = -1;        // -1: no index
  friend bool operator==(const DeviceAttr&, const DeviceAttr&) = default;
};
enum class MemoryFormat : uint8_t { contiguous, preserve, channels_last, channels_last_3d };
enum class Layout : uint8_t { strided, sparse_coo };

// An int list whose entries may be symbolic (e.g. view's size [s0, 12, 64]).
struct SymIntList {
  std::vector<Dim> dims;
  friend bool operator==(const SymIntList&, const SymIntList&) = default;
};

using Attribute = std::variant<NoneAttr, int64_t, double, bool, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<bool>, std::vector<std::string>,
                               DType, DeviceAttr, MemoryFormat, Layout, SymIntList, Dim>;

// Index of each alternative, for switch statements and messages.
enum class AttrKind : uint8_t {
  none,
  int_,
  float_,
  bool_,
  string,
  ints,
  floats,
  bools,
  strings,
  dtype,
  device,
  memory_format,
  layout,
  sym_ints,
  sym_int,
};

inline AttrKind attr_kind(const Attribute& a) {
  return static_cast<AttrKind>(a.index());
}
const char* attr_kind_name(AttrKind k);
const char* memory_format_name(MemoryFormat f);
const char* layout_name(Layout l);

struct NamedAttr {
  std::string name;
  Attribute value;
  friend bool operator==(const NamedAttr&, const NamedAttr&) = default;
};

}  // namespace neuronc::ir
