// Random valid ATen graphs (see generator.h).
#include "tests/difftest/generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace neuronc::difftest {
namespace {

using Dims = std::vector<int64_t>;

// Odd and round sizes: partition-count edges (127/128/129), primes, ones for broadcasting.
constexpr std::array<int64_t, 15> kSizes = {1,  2,  3,  5,  7,   8,   12, 16,
                                            17, 31, 33, 64, 100, 128, 129};

int64_t numel(const Dims& d) {
  return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>());
}

Dims dims_of(const ir::Value* v) {
  Dims d;
  for (const ir::Dim& x : v->shape()) d.push_back(x.as_constant().value());
  return d;
}

bool is_view(const std::string& op) {
  static const char* kViews[] = {
      "aten.view.default", "aten.reshape.default", "aten.permute.default",   "aten.transpose.int",
      "aten.slice.Tensor", "aten.select.int",      "aten.unsqueeze.default", "aten.expand.default"};
  return std::find(std::begin(kViews), std::end(kViews), op) != std::end(kViews);
}

ir::Shape shape_of(const Dims& d) {
  ir::Shape s;
  for (int64_t x : d) s.push_back(ir::Dim::constant(x));
  return s;
}

class Builder {
 public:
  Builder(uint64_t seed, const GeneratorOptions& opts)
      : rng_(seed * 0x9E3779B97F4A7C15ull + 0x5eed),
        opts_(opts),
        g_(std::make_unique<ir::Graph>()) {}

  std::unique_ptr<ir::Graph> build() {
    const int inputs = 1 + static_cast<int>(pick(2));
    for (int i = 0; i < inputs; ++i) {
      ir::Value* x = g_->add_input("x" + std::to_string(i), {ir::DType::f32, shape_of(new_dims())});
      pool_.push_back(x);
    }
    const int target = opts_.min_ops + static_cast<int>(pick(opts_.max_ops - opts_.min_ops + 1));
    int made = 0;
    for (int attempt = 0; made < target && attempt < 50 * target; ++attempt) {
      const size_t before = g_->nodes().size();
      ir::Value* v = pool_[static_cast<size_t>(pick(static_cast<int64_t>(pool_.size())))];
      // Recent values are preferred, so graphs are chains with branches rather than fans.
      if (coin(60)) v = pool_.back();
      if (ir::Value* out = step(v)) {
        pool_.push_back(out);
        ++made;
      } else if (g_->nodes().size() != before) {
        ++made;  // an in-place write: its effect is on a value already in the pool
      }
    }
    // Outputs: the last value, and sometimes an earlier intermediate one.
    std::vector<ir::Value*> outs = {pool_.back()};
    if (coin(50)) {
      ir::Value* other = pool_[static_cast<size_t>(pick(static_cast<int64_t>(pool_.size())))];
      if (other->producer() && other != outs[0]) outs.push_back(other);
    }
    for (ir::Value* o : outs) g_->add_output(o);
    for (ir::Value* o : extra_outputs_) g_->add_output(o);
    return std::move(g_);
  }

