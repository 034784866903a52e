// Graph-rewriting steps shared by the passes: replacing a node by another operator and
// forwarding a node's result to an existing value.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/host_eval.h"

namespace neuronc::passes {

// Inserts `op(inputs){attrs}` before `old`, gives it old's result names and location, redirects
// every use of old's results to the new results and erases `old`. The new node's inferred
// result types must equal old's (throws ir::Error otherwise). Returns the new node.
ir::Node* replace_node(ir::Graph& g, ir::Node* old, std::string op, std::vector<ir::Value*> inputs,
                       std::vector<ir::NamedAttr> attrs);

// The graph's nodes as they are now, in order: a forward walk that rewrites (inserting before
// and erasing the node it visits) visits each original node once.
std::vector<ir::Node*> node_snapshot(const ir::Graph& g);

// Base of a pass that replaces single-result nodes by small graphs of ops: add() inserts an op
// before the node being replaced (with its source location), finish() moves that node's uses
// to the new result, erases it and, when the result is a node add() made, gives it the old
// node's names (stable names in the printed IR and in verify's reports).
class NodeExpander {
 protected:
  // `verb` names the pass in errors: "decomposing", "expanding".
  NodeExpander(ir::Graph& g, const char* verb) : g_(g), verb_(verb) {}

  ir::Value* add(ir::Node* at, std::string op, std::vector<ir::Value*> in,
                 std::vector<ir::NamedAttr> attrs);
  // Throws ir::Error when `v`'s type differs from n's result type. Returns true.
  bool finish(ir::Node* n, ir::Value* v);

  ir::Graph& g_;

 private:
  const char* verb_;
  std::set<const ir::Node*> created_;
};

// Redirects the uses of `n`'s single result to `v` and erases `n`.
void forward_to(ir::Graph& g, ir::Node* n, ir::Value* v);

// A new constant graph input holding `t` (its payload owns the encoded bytes), named after
// `base` and bound to the parameter FQN `target`.
ir::Value* add_constant_input(ir::Graph& g, const std::string& base, const std::string& target,
                              const HostTensor& t);
// The same for bytes already in `dtype` (its payload owns them); null `bytes`: a constant whose
// bytes are absent (a weights-free export's).
ir::Value* add_constant_input(ir::Graph& g, const std::string& base, const std::string& target,
                              ir::DType dtype, const std::vector<int64_t>& shape,
                              std::shared_ptr<std::vector<std::byte>> bytes);
// The same with its payload given whole.
ir::Value* add_constant_input(ir::Graph& g, const std::string& base, const std::string& target,
                              ir::DType dtype, const std::vector<int64_t>& shape,
                              ir::ConstantPayload payload);

// The attributes of the aten.slice.Tensor that narrow node `n` (dim, start, length) is: a
// negative start counted from the end, end = start + length. Throws ir::Error when a symbolic
// start or length leaves the end unknown.
std::vector<ir::NamedAttr> narrow_as_slice(const ir::Node& n);

// Views of a shape as the `size` attribute of aten.view: an int list when static, else a
// symbolic list.
ir::Attribute shape_attr(const ir::Shape& s);

}  // namespace neuronc::passes
