// Tensor parallelism (see the header).
#include "passes/tensor_parallel.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/op_registry.h"

namespace neuronc::passes {
namespace {

constexpr int kWhole = -1;  // a value every core holds all of

// The op's name without namespace and overload: "aten.view.default" -> "view".
std::string base_name(const std::string& op) {
  const size_t a = op.find('.');
  const size_t b = op.find('.', a + 1);
  return a == std::string::npos ? op : op.substr(a + 1, b == std::string::npos ? b : b - a - 1);
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

std::vector<int64_t> static_dims(const ir::Value* v) {
  std::vector<int64_t> out;
  for (const ir::Dim& d : v->shape()) out.push_back(d.value());
  return out;
}

int64_t normalize(int64_t d, size_t rank) {
  return d < 0 ? d + static_cast<int64_t>(rank) : d;
}

// Thrown when a state's chunk disagrees with its update: the rewrite restarts with the state
// kept whole.
struct StateConflict {
  std::string target;
};

// Where each core's chunk of a state lies: (axis, parts), kWhole for a whole copy. With `parts`
// P < N chunks, core r keeps chunk r * P / N (cores share a chunk: replicated KV heads).
using Placement = std::pair<int, int>;

class Rewriter {
 public:
  Rewriter(const ir::Graph& old, const TensorParallelOptions& opts,
           const std::map<std::string, Placement>& state_axes, TensorParallelStats& stats)
      : old_(old), opts_(opts), n_(opts.ranks), state_axes_(state_axes), stats_(stats) {}

  std::unique_ptr<ir::Graph> run() {
    ng_ = std::make_unique<ir::Graph>();
    for (const ir::Symbol& s : old_.symbols())
      if (!s.is_product()) ng_->add_symbol(s.name, s.min, s.max);
    for (const ir::GraphInput& in : old_.inputs()) {
      roles_[in.value] = &in;
      if (in.role == ir::InputRole::user_input || in.role == ir::InputRole::symbol) {
        map_[in.value] =
            ng_->add_input(in.value->name(), in.value->type(), in.role, in.target, in.persistent);
        axis_[map_[in.value]] = kWhole;
      } else if (in.role == ir::InputRole::state) {
        auto it = state_axes_.find(in.target);
        if (it != state_axes_.end()) add_state(in, it->second.first, it->second.second);
      }
    }
    for (const auto& n : old_.nodes()) rewrite(*n);
    for (const ir::GraphInput& in : old_.inputs())
      if (in.role == ir::InputRole::state && !map_.count(in.value)) add_state(in, kWhole, n_);
    for (const ir::GraphOutput& o : old_.outputs()) {
      ir::Value* v = operand(o.value);
      if (o.role == ir::OutputRole::buffer_mutation && state_of_target(o.target)) {
        const Placement want = chosen_states_.at(o.target);
        if (axis_.at(v) != want.first || (want.first != kWhole && parts_of(v) != want.second)) {
          if (want.first != kWhole) throw StateConflict{o.target};
          v = whole(v);
        }
      } else {
        v = whole(v);
      }
      ng_->add_output(v, o.role, o.target);
    }
    return std::move(ng_);
  }

  const std::map<std::string, Placement>& chosen_states() const { return chosen_states_; }

 private:
  // --- values ----------------------------------------------------------------------------------
  const ir::GraphInput* input_of(const ir::Value* v) const {
    auto it = roles_.find(v);
    return it == roles_.end() ? nullptr : it->second;
  }
  const ir::GraphInput* state_of_target(const std::string& target) const {
    for (const ir::GraphInput& in : old_.inputs())
      if (in.role == ir::InputRole::state && in.target == target) return &in;
    return nullptr;
  }
  // A constant the pass may slice: a graph input holding a payload (a weight, a buffer).
  bool is_constant(const ir::Value* v) const {
    const ir::GraphInput* in = input_of(v);
    return in && v->payload() && in->role != ir::InputRole::user_input &&
           in->role != ir::InputRole::state;
  }

  // The payload of `p` (shape `dims`) narrowed to core rank's chunk of `axis`: a view.
  ir::ConstantPayload slice_payload(const ir::ConstantPayload& p, const std::vector<int64_t>& dims,
                                    int axis, int parts) const {
    if (p.absent) return ir::ConstantPayload::absent_bytes();
    ir::ConstantPayload s = p;
    if (s.strides.empty()) {
      s.strides.assign(dims.size(), 1);
      for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d)
        s.strides[d] = s.strides[d + 1] * dims[d + 1];
    }
    const int64_t chunk = static_cast<int64_t>(opts_.rank) * parts / n_;
    s.storage_offset += chunk * (dims[axis] / parts) * s.strides[axis];
    return s;
  }
  ir::TensorType local_type(const ir::TensorType& t, int axis, int parts) const {
    ir::TensorType l = t;
    if (axis != kWhole) l.shape[axis] = ir::Dim::constant(t.shape[axis].value() / parts);
    return l;
  }
  bool splittable(const ir::Value* v, int axis, int parts) const {
    if (axis < 0 || axis >= static_cast<int>(v->shape().size())) return false;
    const int64_t g = v->shape()[axis].value();
    return g >= parts && g % parts == 0;
  }

  void add_state(const ir::GraphInput& in, int axis, int parts) {
    ir::Value* v = ng_->add_input(in.value->name(), local_type(in.value->type(), axis, parts),
                                  in.role, in.target, in.persistent);
    ir::GraphInput& ni = ng_->mutable_inputs().back();
    if (in.initial) {
      ni.initial = axis == kWhole ? *in.initial
                                  : slice_payload(*in.initial, static_dims(in.value), axis, parts);
    }
    map_[in.value] = v;
    axis_[v] = axis;
    parts_[v] = parts;
    chosen_states_[in.target] = {axis, axis == kWhole ? n_ : parts};
    if (axis != kWhole) stats_.split_states[in.target] = axis;
  }

  // The new value for old value `v`; a state not placed yet takes chunks of `hint` when it can.
  ir::Value* operand(const ir::Value* v, int hint = kWhole, int hint_parts = 0) {
    if (hint_parts == 0) hint_parts = n_;
    if (auto it = map_.find(v); it != map_.end()) return it->second;
    const ir::GraphInput* in = input_of(v);
    if (in && in->role == ir::InputRole::state) {
      if (splittable(v, hint, hint_parts))
        add_state(*in, hint, hint_parts);
      else
        add_state(*in, kWhole, n_);
      return map_.at(v);
    }
    if (in && v->payload()) return constant(v, kWhole);
    if (in) {  // an input with no bytes that is neither a user input nor a state: kept whole
      ir::Value* nv = ng_->add_input(v->name(), v->type(), in->role, in->target, in->persistent);
      axis_[nv] = kWhole;
      return map_[v] = nv;
    }
    throw ir::Error("tensor parallelism: value '" + v->name() + "' is used before it is defined");
  }
  // Constant `v`, whole or as this core's chunk of `axis`; with rows = {start, count}, only those
  // rows of its first dim (one part of a fused projection's weight) are taken first.
  ir::Value* constant(const ir::Value* v, int axis, std::pair<int64_t, int64_t> rows = {0, -1},
                      int parts = 0) {
    if (parts == 0) parts = n_;
    auto key = std::make_tuple(v, axis, rows.first, rows.second, parts);
    if (auto it = constants_.find(key); it != constants_.end()) return it->second;
    const ir::GraphInput* in = input_of(v);
    std::vector<int64_t> dims = static_dims(v);
    ir::TensorType type = v->type();
    ir::ConstantPayload payload = *v->payload();
    std::string name = v->name();
    if (rows.second >= 0) {
      if (!payload.absent) {
        if (payload.strides.empty()) {
          payload.strides.assign(dims.size(), 1);
          for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d)
            payload.strides[d] = payload.strides[d + 1] * dims[d + 1];
        }
        payload.storage_offset += rows.first * payload.strides[0];
      }
      dims[0] = rows.second;
      type.shape[0] = ir::Dim::constant(rows.second);
      name += ".rows" + std::to_string(rows.first);
    }
    if (axis != kWhole) name += ".tp";
    ir::Value* nv =
        ng_->add_input(name, local_type(type, axis, parts), in->role, in->target, in->persistent);
    nv->set_payload(axis == kWhole ? payload : slice_payload(payload, dims, axis, parts));
    axis_[nv] = axis;
    parts_[nv] = parts;
    if (axis == kWhole && rows.second < 0) map_[v] = nv;
    return constants_[key] = nv;
  }
  int axis_of(const ir::Value* nv) const { return axis_.at(nv); }
  int parts_of(const ir::Value* nv) const {
    auto it = parts_.find(nv);
    return it == parts_.end() ? n_ : it->second;
  }

