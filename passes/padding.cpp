// Padded-dim analysis (padding.h): an abstract interpretation over the graph in node order.
#include "passes/padding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/op_registry.h"

namespace neuronc::passes {

std::string PaddingVerdict::message() const {
  if (ok) return "padding is exact";
  if (node.empty()) return reason;
  std::string s = "node '" + node + "' (" + op + ")";
  if (!location.empty()) s += " at " + location;
  return s + ": " + reason;
}

namespace {

// A slab holding at most this much (-inf, finfo.min, -1e30) is "masked": exp() of it is 0 and a
// max never picks it. At least this much: masked for a min.
constexpr double kHuge = 1e30;

// One factor of an axis: a constant run, or a free symbol (value unknown at compile time).
struct Factor {
  int64_t size = 1;
  ir::SymbolId sym = -1;
  bool operator==(const Factor&) const = default;
};

// The value every padded element of an axis's slab holds (the other axes at real indices).
struct Slab {
  bool known = false;
  double value = 0;
  static Slab of(double v) { return {true, v}; }
};

struct Axis {
  std::vector<Factor> factors;  // outer to inner
  Slab slab;
};

struct Info {
  std::vector<Axis> axes;
  int iota = -1;                 // every element equals its index along this axis
  std::optional<double> scalar;  // every element equals this value
};

struct Refuse {
  std::string reason;
};

std::string base_name(const std::string& op) {
  const size_t b = op.find('.'), e = op.rfind('.');
  return b != std::string::npos && e > b ? op.substr(b + 1, e - b - 1) : op;
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

std::optional<double> number_attr(const ir::Node& n, std::string_view name) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(a)) return *d;
  if (auto* b = std::get_if<bool>(a)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

// The value of a one-element constant's payload, when its dtype is a plain one.
std::optional<double> payload_scalar(const ir::Value& v) {
  const ir::ConstantPayload* p = v.payload();
  // A deferred cast's value is a narrow float and a deferred scale's a product, neither a plain
  // element read here.
  if (!p || p->absent || !p->data || p->deferred()) return std::nullopt;
  auto n = ir::numel(v.shape());
  if (!n || !n->is_constant() || n->coeff != 1) return std::nullopt;
  const std::byte* at =
      p->data + p->storage_offset * static_cast<int64_t>(ir::dtype_size(v.dtype()));
  if (static_cast<size_t>(at - p->data) + ir::dtype_size(v.dtype()) > p->nbytes)
    return std::nullopt;
  switch (v.dtype()) {
    case ir::DType::f32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case ir::DType::f64: {
      double d;
      std::memcpy(&d, at, 8);
      return d;
    }
    case ir::DType::i64: {
      int64_t i;
      std::memcpy(&i, at, 8);
      return static_cast<double>(i);
    }
    case ir::DType::i32: {
      int32_t i;
      std::memcpy(&i, at, 4);
      return i;
    }
    case ir::DType::boolean:
      return std::to_integer<int>(*at) ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

// Element-wise semantics on slab values: the result when every operand is known, or when a
// known operand decides it alone (0 * x, false & x, -inf + x, a known where condition).
// `ops` are the tensor operands then the number attributes, in the order the op reads them.
std::optional<double> evaluate(const std::string& base, const ir::Node& n,
                               const std::vector<Slab>& t, ir::DType out) {
  auto known = [&](size_t i) { return i < t.size() && t[i].known; };
  auto val = [&](size_t i) { return t[i].value; };
  // The second operand: a tensor, or the scalar attribute.
  std::optional<Slab> b;
  if (t.size() >= 2)
    b = t[1];
  else if (auto o = number_attr(n, "other"))
    b = Slab::of(*o);
  const double alpha = number_attr(n, "alpha").value_or(1.0);
  const bool all = std::all_of(t.begin(), t.end(), [](const Slab& s) { return s.known; });
  auto result = [&](double v) -> std::optional<double> {
    if (out == ir::DType::boolean) return v != 0 ? 1.0 : 0.0;
    if (ir::is_integral(out)) return std::trunc(v);
    return v;
  };
  if (one_of(base, {"_to_copy", "to", "clone", "alias", "contiguous", "detach", "lift_fresh_copy",
                    "dropout", "type_as", "_to_dim_order_copy"}))
    return known(0) ? result(val(0)) : std::nullopt;
  if (base == "mul") {
    if ((known(0) && val(0) == 0) || (b && b->known && b->value == 0)) return result(0);
    if (known(0) && b && b->known) return result(val(0) * b->value);
    return std::nullopt;
  }
  if (one_of(base, {"__and__", "bitwise_and", "logical_and"})) {
    if ((known(0) && val(0) == 0) || (b && b->known && b->value == 0)) return 0.0;
    if (known(0) && b && b->known) return 1.0;
    return std::nullopt;
  }
  if (one_of(base, {"__or__", "bitwise_or", "logical_or"})) {
    if ((known(0) && val(0) != 0) || (b && b->known && b->value != 0)) return 1.0;
    if (known(0) && b && b->known) return 0.0;
    return std::nullopt;
  }
  if (base == "add" || base == "sub") {
    const double sign = base == "add" ? alpha : -alpha;
    if (known(0) && b && b->known) return result(val(0) + sign * b->value);
    // A masked slab stays masked when anything finite is added to it.
    if (known(0) && std::abs(val(0)) >= kHuge) return val(0);
    if (b && b->known && std::abs(b->value) >= kHuge && alpha > 0) return sign * b->value;
    return std::nullopt;
  }
  if (base == "rsub") {
    if (known(0) && b && b->known) return result(b->value - alpha * val(0));
    return std::nullopt;
  }
  if (base == "where") {
    // where(cond, self, other): a known condition picks its operand.
    std::vector<Slab> v = t;
    if (v.size() == 2) {
      if (auto o = number_attr(n, "other"))
        v.push_back(Slab::of(*o));
      else if (auto s = number_attr(n, "self"))
        v.insert(v.begin() + 1, Slab::of(*s));
    }
    if (v.size() == 1) {
      auto s = number_attr(n, "self"), o = number_attr(n, "other");
      if (s && o) v = {v[0], Slab::of(*s), Slab::of(*o)};
    }
    if (v.size() != 3) return std::nullopt;
    // Both branches the same known value: the condition does not matter.
    if (!v[0].known && v[1].known && v[2].known && v[1].value == v[2].value)
      return result(v[1].value);
    if (!v[0].known) return std::nullopt;
    const Slab& pick = v[0].value != 0 ? v[1] : v[2];
    return pick.known ? result(pick.value) : std::nullopt;
  }
  if (base == "masked_fill") {
    std::optional<Slab> fill;
    if (t.size() >= 3)
      fill = t[2];
    else if (auto f = number_attr(n, "value"))
      fill = Slab::of(*f);
    if (!known(1) || !fill) return std::nullopt;
    if (val(1) != 0) return fill->known ? result(fill->value) : std::nullopt;
    return known(0) ? result(val(0)) : std::nullopt;
  }
  if (!all || t.empty()) return std::nullopt;
  const double a = val(0);
  if (base == "neg") return result(-a);
  if (base == "exp") return result(std::exp(a));
  if (base == "relu") return result(std::max(a, 0.0));
  if (one_of(base, {"logical_not"}) || (base == "bitwise_not" && out == ir::DType::boolean))
    return a == 0 ? 1.0 : 0.0;
  if (!b || !b->known) return std::nullopt;
  const double c = b->value;
  if (base == "div")
    return n.attr_is_none("rounding_mode") && c != 0 ? result(a / c) : std::nullopt;
  if (base == "eq") return a == c ? 1.0 : 0.0;
  if (base == "ne") return a != c ? 1.0 : 0.0;
  if (base == "lt") return a < c ? 1.0 : 0.0;
  if (base == "le") return a <= c ? 1.0 : 0.0;
  if (base == "gt") return a > c ? 1.0 : 0.0;
  if (base == "ge") return a >= c ? 1.0 : 0.0;
  if (base == "maximum") return result(std::max(a, c));
  if (base == "minimum") return result(std::min(a, c));
  return std::nullopt;
}

class Analysis {
 public:
  Analysis(const ir::Graph& g, const std::map<ir::SymbolId, PadWith>& padded)
      : g_(g), padded_(padded) {}

  PaddingVerdict run();

 private:
  // --- axes --------------------------------------------------------------------------------
  bool is_padded(const Factor& f) const { return f.sym >= 0 && padded_.count(f.sym); }
  int padded_count(const Axis& a) const {
    return static_cast<int>(std::count_if(a.factors.begin(), a.factors.end(),
                                          [&](const Factor& f) { return is_padded(f); }));
  }
  bool padded(const Axis& a) const { return padded_count(a) > 0; }
  // One padded symbol, outermost: its padding is a suffix of the axis.
  bool suffix(const Axis& a) const {
    int first = -1;
    for (size_t i = 0; i < a.factors.size(); ++i)
      if (a.factors[i].size != 1 || a.factors[i].sym >= 0) {
        first = static_cast<int>(i);
        break;
      }
    return padded_count(a) == 1 && first >= 0 && is_padded(a.factors[static_cast<size_t>(first)]);
  }
  ir::SymbolId outermost_padded(const Axis& a) const {
    for (const Factor& f : a.factors)
      if (is_padded(f)) return f.sym;
    return -1;
  }
  static bool masked(const Slab& s, ir::DType dt) {
    return s.known && (dt == ir::DType::boolean ? s.value == 0 : s.value <= -kHuge);
  }
  // Refuses when the padded rows of `v` along a padded axis other than `except` are masked
  // everywhere a softmax over `except` reads them: those rows' softmax is 0/0.
  void refuse_fully_masked(const ir::Value* v, const Info& i, size_t except,
                           const char* what) const {
    for (size_t a = 0; a < i.axes.size(); ++a)
      if (a != except && padded(i.axes[a]) && masked(i.axes[a].slab, v->dtype()))
        throw Refuse{std::string(what) + ": the rows " + symbols_of(i.axes[a]) +
                     " pads are masked everywhere, so their softmax is 0/0 (NaN), which would "
                     "not stay in the padding (pad that dim with copies of real rows instead)"};
  }
  bool any_padded(const Info& i) const {
    return std::any_of(i.axes.begin(), i.axes.end(), [&](const Axis& a) { return padded(a); });
  }
  std::string symbols_of(const Axis& a) const {
    std::string s;
    for (const Factor& f : a.factors)
      if (is_padded(f)) s += (s.empty() ? "" : " and ") + g_.symbol(f.sym).name;
    return s;
  }
  std::vector<Factor> factors_of(const ir::Dim& d) const {
    if (d.is_constant()) return {Factor{d.value(), -1}};
    std::vector<Factor> out;
    for (ir::SymbolId s : g_.expand(ir::Monomial::of(d)).symbols) out.push_back({1, s});
    if (d.coeff != 1) out.push_back({d.coeff, -1});
    return out;
  }
  Info fresh(const ir::Shape& s) const {
    Info i;
    for (const ir::Dim& d : s) i.axes.push_back({factors_of(d), {}});
    return i;
  }
  // The smallest extent `d` takes over its symbols' ranges.
  int64_t smallest(const ir::Dim& d) const {
    int64_t v = d.coeff;
    for (ir::SymbolId s : g_.expand(ir::Monomial::of(d)).symbols)
      v *= std::max<int64_t>(g_.symbol(s).min, 0);
    return v;
  }
  bool shape_uses_padded(const ir::Shape& s) const {
    for (const ir::Dim& d : s)
      for (const Factor& f : factors_of(d))
        if (is_padded(f)) return true;
    return false;
  }

  const Info& get(const ir::Value* v) {
    auto it = info_.find(v);
    if (it != info_.end()) return it->second;
    return info_.emplace(v, fresh(v->shape())).first->second;
  }

  // --- rules -------------------------------------------------------------------------------
  std::vector<Info> apply(const ir::Node& n);
  Info elementwise(const ir::Node& n, const std::string& base);
  Info reshape(const ir::Node& n);
  Info permute(const ir::Node& n, std::vector<int64_t> perm);
  Info expand(const ir::Node& n);
  std::vector<Info> reduce(const ir::Node& n, const std::string& base);
  Info matmul(const ir::Node& n, const std::string& base);
  Info attention(const ir::Node& n);
  Info index_tensor(const ir::Node& n);
  Info creation(const ir::Node& n, const std::string& base);
  // Output axes copied from `in` where the output dim equals the input's (same rank).
  Info same_axes(const ir::Value* out, const Info& in, const ir::Shape& in_shape) const;
  // Refuses unless `a` and `b` pad the same way (axes joined by broadcasting).
  void join(const Axis& a, const Axis& b, const char* what) const;
  int64_t wrap(int64_t d, size_t rank) const { return d < 0 ? d + static_cast<int64_t>(rank) : d; }
  std::vector<int64_t> dims_attr(const ir::Node& n, const char* name, size_t rank) const;
  // Refuses unless each padded dim of `v`, broadcast onto `out` (right-aligned), lands on a dim
  // of the same extent.
  void require_broadcast_onto(const ir::Value* v, const ir::Value* out) {
    const Info& in = get(v);
    const size_t r = out->shape().size(), ri = v->shape().size();
    for (size_t j = 0; j < ri; ++j) {
      if (!padded(in.axes[j])) continue;
      if (j + r < ri || out->shape()[j + r - ri] != v->shape()[j])
        throw Refuse{"it reads dim " + std::to_string(j) + " of '" + v->name() + "', which " +
                     symbols_of(in.axes[j]) + " pads, at another extent than it writes"};
    }
  }
  // Refuses when `n` reads the size of a padded symbol as data: a symbolic argument that is not
  // an extent of its result (ArgSpec::extent; symbol_values.h turns the reads it can into symbol
  // inputs, which hold the real size).
  void require_no_padded_size_read(const ir::Node& n) const;
  // Refuses if any axis of `v` in `dims` is padded.
  void require_unpadded(const ir::Value* v, const std::vector<int64_t>& dims,
                        const std::string& why);

  const ir::Graph& g_;
  const std::map<ir::SymbolId, PadWith>& padded_;
  std::unordered_map<const ir::Value*, Info> info_;
};

std::vector<int64_t> Analysis::dims_attr(const ir::Node& n, const char* name, size_t rank) const {
  std::vector<int64_t> dims;
  if (!n.attr_is_none(name)) dims = n.attr_ints(name);
  if (dims.empty())
    for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i));
  for (int64_t& d : dims) d = wrap(d, rank);
  return dims;
}

void Analysis::require_no_padded_size_read(const ir::Node& n) const {
  for (const ir::NamedAttr& a : n.attrs()) {
    std::vector<ir::Dim> dims;
    if (const auto* d = std::get_if<ir::Dim>(&a.value)) dims.push_back(*d);
    if (const auto* l = std::get_if<ir::SymIntList>(&a.value)) dims = l->dims;
    std::string syms;
    for (const ir::Dim& d : dims)
      for (const Factor& f : factors_of(d))
        if (is_padded(f) && syms.find(g_.symbol(f.sym).name) == std::string::npos)
          syms += (syms.empty() ? "" : " and ") + g_.symbol(f.sym).name;
    if (syms.empty()) continue;
    const ir::OpInfo* info = n.info();
    const int k = info ? info->arg_index(a.name) : -1;
    if (k >= 0 && info->args[static_cast<size_t>(k)].extent) continue;
    throw Refuse{"it reads the size " + syms + " as a value (argument '" + a.name +
                 "'), which padding would change: the run's real size cannot reach it"};
  }
}

void Analysis::require_unpadded(const ir::Value* v, const std::vector<int64_t>& dims,
                                const std::string& why) {
  const Info& in = get(v);
  for (int64_t d : dims)
    if (d >= 0 && static_cast<size_t>(d) < in.axes.size() && padded(in.axes[d]))
      throw Refuse{why + " along dim " + std::to_string(d) + ", which " + symbols_of(in.axes[d]) +
                   " pads"};
}

void Analysis::join(const Axis& a, const Axis& b, const char* what) const {
  if (!padded(a) && !padded(b)) return;
  if (a.factors != b.factors)
    throw Refuse{std::string(what) + " whose padding is laid out differently (" + symbols_of(a) +
                 " against " + symbols_of(b) + ")"};
}

Info Analysis::same_axes(const ir::Value* out, const Info& in, const ir::Shape& in_shape) const {
  Info o = fresh(out->shape());
  for (size_t k = 0; k < o.axes.size() && k < in.axes.size(); ++k)
    if (k < in_shape.size() && out->shape()[k] == in_shape[k]) o.axes[k] = in.axes[k];
  return o;
}

Info Analysis::elementwise(const ir::Node& n, const std::string& base) {
  const ir::Value* out = n.output(0);
  const size_t r = out->shape().size();
  Info o = fresh(out->shape());
  std::vector<const ir::Value*> ops;
  for (const ir::Value* v : n.inputs())
    if (v) ops.push_back(v);
  for (const ir::Value* v : ops) require_broadcast_onto(v, out);
  for (size_t k = 0; k < r; ++k) {
    const Axis* carrier = nullptr;
    std::vector<Slab> slabs;
    for (const ir::Value* v : ops) {
      const Info& in = get(v);
      const size_t ri = v->shape().size();
      const bool has = k + ri >= r && v->shape()[k + ri - r] == out->shape()[k] &&
                       !(out->shape()[k].is_constant() && out->shape()[k].value() == 1);
      if (has) {
        const Axis& a = in.axes[k + ri - r];
        if (carrier)
          join(*carrier, a, "it combines operands");
        else
          carrier = &a;
        slabs.push_back(a.slab);
      } else {
        slabs.push_back(in.scalar ? Slab::of(*in.scalar) : Slab{});
      }
    }
    if (carrier) o.axes[k].factors = carrier->factors;
    if (padded(o.axes[k])) {
      if (!carrier) throw Refuse{"it creates a padded dim without a rule"};
      // A zero pad must not become a denominator or a logarithm's argument (Inf, NaN).
      const bool zero_arg =
          (one_of(base, {"reciprocal", "rsqrt", "log", "log2", "log10", "log1p_", "atanh"}) &&
           slabs[0].known && slabs[0].value == 0) ||
          (one_of(base, {"div", "remainder", "fmod", "floor_divide"}) && slabs.size() > 1 &&
           slabs[1].known && slabs[1].value == 0);
      if (zero_arg)
        throw Refuse{"it divides by (or takes the logarithm of) the zero padding of " +
                     symbols_of(o.axes[k]) + ", which makes it infinite"};
      if (auto v = evaluate(base, n, slabs, out->dtype())) o.axes[k].slab = Slab::of(*v);
    }
  }
  std::vector<Slab> scalars;
  for (const ir::Value* v : ops)
    scalars.push_back(get(v).scalar ? Slab::of(*get(v).scalar) : Slab{});
  if (auto v = evaluate(base, n, scalars, out->dtype());
      v && std::all_of(scalars.begin(), scalars.end(), [](const Slab& s) { return s.known; }))
    o.scalar = v;
  // x + 0 and casts keep an index ramp.
  if (ops.size() == 1 && get(ops[0]).iota >= 0 && ops[0]->shape() == out->shape() &&
      ((one_of(base, {"add", "sub"}) && number_attr(n, "other").value_or(1) == 0) ||
       one_of(base, {"_to_copy", "to", "clone", "alias", "contiguous", "detach"})))
    o.iota = get(ops[0]).iota;
  return o;
}

Info Analysis::reshape(const ir::Node& n) {
  const ir::Value* in = n.input(0);
  const ir::Value* out = n.output(0);
  const Info& src = get(in);
  // The input's factors, outer to inner, each with the axis it came from.
  struct Src {
    Factor f;
    size_t axis;
  };
  std::vector<Src> seq;
  for (size_t a = 0; a < src.axes.size(); ++a)
    for (const Factor& f : src.axes[a].factors)
      if (f.sym >= 0 || f.size != 1) seq.push_back({f, a});
  Info o;
  size_t next = 0;
  bool ok = true;
  int new_iota = -1;
  for (size_t k = 0; k < out->shape().size() && ok; ++k) {
    ir::Monomial want = g_.expand(ir::Monomial::of(out->shape()[k]));
    Axis ax;
    std::optional<size_t> from;
    while (ok && !(want.coeff == 1 && want.symbols.empty())) {
      if (next == seq.size()) {
        ok = false;
        break;
      }
      Src& s = seq[next];
      if (s.f.sym >= 0) {
        auto it = std::find(want.symbols.begin(), want.symbols.end(), s.f.sym);
        if (it == want.symbols.end()) {
          ok = false;
          break;
        }
        want.symbols.erase(it);
        ax.factors.push_back(s.f);
        ++next;
      } else if (want.coeff % s.f.size == 0) {
        want.coeff /= s.f.size;
        ax.factors.push_back(s.f);
        ++next;
      } else if (s.f.size % want.coeff == 0 && want.coeff > 1) {
        ax.factors.push_back({want.coeff, -1});  // split a constant run
        s.f.size /= want.coeff;
        want.coeff = 1;
      } else {
        ok = false;
        break;
      }
      if (is_padded(ax.factors.back())) from = s.axis;
      if (src.iota >= 0 && s.axis == static_cast<size_t>(src.iota)) new_iota = static_cast<int>(k);
    }
    if (from && suffix(ax) && suffix(src.axes[*from]) &&
        ax.factors.front() == src.axes[*from].factors.front())
      ax.slab = src.axes[*from].slab;
    o.axes.push_back(std::move(ax));
  }
  if (!ok || next != seq.size()) {
    if (any_padded(src))
      throw Refuse{"it reshapes '" + in->name() + "' in a way that moves padded elements"};
    return fresh(out->shape());
  }
  o.scalar = src.scalar;
  // A ramp stays a ramp when only unit dims come or go around it.
  if (src.iota >= 0 && new_iota >= 0 && o.axes[new_iota].factors == src.axes[src.iota].factors)
    o.iota = new_iota;
  return o;
}

Info Analysis::permute(const ir::Node& n, std::vector<int64_t> perm) {
  const Info& src = get(n.input(0));
  Info o;
  o.scalar = src.scalar;
  for (size_t k = 0; k < perm.size(); ++k) {
    const int64_t p = wrap(perm[k], src.axes.size());
    o.axes.push_back(src.axes.at(static_cast<size_t>(p)));
    if (p == src.iota) o.iota = static_cast<int>(k);
  }
  return o;
}

Info Analysis::expand(const ir::Node& n) {
  const ir::Value* in = n.input(0);
  const ir::Value* out = n.output(0);
  const Info& src = get(in);
  Info o = fresh(out->shape());
  o.scalar = src.scalar;
  const size_t r = out->shape().size(), ri = in->shape().size();
  for (size_t k = 0; k < r; ++k) {
    if (k + ri < r) {
      if (src.scalar) o.axes[k].slab = Slab::of(*src.scalar);
      continue;
    }
    const size_t j = k + ri - r;
    if (in->shape()[j] == out->shape()[k]) {
      o.axes[k] = src.axes[j];
      if (static_cast<int>(j) == src.iota) o.iota = static_cast<int>(k);
    } else if (src.scalar) {
      o.axes[k].slab = Slab::of(*src.scalar);  // a broadcast copy of a known value
    }
  }
  return o;
}

std::vector<Info> Analysis::reduce(const ir::Node& n, const std::string& base) {
  const ir::Value* in = n.input(0);
  const Info& src = get(in);
  const size_t rank = in->shape().size();
  const bool along = one_of(base, {"_softmax", "softmax", "_safe_softmax", "_log_softmax",
                                   "log_softmax", "cumsum", "cumprod"});
  std::vector<int64_t> dims = dims_attr(n, "dim", rank);
  if (one_of(base, {"_softmax", "softmax", "_log_softmax", "log_softmax", "logsumexp"}) &&
      dims.size() == 1)
    refuse_fully_masked(in, src, static_cast<size_t>(dims[0]), "it takes a softmax");
  int padded_dims = 0;
  for (int64_t d : dims) {
    const Axis& a = src.axes.at(static_cast<size_t>(d));
    if (!padded(a)) continue;
    ++padded_dims;
    const std::string syms = symbols_of(a);
    if (!suffix(a))
      throw Refuse{"it reduces over dim " + std::to_string(d) + ", where " + syms +
                   " pad interleaved"};
    const Slab s = a.slab;
    const bool masked_low = s.known && s.value <= -kHuge;
    const bool masked_high = s.known && s.value >= kHuge;
    bool exact = false;
    if (one_of(base, {"sum", "any"}))
      exact = s.known && s.value == 0;
    else if (base == "all")
      exact = s.known && s.value != 0;
    else if (base == "prod")
      exact = s.known && s.value == 1;
    else if (one_of(base,
                    {"amax", "max", "argmax", "logsumexp", "_softmax", "softmax", "_safe_softmax"}))
      exact = masked_low;
    else if (one_of(base, {"amin", "min", "argmin"}))
      exact = masked_high;
    else if (one_of(base, {"cumsum", "cumprod"}))
      exact = true;  // a prefix reads no later row
    if (!exact)
      throw Refuse{"it reduces over dim " + std::to_string(d) + ", which " + syms +
                   " pads, and the padded " +
                   (s.known ? "value " + std::to_string(s.value) : std::string("values")) +
                   " would change the " + base +
                   " (expected a padding it ignores: zeros for a "
                   "sum, a -inf-like mask for a max or softmax)"};
  }
  if (padded_dims > 1) throw Refuse{"it reduces over more than one padded dim"};
  std::vector<Info> outs;
  for (const ir::Value* out : n.outputs()) {
    Info o;
    if (along) {
      o = src;
      o.iota = -1;
      o.scalar.reset();
      for (int64_t d : dims) {
        Axis& a = o.axes[static_cast<size_t>(d)];
        a.slab = padded(a) && one_of(base, {"_softmax", "softmax", "_safe_softmax"}) ? Slab::of(0)
                                                                                     : Slab{};
      }
      for (size_t k = 0; k < o.axes.size(); ++k)
        if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(k)) == dims.end())
          o.axes[k].slab = Slab{};
    } else {
      o = fresh(out->shape());
      const bool keep = out->shape().size() == rank;
      size_t k = 0;
      for (size_t a = 0; a < rank; ++a) {
        const bool reduced =
            std::find(dims.begin(), dims.end(), static_cast<int64_t>(a)) != dims.end();
        if (reduced && !keep) continue;
        if (!reduced && k < o.axes.size()) {
          o.axes[k] = src.axes[a];
          const bool zero_sum =
              base == "sum" && src.axes[a].slab.known && src.axes[a].slab.value == 0;
          o.axes[k].slab = zero_sum ? Slab::of(0) : Slab{};
        }
        ++k;
      }
    }
    outs.push_back(std::move(o));
  }
  return outs;
}

Info Analysis::matmul(const ir::Node& n, const std::string& base) {
  // Operands (a [.., M, K], b [.., K, N]) and an optional addend.
  const ir::Value* a = nullptr;
  const ir::Value* b = nullptr;
  const ir::Value* bias = nullptr;
  bool b_transposed = false;  // linear's weight is [N, K]
  if (base == "linear") {
    a = n.input(0), b = n.input(1), b_transposed = true;
    if (n.inputs().size() > 2) bias = n.input(2);
  } else if (one_of(base, {"addmm", "baddbmm", "addbmm"})) {
    bias = n.input(0), a = n.input(1), b = n.input(2);
  } else {
    a = n.input(0), b = n.input(1);
  }
  const Info& ia = get(a);
  const Info& ib = get(b);
  const ir::Value* out = n.output(0);
  if (a->shape().size() < 2 || b->shape().size() < 2) {
    if (any_padded(ia) || any_padded(ib))
      throw Refuse{"a vector matmul over a padded operand has no padding rule"};
    return fresh(out->shape());
  }
  const size_t ra = a->shape().size(), rb = b->shape().size();
  const Axis& ka = ia.axes[ra - 1];
  const Axis& kb = b_transposed ? ib.axes[rb - 1] : ib.axes[rb - 2];
  if (padded(ka) || padded(kb)) {
    join(ka, kb, "it contracts operands");
    const bool zero =
        (ka.slab.known && ka.slab.value == 0) || (kb.slab.known && kb.slab.value == 0);
    if (!suffix(ka) || !zero)
      throw Refuse{"it contracts over " + symbols_of(padded(ka) ? ka : kb) +
                   ", and neither operand is zero in the padding"};
  }
  Info o = fresh(out->shape());
  const size_t r = o.axes.size();
  if (r >= 1) o.axes[r - 1] = b_transposed ? ib.axes[rb - 2] : ib.axes[rb - 1];
  if (r >= 2) o.axes[r - 2] = ia.axes[ra - 2];
  // Batch dims broadcast as in an element-wise op.
  for (size_t k = 0; k + 2 < r; ++k) {
    const Axis* carrier = nullptr;
    for (const auto& [v, inf] : {std::pair{a, &ia}, std::pair{b, &ib}}) {
      const size_t rv = v->shape().size();
      if (b_transposed && v == b) continue;
      if (k + rv < r) continue;
      const size_t j = k + rv - r;
      if (v->shape()[j] != out->shape()[k]) {
        if (padded(inf->axes[j])) throw Refuse{"it broadcasts a padded batch dim"};
        continue;
      }
      if (carrier)
        join(*carrier, inf->axes[j], "it combines batch dims");
      else
        carrier = &inf->axes[j];
    }
    if (carrier) o.axes[k] = *carrier;
  }
  for (Axis& ax : o.axes) ax.slab = Slab{};
  if (bias) {
    require_broadcast_onto(bias, out);
    const Info& ib2 = get(bias);
    const size_t rv = bias->shape().size();
    for (size_t j = 0; j < rv; ++j)
      if (padded(ib2.axes[j])) join(o.axes[j + r - rv], ib2.axes[j], "it adds a bias");
  }
  return o;
}

Info Analysis::attention(const ir::Node& n) {
  const ir::Value* q = n.input(0);
  const ir::Value* k = n.input(1);
  const ir::Value* v = n.input(2);
  const ir::Value* mask = n.inputs().size() > 3 ? n.input(3) : nullptr;
  const Info& iq = get(q);
  const Info& ik = get(k);
  const Info& iv = get(v);
  const size_t rq = q->shape().size(), rk = k->shape().size(), rv = v->shape().size();
  if (padded(iq.axes[rq - 1]) || padded(ik.axes[rk - 1]))
    throw Refuse{"it contracts queries and keys over a padded head dim"};
  const Axis& lk = ik.axes[rk - 2];
  if (mask) refuse_fully_masked(mask, get(mask), mask->shape().size() - 1, "it attends");
  if (padded(lk) || padded(iv.axes[rv - 2])) {
    join(lk, iv.axes[rv - 2], "its keys and values are");
    const std::string syms = symbols_of(lk);
    if (!suffix(lk)) throw Refuse{"its keys are padded interleaved (" + syms + ")"};
    bool hidden = false;
    const bool causal = n.attr("is_causal") && n.attr_bool("is_causal");
    // Causal attention with queries padded like the keys: a real query reads earlier keys only.
    if (causal && iq.axes[rq - 2].factors == lk.factors) hidden = true;
    if (!hidden && mask) {
      const Info& im = get(mask);
      const size_t rm = mask->shape().size();
      const Axis& mk = im.axes[rm - 1];
      if (mk.factors == lk.factors && mk.slab.known) {
        hidden = mask->dtype() == ir::DType::boolean ? mk.slab.value == 0 : mk.slab.value <= -kHuge;
      }
    }
    if (!hidden)
      throw Refuse{"it attends over keys that " + syms +
                   " pads, and neither a causal mask nor its attention mask hides them"};
  }
  Info o = fresh(n.output(0)->shape());
  const size_t r = o.axes.size();
  for (size_t a = 0; a + 1 < r && a < rq; ++a) o.axes[a] = iq.axes[a];
  o.axes[r - 1] = iv.axes[rv - 1];
  for (Axis& ax : o.axes) ax.slab = Slab{};
  return o;
}

Info Analysis::index_tensor(const ir::Node& n) {
  const ir::Value* self = n.input(0);
  const Info& src = get(self);
  const ir::Value* out = n.output(0);
  std::vector<const ir::Value*> idx(n.inputs().begin() + 1, n.inputs().end());
  // Which dims are indexed, and whether they are adjacent (the result's indexed block then sits
  // where they were; else it leads).
  std::vector<size_t> indexed;
  size_t br = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i]) {
      indexed.push_back(i);
      br = std::max(br, idx[i]->shape().size());
    }
  if (indexed.empty()) return same_axes(out, src, self->shape());
  const bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  const size_t lead = adjacent ? indexed.front() : 0;
  Info o = fresh(out->shape());
  for (size_t i : indexed) {
    const Info& ii = get(idx[i]);
    const bool identity = ii.iota >= 0 && ii.axes[ii.iota].factors == src.axes.at(i).factors;
    if (padded(src.axes.at(i)) && !identity)
      throw Refuse{"it gathers along dim " + std::to_string(i) + ", which " +
                   symbols_of(src.axes[i]) + " pads, at indices it cannot bound"};
    const size_t ri = idx[i]->shape().size();
    for (size_t j = 0; j < ri; ++j) {
      const size_t k = lead + j + br - ri;
      if (!(idx[i]->shape()[j] == out->shape()[k]) ||
          (out->shape()[k].is_constant() && out->shape()[k].value() == 1))
        continue;
      join(o.axes[k], ii.axes[j], "its indices are");
      o.axes[k].factors = ii.axes[j].factors;
      o.axes[k].slab = identity && static_cast<int>(j) == ii.iota ? src.axes[i].slab : Slab{};
    }
  }
  // The dims nobody indexes keep their axes.
  size_t k = adjacent ? 0 : br;
  for (size_t d = 0; d < src.axes.size(); ++d) {
    if (std::find(indexed.begin(), indexed.end(), d) != indexed.end()) {
      if (adjacent && d == indexed.front()) k += br;
      continue;
    }
    if (k < o.axes.size()) o.axes[k] = src.axes[d];
    ++k;
  }
  return o;
}

