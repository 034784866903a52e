// Sibling-linear fusion (see the header).
#include "passes/fuse_sibling_linears.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/zeroed_bytes.h"
#include "passes/host_eval.h"
#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

class Fuser {
 public:
  explicit Fuser(ir::Graph& g) : g_(g) {
    for (const ir::GraphOutput& o : g.outputs())
      if (o.role == ir::OutputRole::buffer_mutation) mutated_.insert(o.target);
  }

  bool run() {
    // Linears by input, in node order (the first one is where the fused linear goes).
    std::vector<ir::Value*> inputs;
    std::unordered_map<ir::Value*, std::vector<ir::Node*>> by_input;
    for (const auto& n : g_.nodes()) {
      if (n->op() != "aten.linear.default" || !fusible(*n)) continue;
      auto [it, fresh] = by_input.try_emplace(n->input(0));
      if (fresh) inputs.push_back(n->input(0));
      it->second.push_back(n.get());
    }
    bool changed = false;
    for (ir::Value* x : inputs) {
      std::vector<ir::Node*>& group = by_input[x];
      // One fused linear per (weight dtype, K, has bias) among the siblings.
      while (group.size() >= 2) {
        std::vector<ir::Node*> same, rest;
        for (ir::Node* n : group)
          (same.empty() || compatible(*same[0], *n) ? same : rest).push_back(n);
        if (same.size() >= 2) changed |= fuse(same);
        group = std::move(rest);
      }
    }
    if (changed) g_.erase_unused_constant_inputs();
    return changed;
  }

 private:
  bool is_constant(const ir::Value* v) const {
    if (!v || v->producer() || !v->payload()) return false;
    for (const ir::GraphInput& in : g_.inputs())
      if (in.value == v) return in.role != ir::InputRole::user_input && !mutated_.count(in.target);
    return false;
  }
  static bool has_bias(const ir::Node& n) { return n.inputs().size() > 2 && n.input(2); }
  bool fusible(const ir::Node& n) const {
    const ir::Value* w = n.input(1);
    if (!is_constant(w) || w->type().rank() != 2 || !w->type().shape[0].is_constant() ||
        !w->type().shape[1].is_constant())
      return false;
    return !has_bias(n) || (is_constant(n.input(2)) && n.input(2)->type().rank() == 1);
  }
  static bool compatible(const ir::Node& a, const ir::Node& b) {
    const ir::Value *wa = a.input(1), *wb = b.input(1);
    if (wa->dtype() != wb->dtype() || wa->type().shape[1] != wb->type().shape[1] ||
        has_bias(a) != has_bias(b))
      return false;
    return !has_bias(a) || a.input(2)->dtype() == b.input(2)->dtype();
  }

  // Null `payload`: absent (weights-free).
  ir::Value* add_constant(const std::string& base, ir::DType dtype,
                          const std::vector<int64_t>& shape,
                          std::optional<ir::ConstantPayload> payload) {
    return add_constant_input(g_, base, "fused." + base, dtype, shape,
                              payload ? std::move(*payload) : ir::ConstantPayload::absent_bytes());
  }

  static bool absent(const ir::Value* v) { return v && v->payload() && v->payload()->absent; }

  // The bytes of `v`'s elements when they lie in its payload as they are, one after another
  // (row-major, nothing deferred), else empty.
  static std::span<const std::byte> plain_bytes(const ir::Value& v) {
    const ir::ConstantPayload* p = v.payload();
    if (!p || p->absent || !p->data || p->deferred() || p->storage_offset < 0) return {};
    std::vector<int64_t> shape;
    for (const ir::Dim& d : v.shape()) {
      if (!d.is_constant()) return {};
      shape.push_back(d.value());
    }
    if (!p->row_major(shape)) return {};
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    const size_t es = ir::dtype_size(v.dtype()), first = static_cast<size_t>(p->storage_offset);
    if ((first + n) * es > p->nbytes) return {};
    return {p->data + first * es, n * es};
  }