  // --- emission --------------------------------------------------------------------------------
  ir::Node* emit(const ir::Node& like, const std::string& op, std::vector<ir::Value*> inputs,
                 std::vector<ir::NamedAttr> attrs, bool keep_names) {
    std::vector<std::string> names;
    std::string node_name;
    if (keep_names) {
      for (const ir::Value* o : like.outputs()) names.push_back(o->name());
      node_name = like.name();
    }
    ir::Node* n = ng_->append(op, std::move(inputs), std::move(attrs), std::nullopt,
                              std::move(names), std::move(node_name));
    n->set_location(like.location());
    return n;
  }
  // `nv` whole: its chunks gathered from every core (all_gather -> [N, ...chunk], the core axis
  // moved next to the split axis, merged with it).
  ir::Value* whole(ir::Value* nv) {
    const int a = axis_of(nv);
    if (a == kWhole) return nv;
    if (auto it = gathered_.find(nv); it != gathered_.end()) return it->second;
    const ir::Node* like = nv->producer();
    ir::SourceLocation loc = like ? like->location() : ir::SourceLocation{};
    auto add = [&](const std::string& op, std::vector<ir::Value*> in,
                   std::vector<ir::NamedAttr> attrs) {
      ir::Node* n = ng_->append(op, std::move(in), std::move(attrs));
      n->set_location(loc);
      return n->output();
    };
    ir::Value* g = add("neuronc.all_gather.default", {nv}, {{"ranks", int64_t{n_}}});
    ++stats_.all_gathers;
    // P < N chunks: cores r * N / P hold chunk r.
    const int parts = parts_of(nv);
    if (parts != n_)
      g = add("aten.slice.Tensor", {g},
              {{"dim", int64_t{0}},
               {"start", int64_t{0}},
               {"end", int64_t{n_}},
               {"step", int64_t{n_ / parts}}});
    const size_t rank = nv->shape().size();
    if (a != 0) {
      std::vector<int64_t> perm;
      for (int d = 1; d <= a; ++d) perm.push_back(d);
      perm.push_back(0);
      for (size_t d = static_cast<size_t>(a) + 1; d <= rank; ++d)
        perm.push_back(static_cast<int64_t>(d));
      g = add("aten.permute.default", {g}, {{"dims", perm}});
    }
    std::vector<int64_t> shape = static_dims(nv);
    shape[a] *= parts;
    g = add("aten.reshape.default", {g}, {{"shape", shape}});
    axis_[g] = kWhole;
    return gathered_[nv] = g;
  }
  ir::Value* all_reduce(const ir::Node& like, ir::Value* partial) {
    ir::Node* n = ng_->append("neuronc.all_reduce.default", {partial}, {{"ranks", int64_t{n_}}});
    n->set_location(like.location());
    ++stats_.all_reduces;
    axis_[n->output()] = kWhole;
    return n->output();
  }
  void define(const ir::Node& old, const ir::Node* n, int axis, int parts = 0) {
    if (parts == 0) parts = n_;
    for (size_t i = 0; i < old.outputs().size(); ++i) {
      map_[old.output(i)] = n->output(i);
      axis_[n->output(i)] = axis;
      parts_[n->output(i)] = parts;
      // An internal check: the chunk is what the rule promised.
      const ir::TensorType want = local_type(old.output(i)->type(), axis, parts);
      if (n->output(i)->type() != want)
        throw ir::Error(old.describe() + ": tensor parallelism made " +
                        ng_->type_to_string(n->output(i)->type()) + ", expected " +
                        ng_->type_to_string(want));
    }
  }
  // The node as it is, over whole operands.
  void emit_whole(const ir::Node& n) {
    std::vector<ir::Value*> in;
    for (const ir::Value* v : n.inputs()) in.push_back(v ? whole(operand(v)) : nullptr);
    define(n, emit(n, n.op(), std::move(in), n.attrs(), true), kWhole);
  }
  // The node with its tensor operands replaced by `in` and the attributes `attrs`; every output
  // split on `axis`.
  void emit_split(const ir::Node& n, std::vector<ir::Value*> in, std::vector<ir::NamedAttr> attrs,
                  int axis, int parts = 0) {
    define(n, emit(n, n.op(), std::move(in), std::move(attrs), true), axis, parts);
  }
  static std::vector<ir::NamedAttr> with_attr(std::vector<ir::NamedAttr> attrs,
                                              const std::string& name, ir::Attribute value) {
    for (ir::NamedAttr& a : attrs) {
      if (a.name == name) {
        a.value = std::move(value);
        return attrs;
      }
    }
    attrs.push_back({name, std::move(value)});
    return attrs;
  }

