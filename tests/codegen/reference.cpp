// Reference interpreter (reference.h).
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace neuronc::codegen::testing {

int64_t RefTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

using Shape = std::vector<int64_t>;

Shape shape_of(const ir::Value* v) {
  Shape s;
  for (const auto& d : v->shape()) s.push_back(d.value());
  return s;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Element of `t` at the broadcast index `idx` of a result with shape `out`.
double at_broadcast(const RefTensor& t, const Shape& out, const std::vector<int64_t>& idx) {
  const size_t lead = out.size() - t.shape.size();
  int64_t off = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; --d) {
    const int64_t i = t.shape[d] == 1 ? 0 : idx[d + lead];
    off += i * stride;
    stride *= t.shape[d];
  }
  return t.data[off];
}

Shape broadcast_shape(const std::vector<const RefTensor*>& ts) {
  size_t r = 0;
  for (auto* t : ts) r = std::max(r, t->shape.size());
  Shape out(r, 1);
  for (auto* t : ts)
    for (size_t i = 0; i < t->shape.size(); ++i) {
      const size_t j = i + r - t->shape.size();
      if (t->shape[i] != 1) out[j] = t->shape[i];
    }
  return out;
}

RefTensor map_n(const std::vector<const RefTensor*>& ts,
                const std::function<double(const std::vector<double>&)>& f) {
  RefTensor r;
  r.shape = broadcast_shape(ts);
  r.data.resize(r.numel());
  std::vector<int64_t> idx(r.shape.size(), 0);
  std::vector<double> args(ts.size());
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t rem = i;
    for (int64_t d = static_cast<int64_t>(r.shape.size()) - 1; d >= 0; --d) {
      idx[d] = rem % r.shape[d];
      rem /= r.shape[d];
    }
    for (size_t k = 0; k < ts.size(); ++k) args[k] = at_broadcast(*ts[k], r.shape, idx);
    r.data[i] = f(args);
  }
  return r;
}

RefTensor permute(const RefTensor& x, const std::vector<int64_t>& dims) {
  RefTensor r;
  for (int64_t d : dims) r.shape.push_back(x.shape[d]);
  r.data.resize(x.data.size());
  const auto xs = strides_of(x.shape);
  std::vector<int64_t> idx(dims.size());
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t rem = i, off = 0;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      idx[d] = rem % r.shape[d];
      rem /= r.shape[d];
      off += idx[d] * xs[dims[d]];
    }
    r.data[i] = x.data[off];
  }
  return r;
}

RefTensor expand(const RefTensor& x, const Shape& to) {
  return map_n({&x}, [](const std::vector<double>& a) { return a[0]; }).shape == to
             ? map_n({&x}, [](const std::vector<double>& a) { return a[0]; })
             : [&] {
                 RefTensor t;
                 t.shape = to;
                 RefTensor z;
                 z.shape = to;
                 z.data.assign(t.numel(), 0.0);
                 return map_n({&x, &z}, [](const std::vector<double>& a) { return a[0]; });
               }();
}

// Applies f over slices along `dim`: f(values) -> new values (same length or 1).
RefTensor along(const RefTensor& x, int64_t dim, bool keep,
                const std::function<std::vector<double>(const std::vector<double>&)>& f) {
  const int64_t n = x.shape[dim];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (size_t d = dim + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  RefTensor r;
  r.shape = x.shape;
  std::vector<double> v(n);
  std::vector<std::vector<double>> res;
  int64_t out_n = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k) v[k] = x.data[(o * n + k) * inner + i];
      res.push_back(f(v));
      out_n = static_cast<int64_t>(res.back().size());
    }
  r.shape[dim] = out_n;
  if (!keep && out_n == 1) {
    r.shape.erase(r.shape.begin() + dim);
  }
  r.data.resize(outer * inner * out_n);
  size_t j = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i, ++j)
      for (int64_t k = 0; k < out_n; ++k) r.data[(o * out_n + k) * inner + i] = res[j][k];
  return r;
}

