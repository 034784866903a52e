// Constant folding (see the header).
#include "passes/constant_folding.h"

#include <memory>
#include <set>
#include <unordered_map>

#include "ir/op_registry.h"
#include "passes/host_eval.h"

namespace neuronc::passes {

bool ConstantFolding::fits(const ir::Node& n) const {
  // A cast to a dtype no wider (a weight's bf16 copy under --auto-cast) bloats nothing, at any
  // size: folded here, it is one dense cast in the narrow type, where codegen would otherwise
  // convert it element by element through doubles (a tied LM head: 262M of them).
  const bool narrowing_cast =
      (n.op() == "aten._to_copy.default" || n.op() == "aten.to.dtype") && n.inputs().size() >= 1 &&
      n.outputs().size() == 1 && n.input(0) &&
      ir::dtype_size(n.output()->dtype()) <= ir::dtype_size(n.input(0)->dtype());
  for (const ir::Value* out : n.outputs()) {
    auto numel = ir::numel(out->shape());
    if (!numel || !numel->is_constant()) return false;
    if (numel->coeff > max_elements_ && !narrowing_cast) return false;
  }
  return true;
}

namespace {

// A narrowing float cast of a weight (f32 -> bf16 or f16, --auto-cast's) is not computed here:
// the folded constant shares the weight's bytes and reads them as the cast would
// (ir::ConstantPayload::stored_dtype), so its narrow copy is made once, by whoever consumes it
// (codegen lays it out straight into the artifact), not held beside the weight.
// `n`'s first operand is a constant graph input.
bool defer_cast(ir::Graph& g, ir::Node& n) {
  if ((n.op() != "aten._to_copy.default" && n.op() != "aten.to.dtype") || n.outputs().size() != 1)
    return false;
  const ir::Value* in = n.input(0);
  ir::Value* out = n.output();
  const ir::ConstantPayload* p = in->payload();
  if (!p || p->absent || p->stored_dtype || in->dtype() != ir::DType::f32 ||
      (out->dtype() != ir::DType::bf16 && out->dtype() != ir::DType::f16) ||
      in->type().shape != out->type().shape)
    return false;
  ir::ConstantPayload deferred = *p;
  deferred.stored_dtype = ir::DType::f32;
  ir::Value* c = g.add_input(g.unique_name(out->name() + "_folded"), out->type(),
                             ir::InputRole::constant, "folded." + n.name());
  c->set_payload(std::move(deferred));
  out->replace_all_uses_with(c);
  g.erase(&n);
  return true;
}

}  // namespace

bool ConstantFolding::run(ir::Graph& g) {
  // Buffers the graph writes back keep their runtime value: not constants.
  std::set<std::string> mutated;
  for (const ir::GraphOutput& o : g.outputs()) {
    if (o.role == ir::OutputRole::buffer_mutation) mutated.insert(o.target);
  }
  std::unordered_map<const ir::Value*, DenseTensor> known;
  // A constant input: not a user input and not written back.
  auto is_constant_input = [&](const ir::Value* v) {
    if (v->producer() || !v->payload()) return false;
    for (const ir::GraphInput& in : g.inputs())
      if (in.value == v) return in.role != ir::InputRole::user_input && !mutated.count(in.target);
    return true;
  };
  // A constant whose bytes the export did not carry (weights-free): folding a node of such
  // constants gives constants as absent, so a timing-only compile keeps the real one's graph.
  auto is_absent = [&](const ir::Value* v) { return is_constant_input(v) && v->payload()->absent; };
  auto constant_of = [&](const ir::Value* v) -> const DenseTensor* {
    if (auto it = known.find(v); it != known.end()) return &it->second;
    if (!is_constant_input(v)) return nullptr;
    auto t = dense_constant(*v);
    if (!t) return nullptr;
    return &known.emplace(v, std::move(*t)).first->second;
  };

  bool changed = false;
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (ir::Node* n : order) {
    const ir::OpInfo* info = n->info();
    if (!info || info->inplace || n->outputs().empty()) continue;
    // A collective is communication between cores, never a value one core can compute.
    if (info->category == ir::OpCategory::matmul || info->category == ir::OpCategory::conv ||
        info->category == ir::OpCategory::attention || info->category == ir::OpCategory::collective)
      continue;
    if (!fits(*n)) continue;
    if (!n->inputs().empty() && n->input(0) && is_constant_input(n->input(0)) &&
        defer_cast(g, *n)) {
      changed = true;
      continue;
    }
    std::vector<const DenseTensor*> args;
    bool all_const = true, any_absent = false;
    for (const ir::Value* v : n->inputs()) {
      if (v && is_absent(v)) {
        any_absent = true;
        args.push_back(nullptr);
        continue;
      }
      const DenseTensor* t = v ? constant_of(v) : nullptr;
      if (v && !t) {
        all_const = false;
        break;
      }
      args.push_back(t);
    }
    if (!all_const) continue;
    if (any_absent) {
      for (ir::Value* out : n->outputs()) {
        ir::Value* c = g.add_input(g.unique_name(out->name() + "_folded"), out->type(),
                                   ir::InputRole::constant, "folded." + n->name());
        c->set_payload(ir::ConstantPayload::absent_bytes());
        out->replace_all_uses_with(c);
      }
      g.erase(n);
      changed = true;
      continue;
    }
    // A node the host kernel refuses (an index out of range, say) is left to run time, where
    // the same kernel reports it.
    Result<std::vector<DenseTensor>> result = evaluate_on_host(*n, args);
    if (!result.is_ok()) continue;
    const std::vector<ir::Value*> inputs = n->inputs();
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      ir::Value* out = n->outputs()[i];
      DenseTensor& t = result.value()[i];
      ir::Value* c = g.add_input(g.unique_name(out->name() + "_folded"), out->type(),
                                 ir::InputRole::constant, "folded." + n->name());
      c->set_payload(ir::ConstantPayload{t.data, t.nbytes(), 0, {}, t.owner});
      known.emplace(c, std::move(t));
      out->replace_all_uses_with(c);
    }
    g.erase(n);
    changed = true;
    // A mapped weight just read (a cast folded into its bf16 copy) leaves this process's
    // memory, so the model's bytes are not held twice: dropping pages never changes a value, and
    // a later read (a tied embedding's table, written out as it is) brings them back from the
    // file. One read for the last time is forgotten too.
    for (ir::Value* v : inputs) {
      if (!v || v->producer() || !v->payload() || !v->payload()->drop_pages) continue;
      if (v->uses().empty()) known.erase(v);
      v->payload()->drop_pages(v->payload()->data, v->payload()->nbytes);
    }
  }
  if (changed) g.erase_unused_constant_inputs();
  return changed;
}

}  // namespace neuronc::passes
