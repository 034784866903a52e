// Auto-cast (see the header for the rules).
#include "passes/auto_cast.h"

#include <unordered_map>

#include "ir/op_registry.h"
#include "passes/rewrite.h"

namespace neuronc::passes {

std::optional<AutoCastMode> parse_auto_cast(std::string_view s) {
  if (s == "none") return AutoCastMode::none;
  if (s == "matmul" || s == "matmult") return AutoCastMode::matmul;
  if (s == "all") return AutoCastMode::all;
  return std::nullopt;
}

const char* auto_cast_name(AutoCastMode m) {
  switch (m) {
    case AutoCastMode::none:
      return "none";
    case AutoCastMode::matmul:
      return "matmul";
    case AutoCastMode::all:
      return "all";
  }
  return "?";
}

namespace {

// Ops whose result is a view of their only operand, whatever its dtype.
bool is_view_op(const std::string& op) {
  static const char* kOps[] = {"aten.view.default",      "aten._unsafe_view.default",
                               "aten.reshape.default",   "aten.flatten.using_ints",
                               "aten.unflatten.int",     "aten.squeeze.dim",
                               "aten.squeeze.dims",      "aten.squeeze.default",
                               "aten.unsqueeze.default", "aten.permute.default",
                               "aten.t.default",         "aten.transpose.int",
                               "aten.expand.default",    "aten.slice.Tensor",
                               "aten.select.int",        "aten.alias.default"};
  for (const char* k : kOps)
    if (op == k) return true;
  return false;
}

bool eligible(const ir::Node& n, AutoCastMode mode) {
  const ir::OpInfo* info = n.info();
  if (!info || info->inplace || info->placement != ir::Placement::device) return false;
  bool any_f32 = false;
  for (const ir::Value* v : n.inputs()) any_f32 |= v && v->dtype() == ir::DType::f32;
  if (!any_f32) return false;
  // Every result must be a float (comparisons produce bool: leave them in fp32).
  for (const ir::Value* v : n.outputs()) {
    if (!ir::is_floating(v->dtype())) return false;
  }
  switch (info->category) {
    case ir::OpCategory::matmul:
    case ir::OpCategory::conv:
    case ir::OpCategory::attention:
      return true;
    case ir::OpCategory::elementwise:
    case ir::OpCategory::reduction:
    case ir::OpCategory::norm:
    case ir::OpCategory::softmax:
    case ir::OpCategory::pooling:
      return mode == AutoCastMode::all;
    default:
      return false;
  }
}

}  // namespace

bool AutoCast::run(ir::Graph& g) {
  if (mode_ == AutoCastMode::none) return false;
  std::unordered_map<const ir::Value*, ir::Value*> bf16_of;
  auto to_bf16 = [&](ir::Node* before, ir::Value* v) -> ir::Value* {
    if (auto it = bf16_of.find(v); it != bf16_of.end()) return it->second;
    ir::Value* r = nullptr;
    // Views of an f32 cast of a bf16 value (a projection's result reshaped into heads, an
    // attention's result merged back): the same views of the bf16 value. bf16 -> f32 is exact
    // and f32 -> bf16 of such a value gives it back, so the round trip is the identity.
    std::vector<const ir::Node*> views;
    const ir::Value* cur = v;
    while (cur->producer() && is_view_op(cur->producer()->op()) &&
           cur->producer()->inputs().size() == 1 && cur->producer()->outputs().size() == 1) {
      views.push_back(cur->producer());
      cur = cur->producer()->input(0);
    }
    const ir::Node* c = cur->producer();
    if (c && c->op() == "aten._to_copy.default" && cur->dtype() == ir::DType::f32 &&
        c->input(0)->dtype() == ir::DType::bf16) {
      r = c->input(0);  // the bf16 value itself (through `views`)
      for (auto it = views.rbegin(); it != views.rend(); ++it) {
        try {
          r = g.insert_before(before, (*it)->op(), {r}, (*it)->attrs(), std::nullopt,
                              {(*it)->output()->name() + "_bf16"})
                  ->output();
        } catch (const ir::Error&) {
          r = nullptr;  // the view does not accept bf16 here: cast as usual
          break;
        }
      }
    }
    if (!r) {
      r = g.insert_before(before, "aten._to_copy.default", {v}, {{"dtype", ir::DType::bf16}},
                          std::nullopt, {v->name() + "_bf16"})
              ->output();
    }
    bf16_of[v] = r;
    return r;
  };
  bool changed = false;
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (ir::Node* n : order) {
    if (!eligible(*n, mode_)) continue;
    std::vector<ir::Value*> inputs = n->inputs();
    for (ir::Value*& v : inputs) {
      if (v && v->dtype() == ir::DType::f32) v = to_bf16(n, v);
    }
    std::vector<ir::NamedAttr> attrs = n->attrs();
    // An explicit fp32 result dtype (mean.dim(dtype=f32)) would undo the cast.
    for (ir::NamedAttr& a : attrs) {
      if (a.name == "dtype" && std::holds_alternative<ir::DType>(a.value) &&
          std::get<ir::DType>(a.value) == ir::DType::f32)
        a.value = ir::DType::bf16;
    }
    ir::Node* low;
    try {
      low = g.insert_before(n, n->op(), inputs, attrs, std::nullopt, {}, n->name() + "_bf16");
    } catch (const ir::Error&) {
      continue;  // the op does not accept bf16 here (mixed-dtype rules): leave it in fp32
    }
    low->set_location(n->location());
    std::vector<std::pair<ir::Node*, std::string>> renames;
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      ir::Value* old = n->output(i);
      ir::Value* res = low->output(i);
      if (res->dtype() != old->dtype()) {
        ir::Node* back =
            g.insert_before(n, "aten._to_copy.default", {res}, {{"dtype", old->dtype()}});
        back->set_location(n->location());
        bf16_of[back->output()] = res;
        renames.emplace_back(back, old->name());
        res = back->output();
      }
      old->replace_all_uses_with(res);
    }
    g.erase(n);
    // The casts back to fp32 take the original result names, so graph outputs and reports
    // keyed on torch.export's names still find them.
    for (auto& [node, name] : renames) g.rename(node, name, {name});
    changed = true;
  }
  return changed;
}

}  // namespace neuronc::passes