Info Analysis::creation(const ir::Node& n, const std::string& base) {
  const ir::Value* out = n.output(0);
  Info o = fresh(out->shape());
  std::optional<double> fill;
  if (one_of(base, {"zeros", "new_zeros", "zeros_like"}))
    fill = 0;
  else if (one_of(base, {"ones", "new_ones", "ones_like"}))
    fill = 1;
  else if (one_of(base, {"full", "new_full", "full_like", "scalar_tensor"}))
    fill = number_attr(n, base == "scalar_tensor" ? "s" : "fill_value");
  if (fill) {
    if (out->dtype() == ir::DType::boolean) fill = *fill != 0;
    o.scalar = fill;
    for (Axis& a : o.axes) a.slab = Slab::of(*fill);
  }
  if (base == "arange" && o.axes.size() == 1 && number_attr(n, "start").value_or(0) == 0 &&
      number_attr(n, "step").value_or(1) == 1)
    o.iota = 0;
  // *_like results lay their dims out as their operand does.
  if (base.ends_with("_like") && !n.inputs().empty() && n.input(0)) {
    const Info& src = get(n.input(0));
    for (size_t k = 0; k < o.axes.size() && k < src.axes.size(); ++k)
      o.axes[k].factors = src.axes[k].factors;
  }
  return o;
}