 private:
  // --- draws (integer arithmetic only: the same graph on every platform) ---
  int64_t pick(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  bool coin(int percent) { return pick(100) < percent; }
  double unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t size() { return kSizes[static_cast<size_t>(pick(kSizes.size()))]; }
  Dims new_dims() {
    for (;;) {
      Dims d(static_cast<size_t>(1 + pick(4)));
      for (int64_t& x : d) x = size();
      if (numel(d) <= opts_.max_numel && numel(d) >= 2) return d;
    }
  }
  bool fits(const Dims& d) const { return numel(d) <= opts_.max_numel; }

  ir::Value* emit(const std::string& op, std::vector<ir::Value*> in,
                  std::vector<ir::NamedAttr> attrs = {}) {
    return g_->append(op, std::move(in), std::move(attrs))->output();
  }

  // A weight of shape `d` with entries uniform in [-scale, scale].
  ir::Value* param(const Dims& d, double scale) {
    const std::string name = "w" + std::to_string(params_++);
    ir::Value* w = g_->add_input(name, {ir::DType::f32, shape_of(d)}, ir::InputRole::parameter,
                                 "difftest." + name);
    std::vector<float> values(static_cast<size_t>(numel(d)));
    for (float& x : values) x = static_cast<float>((2 * unit() - 1) * scale);
    w->set_payload(f32_payload(std::move(values)));
    return w;
  }

  // An operand that broadcasts into `d`: an earlier value whose shape does, or a new weight
  // with some dims set to 1 and some leading dims dropped.
  ir::Value* broadcast_operand(const Dims& d) {
    std::vector<ir::Value*> fit;
    for (ir::Value* u : pool_) {
      const Dims ud = dims_of(u);
      if (ud.size() > d.size()) continue;
      bool ok = true;
      for (size_t k = 0; k < ud.size(); ++k)
        ok &= ud[ud.size() - 1 - k] == 1 || ud[ud.size() - 1 - k] == d[d.size() - 1 - k];
      if (ok) fit.push_back(u);
    }
    if (!fit.empty() && coin(60)) return fit[static_cast<size_t>(pick(fit.size()))];
    Dims w(d.begin() + pick(static_cast<int64_t>(d.size()) + 1), d.end());
    for (int64_t& x : w)
      if (coin(30)) x = 1;
    return param(w, 1.0);
  }

  int64_t dim_index(size_t rank) {  // a dim, sometimes written negative
    const int64_t i = pick(static_cast<int64_t>(rank));
    return coin(30) ? i - static_cast<int64_t>(rank) : i;
  }

  // --- operators ---
  ir::Value* step(ir::Value* v) {
    const Dims d = dims_of(v);
    const bool bf16 = v->dtype() == ir::DType::bf16;
    const int64_t choice = pick(32);
    if (choice >= 18) return step_more(v, d, choice - 18);
    switch (choice) {
      case 0:
      case 1:
        return unary(v);
      case 2:
      case 3:
        return binary(v, d);
      case 4: {
        static const char* kOps[] = {"aten.mul.Scalar", "aten.add.Scalar"};
        const double s = std::round((4 * unit() - 2) * 64) / 64;
        return emit(kOps[pick(2)], {v}, {{"other", s}});
      }
      case 5: {  // where(x > t, x, other)
        // Not on bf16: a value that rounds onto the threshold on one side only flips a branch.
        if (bf16) return nullptr;
        ir::Value* c = emit("aten.gt.Scalar", {v}, {{"other", std::round(unit() * 8) / 16}});
        return emit("aten.where.self", {c, v, broadcast_operand(d)});
      }
      case 6:
        return reduce(v, d);
      case 7:
        if (d.empty()) return nullptr;
        return coin(50) ? emit("aten._softmax.default", {v},
                               {{"dim", dim_index(d.size())}, {"half_to_float", false}})
                        : emit("aten.softmax.int", {v}, {{"dim", dim_index(d.size())}});
      case 8:
        return layer_norm(v, d);
      case 9:
        return linear(v, d);
      case 10:
        return matmul(v, d);
      case 11:
        return reshape(v, d);
      case 12:
        return permute(v, d);
      case 13:
        return slice_or_select(v, d);
      case 14:
        return expand_or_unsqueeze(v, d);
      case 15:
        return cat(v, d);
      case 16:
        if (!opts_.bf16) return nullptr;
        return emit("aten._to_copy.default", {v},
                    {{"dtype", bf16 ? ir::DType::f32 : ir::DType::bf16}});
      default:
        return in_place(v, d);
    }
  }

  // Operators whose operands need shaping first, or whose inputs need a domain (positive
  // denominators, logs of positive values).
  ir::Value* step_more(ir::Value* v, const Dims& d, int64_t which) {
    const bool bf16 = v->dtype() == ir::DType::bf16;
    switch (which) {
      case 0:
        return domain_math(v, d);
      case 1:
        if (d.empty()) return nullptr;
        return emit("aten.cumsum.default", {v}, {{"dim", dim_index(d.size())}});
      case 2: {
        if (d.empty()) return nullptr;
        const int64_t i = dim_index(d.size());
        if (d[static_cast<size_t>((i + static_cast<int64_t>(d.size())) %
                                  static_cast<int64_t>(d.size()))] < 2)
          return nullptr;
        return emit(
            "aten.var.correction", {v},
            {{"dim", std::vector<int64_t>{i}}, {"correction", int64_t{1}}, {"keepdim", coin(50)}});
      }
      case 3: {
        if (bf16) return nullptr;  // a value rounding onto the threshold flips the mask
        ir::Value* m = emit("aten.gt.Scalar", {broadcast_operand(d)}, {{"other", 0.25}});
        return emit("aten.masked_fill.Scalar", {v, m}, {{"value", -1.5}});
      }
      case 4: {
        std::vector<int64_t> pad = {pick(3), pick(3)};
        if (d.size() >= 2 && coin(50)) pad.insert(pad.end(), {pick(2), pick(3)});
        if (pad.size() / 2 > d.size()) return nullptr;
        Dims to = d;
        for (size_t k = 0; k < pad.size() / 2; ++k)
          to[to.size() - 1 - k] += pad[2 * k] + pad[2 * k + 1];
        if (!fits(to)) return nullptr;
        return emit("aten.constant_pad_nd.default", {v},
                    {{"pad", pad}, {"value", coin(50) ? 0.0 : 0.5}});
      }
      case 5:
        return conv(v, d);
      case 6:
        return pool(v, d);
      case 7:
        return attention(v, d);
      case 8: {  // group norm over [N, C, ...]
        if (d.size() < 2 || d.size() > 4 || bf16) return nullptr;
        std::vector<int64_t> groups;
        for (int64_t gcount : {1, 2, 3, 4, 8})
          if (d[1] % gcount == 0) groups.push_back(gcount);
        const int64_t gcount = groups[static_cast<size_t>(pick(groups.size()))];
        const bool affine = coin(70);
        ir::Value* w = affine ? param({d[1]}, 1.0) : nullptr;
        ir::Value* b = affine ? param({d[1]}, 0.5) : nullptr;
        return emit("aten.group_norm.default", {v, w, b}, {{"num_groups", gcount}, {"eps", 1e-5}});
      }
      case 9: {  // max over a dim: the values (the indices are tested by argmax)
        if (d.empty()) return nullptr;
        if (coin(30) && !bf16) {
          extra_outputs_.push_back(emit("aten.argmax.default", {v},
                                        {{"dim", dim_index(d.size())}, {"keepdim", coin(50)}}));
          return nullptr;
        }
        return g_
            ->append("aten.max.dim", {v}, {{"dim", dim_index(d.size())}, {"keepdim", coin(50)}})
            ->outputs()[0];
      }
      case 10:
        return embedding(d);
      case 11: {  // repeat / roll
        if (d.empty()) return nullptr;
        if (coin(50)) {
          std::vector<int64_t> shifts = {pick(d[0] + 2) - 1};
          std::vector<int64_t> dims = {dim_index(d.size())};
          return emit("aten.roll.default", {v}, {{"shifts", shifts}, {"dims", dims}});
        }
        std::vector<int64_t> rep(d.size(), 1);
        rep[static_cast<size_t>(pick(d.size()))] = 2 + pick(2);
        if (coin(30)) rep.insert(rep.begin(), 2);
        Dims to = d;
        to.insert(to.begin(), rep.size() - d.size(), 1);
        for (size_t k = 0; k < to.size(); ++k) to[k] *= rep[k];
        if (!fits(to)) return nullptr;
        return emit("aten.repeat.default", {v}, {{"repeats", rep}});
      }
      case 12: {  // stack with a same-shaped value
        ir::Value* u = unary(v);
        if (d.size() >= 4 || !fits(Dims(d.size(), 1)) || 2 * numel(d) > opts_.max_numel)
          return nullptr;
        return emit("aten.stack.default", {v, u},
                    {{"dim", pick(static_cast<int64_t>(d.size()) + 1)}});
      }
      default: {  // one chunk of a split
        if (d.empty()) return nullptr;
        const int64_t i = pick(static_cast<int64_t>(d.size()));
        if (d[static_cast<size_t>(i)] < 2) return nullptr;
        std::vector<ir::NamedAttr> attrs = {{"dim", i}};
        std::string op = "aten.chunk.default";
        if (coin(40)) {
          op = "aten.tensor_split.indices";
          attrs.push_back(
              {"indices", std::vector<int64_t>{1 + pick(d[static_cast<size_t>(i)] - 1)}});
        } else {
          attrs.push_back({"chunks", 2 + pick(2)});
        }
        ir::Node* n = g_->append(op, {v}, std::move(attrs));
        return n->outputs()[static_cast<size_t>(pick(static_cast<int64_t>(n->outputs().size())))];
      }
    }
  }

  // Math that needs a domain: the operand is first made positive (|x| + c).
  ir::Value* domain_math(ir::Value* v, const Dims& d) {
    ir::Value* pos = emit("aten.add.Scalar", {emit("aten.abs.default", {v})}, {{"other", 0.25}});
    switch (pick(8)) {
      case 0:
        return emit("aten.div.Tensor", {broadcast_operand(d), pos});
      case 1:
        return emit("aten.div.Tensor", {v, pos});
      case 2:
        return emit("aten.rsqrt.default", {pos});
      case 3:
        return emit("aten.log.default", {pos});
      case 4:
        return emit("aten.sqrt.default", {pos});
      case 5:
        return emit("aten.pow.Tensor_Scalar", {coin(50) ? v : pos},
                    {{"exponent", coin(50) ? 2.0 : 3.0}});
      case 6:
        return emit("aten.erf.default", {v});
      default:
        return coin(50) ? emit("aten.hardswish.default", {v})
                        : emit("aten.leaky_relu.default", {v}, {{"negative_slope", 0.125}});
    }
  }

  // conv1d on [N, C, L] or conv2d on [N, C, H, W], with groups, stride, padding and dilation.
  ir::Value* conv(ir::Value* v, const Dims& d) {
    if ((d.size() != 3 && d.size() != 4) || v->dtype() != ir::DType::f32) return nullptr;
    const size_t sp = d.size() - 2;
    const int64_t c = d[1], k = 1 + pick(3), stride = 1 + pick(2), pad = pick(k), dil = 1 + pick(2);
    for (size_t i = 0; i < sp; ++i)
      if (d[2 + i] + 2 * pad < dil * (k - 1) + 1) return nullptr;
    const int64_t groups = (c % 2 == 0 && coin(30)) ? 2 : (coin(15) ? c : 1);
    const int64_t o = groups == c ? c : size();
    if (o % groups) return nullptr;
    Dims w = {o, c / groups};
    Dims out = {d[0], o};
    for (size_t i = 0; i < sp; ++i) {
      w.push_back(k);
      out.push_back((d[2 + i] + 2 * pad - dil * (k - 1) - 1) / stride + 1);
    }
    if (!fits(out) || numel(w) > 65536) return nullptr;
    const int64_t fan_in = c / groups * (sp == 1 ? k : k * k);
    ir::Value* wt = param(w, 1.7 / std::sqrt(static_cast<double>(fan_in)));
    ir::Value* b = coin(60) ? param({o}, 0.5) : nullptr;
    const std::vector<int64_t> st(sp, stride), pd(sp, pad), dl(sp, dil);
    return emit(sp == 1 ? "aten.conv1d.default" : "aten.conv2d.default", {v, wt, b},
                {{"stride", st}, {"padding", pd}, {"dilation", dl}, {"groups", groups}});
  }

  // max / avg pooling over the last two dims of [N, C, H, W].
  ir::Value* pool(ir::Value* v, const Dims& d) {
    if (d.size() != 4 && d.size() != 3) return nullptr;
    const int64_t k = 2 + pick(2), stride = 1 + pick(2), pad = pick(k / 2 + 1);
    if (d[d.size() - 1] + 2 * pad < k || d[d.size() - 2] + 2 * pad < k) return nullptr;
    if (d.size() == 4 && coin(30) && d[1] + 2 * pad >= k) {  // [C, D, H, W]: a 3-D window
      const std::vector<int64_t> ks = {k, 2, k}, st = {stride, 1, stride}, pd = {pad, 1, pad};
      return emit("aten.max_pool3d.default", {v},
                  {{"kernel_size", ks}, {"stride", st}, {"padding", pd}, {"ceil_mode", coin(30)}});
    }
    const std::vector<int64_t> ks = {k, k}, st = {stride, stride}, pd = {pad, pad};
    if (coin(50))
      return emit("aten.max_pool2d.default", {v},
                  {{"kernel_size", ks}, {"stride", st}, {"padding", pd}});
    return emit("aten.avg_pool2d.default", {v},
                {{"kernel_size", ks}, {"stride", st}, {"padding", pd}});
  }

  // softmax(q k^T * scale) v over [B, H, S, D] (or [B, S, D]), q = v; k and v same-shaped values.
  ir::Value* attention(ir::Value* q, const Dims& d) {
    if (d.size() < 3 || d.size() > 4) return nullptr;
    const int64_t s = d[d.size() - 2];
    if (!fits({numel(d) / d.back(), s})) return nullptr;
    ir::Value *k = q, *val = q;
    for (ir::Value* u : pool_) {
      if (u == q || u->dtype() != q->dtype() || dims_of(u) != d) continue;
      if (coin(50))
        k = u;
      else if (coin(50))
        val = u;
    }
    return emit("aten.scaled_dot_product_attention.default", {q, k, val, nullptr},
                {{"is_causal", coin(40)}});
  }

  // Rows of a table picked by an integer input (its valid range is the table's rows).
  ir::Value* embedding(const Dims& d) {
    (void)d;
    const int64_t rows = 3 + pick(60), width = size();
    if (!ids_) {
      Dims ids = {1 + pick(3), size()};
      if (coin(40)) ids = {size()};
      if (numel(ids) * width > opts_.max_numel) return nullptr;
      ids_ = g_->add_input("ids", {ir::DType::i64, shape_of(ids)});
      ids_rows_ = rows;
    }
    if (numel(dims_of(ids_)) * width > opts_.max_numel) return nullptr;
    return emit("aten.embedding.default", {param({ids_rows_, width}, 1.0), ids_});
  }

  ir::Value* unary(ir::Value* v) {
    static const char* kOps[] = {"aten.relu.default", "aten.gelu.default", "aten.sigmoid.default",
                                 "aten.tanh.default", "aten.silu.default", "aten.neg.default",
                                 "aten.abs.default",  "aten.exp.default",  "aten.clamp.default"};
    const std::string op = kOps[pick(std::size(kOps))];
    if (op == "aten.gelu.default")
      return emit(op, {v}, {{"approximate", std::string(coin(50) ? "none" : "tanh")}});
    if (op == "aten.exp.default") return emit(op, {emit("aten.tanh.default", {v})});  // bounded
    if (op == "aten.clamp.default") return emit(op, {v}, {{"min", -0.5}, {"max", 0.75}});
    return emit(op, {v});
  }

  ir::Value* binary(ir::Value* v, const Dims& d) {
    static const char* kOps[] = {"aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor",
                                 "aten.maximum.default", "aten.minimum.default"};
    const std::string op = kOps[pick(std::size(kOps))];
    ir::Value* other = broadcast_operand(d);
    if ((op == "aten.add.Tensor" || op == "aten.sub.Tensor") && coin(25))
      return emit(op, {v, other}, {{"alpha", 0.5}});
    return coin(50) ? emit(op, {v, other}) : emit(op, {other, v});
  }

  ir::Value* reduce(ir::Value* v, const Dims& d) {
    if (d.empty()) return nullptr;
    static const char* kOps[] = {"aten.sum.dim_IntList", "aten.mean.dim", "aten.amax.default"};
    std::vector<int64_t> dims = {dim_index(d.size())};
    if (d.size() >= 3 && coin(30)) {
      const int64_t a = (dims[0] + static_cast<int64_t>(d.size())) % static_cast<int64_t>(d.size());
      dims.push_back((a + 1) % static_cast<int64_t>(d.size()));
    }
    return emit(kOps[pick(3)], {v}, {{"dim", dims}, {"keepdim", coin(50)}});
  }

  ir::Value* layer_norm(ir::Value* v, const Dims& d) {
    if (d.empty()) return nullptr;
    Dims norm = {d.back()};
    if (d.size() >= 2 && coin(25)) norm = {d[d.size() - 2], d.back()};
    const bool affine = v->dtype() == ir::DType::f32;  // weights share the input's dtype
    ir::Value* w = affine && coin(70) ? param(norm, 1.0) : nullptr;
    ir::Value* b = affine && coin(70) ? param(norm, 0.5) : nullptr;
    return emit("aten.layer_norm.default", {v, w, b},
                {{"normalized_shape", norm}, {"eps", 1e-5}, {"cudnn_enable", false}});
  }

  ir::Value* linear(ir::Value* v, const Dims& d) {
    if (d.empty()) return nullptr;
    const int64_t k = d.back(), n = size();
    if (!fits({numel(d) / k, n})) return nullptr;
    // Variance preserving: weights scaled by 1/sqrt(K).
    ir::Value* w = param({n, k}, 1.7 / std::sqrt(static_cast<double>(k)));
    ir::Value* b = coin(60) ? param({n}, 0.5) : nullptr;
    if (v->dtype() != ir::DType::f32) {  // the weights take the activation's dtype
      w = emit("aten._to_copy.default", {w}, {{"dtype", v->dtype()}});
      if (b) b = emit("aten._to_copy.default", {b}, {{"dtype", v->dtype()}});
    }
    return emit("aten.linear.default", {v, w, b});
  }

  // x @ y^T over the last two dims (attention scores), y an earlier value of x's shape.
  ir::Value* matmul(ir::Value* v, const Dims& d) {
    if (d.size() < 2 || d.size() > 3) return nullptr;
    const int64_t m = d[d.size() - 2], k = d.back();
    if (!fits({numel(d) / (m * k), m, m})) return nullptr;
    ir::Value* y = v;
    for (ir::Value* u : pool_)
      if (u != v && u->dtype() == v->dtype() && dims_of(u) == d && coin(50)) y = u;
    ir::Value* yt = emit("aten.transpose.int", {y}, {{"dim0", int64_t{-1}}, {"dim1", int64_t{-2}}});
    ir::Value* s = d.size() == 3 && coin(50) ? emit("aten.bmm.default", {v, yt})
                                             : emit("aten.matmul.default", {v, yt});
    return emit("aten.mul.Scalar", {s}, {{"other", 1.0 / static_cast<double>(k)}});
  }

  ir::Value* reshape(ir::Value* v, const Dims& d) {
    Dims to;
    if (d.size() >= 2 && coin(50)) {  // merge two adjacent dims
      const size_t i = static_cast<size_t>(pick(static_cast<int64_t>(d.size()) - 1));
      to = d;
      to[i] *= to[i + 1];
      to.erase(to.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    } else {  // split a dim by one of its factors
      for (size_t i = 0; i < d.size() && to.empty(); ++i)
        for (int64_t f : {2, 3, 4, 8, 16})
          if (d[i] % f == 0 && d[i] > f && coin(50)) {
            to = d;
            to[i] = f;
            to.insert(to.begin() + static_cast<std::ptrdiff_t>(i) + 1, d[i] / f);
            break;
          }
      if (to.empty() || to.size() > 5) return nullptr;
    }
    if (coin(30) && !to.empty()) to[static_cast<size_t>(pick(to.size()))] = -1;
    if (coin(50)) return emit("aten.reshape.default", {v}, {{"shape", to}});
    return emit("aten.view.default", {v}, {{"size", to}});
  }

  ir::Value* permute(ir::Value* v, const Dims& d) {
    if (d.size() < 2) return nullptr;
    if (coin(50)) {
      const int64_t a = pick(static_cast<int64_t>(d.size()));
      const int64_t b =
          (a + 1 + pick(static_cast<int64_t>(d.size()) - 1)) % static_cast<int64_t>(d.size());
      return emit("aten.transpose.int", {v}, {{"dim0", a}, {"dim1", b}});
    }
    std::vector<int64_t> perm(d.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[pick(i)]);
    return emit("aten.permute.default", {v}, {{"dims", perm}});
  }

  ir::Value* slice_or_select(ir::Value* v, const Dims& d) {
    if (d.empty()) return nullptr;
    const int64_t i = pick(static_cast<int64_t>(d.size()));
    if (d[i] < 2) return nullptr;
    if (d.size() >= 2 && coin(30)) {
      const int64_t idx = pick(d[i]);
      return emit("aten.select.int", {v}, {{"dim", i}, {"index", coin(30) ? idx - d[i] : idx}});
    }
    const int64_t start = pick(d[i] - 1);
    const int64_t end = coin(25) ? INT64_MAX : start + 1 + pick(d[i] - start);
    const int64_t step = coin(70) ? 1 : 2 + pick(2);
    return emit("aten.slice.Tensor", {v},
                {{"dim", i}, {"start", start}, {"end", end}, {"step", step}});
  }

  ir::Value* expand_or_unsqueeze(ir::Value* v, const Dims& d) {
    Dims to = d;
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] == 1 && coin(60)) to[i] = size();
    if (to == d || coin(30)) {
      if (d.size() >= 4) return nullptr;
      return emit("aten.unsqueeze.default", {v},
                  {{"dim", pick(static_cast<int64_t>(d.size()) + 1)}});
    }
    if (d.size() < 4 && coin(30)) to.insert(to.begin(), size());
    if (!fits(to)) return nullptr;
    return emit("aten.expand.default", {v}, {{"size", to}});
  }