  // --- rules -----------------------------------------------------------------------------------
  void rewrite(const ir::Node& n) {
    for (const ir::Value* v : n.outputs())
      for (const ir::Dim& d : v->shape())
        if (!d.is_constant())
          throw ir::Error(n.describe() +
                          ": tensor parallelism needs static shapes; pass --dim "
                          "for every symbolic dim");
    if (auto it = carved_.find(&n); it != carved_.end()) {
      const int last = static_cast<int>(n.output()->shape().size()) - 1;
      for (size_t i = 0; i < n.outputs().size(); ++i) {
        ir::Value* v = it->second.at(i);
        if (v->type() != local_type(n.output(i)->type(), last, parts_of(v)))
          throw ir::Error(n.describe() + ": tensor parallelism carved a fused projection wrongly");
        map_[n.output(i)] = v;
      }
      return;
    }
    if (opts_.on_device && !opts_.on_device(n)) return emit_whole(n);
    const std::string op = base_name(n.op());
    const ir::OpInfo* info = n.info();
    bool done = false;
    if (n.op().starts_with("aten.") && info) {
      if (op == "linear")
        done = linear(n);
      else if (op == "embedding")
        done = embedding(n);
      else if (one_of(op, {"view", "reshape", "_unsafe_view", "squeeze", "unsqueeze", "flatten",
                           "unflatten"}))
        done = reshape(n, op);
      else if (one_of(op, {"permute", "transpose", "t", "swapaxes", "swapdims"}))
        done = permute(n, op);
      else if (op == "expand")
        done = expand(n);
      else if (one_of(op, {"slice", "select", "narrow"}))
        done = slice_like(n, op);
      else if (one_of(op, {"cat", "stack"}))
        done = cat(n, op);
      else if (one_of(op, {"split", "split_with_sizes", "chunk", "unbind", "tensor_split"}))
        done = split(n, op);
      else if (one_of(op, {"softmax", "_softmax", "log_softmax", "_log_softmax"}))
        done = along_dim(n, {n.attr_int("dim")}, true);
      else if (one_of(op, {"sum", "mean", "amax", "amin", "var", "std", "var_mean", "prod",
                           "logsumexp", "argmax", "argmin", "max", "min", "any", "all"}))
        done = reduction(n);
      else if (one_of(op, {"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm"}))
        done = norm(n);
      else if (one_of(op, {"matmul", "bmm"}))
        done = batched_matmul(n);
      else if (op == "scaled_dot_product_attention")
        done = attention(n);
      else if (op == "index_copy")
        done = index_copy(n);
      else if (op == "index_put")
        done = index_put(n);
      else if (is_pointwise(n, op))
        done = pointwise(n);
    }
    if (!done) emit_whole(n);
  }

  // Element-wise (each output element reads the same position of each broadcast operand).
  static bool is_pointwise(const ir::Node& n, const std::string& op) {
    const ir::OpCategory c = n.info()->category;
    if (op.ends_with("_like") ||
        one_of(op,
               {"clone", "contiguous", "alias", "detach", "_to_copy", "to", "type_as", "dropout",
                "lift_fresh_copy", "masked_fill", "where", "clamp", "clamp_min", "clamp_max"}))
      return true;
    if (c != ir::OpCategory::elementwise && c != ir::OpCategory::comparison) return false;
    // Element-wise ops along a dim (cumsum, flip, roll) mix positions.
    for (const ir::ArgSpec& a : n.info()->args)
      if (one_of(a.name, {"dim", "dims", "shifts"})) return false;
    return n.outputs().size() == 1;
  }

