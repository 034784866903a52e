// The operator registry: for every ATen operator neuronc knows, its argument schema (parsed
// from PyTorch's own schema strings), its shape rule, its category and whether the device or
// the host implements it. Keyed by "aten.<name>.<overload>".
// Thread-safety: the registry is built once on first use and immutable afterwards.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor_type.h"

namespace neuronc::ir {

class Graph;
class Node;

enum class ArgType : uint8_t {
  tensor,           // Tensor
  opt_tensor,       // Tensor?
  tensor_list,      // Tensor[]
  opt_tensor_list,  // Tensor?[]
  int_,             // int / SymInt
  ints,             // int[] / SymInt[] / int[N]
  float_,           // float
  floats,           // float[]
  bool_,            // bool
  bools,            // bool[]
  scalar,           // Scalar (int, float or bool)
  str,              // str
  dtype,            // ScalarType
  layout,           // Layout
  device,           // Device
  memory_format,    // MemoryFormat
};

struct ArgSpec {
  std::string name;
  ArgType type = ArgType::tensor;
  bool optional = false;  // "T?" — None allowed
  std::optional<Attribute> default_value;
  bool kwarg_only = false;
  // A SymInt (or arange's Scalar) argument whose value only sets extents of the result: view's
  // size, slice's end, arange's end, a factory's size. A dynamic dim's size there shapes the
  // result, and shape rules carry it into the result's dims, where the padding analysis follows
  // it. A symbolic value in any other argument is read as data (an offset, an index, a fill value,
  // an operand): passes/symbol_values.h feeds it from the run's real size.
  bool extent = false;
  bool is_tensor() const {
    return type == ArgType::tensor || type == ArgType::opt_tensor || type == ArgType::tensor_list ||
           type == ArgType::opt_tensor_list;
  }
};

enum class OpCategory : uint8_t {
  matmul,
  conv,
  elementwise,
  reduction,
  norm,
  softmax,
  attention,
  pooling,
  data_movement,
  creation,
  comparison,
  indexing,
  metadata,    // checks and aliases with no computation (_assert_tensor_metadata, dropout eval)
  collective,  // across the cores of a multi-core device program (neuronc.all_reduce, ...)
};
const char* op_category_name(OpCategory c);

// Who runs the operator in a compiled program.
enum class Placement : uint8_t { device, host };
const char* placement_name(Placement p);

// What a shape rule sees: the operand types and the node's attributes (defaults applied).
class ShapeContext {
 public:
  ShapeContext(const Graph& g, const struct OpInfo& info, std::vector<const TensorType*> inputs,
               const std::vector<NamedAttr>& attrs)
      : graph_(g), info_(info), inputs_(std::move(inputs)), attrs_(attrs) {}
  const Graph& graph() const { return graph_; }
  const OpInfo& info() const { return info_; }
  size_t num_inputs() const { return inputs_.size(); }
  // Operand i; throws when absent (null optional tensor).
  const TensorType& input(size_t i) const;
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Operands belonging to the schema's Tensor[] argument (between the fixed ones).
  std::vector<const TensorType*> list_inputs() const;

  const Attribute* attr(std::string_view name) const;  // written value or schema default
  int64_t get_int(std::string_view name) const;
  std::optional<int64_t> get_opt_int(std::string_view name) const;
  // An int or a symbolic int (a SymInt argument such as a slice bound); nullopt when none.
  std::optional<Dim> get_opt_dim(std::string_view name) const;
  double get_float(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  std::vector<int64_t> get_ints(std::string_view name) const;
  std::optional<std::vector<int64_t>> get_opt_ints(std::string_view name) const;
  // Int list whose entries may be symbolic.
  std::vector<Dim> get_dims(std::string_view name) const;
  std::optional<DType> get_opt_dtype(std::string_view name) const;
  std::string get_string(std::string_view name) const;
  bool is_none(std::string_view name) const;

  // Throws ir::Error "<op>: <message>".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Graph& graph_;
  const OpInfo& info_;
  std::vector<const TensorType*> inputs_;
  const std::vector<NamedAttr>& attrs_;
};

using ShapeFn = std::function<std::vector<TensorType>(const ShapeContext&)>;

struct OpInfo {
  std::string name;    // "aten.linear.default"
  std::string schema;  // PyTorch schema string it was parsed from
  std::vector<ArgSpec> args;
  int num_outputs = 1;  // -1: a Tensor[] return (count decided per node)
  OpCategory category = OpCategory::elementwise;
  Placement placement = Placement::device;
  bool inplace = false;  // mutates its first operand (relu_, add_.Tensor, fill_)
  ShapeFn shape_fn;

  // Position of the named argument in `args`, or -1.
  int arg_index(std::string_view name) const;
  // The i-th tensor-typed argument spec (Tensor, Tensor?, Tensor[], Tensor?[]).
  std::vector<const ArgSpec*> tensor_args() const;
  std::vector<const ArgSpec*> attr_args() const;
};

class OpRegistry {
 public:
  static const OpRegistry& global();
  // Null when unknown.
  const OpInfo* find(std::string_view name) const;
  // Every registered op, sorted by name (deterministic).
  std::vector<const OpInfo*> all() const;

  // Used by the registration code; throws on a malformed schema or a duplicate.
  void add(std::string_view schema, OpCategory category, Placement placement, ShapeFn fn);

 private:
  OpRegistry();
  std::unordered_map<std::string, OpInfo> ops_;
};

// Parses one PyTorch schema string, "linear(Tensor input, Tensor weight, Tensor? bias=None) ->
// Tensor", with namespace "aten" and overload "default" when none is written. Throws ir::Error.
OpInfo parse_schema(std::string_view schema);

// Runs the op's shape rule on the given operand types and attributes.
std::vector<TensorType> infer_types(const Graph& g, const OpInfo& info,
                                    const std::vector<const TensorType*>& inputs,
                                    const std::vector<NamedAttr>& attrs);

}  // namespace neuronc::ir
