#include "compiler/index_bounds.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace neuronc::compiler {
namespace {

// Ops whose result holds every element of their first operand (and nothing else), so a bound
// on what the result may hold is a bound on the operand.
bool keeps_elements(const ir::Node& n) {
  const std::string& op = n.op();
  if (op == "aten._to_copy.default" || op == "aten.to.dtype") {
    // Only a cast that cannot wrap: integer to an integer at least as wide.
    const ir::DType from = n.input(0)->dtype(), to = n.output()->dtype();
    return ir::is_integral(from) && ir::is_integral(to) &&
           (to == from || ir::dtype_size(to) > ir::dtype_size(from));
  }
  static const std::set<std::string> kViews = {
      "aten.view.default",       "aten.reshape.default", "aten._unsafe_view.default",
      "aten.expand.default",     "aten.permute.default", "aten.unsqueeze.default",
      "aten.squeeze.dim",        "aten.squeeze.dims",    "aten.squeeze.default",
      "aten.clone.default",      "aten.alias.default",   "aten.contiguous.default",
      "aten.flatten.using_ints", "aten.t.default",       "aten.transpose.int"};
  return kViews.count(op) > 0;
}

std::string table_name(const ir::Graph& g, const ir::Value* v) {
  for (const ir::GraphInput& in : g.inputs())
    if (in.value == v && !in.target.empty()) return in.target;
  return v->name();
}

// The bound a use of an index imposes, if it is one.
std::optional<artifact::IndexBound> bound_of_use(const ir::Graph& g, const ir::Use& u) {
  const ir::Node& n = *u.node;
  if (n.op() == "aten.embedding.default" && u.operand == 1) {
    const ir::Value* w = n.input(0);
    if (w->shape().empty() || !w->shape()[0].is_constant()) return std::nullopt;
    return artifact::IndexBound{
        0, w->shape()[0].value(),
        "the rows of embedding table '" + table_name(g, w) + "' (node '" + n.name() + "')"};
  }
  if (n.op() == "aten.index_select.default" && u.operand == 1) {
    const ir::Value* self = n.input(0);
    const int64_t rank = static_cast<int64_t>(self->shape().size());
    int64_t dim = n.attr_int("dim");
    if (dim < 0) dim += rank;
    if (dim < 0 || dim >= rank || !self->shape()[dim].is_constant()) return std::nullopt;
    return artifact::IndexBound{0, self->shape()[dim].value(),
                                "dim " + std::to_string(dim) + " of '" + table_name(g, self) +
                                    "' (node '" + n.name() + "')"};
  }
  return std::nullopt;
}

}  // namespace

std::map<const ir::Value*, artifact::IndexBound> index_bounds(const ir::Graph& g) {
  std::map<const ir::Value*, artifact::IndexBound> out;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role != ir::InputRole::user_input || !ir::is_integral(in.value->dtype())) continue;
    bool bounded = false;
    artifact::IndexBound bound;  // the narrowest use names the table
    std::vector<const ir::Value*> work = {in.value};
    std::set<const ir::Value*> seen = {in.value};
    while (!work.empty()) {
      const ir::Value* v = work.back();
      work.pop_back();
      for (const ir::Use& u : v->uses()) {
        if (std::optional<artifact::IndexBound> b = bound_of_use(g, u)) {
          artifact::IndexBound next = std::move(*b);
          if (bounded) {
            if (next.hi - next.lo >= bound.hi - bound.lo) next.what = bound.what;
            next.lo = std::max(next.lo, bound.lo);
            next.hi = std::min(next.hi, bound.hi);
          }
          bound = std::move(next);
          bounded = true;
        } else if (u.operand == 0 && keeps_elements(*u.node)) {
          for (const ir::Value* r : u.node->outputs())
            if (seen.insert(r).second) work.push_back(r);
        }
      }
    }
    // Two tables of which neither holds the other's rows leave no valid value: let the device
    // check each (it names the row) rather than refuse every input.
    if (bounded && bound.lo < bound.hi) out.emplace(in.value, std::move(bound));
  }
  return out;
}

}  // namespace neuronc::compiler