  bool pointwise(const ir::Node& n) {
    const size_t out_rank = n.output()->shape().size();
    int axis = kWhole, parts = n_;
    for (const ir::Value* v : n.inputs()) {
      // Constants, and states no reader has placed yet, take whatever chunks the others have.
      if (!v || is_constant(v) || !map_.count(v)) continue;
      const int a = axis_of(map_.at(v));
      if (a == kWhole) continue;
      const int o = a + static_cast<int>(out_rank - v->shape().size());
      const int p = parts_of(map_.at(v));
      if (axis != kWhole && (axis != o || parts != p)) return false;
      axis = o;
      parts = p;
    }
    if (axis == kWhole) {
      std::vector<ir::Value*> in;
      for (const ir::Value* v : n.inputs()) in.push_back(v ? operand(v) : nullptr);
      emit_split(n, std::move(in), n.attrs(), kWhole);
      return true;
    }
    std::vector<ir::Value*> in;
    for (const ir::Value* v : n.inputs()) {
      if (!v) {
        in.push_back(nullptr);
        continue;
      }
      const int local = axis - static_cast<int>(out_rank - v->shape().size());
      const bool broadcast = local < 0 || v->shape()[local].value() == 1;
      if (is_constant(v)) {
        if (broadcast)
          in.push_back(constant(v, kWhole));
        else if (splittable(v, local, parts))
          in.push_back(constant(v, local, {0, -1}, parts));
        else
          return false;
        continue;
      }
      ir::Value* nv = operand(v, broadcast ? kWhole : local, parts);
      const int a = axis_of(nv);
      if (broadcast ? a != kWhole : (a != local || parts_of(nv) != parts)) return false;
      in.push_back(nv);
    }
    emit_split(n, std::move(in), n.attrs(), axis, parts);
    return true;
  }

  // linear(x, W[out, in], b): column- or row-parallel (see the header).
  bool linear(const ir::Node& n) {
    const ir::Value* x = n.input(0);
    const ir::Value* w = n.input(1);
    const ir::Value* b = n.inputs().size() > 2 ? n.input(2) : nullptr;
    if (!is_constant(w) || w->shape().size() != 2 || (b && !is_constant(b))) return false;
    ir::Value* nx = operand(x);
    const int a = axis_of(nx);
    const int last = static_cast<int>(x->shape().size()) - 1;
    if (a == last) {  // row-parallel: partial products, then one all-reduce
      // Shared chunks (P < N) would be summed more than once.
      if (parts_of(nx) != n_ || !splittable(w, 1, n_)) return false;
      ir::Node* mm = emit(n, n.op(), {nx, constant(w, 1), nullptr}, n.attrs(), b == nullptr);
      ir::Value* sum = all_reduce(n, mm->output());
      ++stats_.row_parallel;
      if (!b) {
        // Keep the old result's name on the value the rest of the program reads.
        map_[n.output()] = sum;
        return true;
      }
      ir::Node* add = emit(n, "aten.add.Tensor", {sum, constant(b, kWhole)}, {}, true);
      define(n, add, kWhole);
      return true;
    }
    if (a != kWhole) {  // rows split on a batch axis: each core's rows, the whole weight
      emit_split(n, {nx, constant(w, kWhole), b ? constant(b, kWhole) : nullptr}, n.attrs(), a,
                 parts_of(nx));
      return true;
    }
    if (fused_linear(n, nx)) return true;
    const int parts = column_parts(n.output());
    if (parts == 0 || !splittable(w, 0, parts) || w->shape()[0].value() / parts < 2) return false;
    emit_split(n,
               {nx, constant(w, 0, {0, -1}, parts), b ? constant(b, 0, {0, -1}, parts) : nullptr},
               n.attrs(), last, parts);
    ++stats_.column_parallel;
    return true;
  }

  // How many chunks a column-parallel projection's features split into: N, unless a view of its
  // result shows heads that do not divide by N (GQA's KV heads at a TP degree above them): then
  // that many, each core keeping the head of its group of N / heads cores (NxD's KV
  // replication). 0: do not split.
  int column_parts(const ir::Value* out) const {
    const int64_t features = out->shape().back().value();
    int parts = features % n_ == 0 ? n_ : 0;
    for (const ir::Use& u : out->uses()) {
      const std::string op = base_name(u.node->op());
      if (!one_of(op, {"view", "reshape", "_unsafe_view"})) continue;
      // The dims the last axis becomes: the trailing output dims whose product is `features`.
      const std::vector<int64_t> o = static_dims(u.node->output());
      int64_t prod = 1;
      size_t j = o.size();
      while (j > 0 && prod < features) prod *= o[--j];
      while (j < o.size() && o[j] == 1) ++j;
      if (prod != features || j == o.size()) continue;
      const int64_t heads = o[j];
      if (heads % n_ == 0) return n_;
      if (n_ % heads == 0) return static_cast<int>(heads);
      return 0;
    }
    return parts;
  }

