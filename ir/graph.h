// The IR: a Graph owns Nodes in topological order and the SSA Values they define. A node is an
// ATen operator application ("aten.linear.default") with tensor operands and named attributes.
// Thread-safety: a Graph is not synchronised; one thread mutates it at a time. Distinct graphs
// are independent.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/attribute.h"
#include "ir/source_location.h"
#include "ir/tensor_type.h"

namespace neuronc::ir {

class Graph;
class Node;
struct OpInfo;

// Errors from IR construction and shape inference. The compiler side uses exceptions
// internally; the CLI turns them into one line plus the node's source location.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes of a constant tensor that live outside the IR (normally in the mmap'd input file).
// `owner` keeps that memory alive; the IR never copies the bytes.
struct ConstantPayload {
  using ReadBytes = bool (*)(const void* owner, const std::byte* p, size_t n, std::byte* out);
  const std::byte* data = nullptr;
  size_t nbytes = 0;                  // bytes available from `data` (the storage)
  int64_t storage_offset = 0;         // in elements
  std::vector<int64_t> strides;       // in elements; empty means contiguous
  std::shared_ptr<const void> owner;  // keeps `data` valid
  // Set (by the frontend) when `data` lies in a read-only file mapping: drops the pages wholly
  // inside [p, p + n) from the process. A pass may call it on bytes it has read for the last
  // time; touching them again reads them back from the file, so it never changes a value.
  void (*drop_pages)(const std::byte* p, size_t n) = nullptr;
  // Set (by the frontend) with drop_pages: copies the `n` bytes at `p` (inside the mapping that
  // `owner`, passed as owner.get(), keeps) to `out` by reading the file, which a one-pass scan of
  // a large weight does faster than touching the mapping (no page faults). False when it cannot
  // (a read error, bytes outside the mapping): the caller then reads the mapping instead, which
  // holds the same bytes.
  ReadBytes read_bytes = nullptr;
  // A weight whose bytes the export did not carry (a weights-free or meta export): its dtype
  // and shape are known, its values are not (`data` is null). Such a program compiles to a
  // timing-only artifact; passes that would compute from the bytes carry the absence instead.
  bool absent = false;
  // The dtype of the elements at `data` when it is not the value's own: an f32 weight whose
  // cast to bf16 constant folding deferred (passes/constant_folding.cpp), so the bf16 copy is
  // made once, where it is consumed (codegen lays it out straight into the artifact), instead
  // of beside the weight. Readers convert each element as the cast does (round to nearest
  // even); `storage_offset`, `strides` and `nbytes` count these stored elements and bytes.
  // nullopt: the value's dtype.
  std::optional<DType> stored_dtype = std::nullopt;
  // A deferred scale by row (passes/fold_batch_norm.cpp folds a batch norm into a convolution's
  // f32 weight this way), so the scaled weight is computed once, where it is consumed, and never
  // held beside the weight: the stored f32 element at storage index e (counted in elements from
  // `data`) reads as float(double(x) * (*row_scale)[e / row_scale_pitch]), before any deferred
  // cast. Every reader applies it, or refuses the payload. Null: no scale.
  std::shared_ptr<const std::vector<double>> row_scale = nullptr;
  int64_t row_scale_pitch = 0;  // stored elements per row_scale entry
  // A deferred concatenation (passes/fuse_sibling_linears.cpp stacks sibling linears' weights
  // this way), so the stack is made once, where it is consumed, and never held beside the
  // weights: the storage is the parts' bytes one after another, `data` is null and `nbytes` their
  // total. `storage_offset`, `strides`, `row_scale` and `stored_dtype` apply to that storage as
  // to any other. Every reader assembles the parts, or refuses the payload. Null: none.
  struct Part {
    const std::byte* data = nullptr;
    size_t nbytes = 0;
    std::shared_ptr<const void> owner;                           // keeps `data` valid
    void (*drop_pages)(const std::byte* p, size_t n) = nullptr;  // as ConstantPayload's
    ReadBytes read_bytes = nullptr;                              // as ConstantPayload's
  };
  std::shared_ptr<const std::vector<Part>> parts = nullptr;
  DType element_dtype(DType value_dtype) const { return stored_dtype.value_or(value_dtype); }
  // Whether anything is deferred (a cast, a scale or a concatenation), so the bytes at `data`
  // are not the elements as they are read.
  bool deferred() const {
    return stored_dtype.has_value() || row_scale != nullptr || parts != nullptr;
  }
  // Copies the stored bytes [offset, offset + n) to `out`, from `data` or across the parts.
  // False when they are not all there.
  bool copy_stored(size_t offset, size_t n, std::byte* out) const;
  // What is wrong with the deferred scale or concatenation of a payload of a value of
  // `value_dtype` (a scale that does not cover its f32 storage, parts that do not add up to
  // `nbytes`), or empty when nothing is. Every reader that applies them checks this first.
  std::string deferral_problem(DType value_dtype) const;
  // Whether the elements lie row-major over `shape`: no strides given, or the dense ones (a dim
  // of one element may have any stride).
  bool row_major(const std::vector<int64_t>& shape) const;
  // The scale of the stored element at storage index e (1 without a deferred scale).
  double scale_at(int64_t e) const {
    return row_scale ? (*row_scale)[static_cast<size_t>(e / row_scale_pitch)] : 1.0;
  }
  static ConstantPayload absent_bytes() {
    ConstantPayload p;
    p.absent = true;
    return p;
  }
};

struct Use {
  Node* node = nullptr;
  size_t operand = 0;  // index into node->inputs()
  friend bool operator==(const Use&, const Use&) = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType t) { type_ = std::move(t); }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }

  // The node that defines this value, or null for a graph input.
  Node* producer() const { return producer_; }
  size_t output_index() const { return output_index_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool has_uses() const { return !uses_.empty(); }

  const ConstantPayload* payload() const { return payload_ ? &*payload_ : nullptr; }
  void set_payload(ConstantPayload p) { payload_ = std::move(p); }
  // Removes the payload and hands it back (a buffer lifted to state keeps its bytes elsewhere).
  std::optional<ConstantPayload> take_payload() { return std::exchange(payload_, std::nullopt); }

  // Redirects every use of this value (and graph outputs naming it) to `other`.
  void replace_all_uses_with(Value* other);

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  size_t output_index_ = 0;
  std::vector<Use> uses_;
  std::optional<ConstantPayload> payload_;
  Graph* graph_ = nullptr;
};