RefTensor matmul2(const RefTensor& a, const RefTensor& b) {  // [..., M, K] @ [..., K, N]
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  RefTensor ta, tb;
  ta.shape = ba;
  tb.shape = bb;
  ta.data.assign(ta.numel(), 0);
  tb.data.assign(tb.numel(), 0);
  Shape batch = broadcast_shape({&ta, &tb});
  RefTensor r;
  r.shape = batch;
  r.shape.push_back(M);
  r.shape.push_back(N);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  r.data.assign(nb * M * N, 0);
  std::vector<int64_t> idx(batch.size());
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      idx[d] = rem % batch[d];
      rem /= batch[d];
    }
    auto base = [&](const Shape& bs) {
      int64_t off = 0, st = 1;
      for (int64_t d = static_cast<int64_t>(bs.size()) - 1; d >= 0; --d) {
        const int64_t i = bs[d] == 1 ? 0 : idx[d + batch.size() - bs.size()];
        off += i * st;
        st *= bs[d];
      }
      return off;
    };
    const double* pa = a.data.data() + base(ba) * M * K;
    const double* pb = b.data.data() + base(bb) * K * N;
    double* pc = r.data.data() + bi * M * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) pc[m * N + n] += pa[m * K + k] * pb[k * N + n];
  }
  return r;
}

double attr_num(const ir::Node& n, const char* name, double d) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return d;
  if (auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  if (auto* f = std::get_if<double>(a)) return *f;
  if (auto* b = std::get_if<bool>(a)) return *b;
  return d;
}

double round_to(ir::DType t, double x) {
  if (ir::is_floating(t)) return x;
  if (t == ir::DType::boolean) return x != 0;
  return std::trunc(x);
}

RefTensor slice(const RefTensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  const int64_t n = x.shape[dim];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return along(x, dim, true, [&](const std::vector<double>& v) {
    std::vector<double> r;
    for (int64_t i = start; i < end; i += step) r.push_back(v[i]);
    return r;
  });
}

}  // namespace

void evaluate(const ir::Graph& g, Env& env, const Fallback& fallback) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  evaluate_nodes(nodes, env, fallback);
}

