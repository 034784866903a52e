// Kernel formation (see kernel_formation.h).
#include "codegen/kernel_formation.h"

#include <algorithm>

namespace neuronc::codegen {

using device::DType;

PartitionScope::PartitionScope(const std::vector<const ir::Node*>& nodes,
                               const std::vector<const ir::Value*>& outputs)
    : nodes_(nodes), outputs_(outputs.begin(), outputs.end()) {
  for (size_t i = 0; i < nodes.size(); ++i) index_[nodes[i]] = i;
}

bool is_elementwise_kernel(const ir::Node& n) {
  if (!elementwise_lowering(n.op())) return false;
  if (n.op() == "aten._to_copy.default" &&
      device_dtype(n.output()->dtype()) == device_dtype(n.input(0)->dtype()))
    return false;  // a view
  return n.outputs().size() == 1;
}

KernelFormation form_kernels(const PartitionScope& s, const device::Target& t,
                             const CodegenOptions& opts) {
  KernelFormation f;
  f.nodes_ = &s.nodes();
  if (opts.fuse) {
    f.form_read_through(s);
    if (opts.fuse_residual) f.form_residual_groups(s);
    f.form_cast_activation_groups(s, opts);
    if (opts.fuse_channel_scale) f.form_channel_scales(s, t);
    f.form_chains(s);
  }
  if (opts.cat_in_place) f.form_cat_in_place(s);
  return f;
}

// Float casts feeding a matmul or convolution operand, or the query, key or value of an
// attention: the kernel's DMA converts while loading.
void KernelFormation::form_read_through(const PartitionScope& s) {
  for (const ir::Node* n : s.nodes()) {
    if (n->op() != "aten._to_copy.default" || n->input(0)->payload()) continue;
    const ir::Value* v = n->output();
    if (!ir::is_floating(v->dtype()) || !ir::is_floating(n->input(0)->dtype()) ||
        device_dtype(v->dtype()) == device_dtype(n->input(0)->dtype()))
      continue;
    if (s.is_output(v) || v->uses().empty()) continue;
    // Every reader converts on load (a layer norm's bf16 copy feeding Q, K and V, say).
    bool all = true;
    for (const ir::Use& u : v->uses()) {
      const ir::Node* m = u.node;
      if (!s.contains(m)) {
        all = false;
      } else if (attention_lowering(m->op())) {
        all = all && u.operand <= 2;
      } else if (matmul_lowering(m->op()) || conv_lowering(m->op())) {
        const bool bias_slot =
            (m->op() == "aten.addmm.default" || m->op() == "aten.baddbmm.default") ? u.operand == 0
                                                                                   : u.operand == 2;
        all = all && !bias_slot;
      } else {
        all = false;
      }
    }
    if (all) read_through[v] = n->input(0);
  }
}

const ir::Node* KernelFormation::only_consumer(const PartitionScope& s, const ir::Value* v) const {
  if (s.is_output(v) || v->uses().size() != 1 || read_through.count(v)) return nullptr;
  const ir::Node* m = v->uses()[0].node;
  if (!s.contains(m) || m->outputs().size() != 1) return nullptr;
  return m;
}

// Residual epilogues: conv or matmul -> [float cast] -> add(alpha 1, same shape and dtype) ->
// [unary activation], each intermediate read once and not a partition output, becomes one
// convolution or matmul kernel emitted at the last node of the chain (every operand of the
// chain is defined by then). The other operand of the add is loaded per output tile. A matmul
// flattens leading dims into its own [batch, M, N] problem, so its residual must be defined
// before it (its view is then checked against that layout when the matmul is reached, and
// the group is dissolved when it does not fit).
void KernelFormation::form_residual_groups(const PartitionScope& s) {
  for (const ir::Node* c : s.nodes()) {
    const bool matmul = matmul_lowering(c->op()) != nullptr;
    if (!(conv_lowering(c->op()) || matmul) || c->outputs().size() != 1 || grouped_.count(c))
      continue;
    std::vector<const ir::Node*> chain = {c};
    const ir::Node* m = only_consumer(s, c->output());
    if (m && m->op() == "aten._to_copy.default" && epilogue_activation(*m) &&
        device_dtype(m->output()->dtype()) != device_dtype(m->input(0)->dtype()) &&
        !grouped_.count(m)) {
      chain.push_back(m);
      m = only_consumer(s, m->output());
    }
    if (!m || m->op() != "aten.add.Tensor" || grouped_.count(m) || m->inputs().size() != 2 ||
        scalar_attr(*m, "alpha", 1.0) != 1.0)
      continue;
    const ir::Value* v = chain.back()->output();
    const ir::Value* r = m->input(0) == v ? m->input(1) : m->input(0);
    const ir::Value* out = m->output();
    if (!r || r == v || !(r->shape() == out->shape()) || !(v->shape() == out->shape()) ||
        r->dtype() != out->dtype() || v->dtype() != out->dtype() || read_through.count(r))
      continue;
    if (matmul && r->producer() && s.contains(r->producer()) && s.index(r->producer()) > s.index(c))
      continue;
    chain.push_back(m);
    if (const ir::Node* a = only_consumer(s, out);
        a && a->op() != "aten._to_copy.default" && epilogue_activation(*a) && !grouped_.count(a))
      chain.push_back(a);
    // A layer norm reading the chain's result becomes the matmul's epilogue too (checked
    // against the matmul's tiling when it is reached; dropped from the group if it does not
    // fit).
    if (const ir::Node* l = only_consumer(s, chain.back()->output());
        matmul && l && l->op() == "aten.layer_norm.default" && !grouped_.count(l) &&
        l->input(0) == chain.back()->output())
      chain.push_back(l);
    for (const ir::Node* x : chain) grouped_.insert(x);
    for (size_t i = 0; i + 1 < chain.size(); ++i) absorbed_into_[chain[i]] = chain.back();
    if (matmul) matmul_residual_[c] = {chain.back(), r};
    group_[chain.back()] = std::move(chain);
  }
}

// Matmul or convolution -> float cast -> unary activation (what `--auto-cast matmul` makes of
// linear -> gelu and conv -> relu): one kernel whose evacuation applies the activation and
// stores in the cast's dtype, exactly what the cast epilogue and the activation kernel
// computed separately.
void KernelFormation::form_cast_activation_groups(const PartitionScope& s,
                                                  const CodegenOptions& opts) {
  for (const ir::Node* c : s.nodes()) {
    if (!(matmul_lowering(c->op()) || conv_lowering(c->op())) || c->outputs().size() != 1 ||
        grouped_.count(c))
      continue;
    const ir::Node* m = only_consumer(s, c->output());
    if (!m || m->op() != "aten._to_copy.default" || !epilogue_activation(*m) || grouped_.count(m))
      continue;
    const ir::Node* a = only_consumer(s, m->output());
    if (!a || a->op() == "aten._to_copy.default" || !epilogue_activation(*a) || grouped_.count(a) ||
        !(a->output()->shape() == m->output()->shape()) ||
        a->output()->dtype() != m->output()->dtype())
      continue;
    std::vector<const ir::Node*> group = {c, m, a};
    // A narrowing float cast that is the activation's only reader (what `--auto-cast matmul`
    // puts before the next projection: gelu -> bf16) is done by the kernel's own evacuation, so
    // the value crosses HBM once, in the narrow dtype, instead of wide and converted by the
    // reader's load DMA (the same rounding: ScalarE computes in fp32 and rounds once to the
    // destination dtype).
    if (const ir::Node* n2 = only_consumer(s, a->output());
        opts.fuse_narrowing_store && c->op() == "aten.linear.default" &&
        (c->inputs().size() < 3 || !c->input(2) || c->input(2)->dtype() == c->input(0)->dtype()) &&
        n2 && n2->op() == "aten._to_copy.default" && epilogue_activation(*n2) &&
        !grouped_.count(n2) && n2->output()->shape() == a->output()->shape() &&
        ir::dtype_size(n2->output()->dtype()) < ir::dtype_size(a->output()->dtype())) {
      read_through.erase(n2->output());
      group.push_back(n2);
    }
    for (const ir::Node* x : group) grouped_.insert(x);
    for (size_t i = 0; i + 1 < group.size(); ++i) absorbed_into_[group[i]] = group.back();
    group_[group.back()] = group;
  }
}

// Channel scales: mul(x, s[N, C, 1, 1]) read only by a convolution (as its input) that keeps
// channels on the partitions, all in one dtype: the convolution's kernel scales its bands.
void KernelFormation::form_channel_scales(const PartitionScope& s, const device::Target& t) {
  for (const ir::Node* m : s.nodes()) {
    if (m->op() != "aten.mul.Tensor" || grouped_.count(m) || m->outputs().size() != 1) continue;
    const ir::Value* v = m->output();
    if (s.is_output(v) || v->uses().size() != 1 || read_through.count(v)) continue;
    const ir::Node* c = v->uses()[0].node;
    if (!s.contains(c) || !conv_lowering(c->op()) || v->uses()[0].operand != 0 ||
        channel_scale_of_.count(c))
      continue;
    const ir::Value* x = channel_scale_operands(*m, *c).first;
    ConvGeometry geo;
    if (!x || conv_geometry(*c, t, geo) || conv_packs_rows(geo, t.partitions)) continue;
    const ir::Value* w = c->input(1);
    if (read_through.count(w)) w = read_through.at(w);
    const DType xdt = device_dtype(v->dtype()), wdt = device_dtype(w->dtype());
    if (xdt != ((xdt == DType::f32 || wdt == DType::f32) ? DType::f32 : xdt)) continue;
    channel_scale_of_[c] = m;
    grouped_.insert(m);
    absorbed_into_[m] = c;
  }
}

// A node whose only result feeds exactly one later node of the partition, and is not a
// partition output, is computed inside that consumer's kernel: element-wise producers of an
// element-wise consumer with the same shape (one tile program), and a matmul, convolution or
// attention whose only consumer is a unary activation or cast (the epilogue applies it). The
// value never reaches HBM.
void KernelFormation::form_chains(const PartitionScope& s) {
  for (const ir::Node* n : s.nodes()) {
    if (n->outputs().size() != 1 || epilogue_of_.count(n) || grouped_.count(n)) continue;
    const ir::Value* v = n->output();
    if (s.is_output(v) || v->uses().size() != 1) continue;
    const ir::Node* m = v->uses()[0].node;
    if (!s.contains(m) || m->outputs().size() != 1 || grouped_.count(m)) continue;
    if (read_through.count(v) || read_through.count(m->output())) continue;
    if (!(m->output()->shape() == v->shape())) continue;
    if (std::count(m->inputs().begin(), m->inputs().end(), v) != 1) continue;  // read once
    if (is_elementwise_kernel(*n) && is_elementwise_kernel(*m)) {
      absorbed_into_[n] = m;
    } else if (!absorbed_into_.count(n) && norm_epilogue_weight(*n, *m)) {
      absorbed_into_[n] = m;  // a norm's weight multiply, applied before its store
      epilogue_of_[m] = n;
    } else if (!absorbed_into_.count(n) && epilogue_activation(*m) &&
               (matmul_lowering(n->op()) || conv_lowering(n->op()) ||
                // an attention's float cast: its store DMA converts the rounded result
                (attention_lowering(n->op()) && m->op() == "aten._to_copy.default"))) {
      absorbed_into_[n] = m;
      epilogue_of_[m] = n;
    }
  }
}

// Producers fused into `m`, in node order.
std::vector<const ir::Node*> KernelFormation::producers_of(const ir::Node* m) const {
  std::vector<const ir::Node*> chain;
  for (const ir::Node* n : *nodes_) {
    const ir::Node* c = n;
    while (absorbed_into_.count(c) && !epilogue_of_.count(absorbed_into_.at(c)))
      c = absorbed_into_.at(c);
    if (c == m && n != m) chain.push_back(n);
  }
  return chain;
}

KernelNodes KernelFormation::kernel_at(const ir::Node* n) const {
  KernelNodes k;
  if (auto g = group_.find(n); g != group_.end()) {
    k.root = g->second[0];
    k.fused.assign(g->second.begin() + 1, g->second.end());
    k.members = g->second;
  } else if (auto e = epilogue_of_.find(n); e != epilogue_of_.end()) {
    k.root = e->second;
    k.fused = {n};
    k.members = {e->second, n};
  } else {
    k.root = n;
    k.fused = producers_of(n);
    k.members = k.fused;
    k.members.push_back(n);
  }
  if (auto cs = channel_scale_of_.find(k.root); cs != channel_scale_of_.end()) {
    if (std::find(k.fused.begin(), k.fused.end(), cs->second) == k.fused.end())
      k.fused.insert(k.fused.begin(), cs->second);
    if (std::find(k.members.begin(), k.members.end(), cs->second) == k.members.end())
      k.members.insert(k.members.begin(), cs->second);
  }
  return k;
}

void KernelFormation::settle_matmul_group(const ir::Node& mm, const PartitionContext& ctx) {
  auto mr = matmul_residual_.find(&mm);
  if (mr == matmul_residual_.end()) return;
  // A layer-norm epilogue that does not fit the matmul's tiling leaves the group, which then
  // ends at the add (or its activation).
  if (const ir::Node* ln = mr->second.first;
      ln->op() == "aten.layer_norm.default" && !matmul_layer_norm_fits(mm, *ln, ctx)) {
    std::vector<const ir::Node*> chain = group_.at(ln);
    group_.erase(ln);
    grouped_.erase(ln);
    chain.pop_back();
    const ir::Node* end = chain.back();
    absorbed_into_.erase(end);
    for (size_t i = 0; i + 1 < chain.size(); ++i) absorbed_into_[chain[i]] = end;
    group_[end] = chain;
    mr->second.first = end;
  }
  // A residual whose view does not reshape to the matmul's problem layout: the group dissolves
  // into the kernels plain fusion makes of it (a cast as the matmul's epilogue, the add fused
  // into a following activation).
  const auto [last, residual] = mr->second;
  if (ctx.values.count(residual) && matmul_residual_fits(mm, ctx, ctx.view(residual))) return;
  std::vector<const ir::Node*> chain = group_.at(last);
  group_.erase(last);
  for (const ir::Node* x : chain) absorbed_into_.erase(x);
  if (chain.back()->op() == "aten.layer_norm.default") {  // a kernel of its own again
    grouped_.erase(chain.back());
    chain.pop_back();
  }
  size_t add = 1;
  if (chain[1]->op() == "aten._to_copy.default") {
    absorbed_into_[chain[0]] = chain[1];
    epilogue_of_[chain[1]] = chain[0];
    add = 2;
  }
  if (add + 1 < chain.size()) absorbed_into_[chain[add]] = chain[add + 1];
}

bool KernelFormation::writes_any_view(const ir::Node* p, const HbmView& slice) const {
  if (p->outputs().size() != 1 || absorbed_into_.count(p)) return false;
  if (auto e = epilogue_of_.find(p); e != epilogue_of_.end())
    return conv_lowering(e->second->op()) != nullptr;
  if (auto g = group_.find(p); g != group_.end())
    return conv_lowering(g->second[0]->op()) != nullptr;  // a matmul stores [batch, M, N]
  const std::string& op = p->op();
  if (conv_lowering(op) || is_elementwise_kernel(*p) || op == "aten.group_norm.default")
    return true;
  if (pool_lowering(op)) {  // its rows (leading dims) must be one uniform stride
    const int64_t spatial = op.find("pool1d") != std::string::npos ? 1 : 2;
    for (int64_t d = slice.rank() - spatial - 2; d >= 0; --d)
      if (slice.shape[d] != 1 && slice.strides[d] != slice.strides[d + 1] * slice.shape[d + 1])
        return false;
    return true;
  }
  return false;
}

// A cat input produced by a kernel of this partition is written by that kernel straight into
// its slice of the cat's buffer (an HbmView slice; kernels store through access patterns), so
// the cat copies nothing for it. Only when provably safe: a single-result kernel whose
// lowering stores through any strides (convolution and its fused activation, element-wise,
// pooling with uniform rows, group norm), of the cat's dtype and exact slice shape, not a
// partition output, listed once in this cat and aliased into no other cat. Other readers of
// the value read the slice view. Everything else is copied by the cat kernel as before.
void KernelFormation::form_cat_in_place(const PartitionScope& s) {
  for (const ir::Node* n : s.nodes()) {
    if (n->op() != "aten.cat.default") continue;
    const std::vector<int64_t> out_shape = static_shape(n->output());
    const DType dt = device_dtype(n->output()->dtype());
    int64_t dim = n->attr("dim") ? n->attr_int("dim") : 0;
    if (dim < 0) dim += static_cast<int64_t>(out_shape.size());
    const HbmView whole = HbmView::contiguous(dt, 0, out_shape);
    int64_t start = 0;
    for (const ir::Value* v : n->inputs()) {
      const std::vector<int64_t> shape = static_shape(v);
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      if (count == 0) continue;  // skipped by the cat as well
      const int64_t len = shape.size() == out_shape.size() ? shape[dim] : 0;
      const int64_t at = start;
      start += len;
      const ir::Node* p = v->producer();
      if (!p || !s.contains(p) || s.is_output(v) || cat_slot.count(v)) continue;
      if (std::count(n->inputs().begin(), n->inputs().end(), v) != 1) continue;
      if (device_dtype(v->dtype()) != dt) continue;
      const HbmView slice = whole.slice(dim, at, at + len, 1);
      if (slice.shape != shape || !writes_any_view(p, slice)) continue;
      cat_slot[v] = {n, slice};
    }
  }
}

}  // namespace neuronc::codegen