std::vector<Info> Analysis::apply(const ir::Node& n) {
  const std::string base = base_name(n.op());
  const ir::OpInfo* info = n.info();
  const ir::OpCategory cat = info ? info->category : ir::OpCategory::metadata;
  const ir::Value* in0 = n.inputs().empty() ? nullptr : n.input(0);
  auto one = [](Info i) { return std::vector<Info>{std::move(i)}; };
  if (!info) throw Refuse{"it has no padding rule (an operator neuronc does not know)"};

  if (one_of(base, {"view", "reshape", "_unsafe_view", "view_copy", "flatten", "unflatten",
                    "squeeze", "unsqueeze", "_reshape_alias"}))
    return one(reshape(n));
  if (base == "permute") return one(permute(n, n.attr_ints("dims")));
  if (one_of(base, {"transpose", "t", "numpy_T"})) {
    const size_t r = in0->shape().size();
    std::vector<int64_t> perm(r);
    for (size_t i = 0; i < r; ++i) perm[i] = static_cast<int64_t>(i);
    if (r >= 2) {
      const int64_t d0 = base == "transpose" ? wrap(n.attr_int("dim0"), r) : 0;
      const int64_t d1 = base == "transpose" ? wrap(n.attr_int("dim1"), r) : 1;
      std::swap(perm[d0], perm[d1]);
    }
    return one(permute(n, perm));
  }
  if (one_of(base, {"expand", "expand_as", "broadcast_to", "expand_copy"})) return one(expand(n));
  if (one_of(base, {"slice", "narrow", "slice_copy"})) {
    const size_t r = in0->shape().size();
    const int64_t d = wrap(n.attr_int("dim"), r);
    Info o = same_axes(n.output(0), get(in0), in0->shape());
    const Axis& a = get(in0).axes.at(static_cast<size_t>(d));
    if (padded(a) && !(n.output(0)->shape()[d] == in0->shape()[d])) {
      // A slice of leading rows every real extent has is real data.
      const ir::Dim od = n.output(0)->shape()[d];
      const double start = number_attr(n, "start").value_or(0);
      bool leading = od.is_constant() && start == 0 && number_attr(n, "step").value_or(1) == 1;
      if (leading) {
        leading = suffix(a) && od.value() <= smallest(in0->shape()[d]);
      }
      if (!leading)
        throw Refuse{"it slices dim " + std::to_string(d) + ", which " + symbols_of(a) +
                     " pads, at other than its full extent or leading rows every size has"};
      o.axes[d] = Axis{factors_of(od), {}};
    }
    return one(o);
  }
  if (base == "select") {
    const size_t r = in0->shape().size();
    const int64_t d = wrap(n.attr_int("dim"), r);
    const Axis& a = get(in0).axes.at(static_cast<size_t>(d));
    if (padded(a)) {
      const int64_t index = n.attr_int("index");
      if (!suffix(a) || index < 0 || index >= smallest(in0->shape()[d]))
        throw Refuse{"it selects index " + std::to_string(index) + " of dim " + std::to_string(d) +
                     ", which " + symbols_of(a) +
                     " pads (only an index below every real size reads real data)"};
    }
    Info o;
    const Info& src = get(in0);
    for (size_t k = 0; k < src.axes.size(); ++k)
      if (static_cast<int64_t>(k) != d) o.axes.push_back(src.axes[k]);
    return one(o);
  }
  if (cat == ir::OpCategory::softmax || cat == ir::OpCategory::reduction ||
      one_of(base, {"cumsum", "cumprod", "logsumexp", "any", "all"}))
    return reduce(n, base);
  if (cat == ir::OpCategory::norm) {
    const size_t r = in0->shape().size();
    std::vector<int64_t> over;
    // How many trailing dims a norm's normalized_shape names (symbolic ones included).
    auto trailing = [&](const char* name) -> size_t {
      if (const auto* l = std::get_if<ir::SymIntList>(n.attr(name))) return l->dims.size();
      return n.attr_ints(name).size();
    };
    if (base.find("layer_norm") != std::string::npos) {
      const size_t k = trailing("normalized_shape");
      for (size_t i = r - k; i < r; ++i) over.push_back(static_cast<int64_t>(i));
    } else if (base.find("rms_norm") != std::string::npos) {
      const size_t k = n.attr_is_none("normalized_shape") ? 1 : trailing("normalized_shape");
      for (size_t i = r - k; i < r; ++i) over.push_back(static_cast<int64_t>(i));
    } else if (base.find("group_norm") != std::string::npos) {
      for (size_t i = 1; i < r; ++i) over.push_back(static_cast<int64_t>(i));
    } else if (n.attr("training") && n.attr_bool("training")) {
      // batch norm on batch statistics: each channel's mean and variance over every other dim
      for (size_t i = 0; i < r; ++i)
        if (i != 1) over.push_back(static_cast<int64_t>(i));
    } else {
      over.push_back(1);  // batch norm in inference: per channel
    }
    require_unpadded(in0, over, "it normalises");
    std::vector<Info> outs;
    for (const ir::Value* out : n.outputs()) {
      Info o = same_axes(out, get(in0), in0->shape());
      for (Axis& a : o.axes) a.slab = Slab{};
      outs.push_back(std::move(o));
    }
    return outs;
  }
  if (cat == ir::OpCategory::matmul) {
    if (base == "einsum") {
      for (const ir::Value* v : n.inputs())
        if (v && any_padded(get(v)))
          throw Refuse{"einsum over a padded operand has no padding rule"};
      return one(fresh(n.output(0)->shape()));
    }
    return one(matmul(n, base));
  }
  if (cat == ir::OpCategory::attention) return one(attention(n));
  if (base == "embedding") {
    require_unpadded(n.input(0), {0}, "it looks up rows of a table");
    const Info& ids = get(n.input(1));
    Info o = fresh(n.output(0)->shape());
    for (size_t k = 0; k < ids.axes.size(); ++k) o.axes[k] = Axis{ids.axes[k].factors, {}};
    return one(o);
  }
  if (one_of(base, {"gather", "index_select"})) {
    const size_t r = in0->shape().size();
    const int64_t d = wrap(n.attr_int("dim"), r);
    const Info& ii = get(n.input(1));
    const bool identity = ii.iota >= 0 && ii.axes[ii.iota].factors == get(in0).axes[d].factors;
    if (!identity) require_unpadded(in0, {d}, "it gathers at indices it cannot bound");
    Info o = fresh(n.output(0)->shape());
    if (base == "gather") {
      for (size_t k = 0; k < o.axes.size(); ++k) o.axes[k] = Axis{ii.axes[k].factors, {}};
      for (size_t k = 0; k < r; ++k)
        if (static_cast<int64_t>(k) != d && padded(get(in0).axes[k]))
          join(get(in0).axes[k], o.axes[k], "it gathers from rows");
    } else {
      o = same_axes(n.output(0), get(in0), in0->shape());
      o.axes[d] = Axis{ii.axes[0].factors, identity ? get(in0).axes[d].slab : Slab{}};
    }
    return one(o);
  }
  if (base == "index") return one(index_tensor(n));
  if (one_of(base, {"cat", "stack"})) {
    const size_t r = n.output(0)->shape().size();
    const int64_t d = wrap(n.attr_int("dim"), r);
    Info o = fresh(n.output(0)->shape());
    for (const ir::Value* v : n.inputs()) {
      const Info& iv = get(v);
      for (size_t j = 0; j < iv.axes.size(); ++j) {
        const size_t k = base == "stack" && static_cast<int64_t>(j) >= d ? j + 1 : j;
        if (base == "cat" && static_cast<int64_t>(j) == d) {
          if (padded(iv.axes[j]))
            throw Refuse{"it concatenates along dim " + std::to_string(d) + ", which " +
                         symbols_of(iv.axes[j]) + " pads"};
          continue;
        }
        join(o.axes[k], iv.axes[j], "it joins operands");
        o.axes[k] = Axis{iv.axes[j].factors, {}};
      }
    }
    return one(o);
  }
  if (one_of(base, {"split", "split_with_sizes", "chunk", "unbind", "tensor_split"})) {
    const size_t r = in0->shape().size();
    const int64_t d = wrap(number_attr(n, "dim").value_or(0), r);
    require_unpadded(in0, {d}, "it splits");
    std::vector<Info> outs;
    for (const ir::Value* out : n.outputs()) outs.push_back(same_axes(out, get(in0), in0->shape()));
    return outs;
  }
  if (one_of(base, {"constant_pad_nd", "roll", "flip", "repeat", "pad"})) {
    const size_t r = in0->shape().size();
    std::vector<int64_t> dims;
    for (size_t k = 0; k < r; ++k)
      if (!(n.output(0)->shape()[k] == in0->shape()[k]) || base == "roll" || base == "flip")
        dims.push_back(static_cast<int64_t>(k));
    if (base == "roll" || base == "flip") dims = dims_attr(n, "dims", r);
    require_unpadded(in0, dims, "it moves rows");
    return one(same_axes(n.output(0), get(in0), in0->shape()));
  }
  if (one_of(base, {"slice_scatter", "select_scatter"})) {
    const size_t r = in0->shape().size();
    const int64_t d = wrap(n.attr_int("dim"), r);
    require_unpadded(in0, {d}, "it writes a window");
    return one(get(in0));
  }
  if (cat == ir::OpCategory::conv || cat == ir::OpCategory::pooling) {
    std::vector<int64_t> dims;
    for (size_t k = 1; k < in0->shape().size(); ++k) dims.push_back(static_cast<int64_t>(k));
    require_unpadded(in0, dims, "it slides a window or mixes channels");
    for (size_t i = 1; i < n.inputs().size(); ++i)
      if (n.input(i) && any_padded(get(n.input(i)))) throw Refuse{"its weights are padded"};
    Info o = fresh(n.output(0)->shape());
    if (!o.axes.empty() && !get(in0).axes.empty()) o.axes[0] = Axis{get(in0).axes[0].factors, {}};
    return one(o);
  }
  if (cat == ir::OpCategory::creation) return one(creation(n, base));
  if (cat == ir::OpCategory::elementwise || cat == ir::OpCategory::comparison ||
      cat == ir::OpCategory::metadata || one_of(base, {"_to_copy", "clone", "alias", "where"}))
    return one(elementwise(n, base));
  throw Refuse{"it has no padding rule"};
}