  // A fused projection (Phi-3's qkv_proj and gate_up_proj): a linear whose result is only carved
  // along its last axis (slices, split, chunk) into parts that each divide by N. Splitting the
  // fused weight's rows N ways would mix the parts, so each part becomes its own column-parallel
  // linear over its rows of the weight, and each carving node takes those results as its own.
  bool fused_linear(const ir::Node& n, ir::Value* nx) {
    const ir::Value* out = n.output();
    const size_t rank = out->shape().size();
    const int64_t features = out->shape().back().value();
    if (old_.is_graph_output(out) || out->uses().empty()) return false;
    std::vector<std::pair<const ir::Node*, std::vector<std::pair<int64_t, int64_t>>>> carvers;
    std::set<std::pair<int64_t, int64_t>> parts;
    std::map<std::pair<int64_t, int64_t>, int> part_chunks;  // range -> its chunk count
    for (const ir::Use& u : out->uses()) {
      const ir::Node& c = *u.node;
      if (u.operand != 0 || !c.info()) return false;
      const std::string op = base_name(c.op());
      std::vector<std::pair<int64_t, int64_t>> ranges;
      if (!one_of(op, {"slice", "split", "split_with_sizes", "chunk"}) ||
          normalize(c.attr_int("dim"), rank) != static_cast<int64_t>(rank) - 1)
        return false;
      if (op == "slice") {
        if (c.attr_int("step") != 1) return false;
        auto clampi = [&](const char* name, int64_t dflt) {
          const ir::Attribute* a = c.attr(name);
          int64_t x = a && std::holds_alternative<int64_t>(*a) ? std::get<int64_t>(*a) : dflt;
          if (x < 0) x += features;
          return std::clamp<int64_t>(x, 0, features);
        };
        ranges.push_back({clampi("start", 0), clampi("end", features)});
      } else if (one_of(op, {"split", "split_with_sizes", "chunk"})) {
        int64_t at = 0;
        for (const ir::Value* o : c.outputs()) {
          const int64_t len = o->shape().back().value();
          ranges.push_back({at, at + len});
          at += len;
        }
      } else {
        return false;
      }
      for (size_t k = 0; k < ranges.size(); ++k) {
        // Each part splits as its own projection would: by heads when a view shows them.
        const int p = column_parts(c.output(k));
        const auto [b, e] = ranges[k];
        if (p == 0 || (e - b) % p != 0 || e - b < p) return false;
        auto [it, fresh] = part_chunks.emplace(std::make_pair(b, e), p);
        if (!fresh && it->second != p) return false;
        parts.insert({b, e});
      }
      carvers.push_back({&c, std::move(ranges)});
    }
    // The parts must not overlap (two carvings of one range share its linear).
    int64_t end = 0;
    for (const auto& [b, e] : parts) {
      if (b < end) return false;
      end = e;
    }
    if (parts.size() < 2) return false;
    const ir::Value* w = n.input(1);
    const ir::Value* b = n.inputs().size() > 2 ? n.input(2) : nullptr;
    std::map<std::pair<int64_t, int64_t>, ir::Value*> linears;
    for (const auto& [from, to] : parts) {
      const int p = part_chunks.at({from, to});
      ir::Node* mm = emit(n, n.op(),
                          {nx, constant(w, 0, {from, to - from}, p),
                           b ? constant(b, 0, {from, to - from}, p) : nullptr},
                          n.attrs(), false);
      axis_[mm->output()] = static_cast<int>(rank) - 1;
      parts_[mm->output()] = p;
      linears[{from, to}] = mm->output();
      ++stats_.column_parallel;
    }
    for (const auto& [c, ranges] : carvers) {
      std::vector<ir::Value*>& vals = carved_[c];
      for (const auto& r : ranges) vals.push_back(linears.at(r));
    }
    return true;
  }

  // embedding(W[V, H], indices): the table split over H.
  bool embedding(const ir::Node& n) {
    const ir::Value* w = n.input(0);
    if (!is_constant(w) || w->shape().size() != 2 || !splittable(w, 1, n_)) return false;
    ir::Value* idx = whole(operand(n.input(1)));
    emit_split(n, {constant(w, 1), idx}, n.attrs(),
               static_cast<int>(n.output()->shape().size()) - 1);
    // Gathered at once: the residual stream stays whole, so the next linears pair up
    // column-then-row as Megatron's do (a stream split over hidden would make every one
    // row-parallel, an all-reduce each).
    map_[n.output()] = whole(map_.at(n.output()));
    ++stats_.embeddings;
    return true;
  }

  // Ops that only reshape: the split axis must be the outermost non-unit dim of its group, and
  // the output group's outermost non-unit dim must divide by N.
  bool reshape(const ir::Node& n, const std::string& op) {
    ir::Value* nx = operand(n.input(0));
    const int a = axis_of(nx);
    const int parts = parts_of(nx);
    if (a == kWhole) {
      emit_split(n, {nx}, n.attrs(), kWhole);
      return true;
    }
    const std::vector<int64_t> in = static_dims(n.input(0)), out = static_dims(n.output());
    const std::string new_op = one_of(op, {"view", "reshape", "_unsafe_view"})
                                   ? n.op()
                                   : std::string("aten.reshape.default");
    const std::string size_attr = new_op == "aten.reshape.default" ? "shape" : "size";
    if (auto g = gqa_.find(nx); g != gqa_.end()) {
      // The [KV head, repeats] pair merging into query heads (see expand()).
      std::vector<int64_t> local = out;
      local[a] /= n_;
      define(n, emit(n, new_op, {nx}, {{size_attr, local}}, true), a, n_);
      return true;
    }
    for (int64_t d : in)
      if (d == 0) return false;
    // Walk both shapes in groups of equal products; find the group holding the split axis.
    size_t i = 0, j = 0;
    int target = kWhole;
    while (i < in.size() && j < out.size()) {
      const size_t i0 = i, j0 = j;
      int64_t pi = in[i++], pj = out[j++];
      while (pi != pj) {
        if (pi < pj && i < in.size())
          pi *= in[i++];
        else if (pj < pi && j < out.size())
          pj *= out[j++];
        else
          return false;
      }
      if (static_cast<size_t>(a) >= i0 && static_cast<size_t>(a) < i) {
        for (size_t k = i0; k < static_cast<size_t>(a); ++k)
          if (in[k] != 1) return false;
        size_t jj = j0;
        while (jj < j && out[jj] == 1) ++jj;
        if (jj == j || out[jj] % parts != 0) return false;
        target = static_cast<int>(jj);
      }
    }
    if (target == kWhole) return false;
    std::vector<int64_t> local = out;
    local[target] /= parts;
    std::vector<ir::NamedAttr> attrs;
    attrs.push_back({size_attr, local});
    define(n, emit(n, new_op, {nx}, attrs, true), target, parts);
    return true;
  }