  ir::Value* cat(ir::Value* v, const Dims& d) {
    if (d.empty()) return nullptr;
    const int64_t i = pick(static_cast<int64_t>(d.size()));
    std::vector<ir::Value*> parts = {v};
    for (ir::Value* u : pool_) {
      const Dims ud = dims_of(u);
      if (ud.size() != d.size() || u->dtype() != v->dtype()) continue;
      bool ok = true;
      for (size_t k = 0; k < d.size(); ++k) ok &= static_cast<int64_t>(k) == i || ud[k] == d[k];
      if (ok && coin(50)) parts.push_back(u);
      if (parts.size() == 3) break;
    }
    if (parts.size() == 1) parts.push_back(unary(v));
    Dims to = d;
    to[i] = 0;
    for (ir::Value* u : parts) to[i] += dims_of(u)[i];
    if (!fits(to)) return nullptr;
    return emit("aten.cat.default", std::move(parts),
                {{"dim", coin(30) ? i - static_cast<int64_t>(d.size()) : i}});
  }

  // add_ into a slice, or fill_ of a select, of an intermediate value: later readers of `v`
  // see the write (functionalization's job).
  ir::Value* in_place(ir::Value* v, const Dims& d) {
    // Only into the result of a computing op: a write through an expand is refused by design.
    if (!opts_.in_place || !v->producer() || d.empty() || is_view(v->producer()->op()))
      return nullptr;
    const int64_t i = pick(static_cast<int64_t>(d.size()));
    if (d[i] < 2) return nullptr;
    if (d.size() >= 2 && coin(40)) {
      ir::Value* s = emit("aten.select.int", {v}, {{"dim", i}, {"index", pick(d[i])}});
      g_->append("aten.fill_.Scalar", {s}, {{"value", std::round((2 * unit() - 1) * 8) / 8}});
      return nullptr;
    }
    const int64_t start = pick(d[i] - 1), end = start + 1 + pick(d[i] - start);
    ir::Value* s = emit("aten.slice.Tensor", {v},
                        {{"dim", i}, {"start", start}, {"end", end}, {"step", int64_t{1}}});
    g_->append("aten.add_.Tensor", {s, broadcast_operand(dims_of(s))});
    return nullptr;
  }

  std::mt19937_64 rng_;
  GeneratorOptions opts_;
  std::unique_ptr<ir::Graph> g_;
  std::vector<ir::Value*> pool_;
  int params_ = 0;
  std::vector<ir::Value*> extra_outputs_;  // integer results (argmax), compared bit-exactly
  ir::Value* ids_ = nullptr;               // the integer input of embeddings
  int64_t ids_rows_ = 0;                   // its tables' rows
};

}  // namespace

ir::ConstantPayload f32_payload(std::vector<float> values) {
  auto buf = std::make_shared<std::vector<float>>(std::move(values));
  ir::ConstantPayload p;
  p.data = reinterpret_cast<const std::byte*>(buf->data());
  p.nbytes = buf->size() * sizeof(float);
  p.owner = buf;
  return p;
}

std::unique_ptr<ir::Graph> generate_graph(uint64_t seed, const GeneratorOptions& opts) {
  return Builder(seed, opts).build();
}

}  // namespace neuronc::difftest