PaddingVerdict Analysis::run() {
  for (const ir::GraphInput& in : g_.inputs()) {
    Info i = fresh(in.value->shape());
    if (in.role == ir::InputRole::user_input) {
      // The loader pads with zeros, or with copies of real values (unknown, finite).
      for (Axis& a : i.axes)
        if (suffix(a) && padded_.at(outermost_padded(a)) == PadWith::zeros) a.slab = Slab::of(0);
    } else if (auto s = payload_scalar(*in.value)) {
      i.scalar = s;
    }
    info_[in.value] = std::move(i);
  }
  for (const auto& node : g_.nodes()) {
    const ir::Node& n = *node;
    if (n.outputs().empty()) continue;
    bool involved = false;
    for (const ir::Value* v : n.inputs())
      if (v && any_padded(get(v))) involved = true;
    for (const ir::Value* v : n.outputs())
      if (shape_uses_padded(v->shape())) involved = true;
    std::vector<Info> outs;
    try {
      require_no_padded_size_read(n);
    } catch (const Refuse& r) {
      return {false, n.name(), n.op(), n.location().to_string(), r.reason};
    }
    try {
      outs = apply(n);
    } catch (const Refuse& r) {
      if (involved) return {false, n.name(), n.op(), n.location().to_string(), r.reason};
    } catch (const std::exception& e) {
      // An attribute or shape the rules do not expect: not padded, never a failed compile.
      if (involved)
        return {false, n.name(), n.op(), n.location().to_string(),
                std::string("its padding rule does not apply (") + e.what() + ")"};
    }
    for (size_t i = 0; i < n.outputs().size(); ++i) {
      Info o = i < outs.size() ? std::move(outs[i]) : fresh(n.output(i)->shape());
      if (o.axes.size() != n.output(i)->shape().size()) {
        if (involved)
          return {false, n.name(), n.op(), n.location().to_string(),
                  "its result's dims could not be followed"};
        o = fresh(n.output(i)->shape());
      }
      info_[n.output(i)] = std::move(o);
    }
  }
  for (const ir::GraphOutput& o : g_.outputs()) {
    const Info& i = get(o.value);
    for (size_t k = 0; k < i.axes.size(); ++k) {
      const Axis& a = i.axes[k];
      if (!padded(a)) continue;
      const std::string who = "output '" + (o.target.empty() ? o.value->name() : o.target) + "'";
      if (o.role != ir::OutputRole::user_output)
        return {false, "", "", "",
                who + " writes state whose dim " + std::to_string(k) + " " + symbols_of(a) +
                    " pads: the padded rows would be kept"};
      if (!suffix(a))
        return {false, "", "", "",
                who + " dim " + std::to_string(k) + " interleaves the padding of " + symbols_of(a) +
                    ", so it cannot be cut back"};
    }
  }
  return {};
}

}  // namespace

PaddingVerdict check_padding(const ir::Graph& g, const std::map<ir::SymbolId, PadWith>& padded) {
  return Analysis(g, padded).run();
}

}  // namespace neuronc::passes