  bool permute(const ir::Node& n, const std::string& op) {
    ir::Value* nx = operand(n.input(0));
    const int a = axis_of(nx);
    const size_t rank = n.input(0)->shape().size();
    int target = a;
    if (a != kWhole) {
      if (op == "permute") {
        const std::vector<int64_t> dims = n.attr_ints("dims");
        for (size_t k = 0; k < dims.size(); ++k)
          if (normalize(dims[k], rank) == a) target = static_cast<int>(k);
      } else if (op == "t") {
        target = rank == 2 ? 1 - a : a;
      } else {
        const bool axes = op == "swapaxes";
        const int64_t d0 = normalize(n.attr_int(axes ? "axis0" : "dim0"), rank);
        const int64_t d1 = normalize(n.attr_int(axes ? "axis1" : "dim1"), rank);
        target = a == d0 ? static_cast<int>(d1) : a == d1 ? static_cast<int>(d0) : a;
      }
    }
    emit_split(n, {nx}, n.attrs(), target, parts_of(nx));
    return true;
  }

  bool expand(const ir::Node& n) {
    ir::Value* nx = operand(n.input(0));
    const int a = axis_of(nx);
    if (a == kWhole) {
      emit_split(n, {nx}, n.attrs(), kWhole);
      return true;
    }
    const int parts = parts_of(nx);
    const int target =
        a + static_cast<int>(n.output()->shape().size() - n.input(0)->shape().size());
    std::vector<int64_t> local = static_dims(n.output());
    if (parts < n_ && gqa_repeat(n, target, parts)) {
      // KV heads shared by N / P cores each, repeated for the query heads (transformers'
      // repeat_kv): each core needs only the repeats its own query heads read, and they are all
      // copies of its one KV head, so it expands that head to H / N repeats; the reshape that
      // merges [KV head, repeats] into query heads then yields its N-way chunk of the heads.
      local[target] = 1;
      local[target + 1] = local[target + 1] * parts / n_;
      ir::Node* e = emit(n, n.op(), {nx}, with_attr(n.attrs(), "size", local), true);
      map_[n.output()] = e->output();
      axis_[e->output()] = target;
      parts_[e->output()] = n_;
      gqa_.insert(e->output());
      return true;
    }
    local[target] /= parts;
    emit_split(n, {nx}, with_attr(n.attrs(), "size", local), target, parts);
    return true;
  }

  // Whether expand `n` repeats each of P chunks of one KV head along the axis after `axis`, into
  // a whole number of repeats per core, for one reshape that merges the two axes (repeat_kv).
  bool gqa_repeat(const ir::Node& n, int axis, int parts) const {
    const std::vector<int64_t> out = static_dims(n.output());
    const size_t shift = out.size() - n.input(0)->shape().size();
    const size_t rep = static_cast<size_t>(axis) + 1;
    if (rep >= out.size() || rep < shift || n.input(0)->shape()[rep - shift].value() != 1 ||
        out[static_cast<size_t>(axis)] != parts || (out[rep] * parts) % n_ != 0 ||
        n.output()->uses().size() != 1 || old_.is_graph_output(n.output()))
      return false;
    const ir::Node& m = *n.output()->uses()[0].node;
    if (!one_of(base_name(m.op()), {"view", "reshape", "_unsafe_view"})) return false;
    std::vector<int64_t> merged = out;
    merged[static_cast<size_t>(axis)] *= out[rep];
    merged.erase(merged.begin() + static_cast<int64_t>(rep));
    return static_dims(m.output()) == merged;
  }

  bool slice_like(const ir::Node& n, const std::string& op) {
    ir::Value* nx = operand(n.input(0));
    const int a = axis_of(nx);
    if (a == kWhole) {
      emit_split(n, {nx}, n.attrs(), kWhole);
      return true;
    }
    const size_t rank = n.input(0)->shape().size();
    const int64_t d = normalize(n.attr_int("dim"), rank);
    if (d == a) {
      // A slice that keeps every element of the split axis is an identity on each chunk.
      if (op == "slice" && n.output()->shape() == n.input(0)->shape()) {
        define(n, emit(n, "aten.alias.default", {nx}, {}, true), a, parts_of(nx));
        return true;
      }
      return false;
    }
    emit_split(n, {nx}, n.attrs(), op == "select" && d < a ? a - 1 : a, parts_of(nx));
    return true;
  }