class Node {
 public:
  // Full ATen name with overload, e.g. "aten.linear.default".
  const std::string& op() const { return op_; }
  // Registry entry; null when the operator is not registered (imported as unknown).
  const OpInfo* info() const { return info_; }
  const std::string& name() const { return name_; }

  // Tensor operands in schema order; a Tensor[] argument contributes all its elements; an
  // absent optional tensor is a null entry.
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  void set_input(size_t i, Value* v);
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(size_t i = 0) const { return outputs_.at(i); }

  const std::vector<NamedAttr>& attrs() const { return attrs_; }
  // The attribute as written, or the schema default, or null when neither exists.
  const Attribute* attr(std::string_view name) const;
  void set_attr(std::string_view name, Attribute value);
  // Typed accessors: throw ir::Error naming the node when absent or of another kind.
  int64_t attr_int(std::string_view name) const;
  double attr_float(std::string_view name) const;  // accepts an int attribute too
  bool attr_bool(std::string_view name) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;  // accepts a single int too
  const std::string& attr_string(std::string_view name) const;
  bool attr_is_none(std::string_view name) const;  // absent-with-None-default counts as none

  const SourceLocation& location() const { return loc_; }
  void set_location(SourceLocation loc) { loc_ = std::move(loc); }
  Graph* graph() const { return graph_; }

  // "node 'addmm' (aten.addmm.default) at model.py:12" — prefix for error messages.
  std::string describe() const;

 private:
  friend class Graph;
  std::string op_;
  const OpInfo* info_ = nullptr;
  std::string name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<NamedAttr> attrs_;
  SourceLocation loc_;
  Graph* graph_ = nullptr;
};

// What a graph input is, from torch.export's graph signature. `state` is a buffer the program
// mutates (a KV cache, BatchNorm's running statistics): it is not a constant, its value persists
// from one run to the next (the loader's Session keeps it), and it starts as `initial`.
// A symbol input holds the value of the dynamic dim its target names (a free symbol) in the
// run, for a program that reads the dim's size as data: the loader binds the real size, never a
// padded bucket's (passes/symbol_values.h).
enum class InputRole : uint8_t { user_input, parameter, buffer, constant, state, symbol };
// What a graph output is.
enum class OutputRole : uint8_t { user_output, buffer_mutation, user_input_mutation };
const char* input_role_name(InputRole r);
const char* output_role_name(OutputRole r);

struct GraphInput {
  Value* value = nullptr;
  InputRole role = InputRole::user_input;
  std::string target;      // parameter/buffer/constant FQN ("encoder.fc1.weight"), a symbol
                           // input's symbol name ("s0"); "" for users
  bool persistent = true;  // buffers only
  // state only: the bytes the buffer held when exported (its value before the first run); no
  // payload on `value`, so no pass can fold, fuse or bake what a later run will have changed.
  std::optional<ConstantPayload> initial;
};