void evaluate_nodes(const std::vector<const ir::Node*>& nodes, Env& env, const Fallback& fallback) {
  auto get = [&](const ir::Value* v) -> const RefTensor& {
    auto it = env.find(v->name());
    if (it == env.end()) throw std::runtime_error("reference: no value " + v->name());
    return it->second;
  };
  for (const ir::Node* np : nodes) {
    const ir::Node& n = *np;
    const std::string& op = n.op();
    const std::string base = op.substr(5, op.find('.', 5) - 5);
    const std::string ovl = op.substr(op.rfind('.') + 1);
    auto in = [&](size_t i) -> const RefTensor& { return get(n.input(i)); };
    auto set = [&](size_t k, RefTensor t) {
      t.shape = shape_of(n.output(k));
      for (auto& x : t.data) x = round_to(n.output(k)->dtype(), x);
      env[n.output(k)->name()] = std::move(t);
    };
    auto un = [&](std::function<double(double)> f) {
      set(0, map_n({&in(0)}, [&](const std::vector<double>& a) { return f(a[0]); }));
    };
    auto bin = [&](const RefTensor& a, const RefTensor& b,
                   std::function<double(double, double)> f) {
      return map_n({&a, &b}, [&](const std::vector<double>& v) { return f(v[0], v[1]); });
    };
    auto scalar_t = [&](double v) {
      RefTensor t;
      t.data = {v};
      return t;
    };
    const double kInf = std::numeric_limits<double>::infinity();
    if (op == "aten.view.default" || op == "aten._unsafe_view.default" ||
        op == "aten.reshape.default" || base == "unsqueeze" || base == "squeeze" ||
        base == "flatten" || base == "alias" || base == "clone" || base == "contiguous" ||
        base == "detach" || base == "dropout" || base == "lift_fresh_copy") {
      set(0, in(0));
    } else if (base == "permute") {
      set(0, permute(in(0), n.attr_ints("dims")));
    } else if (base == "t" || base == "transpose") {
      const int64_t r = static_cast<int64_t>(in(0).shape.size());
      std::vector<int64_t> p(r);
      std::iota(p.begin(), p.end(), 0);
      int64_t a = r - 2, b = r - 1;
      if (base == "transpose") {
        a = (n.attr_int("dim0") + r) % r;
        b = (n.attr_int("dim1") + r) % r;
      }
      if (r >= 2) std::swap(p[a], p[b]);
      set(0, permute(in(0), p));
    } else if (base == "expand") {
      set(0, expand(in(0), shape_of(n.output())));
    } else if (op == "aten.slice.Tensor") {
      const int64_t r = static_cast<int64_t>(in(0).shape.size());
      const int64_t dim = (n.attr_int("dim") + r) % r;
      set(0, slice(in(0), dim, n.attr_is_none("start") ? 0 : n.attr_int("start"),
                   n.attr_is_none("end") ? INT64_MAX / 2 : n.attr_int("end"),
                   n.attr("step") ? n.attr_int("step") : 1));
    } else if (op == "aten.select.int") {
      const int64_t r = static_cast<int64_t>(in(0).shape.size());
      const int64_t dim = (n.attr_int("dim") + r) % r;
      int64_t i = n.attr_int("index");
      if (i < 0) i += in(0).shape[dim];
      set(0, slice(in(0), dim, i, i + 1, 1));
    } else if (base == "split" || base == "split_with_sizes") {
      const int64_t r = static_cast<int64_t>(in(0).shape.size());
      const int64_t dim = ((n.attr("dim") ? n.attr_int("dim") : 0) + r) % r;
      int64_t start = 0;
      for (size_t k = 0; k < n.outputs().size(); ++k) {
        const int64_t len = shape_of(n.output(k))[dim];
        set(k, slice(in(0), dim, start, start + len, 1));
        start += len;
      }
    } else if (base == "cat") {
      const int64_t r = static_cast<int64_t>(shape_of(n.output()).size());
      const int64_t dim = ((n.attr("dim") ? n.attr_int("dim") : 0) + r) % r;
      RefTensor out;
      out.shape = shape_of(n.output());
      out.data.assign(out.numel(), 0);
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < dim; ++d) outer *= out.shape[d];
      for (int64_t d = dim + 1; d < r; ++d) inner *= out.shape[d];
      int64_t start = 0;
      for (size_t i = 0; i < n.inputs().size(); ++i) {
        const RefTensor& x = in(i);
        if (x.numel() == 0) continue;
        const int64_t len = x.shape[dim];
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = 0; k < len; ++k)
            for (int64_t j = 0; j < inner; ++j)
              out.data[(o * out.shape[dim] + start + k) * inner + j] =
                  x.data[(o * len + k) * inner + j];
        start += len;
      }
      set(0, out);
    } else if (op == "aten.linear.default") {
      RefTensor w = permute(in(1), {1, 0});
      RefTensor y = matmul2(in(0), w);
      if (n.inputs().size() > 2 && n.input(2)) y = bin(y, in(2), std::plus<double>());
      set(0, y);
    } else if (op == "aten.addmm.default" || op == "aten.baddbmm.default") {
      RefTensor y = matmul2(in(1), in(2));
      const double alpha = attr_num(n, "alpha", 1), beta = attr_num(n, "beta", 1);
      set(0, bin(y, in(0), [&](double a, double b) { return alpha * a + beta * b; }));
    } else if (op == "aten.mm.default" || op == "aten.bmm.default" || op == "aten.matmul.default") {
      RefTensor a = in(0), b = in(1);
      if (a.shape.size() == 1) a.shape.insert(a.shape.begin(), 1);
      if (b.shape.size() == 1) b.shape.push_back(1);
      set(0, matmul2(a, b));
    } else if (base == "relu") {
      un([](double x) { return x > 0 ? x : 0; });
    } else if (base == "gelu") {
      const ir::Attribute* a = n.attr("approximate");
      const bool tanh = a && std::get<std::string>(*a) == "tanh";
      un([&](double x) {
        return tanh ? 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                    : 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      });
    } else if (base == "silu") {
      un([](double x) { return x / (1 + std::exp(-x)); });
    } else if (base == "sigmoid") {
      un([](double x) { return 1 / (1 + std::exp(-x)); });
    } else if (base == "tanh") {
      un([](double x) { return std::tanh(x); });
    } else if (base == "exp") {
      un([](double x) { return std::exp(x); });
    } else if (base == "log") {
      un([](double x) { return std::log(x); });
    } else if (base == "sqrt") {
      un([](double x) { return std::sqrt(x); });
    } else if (base == "rsqrt") {
      un([](double x) { return 1 / std::sqrt(x); });
    } else if (base == "reciprocal") {
      un([](double x) { return 1 / x; });
    } else if (base == "neg") {
      un([](double x) { return -x; });
    } else if (base == "abs") {
      un([](double x) { return std::fabs(x); });
    } else if (base == "sin") {
      un([](double x) { return std::sin(x); });
    } else if (base == "cos") {
      un([](double x) { return std::cos(x); });
    } else if (base == "logical_not") {
      un([](double x) { return x == 0; });
    } else if (op == "aten.pow.Tensor_Scalar") {
      const double e = attr_num(n, "exponent", 1);
      un([&](double x) { return std::pow(x, e); });
    } else if (base == "add" || base == "sub" || base == "mul" || base == "div" || base == "eq" ||
               base == "ne" || base == "gt" || base == "ge" || base == "lt" || base == "le" ||
               base == "bitwise_and" || base == "logical_and" || base == "__and__" ||
               base == "logical_or" || base == "bitwise_or") {
      RefTensor b = ovl == "Scalar" ? scalar_t(attr_num(n, "other", 0)) : in(1);
      const double alpha = attr_num(n, "alpha", 1);
      std::function<double(double, double)> f;
      if (base == "add") f = [&](double x, double y) { return x + alpha * y; };
      if (base == "sub") f = [&](double x, double y) { return x - alpha * y; };
      if (base == "mul") f = [](double x, double y) { return x * y; };
      if (base == "div") f = [](double x, double y) { return x / y; };
      if (base == "eq") f = [](double x, double y) { return double(x == y); };
      if (base == "ne") f = [](double x, double y) { return double(x != y); };
      if (base == "gt") f = [](double x, double y) { return double(x > y); };
      if (base == "ge") f = [](double x, double y) { return double(x >= y); };
      if (base == "lt") f = [](double x, double y) { return double(x < y); };
      if (base == "le") f = [](double x, double y) { return double(x <= y); };
      if (base == "bitwise_and" || base == "logical_and" || base == "__and__")
        f = [](double x, double y) { return double(x != 0 && y != 0); };
      if (base == "logical_or" || base == "bitwise_or")
        f = [](double x, double y) { return double(x != 0 || y != 0); };
      set(0, bin(in(0), b, f));
    } else if (base == "where") {
      RefTensor a = ovl == "ScalarSelf" ? scalar_t(attr_num(n, "self", 0)) : in(1);
      RefTensor b = ovl == "ScalarOther"  ? scalar_t(attr_num(n, "other", 0))
                    : ovl == "ScalarSelf" ? in(1)
                                          : in(2);
      set(0, map_n({&in(0), &a, &b},
                   [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; }));
    } else if (base == "masked_fill") {
      RefTensor v = ovl == "Scalar" ? scalar_t(attr_num(n, "value", 0)) : in(2);
      set(0, map_n({&in(0), &in(1), &v},
                   [](const std::vector<double>& a) { return a[1] != 0 ? a[2] : a[0]; }));
    } else if (base == "_to_copy") {
      set(0, in(0));
    } else if (base == "sum" || base == "mean" || base == "amax" || base == "amin" ||
               base == "any") {
      RefTensor x = in(0);
      const int64_t r = static_cast<int64_t>(x.shape.size());
      std::vector<int64_t> dims;
      if (base == "any")
        dims = {n.attr_int("dim")};
      else if (n.attr("dim") && !n.attr_is_none("dim"))
        dims = n.attr_ints("dim");
      if (dims.empty())
        for (int64_t d = 0; d < r; ++d) dims.push_back(d);
      for (auto& d : dims) d = (d + r) % r;
      std::sort(dims.begin(), dims.end());
      for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
        x = along(x, dims[i], true, [&](const std::vector<double>& v) {
          double acc = base == "amax" || base == "any" ? -kInf : base == "amin" ? kInf : 0;
          for (double e : v) {
            if (base == "amax" || base == "any")
              acc = std::max(acc, e);
            else if (base == "amin")
              acc = std::min(acc, e);
            else
              acc += e;
          }
          if (base == "mean") acc /= static_cast<double>(v.size());
          if (base == "any") acc = acc != 0;
          return std::vector<double>{acc};
        });
      }
      set(0, x);
    } else if (base == "_softmax" || base == "_log_softmax") {
      const int64_t r = static_cast<int64_t>(in(0).shape.size());
      const int64_t dim = (n.attr_int("dim") + r) % r;
      const bool lg = base == "_log_softmax";
      set(0, along(in(0), dim, true, [&](const std::vector<double>& v) {
            double m = -kInf, s = 0;
            for (double e : v) m = std::max(m, e);
            for (double e : v) s += std::exp(e - m);
            std::vector<double> o;
            for (double e : v) o.push_back(lg ? e - m - std::log(s) : std::exp(e - m) / s);
            return o;
          }));
    } else if (base == "layer_norm" || base == "rms_norm") {
      const RefTensor& x = in(0);
      const int64_t k = static_cast<int64_t>(n.attr_ints("normalized_shape").size());
      int64_t inner = 1;
      for (int64_t d = static_cast<int64_t>(x.shape.size()) - k; d < (int64_t)x.shape.size(); ++d)
        inner *= x.shape[d];
      const double eps = attr_num(n, "eps", base == "rms_norm" ? 1.1920928955078125e-07 : 1e-5);
      RefTensor y = x;
      const bool has_w = n.inputs().size() > 1 && n.input(1);
      const bool has_b = base == "layer_norm" && n.inputs().size() > 2 && n.input(2);
      for (int64_t o = 0; o < x.numel() / inner; ++o) {
        const double* p = x.data.data() + o * inner;
        double mean = 0, var = 0;
        if (base == "layer_norm") {
          for (int64_t i = 0; i < inner; ++i) mean += p[i];
          mean /= inner;
        }
        for (int64_t i = 0; i < inner; ++i) var += (p[i] - mean) * (p[i] - mean);
        var /= inner;
        for (int64_t i = 0; i < inner; ++i) {
          double v = (p[i] - mean) / std::sqrt(var + eps);
          if (has_w) v *= in(1).data[i];
          if (has_b) v += in(2).data[i];
          y.data[o * inner + i] = v;
        }
      }
      set(0, y);
    } else if (base == "group_norm" || base == "native_group_norm") {
      // Biased variance over (C / G) x spatial per (n, g); y = (x - mean) * rstd * w[c] + b[c].
      const RefTensor& x = in(0);
      const int64_t N = x.shape[0], C = x.shape[1];
      const int64_t G = n.attr_int(base == "group_norm" ? "num_groups" : "group");
      const int64_t S = x.numel() / (N * C), Cg = C / G, inner = Cg * S;
      const double eps = attr_num(n, "eps", 1e-5);
      const bool has_w = n.inputs().size() > 1 && n.input(1);
      const bool has_b = n.inputs().size() > 2 && n.input(2);
      RefTensor y = x, mean, rstd;
      for (int64_t o = 0; o < N * G; ++o) {
        const double* p = x.data.data() + o * inner;
        double m = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i) m += p[i];
        m /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) var += (p[i] - m) * (p[i] - m);
        var /= static_cast<double>(inner);
        const double rs = 1.0 / std::sqrt(var + eps);
        mean.data.push_back(m);
        rstd.data.push_back(rs);
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t c = (o % G) * Cg + i / S;
          double v = (p[i] - m) * rs;
          if (has_w) v *= in(1).data[c];
          if (has_b) v += in(2).data[c];
          y.data[o * inner + i] = v;
        }
      }
      set(0, y);
      if (n.outputs().size() == 3) {
        set(1, mean);
        set(2, rstd);
      }
    } else if (base == "scaled_dot_product_attention") {
      const RefTensor &q = in(0), &kk = in(1), &v = in(2);
      const bool has_mask = n.inputs().size() > 3 && n.input(3);
      const bool causal = n.attr("is_causal") && n.attr_bool("is_causal");
      const int64_t r = static_cast<int64_t>(q.shape.size());
      const int64_t Sq = q.shape[r - 2], D = q.shape[r - 1], Sk = kk.shape[r - 2],
                    Dv = v.shape[r - 1];
      const int64_t Hq = r >= 3 ? q.shape[r - 3] : 1, Hk = r >= 3 ? kk.shape[r - 3] : 1;
      const double scale = n.attr("scale") && !n.attr_is_none("scale")
                               ? attr_num(n, "scale", 1)
                               : 1.0 / std::sqrt(static_cast<double>(D));
      const int64_t B = q.numel() / (Hq * Sq * D);
      RefTensor out;
      out.shape = shape_of(n.output());
      out.data.assign(out.numel(), 0);
      Shape sshape = out.shape;
      sshape.back() = Sk;
      RefTensor mask;
      if (has_mask) {
        RefTensor z;
        z.shape = sshape;
        z.data.assign(z.numel(), 0);
        const bool boolean = n.input(3)->dtype() == ir::DType::boolean;
        mask = map_n({&in(3), &z}, [&](const std::vector<double>& a) {
          return boolean ? (a[0] != 0 ? 0.0 : -kInf) : a[0];
        });
      }
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h) {
          const int64_t hk = h / (Hq / Hk);
          for (int64_t i = 0; i < Sq; ++i) {
            std::vector<double> s(Sk);
            double m = -kInf;
            for (int64_t j = 0; j < Sk; ++j) {
              double acc = 0;
              for (int64_t d = 0; d < D; ++d)
                acc += q.data[((b * Hq + h) * Sq + i) * D + d] *
                       kk.data[((b * Hk + hk) * Sk + j) * D + d];
              acc *= scale;
              if (has_mask) acc += mask.data[((b * Hq + h) * Sq + i) * Sk + j];
              if (causal && j > i) acc = -kInf;
              s[j] = acc;
              m = std::max(m, acc);
            }
            double sum = 0;
            for (auto& e : s) sum += (e = std::exp(e - m));
            for (int64_t d = 0; d < Dv; ++d) {
              double acc = 0;
              for (int64_t j = 0; j < Sk; ++j)
                acc += s[j] / sum * v.data[((b * Hk + hk) * Sk + j) * Dv + d];
              out.data[((b * Hq + h) * Sq + i) * Dv + d] = acc;
            }
          }
        }
      set(0, out);
    } else if (base == "gather" || op == "aten.index.Tensor") {
      const RefTensor& x = in(0);
      RefTensor out;
      out.shape = shape_of(n.output());
      const auto xs = strides_of(x.shape);
      const int64_t r = static_cast<int64_t>(x.shape.size());
      std::vector<int64_t> idx(out.shape.size());
      const size_t k = n.inputs().size() - 1;
      for (int64_t e = 0; e < out.numel(); ++e) {
        int64_t rem = e;
        for (int64_t d = static_cast<int64_t>(out.shape.size()) - 1; d >= 0; --d) {
          idx[d] = rem % out.shape[d];
          rem /= out.shape[d];
        }
        int64_t off = 0;
        if (base == "gather") {
          const int64_t dim = (n.attr_int("dim") + r) % r;
          for (int64_t d = 0; d < r; ++d)
            off += (d == dim ? static_cast<int64_t>(in(1).data[e]) : idx[d]) * xs[d];
        } else {
          const size_t br = out.shape.size() - (static_cast<size_t>(r) - k);
          Shape bshape(out.shape.begin(), out.shape.begin() + br);
          std::vector<int64_t> bidx(idx.begin(), idx.begin() + br);
          for (size_t j = 0; j < k; ++j)
            off += static_cast<int64_t>(at_broadcast(in(j + 1), bshape, bidx)) * xs[j];
          for (size_t d = k; d < static_cast<size_t>(r); ++d) off += idx[br + d - k] * xs[d];
        }
        out.data.push_back(x.data[off]);
      }
      set(0, out);
    } else if (base == "conv2d" || base == "convolution" || base == "conv1d") {
      // 1-D and 2-D, any stride/padding (ints, "same", "valid")/dilation/groups.
      RefTensor x = in(0), w = in(1);
      const bool one_d = x.shape.size() == 3;
      if (one_d) {
        x.shape.insert(x.shape.begin() + 2, 1);
        w.shape.insert(w.shape.begin() + 2, 1);
      }
      const size_t k = one_d ? 1 : 2;
      auto pr = [&](const char* nm, int64_t d) {
        std::vector<int64_t> v;
        const ir::Attribute* a = n.attr(nm);
        if (a && !std::holds_alternative<std::string>(*a) && !n.attr_is_none(nm))
          v = n.attr_ints(nm);
        if (v.empty()) v.push_back(d);
        while (v.size() < k) v.push_back(v.back());
        if (one_d) v.insert(v.begin(), d == 0 ? 0 : 1);
        return v;
      };
      const auto st = pr("stride", 1), dl = pr("dilation", 1);
      auto pd = pr("padding", 0);
      const int64_t B = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
      const int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
      if (const ir::Attribute* a = n.attr("padding");
          a && std::holds_alternative<std::string>(*a)) {
        const bool same = std::get<std::string>(*a) == "same";
        pd = {same ? dl[0] * (KH - 1) / 2 : 0, same ? dl[1] * (KW - 1) / 2 : 0};
      }
      const int64_t groups = n.attr("groups") ? n.attr_int("groups") : 1;
      const int64_t Og = O / groups;
      RefTensor out;
      out.shape = shape_of(n.output());
      const int64_t Ho = one_d ? 1 : out.shape[2], Wo = out.shape.back();
      out.data.assign(out.numel(), 0);
      const bool hb = n.inputs().size() > 2 && n.input(2);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t o = 0; o < O; ++o)
          for (int64_t y = 0; y < Ho; ++y)
            for (int64_t xx = 0; xx < Wo; ++xx) {
              double acc = hb ? in(2).data[o] : 0;
              for (int64_t cg = 0; cg < Cg; ++cg) {
                const int64_t c = (o / Og) * Cg + cg;
                for (int64_t kh = 0; kh < KH; ++kh)
                  for (int64_t kw = 0; kw < KW; ++kw) {
                    const int64_t iy = y * st[0] - pd[0] + kh * dl[0];
                    const int64_t ix = xx * st[1] - pd[1] + kw * dl[1];
                    if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                    acc += x.data[((b * C + c) * H + iy) * W + ix] *
                           w.data[((o * Cg + cg) * KH + kh) * KW + kw];
                  }
              }
              out.data[((b * O + o) * Ho + y) * Wo + xx] = acc;
            }
      set(0, out);
    } else if (base == "max_pool2d" || base == "max_pool1d" || base == "max_pool2d_with_indices" ||
               base == "avg_pool2d" || base == "avg_pool1d" || base == "adaptive_avg_pool2d" ||
               base == "_adaptive_avg_pool2d" || base == "adaptive_avg_pool1d") {
      const RefTensor& x = in(0);
      const bool one_d = base.find("1d") != std::string::npos;
      const size_t k = one_d ? 1 : 2, r = x.shape.size();
      RefTensor out;
      out.shape = shape_of(n.output());
      const int64_t H = one_d ? 1 : x.shape[r - 2], W = x.shape[r - 1];
      const int64_t Ho = one_d ? 1 : out.shape[r - 2], Wo = out.shape[r - 1];
      const int64_t rows = x.numel() / (H * W);
      auto ints = [&](const char* nm, std::vector<int64_t> d) {
        std::vector<int64_t> v;
        if (n.attr(nm) && !n.attr_is_none(nm)) v = n.attr_ints(nm);
        if (v.empty()) v = d;
        while (v.size() < k) v.push_back(v.back());
        if (one_d) v.insert(v.begin(), v[0] == 0 ? 0 : 1);
        return v;
      };
      const bool is_max = base.find("max") != std::string::npos;
      const bool adaptive = base.find("adaptive") != std::string::npos;
      std::vector<int64_t> ks{1, 1}, ss{1, 1}, ps{0, 0}, ds{1, 1};
      if (!adaptive) {
        ks = ints("kernel_size", {1});
        ss = ints("stride",
                  one_d ? std::vector<int64_t>{ks[1]} : std::vector<int64_t>{ks[0], ks[1]});
        ps = ints("padding", {0});
        ds = ints("dilation", {1});
        if (one_d) ks[0] = ss[0] = ds[0] = 1, ps[0] = 0;
      }
      const bool include_pad = !n.attr("count_include_pad") || n.attr_bool("count_include_pad");
      double divisor = 0;
      if (n.attr("divisor_override") && !n.attr_is_none("divisor_override"))
        divisor = static_cast<double>(n.attr_int("divisor_override"));
      for (int64_t q = 0; q < rows; ++q)
        for (int64_t i = 0; i < Ho; ++i)
          for (int64_t j = 0; j < Wo; ++j) {
            int64_t h0, h1, w0, w1;
            if (adaptive) {
              h0 = i * H / Ho, h1 = ((i + 1) * H + Ho - 1) / Ho;
              w0 = j * W / Wo, w1 = ((j + 1) * W + Wo - 1) / Wo;
            } else {
              h0 = i * ss[0] - ps[0], w0 = j * ss[1] - ps[1];
              h1 = h0 + (ks[0] - 1) * ds[0] + 1, w1 = w0 + (ks[1] - 1) * ds[1] + 1;
            }
            double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
            int64_t cnt = 0;
            const int64_t step_h = adaptive ? 1 : ds[0], step_w = adaptive ? 1 : ds[1];
            for (int64_t yy = h0; yy < h1; yy += step_h)
              for (int64_t xx = w0; xx < w1; xx += step_w) {
                const bool inside = yy >= 0 && yy < H && xx >= 0 && xx < W;
                const bool in_padded =
                    yy >= -ps[0] && yy < H + ps[0] && xx >= -ps[1] && xx < W + ps[1];
                if (in_padded && (inside || include_pad)) ++cnt;
                if (!inside) continue;
                const double v = x.data[(q * H + yy) * W + xx];
                acc = is_max ? std::max(acc, v) : acc + v;
              }
            if (!is_max) acc /= divisor > 0 ? divisor : static_cast<double>(cnt);
            out.data.push_back(acc);
          }
      set(0, out);
      if (n.outputs().size() > 1) {
        RefTensor idx;
        idx.shape = out.shape;
        idx.data.assign(out.numel(), 0);
        set(1, idx);
      }
    } else if (base == "hardswish" || base == "hardsigmoid" || base == "hardtanh" ||
               base == "relu6") {
      const double lo = base == "hardtanh" ? attr_num(n, "min_val", -1) : 0;
      const double hi = base == "hardtanh" ? attr_num(n, "max_val", 1) : 6;
      RefTensor out = in(0);
      for (double& v : out.data) {
        const double r6 = std::min(std::max(v + 3, 0.0), 6.0);
        v = base == "hardswish"     ? v * r6 / 6
            : base == "hardsigmoid" ? r6 / 6
                                    : std::min(std::max(v, lo), hi);
      }
      set(0, out);
    } else if (base == "embedding") {
      const RefTensor &w = in(0), &idx = in(1);
      const int64_t D = w.shape[1];
      RefTensor out;
      for (double i : idx.data)
        for (int64_t d = 0; d < D; ++d) out.data.push_back(w.data[static_cast<int64_t>(i) * D + d]);
      set(0, out);
    } else if (base == "arange") {
      RefTensor t;
      const double start = op == "aten.arange.default" ? 0 : attr_num(n, "start", 0);
      const double step = attr_num(n, "step", 1);
      for (int64_t i = 0; i < shape_of(n.output())[0]; ++i) t.data.push_back(start + i * step);
      set(0, t);
    } else if (base == "full" || base == "zeros" || base == "ones" || base == "scalar_tensor" ||
               base == "full_like" || base == "zeros_like" || base == "ones_like" ||
               base == "new_ones") {
      RefTensor t;
      t.shape = shape_of(n.output());
      double v = base == "full" || base == "full_like" ? attr_num(n, "fill_value", 0)
                 : base == "scalar_tensor"             ? attr_num(n, "s", 0)
                 : (base == "ones" || base == "ones_like" || base == "new_ones") ? 1
                                                                                 : 0;
      t.data.assign(t.numel(), v);
      set(0, t);
    } else if (!fallback || !fallback(n, env)) {
      throw std::runtime_error("reference: no implementation of " + op);
    }
  }
}

}  // namespace neuronc::codegen::testing