  // The siblings' weights (and biases) stacked along the output features (the rows of [N_i, K]
  // weights of one dtype, so the stack is the concatenation). Their bytes as they are become
  // the parts of a deferred concatenation (ir::ConstantPayload::parts), assembled where it is
  // consumed (codegen lays it out straight into the artifact) and never held beside them;
  // otherwise they are copied here once. Null when a payload cannot be read densely.
  static std::optional<ir::ConstantPayload> stacked(const std::vector<ir::Node*>& group,
                                                    size_t input) {
    auto parts = std::make_shared<std::vector<ir::ConstantPayload::Part>>();
    size_t total = 0;
    for (ir::Node* n : group) {
      const ir::Value& v = *n->input(input);
      if (ir::is_complex(v.dtype())) return std::nullopt;
      const std::span<const std::byte> b = plain_bytes(v);
      if (b.empty()) {
        parts.reset();
        break;
      }
      parts->push_back({b.data(), b.size(), v.payload()->owner, v.payload()->drop_pages,
                        v.payload()->read_bytes});
      total += b.size();
    }
    if (parts) {
      ir::ConstantPayload p;
      p.nbytes = total;
      p.parts = parts;
      p.owner = parts;  // which keeps every part's bytes alive
      return p;
    }
    std::vector<DenseTensor> dense;
    std::vector<size_t> at = {0};  // each part's offset in the stack, then the total
    for (ir::Node* n : group) {
      if (ir::is_complex(n->input(input)->dtype())) return std::nullopt;
      std::optional<DenseTensor> d = dense_constant(*n->input(input));
      if (!d) return std::nullopt;
      at.push_back(at.back() + d->nbytes());
      dense.push_back(std::move(*d));
    }
    const std::shared_ptr<std::byte> out = kernels::zeroed_bytes(at.back());  // weight-sized
    // Memory-bound (the weights read, the stack faulted in): copied in 4 MiB pieces in parallel.
    constexpr size_t kPiece = size_t{4} << 20;
    std::vector<std::pair<size_t, size_t>> pieces;  // part, first byte
    for (size_t i = 0; i < dense.size(); ++i)
      for (size_t first = 0; first < dense[i].nbytes(); first += kPiece)
        pieces.emplace_back(i, first);
    tbb::parallel_for(size_t{0}, pieces.size(), [&](size_t k) {
      const auto [i, first] = pieces[k];
      std::memcpy(out.get() + at[i] + first, dense[i].data + first,
                  std::min(kPiece, dense[i].nbytes() - first));
    });
    // A mapped weight just copied leaves this process's memory (as constant folding does: a
    // later read brings its pages back from the file), so it is not held beside its copy.
    for (ir::Node* n : group) {
      const ir::ConstantPayload* p = n->input(input)->payload();
      if (p->drop_pages) p->drop_pages(p->data, p->nbytes);
    }
    return ir::ConstantPayload{out.get(), at.back(), 0, {}, out};
  }

  bool fuse(const std::vector<ir::Node*>& group) {
    // Weights-free: the fused weight and bias are absent too, with the shapes they would have.
    bool any_absent = false;
    for (ir::Node* n : group)
      any_absent = any_absent || absent(n->input(1)) || (has_bias(*n) && absent(n->input(2)));
    const ir::Value* w0 = group[0]->input(1);
    std::vector<int64_t> w_shape = {0, w0->type().shape[1].value()};
    std::vector<int64_t> widths;
    for (ir::Node* n : group) {
      widths.push_back(n->input(1)->type().shape[0].value());
      w_shape[0] += widths.back();
      // fusible(): a bias is a rank-1 constant; it must have the weight's rows.
      if (has_bias(*n) && n->input(2)->type().shape[0] != n->input(1)->type().shape[0])
        return false;
    }
    std::optional<ir::ConstantPayload> w_bytes, b_bytes;
    if (!any_absent) {
      w_bytes = stacked(group, 1);
      if (!w_bytes) return false;
      if (has_bias(*group[0])) {
        b_bytes = stacked(group, 2);
        if (!b_bytes) return false;
      }
    }
    ir::Node* first = group[0];
    std::vector<ir::Value*> in = {
        first->input(0),
        add_constant(first->name() + "_fused_weight", w0->dtype(), w_shape, std::move(w_bytes))};
    in.push_back(has_bias(*first)
                     ? add_constant(first->name() + "_fused_bias", first->input(2)->dtype(),
                                    {w_shape[0]}, std::move(b_bytes))
                     : nullptr);
    ir::Node* fused = g_.insert_before(first, "aten.linear.default", in, {}, std::nullopt,
                                       {first->output()->name() + "_fused"});
    fused->set_location(first->location());
    const int64_t last = first->output()->type().rank() - 1;
    int64_t offset = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      ir::Node* n = group[i];
      ir::Node* s = g_.insert_before(
          n, "aten.slice.Tensor", {fused->output()},
          {{"dim", last}, {"start", offset}, {"end", offset + widths[i]}, {"step", int64_t{1}}});
      s->set_location(n->location());
      offset += widths[i];
      const std::string name = n->output()->name();
      n->output()->replace_all_uses_with(s->output());
      g_.erase(n);
      g_.rename(s, name, {name});
    }
    return true;
  }

  ir::Graph& g_;
  std::set<std::string> mutated_;
};

}  // namespace

bool FuseSiblingLinears::run(ir::Graph& g) {
  return Fuser(g).run();
}

}  // namespace neuronc::passes