  bool cat(const ir::Node& n, const std::string& op) {
    const size_t rank = n.input(0)->shape().size();
    const int64_t d = normalize(n.attr_int("dim"), op == "stack" ? rank + 1 : rank);
    int axis = kWhole, parts = n_;
    for (const ir::Value* v : n.inputs()) {
      if (input_of(v)) continue;
      const ir::Value* nv = operand(v);
      const int a = axis_of(nv);
      if (a == kWhole) continue;
      if (axis != kWhole && (a != axis || parts_of(nv) != parts)) return false;
      axis = a;
      parts = parts_of(nv);
    }
    if (axis == kWhole || (op == "cat" && axis == d)) return false;
    std::vector<ir::Value*> in;
    for (const ir::Value* v : n.inputs()) {
      if (is_constant(v)) {
        if (!splittable(v, axis, parts)) return false;
        in.push_back(constant(v, axis, {0, -1}, parts));
        continue;
      }
      ir::Value* nv = operand(v, axis, parts);
      if (axis_of(nv) != axis || parts_of(nv) != parts) return false;
      in.push_back(nv);
    }
    emit_split(n, std::move(in), n.attrs(), op == "stack" && d <= axis ? axis + 1 : axis, parts);
    return true;
  }

  bool split(const ir::Node& n, const std::string& op) {
    ir::Value* nx = operand(n.input(0));
    const int a = axis_of(nx);
    if (a == kWhole) {
      emit_split(n, {nx}, n.attrs(), kWhole);
      return true;
    }
    const int64_t d = normalize(n.attr_int("dim"), n.input(0)->shape().size());
    if (d == a) return false;
    emit_split(n, {nx}, n.attrs(), op == "unbind" && d < a ? a - 1 : a, parts_of(nx));
    return true;
  }

  // An op that reads whole rows along `dims` (softmax): fine when the split axis is another.
  bool along_dim(const ir::Node& n, std::vector<int64_t> dims, bool keeps_rank) {
    ir::Value* nx = operand(n.input(0));
    const int a = axis_of(nx);
    const size_t rank = n.input(0)->shape().size();
    if (a == kWhole) {
      std::vector<ir::Value*> in{nx};
      for (size_t i = 1; i < n.inputs().size(); ++i)
        in.push_back(n.input(i) ? whole(operand(n.input(i))) : nullptr);
      emit_split(n, std::move(in), n.attrs(), kWhole);
      return true;
    }
    int removed_before = 0;
    for (int64_t d : dims) {
      d = normalize(d, rank);
      if (d == a) return false;
      if (d < a) ++removed_before;
    }
    std::vector<ir::Value*> in{nx};
    for (size_t i = 1; i < n.inputs().size(); ++i) {
      if (!n.input(i)) {
        in.push_back(nullptr);
        continue;
      }
      if (!is_constant(n.input(i))) return false;
      in.push_back(constant(n.input(i), kWhole));
    }
    emit_split(n, std::move(in), n.attrs(), keeps_rank ? a : a - removed_before, parts_of(nx));
    return true;
  }

  bool reduction(const ir::Node& n) {
    if (n.inputs().size() != 1) return false;
    std::vector<int64_t> dims;
    for (const char* name : {"dim", "dims"}) {
      const ir::Attribute* at = n.attr(name);
      if (!at || std::holds_alternative<ir::NoneAttr>(*at)) continue;
      dims = n.attr_ints(name);
    }
    if (dims.empty()) {
      if (axis_of(operand(n.input(0))) != kWhole) return false;  // over every dim
    }
    const ir::Attribute* kd = n.attr("keepdim");
    const bool keep = kd && std::holds_alternative<bool>(*kd) && std::get<bool>(*kd);
    return along_dim(n, dims, keep);
  }