struct GraphOutput {
  Value* value = nullptr;
  OutputRole role = OutputRole::user_output;
  std::string target;  // mutated buffer FQN or user input name
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A deep copy: the same symbols, values, nodes, names and name counters (so passes run on it
  // name what they create as on the original); constant payloads share their storage.
  std::unique_ptr<Graph> clone() const;
  // Exchanges the whole contents of two graphs (values and nodes move with their graph): a pass
  // that rebuilds a program into a new graph hands it back through the one it was given.
  void swap(Graph& other) noexcept;

  // --- symbols ---------------------------------------------------------------------------
  SymbolId add_symbol(std::string name, int64_t min, int64_t max);
  const Symbol& symbol(SymbolId id) const { return symbols_.at(static_cast<size_t>(id)); }
  Symbol& symbol(SymbolId id) { return symbols_.at(static_cast<size_t>(id)); }
  const std::vector<Symbol>& symbols() const { return symbols_; }
  std::optional<SymbolId> find_symbol(std::string_view name) const;
  // The product symbol for `factors` (free or product symbols; at least two in all), made on
  // first use. Const: interning a name for a product changes no value's meaning, and shape
  // rules (which see a const Graph) need it to name batch × seq.
  SymbolId product_symbol(std::vector<SymbolId> factors) const;
  // `m` with every product symbol replaced by its factors.
  Monomial expand(const Monomial& m) const;
  // `m` as one dim: constant, k*s, or k times a product symbol.
  Dim dim_of(const Monomial& m) const;
  std::string dim_to_string(const Dim& d) const;
  std::string shape_to_string(const Shape& s) const;      // "[s0, 3]"
  std::string type_to_string(const TensorType& t) const;  // "f32[s0, 3]"

  // --- construction ----------------------------------------------------------------------
  // Names must be unique in the graph; an empty or taken name gets a fresh one.
  Value* add_input(std::string name, TensorType type, InputRole role = InputRole::user_input,
                   std::string target = "", bool persistent = true);
  // Appends a node. `op` is looked up in the OpRegistry (null info when unknown). Without
  // `output_types` (nullopt, or `{}`) the registry's shape rule computes them (and must exist);
  // an explicit empty vector means a node with no results.
  Node* append(std::string op, std::vector<Value*> inputs, std::vector<NamedAttr> attrs = {},
               std::optional<std::vector<TensorType>> output_types = std::nullopt,
               std::vector<std::string> output_names = {}, std::string node_name = "");
  // Same, inserted immediately before `pos`.
  Node* insert_before(const Node* pos, std::string op, std::vector<Value*> inputs,
                      std::vector<NamedAttr> attrs = {},
                      std::optional<std::vector<TensorType>> output_types = std::nullopt,
                      std::vector<std::string> output_names = {}, std::string node_name = "");
  void add_output(Value* v, OutputRole role = OutputRole::user_output, std::string target = "");
  void set_output_value(size_t i, Value* v);

  // Removes a node whose outputs have no uses; throws otherwise.
  void erase(Node* n);
  // Removes graph inputs of role parameter/buffer/constant/symbol that have no uses and are not
  // outputs.
  size_t erase_unused_constant_inputs();

  // --- access ----------------------------------------------------------------------------
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  std::vector<GraphInput>& mutable_inputs() { return inputs_; }
  Value* find_value(std::string_view name) const;
  const Node* find_node(std::string_view name) const;
  bool is_graph_output(const Value* v) const;
  std::string unique_name(std::string_view base);
  // Renames a node and its results to the given names when they are free (keeps the current
  // name of any that is taken).
  void rename(Node* n, const std::string& node_name, const std::vector<std::string>& value_names);
  // Index of the node in topological order (linear scan).
  size_t position(const Node* n) const;

 private:
  friend class Value;
  Node* create_node(size_t pos, std::string op, std::vector<Value*> inputs,
                    std::vector<NamedAttr> attrs,
                    std::optional<std::vector<TensorType>> output_types,
                    std::vector<std::string> output_names, std::string node_name);
  Value* new_value(std::string name, TensorType type);

  mutable std::vector<Symbol> symbols_;  // mutable for product_symbol()
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<GraphInput> inputs_;
  std::vector<GraphOutput> outputs_;
  std::unordered_map<std::string, Value*> values_by_name_;
  std::unordered_map<std::string, size_t> name_counters_;
  std::unordered_map<std::string, int> node_names_;
};

}  // namespace neuronc::ir