  // layer_norm / rms_norm over the trailing normalized_shape dims.
  bool norm(const ir::Node& n) {
    const size_t rank = n.input(0)->shape().size();
    std::vector<int64_t> dims;
    const ir::Attribute* ns = n.attr("normalized_shape");
    const size_t k = ns ? n.attr_ints("normalized_shape").size() : 1;
    for (size_t d = rank - k; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
    return along_dim(n, dims, true);
  }

  // matmul / bmm of two activations: batch axes split alike, rows of a, or columns of b.
  bool batched_matmul(const ir::Node& n) {
    const ir::Value *x = n.input(0), *y = n.input(1);
    const size_t rx = x->shape().size(), ry = y->shape().size(), ro = n.output()->shape().size();
    if (rx < 2 || ry < 2) return false;
    ir::Value* nx = is_constant(x) ? constant(x, kWhole) : operand(x);
    ir::Value* ny = is_constant(y) ? constant(y, kWhole) : operand(y);
    const int ax = axis_of(nx), ay = axis_of(ny);
    const int ox = ax == kWhole ? kWhole : ax + static_cast<int>(ro - rx);
    const int oy = ay == kWhole ? kWhole : ay + static_cast<int>(ro - ry);
    const int batch = static_cast<int>(ro) - 2;
    int target = kWhole;
    const int parts = ax != kWhole ? parts_of(nx) : parts_of(ny);
    if (ax != kWhole && ay != kWhole) {
      // A split contraction would need a sum; the batch axes must be chunked alike.
      if (ox != oy || ox >= batch || parts_of(nx) != parts_of(ny)) return false;
      target = ox;
    } else if (ax != kWhole) {
      if (ax == static_cast<int>(rx) - 1) return false;
      if (ox < batch) {
        const int ly = ox - static_cast<int>(ro - ry);
        if (ly >= 0 && y->shape()[ly].value() != 1) return false;  // y would need its chunk
      }
      target = ox;
    } else if (ay != kWhole) {
      if (ay == static_cast<int>(ry) - 2) return false;
      if (oy < batch) {
        const int lx = oy - static_cast<int>(ro - rx);
        if (lx >= 0 && x->shape()[lx].value() != 1) return false;
      }
      target = oy;
    }
    emit_split(n, {nx, ny}, n.attrs(), target, parts);
    return true;
  }

  // scaled_dot_product_attention(q, k, v, attn_mask?): heads (axis -3) split alike.
  bool attention(const ir::Node& n) {
    std::vector<ir::Value*> in;
    int axis = kWhole;
    const int parts = parts_of(operand(n.input(0)));
    for (size_t i = 0; i < 3; ++i) {
      ir::Value* nv = operand(n.input(i));
      const int a = axis_of(nv);
      const int heads = static_cast<int>(n.input(i)->shape().size()) - 3;
      if (a != heads || (axis != kWhole && a != axis) || parts_of(nv) != parts) return false;
      axis = a;
      in.push_back(nv);
    }
    if (axis == kWhole) return false;
    for (size_t i = 3; i < n.inputs().size(); ++i) {
      const ir::Value* m = n.input(i);
      if (!m) {
        in.push_back(nullptr);
        continue;
      }
      const int local = axis - static_cast<int>(n.input(0)->shape().size() - m->shape().size());
      ir::Value* nm = operand(m);
      const bool broadcast = local < 0 || m->shape()[local].value() == 1;
      if (broadcast ? axis_of(nm) != kWhole : (axis_of(nm) != local || parts_of(nm) != parts))
        return false;
      in.push_back(nm);
    }
    emit_split(n, std::move(in), n.attrs(), axis, parts);
    return true;
  }

  // index_copy(self, dim, index, source): self and source split alike, off `dim`.
  bool index_copy(const ir::Node& n) {
    ir::Value* src = operand(n.input(2));
    const int a = axis_of(src);
    const int64_t d = normalize(n.attr_int("dim"), n.input(0)->shape().size());
    if (a == kWhole || a == d) return false;
    const int parts = parts_of(src);
    ir::Value* self = operand(n.input(0), a, parts);
    if (axis_of(self) != a || parts_of(self) != parts) return false;
    emit_split(n, {self, whole(operand(n.input(1))), src}, n.attrs(), a, parts);
    return true;
  }

  // index_put(self, indices, values): the split axis of self is one no index tensor addresses.
  bool index_put(const ir::Node& n) {
    const ir::Value* values = n.inputs().back();
    ir::Value* nvals = operand(values);
    const int a = axis_of(nvals);
    const size_t rank = n.input(0)->shape().size();
    if (a == kWhole || values->shape().size() != rank) return false;
    // indices: operands 1 .. size-2, null for a None entry (a whole dim).
    const size_t num_idx = n.inputs().size() - 2;
    if (static_cast<size_t>(a) < num_idx && n.input(1 + static_cast<size_t>(a))) return false;
    for (size_t i = 0; i < num_idx && i < static_cast<size_t>(a); ++i)
      if (n.input(1 + i)) return false;  // an index before the split axis moves it
    const int parts = parts_of(nvals);
    ir::Value* self = operand(n.input(0), a, parts);
    if (axis_of(self) != a || parts_of(self) != parts) return false;
    std::vector<ir::Value*> in{self};
    for (size_t i = 0; i < num_idx; ++i)
      in.push_back(n.input(1 + i) ? whole(operand(n.input(1 + i))) : nullptr);
    in.push_back(nvals);
    emit_split(n, std::move(in), n.attrs(), a, parts);
    return true;
  }

  const ir::Graph& old_;
  const TensorParallelOptions& opts_;
  const int n_;
  const std::map<std::string, Placement>& state_axes_;
  TensorParallelStats& stats_;
  std::unique_ptr<ir::Graph> ng_;
  std::unordered_map<const ir::Value*, const ir::GraphInput*> roles_;
  std::unordered_map<const ir::Value*, ir::Value*> map_;
  std::unordered_map<const ir::Value*, int> axis_;
  std::map<std::tuple<const ir::Value*, int, int64_t, int64_t, int>, ir::Value*> constants_;
  std::unordered_map<const ir::Value*, int> parts_;  // P of a split value (absent: N)
  // Nodes carving a fused projection's result, and the values of their results (fused_linear).
  std::unordered_map<const ir::Node*, std::vector<ir::Value*>> carved_;
  std::unordered_map<const ir::Value*, ir::Value*> gathered_;
  // Repeated KV heads, each core's own repeats (expand()): only their merging reshape reads them.
  std::set<const ir::Value*> gqa_;
  std::map<std::string, Placement> chosen_states_;
};

}  // namespace

bool TensorParallel::run(ir::Graph& g) {
  if (opts_.ranks <= 1) return false;
  if (opts_.rank < 0 || opts_.rank >= opts_.ranks)
    throw ir::Error("tensor parallelism: rank " + std::to_string(opts_.rank) + " of " +
                    std::to_string(opts_.ranks) + " cores: expected 0 to " +
                    std::to_string(opts_.ranks - 1));
  // A state's placement is decided by its first reader; once every state is placed the rewrite
  // runs again with them fixed (inputs in their order), and a state whose update disagrees
  // with its chunks is kept whole.
  std::map<std::string, Placement> states;
  size_t num_states = 0;
  for (const ir::GraphInput& in : g.inputs()) num_states += in.role == ir::InputRole::state;
  for (size_t attempt = 0; attempt < num_states + 2; ++attempt) {
    stats_ = {};
    Rewriter rw(g, opts_, states, stats_);
    std::unique_ptr<ir::Graph> out;
    try {
      out = rw.run();
    } catch (const StateConflict& c) {
      states = rw.chosen_states();
      states[c.target] = {kWhole, opts_.ranks};
      continue;
    }
    if (rw.chosen_states().size() != states.size() || rw.chosen_states() != states) {
      states = rw.chosen_states();
      continue;
    }
    g.swap(*out);
    if (out_) *out_ = stats_;
    return true;
  }
  throw ir::Error("tensor parallelism: the placement of the program's states did not settle");
}

}  // namespace neuronc::passes
