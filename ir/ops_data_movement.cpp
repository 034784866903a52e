// Data movement: views, reshapes, permutations, slicing, concatenation, splitting, dtype
// conversion and copies.
#include <algorithm>

#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

using namespace shape_rules;

Shape reshape_shape(const ShapeContext& c, const Shape& in, const std::vector<Dim>& req) {
  std::optional<Monomial> total = numel(in);
  if (!total) c.fail("element count of " + shape_str(c, in) + " overflows");
  Monomial known;
  int infer = -1;
  Shape out = req;
  for (size_t i = 0; i < req.size(); ++i) {
    if (req[i].is_constant() && req[i].value() == -1) {
      if (infer >= 0) c.fail("only one dimension can be -1, found " + shape_str(c, req));
      infer = static_cast<int>(i);
      continue;
    }
    if (req[i].is_constant() && req[i].value() < 0) {
      c.fail("invalid size " + std::to_string(req[i].value()) + " in " + shape_str(c, req));
    }
    known *= req[i];
  }
  const Graph& g = c.graph();
  if (infer >= 0) {
    std::optional<Monomial> d = g.expand(*total).divide(g.expand(known));
    if (!d) {
      c.fail("cannot infer -1 in " + shape_str(c, req) + " for input " + shape_str(c, in));
    }
    out[static_cast<size_t>(infer)] = g.dim_of(*d);
  } else if (!(g.expand(known) == g.expand(*total))) {
    c.fail("shape " + shape_str(c, req) + " is invalid for input " + shape_str(c, in) +
           ": element counts differ");
  }
  return out;
}

std::vector<TensorType> view_rule(const ShapeContext& c, const char* arg) {
  const TensorType& x = c.input(0);
  return {{x.dtype, reshape_shape(c, x.shape, c.get_dims(arg))}};
}

// The largest value `d` takes in its symbol's range.
int64_t max_of(const ShapeContext& c, const Dim& d) {
  if (d.is_constant()) return d.value();
  int64_t m = 0;
  const int64_t hi = c.graph().symbol(d.symbol).max;
  return __builtin_mul_overflow(d.coeff, hi, &m) ? INT64_MAX : m;
}

// Slice bounds clamped like Python; returns the result length. A symbolic bound is taken where
// the result is one dim: x[:e] with e ≤ the dim over e's whole range (BERT's
// position_ids[:, :seq]), or e the dim itself.
Dim slice_len(const ShapeContext& c, const Dim& size, std::optional<Dim> start,
              std::optional<Dim> end, int64_t step) {
  if (step <= 0) c.fail("slice step must be positive, found " + std::to_string(step));
  const bool from_zero = !start || *start == Dim::constant(0);
  const bool to_end = !end || (end->is_constant() && end->value() >= INT32_MAX);
  auto describe = [&] {
    return "slicing dim " + c.graph().dim_to_string(size) + " with start " +
           (start ? c.graph().dim_to_string(*start) : "none") + " and end " +
           (end ? c.graph().dim_to_string(*end) : "none") + " and step " + std::to_string(step);
  };
  if (from_zero && to_end && step == 1) return size;
  if ((start && start->is_symbolic()) || (end && end->is_symbolic())) {
    if (from_zero && step == 1 && end && end->is_symbolic() &&
        (*end == size || (size.is_constant() && max_of(c, *end) <= size.value())))
      return *end;
    // x.reshape(-1)[s:] of b*s elements: bounds a*s <= e*s <= b*s of the dim's own symbol.
    if (step == 1 && size.is_symbolic() && start && start->is_symbolic() &&
        start->symbol == size.symbol && start->coeff <= size.coeff) {
      const int64_t e = to_end ? size.coeff
                        : end->is_symbolic() && end->symbol == size.symbol
                            ? std::min(end->coeff, size.coeff)
                            : -1;
      if (e >= 0)
        return e > start->coeff ? Dim::sym(size.symbol, e - start->coeff) : Dim::constant(0);
    }
    c.fail(describe() +
           " is not supported (expected constant bounds, or [:e] with e at most "
           "the dim over e's range)");
  }
  if (size.is_symbolic()) c.fail(describe() + " is not supported (expected a static dim)");
  const int64_t n = size.value();
  int64_t s = start ? start->value() : 0, e = end ? end->value() : n;
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, 0, n);
  if (e <= s) return Dim::constant(0);
  return Dim::constant((e - s + step - 1) / step);
}

std::vector<TensorType> split_parts(const ShapeContext& c, const TensorType& x, int64_t dim,
                                    const std::vector<int64_t>& sizes) {
  std::vector<TensorType> out;
  for (int64_t s : sizes) {
    TensorType t = x;
    t.shape[static_cast<size_t>(dim)] = Dim::constant(s);
    out.push_back(t);
  }
  (void)c;
  return out;
}

}  // namespace

void register_data_movement_ops(OpRegistry& r) {
  const auto M = OpCategory::data_movement;
  const auto Meta = OpCategory::metadata;
  const auto D = Placement::device;

  r.add("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", M, D,
        [](const ShapeContext& c) { return view_rule(c, "size"); });
  r.add("_unsafe_view(Tensor self, SymInt[] size) -> Tensor", M, D,
        [](const ShapeContext& c) { return view_rule(c, "size"); });
  r.add("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", M, D,
        [](const ShapeContext& c) { return view_rule(c, "shape"); });
  r.add("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          if (x.rank() == 0) c.fail("cannot unflatten a rank-0 tensor");
          const int64_t d = normalize_dim(c, c.get_int("dim"), x.rank());
          const Dim& size = x.shape[static_cast<size_t>(d)];
          Shape piece = reshape_shape(c, {size}, c.get_dims("sizes"));
          Shape out(x.shape.begin(), x.shape.begin() + d);
          out.insert(out.end(), piece.begin(), piece.end());
          out.insert(out.end(), x.shape.begin() + d + 1, x.shape.end());
          return {{x.dtype, out}};
        });
  r.add("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          if (x.rank() == 0) return {{x.dtype, {Dim::constant(1)}}};
          const int64_t s = normalize_dim(c, c.get_int("start_dim"), x.rank(), "start_dim");
          const int64_t e = normalize_dim(c, c.get_int("end_dim"), x.rank(), "end_dim");
          if (s > e)
            c.fail("start_dim " + std::to_string(s) + " is after end_dim " + std::to_string(e));
          Shape out(x.shape.begin(), x.shape.begin() + s);
          Monomial m;
          for (int64_t i = s; i <= e; ++i) m *= x.shape[static_cast<size_t>(i)];
          out.push_back(c.graph().dim_of(m));
          out.insert(out.end(), x.shape.begin() + e + 1, x.shape.end());
          return {{x.dtype, out}};
        });
  // A strided view of the input's storage: the host runs it (general strides are not an
  // access pattern the device can always express).
  r.add(
      "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
      "-> Tensor(a)",
      M, Placement::host, [](const ShapeContext& c) -> std::vector<TensorType> {
        const std::vector<Dim> size = c.get_dims("size");
        if (size.size() != c.get_dims("stride").size()) {
          c.fail("size and stride have different ranks");
        }
        return {{c.input(0).dtype, size}};
      });
  r.add("permute(Tensor(a) self, int[] dims) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const std::vector<int64_t> dims = c.get_ints("dims");
          if (static_cast<int64_t>(dims.size()) != x.rank()) {
            c.fail("dims has " + std::to_string(dims.size()) + " entries for rank " +
                   std::to_string(x.rank()));
          }
          std::vector<bool> seen(dims.size(), false);
          Shape out;
          for (int64_t d : dims) {
            const int64_t n = normalize_dim(c, d, x.rank());
            if (seen[static_cast<size_t>(n)]) c.fail("dim " + std::to_string(d) + " repeats");
            seen[static_cast<size_t>(n)] = true;
            out.push_back(x.shape[static_cast<size_t>(n)]);
          }
          return {{x.dtype, out}};
        });
  // movedim(x, source, destination): dim `source` moved to `destination`, the others keeping
  // their order (canonicalize makes it a permute).
  r.add("movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.rank() == 0) return {t};
          const int64_t from = normalize_dim(c, c.get_int("source"), t.rank());
          const int64_t to = normalize_dim(c, c.get_int("destination"), t.rank());
          const Dim d = t.shape[static_cast<size_t>(from)];
          t.shape.erase(t.shape.begin() + from);
          t.shape.insert(t.shape.begin() + to, d);
          return {t};
        });
  r.add("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.rank() == 0) return {t};
          const int64_t a = normalize_dim(c, c.get_int("dim0"), t.rank());
          const int64_t b = normalize_dim(c, c.get_int("dim1"), t.rank());
          std::swap(t.shape[static_cast<size_t>(a)], t.shape[static_cast<size_t>(b)]);
          return {t};
        });
  // x.T: every dim reversed (canonicalize makes it a permute).
  r.add("numpy_T(Tensor(a) self) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          std::reverse(t.shape.begin(), t.shape.end());
          return {t};
        });
  r.add("t(Tensor(a) self) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.rank() > 2) c.fail("expected rank <= 2, found rank " + std::to_string(t.rank()));
          if (t.rank() == 2) std::swap(t.shape[0], t.shape[1]);
          return {t};
        });
  r.add("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank() + 1);
          t.shape.insert(t.shape.begin() + d, Dim::constant(1));
          return {t};
        });
  auto squeeze_dims = [](const ShapeContext& c,
                         std::vector<int64_t> dims) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    std::vector<bool> drop(t.shape.size(), false);
    for (int64_t d : dims) {
      if (t.rank() == 0) break;
      const int64_t n = normalize_dim(c, d, t.rank());
      if (t.shape[static_cast<size_t>(n)] == Dim::constant(1)) drop[static_cast<size_t>(n)] = true;
    }
    Shape out;
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (!drop[i]) out.push_back(t.shape[i]);
    }
    return {{t.dtype, out}};
  };
  r.add("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", M, D,
        [squeeze_dims](const ShapeContext& c) { return squeeze_dims(c, {c.get_int("dim")}); });
  r.add("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", M, D,
        [squeeze_dims](const ShapeContext& c) { return squeeze_dims(c, c.get_ints("dim")); });
  r.add("squeeze(Tensor(a) self) -> Tensor(a)", M, D, [squeeze_dims](const ShapeContext& c) {
    std::vector<int64_t> all;
    for (int64_t i = 0; i < c.input(0).rank(); ++i) all.push_back(i);
    return squeeze_dims(c, all);
  });
  r.add("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const std::vector<Dim> size = c.get_dims("size");
          if (size.size() < x.shape.size()) {
            c.fail("size " + shape_str(c, size) + " has fewer dims than input " +
                   shape_str(c, x.shape));
          }
          Shape out(size.size());
          const size_t lead = size.size() - x.shape.size();
          for (size_t i = 0; i < size.size(); ++i) {
            const Dim& want = size[i];
            if (i < lead) {
              if (want.is_constant() && want.value() < 0) c.fail("new leading dim cannot be -1");
              out[i] = want;
              continue;
            }
            const Dim& have = x.shape[i - lead];
            if (want.is_constant() && want.value() == -1)
              out[i] = have;
            else if (have == want || (have.is_constant() && have.value() == 1))
              out[i] = want;
            else {
              c.fail("cannot expand dim " + std::to_string(i) + " of " + shape_str(c, x.shape) +
                     " to " + shape_str(c, size));
            }
          }
          return {{x.dtype, out}};
        });
  r.add(
      "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt "
      "step=1) -> Tensor(a)",
      M, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = c.input(0);
        const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
        t.shape[static_cast<size_t>(d)] =
            slice_len(c, t.shape[static_cast<size_t>(d)], c.get_opt_dim("start"),
                      c.get_opt_dim("end"), c.get_int("step"));
        return {t};
      });
  // narrow(dim, start, length) is slice(dim, start, start + length); canonicalize rewrites it,
  // and functionalization writes through it as through that slice.
  r.add("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.rank() == 0) c.fail("cannot narrow a rank-0 tensor");
          const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
          const std::optional<Dim> length = c.get_opt_dim("length");
          if (!length) c.fail("expected a length, found none");
          if (auto n = t.shape[static_cast<size_t>(d)].as_constant()) {
            const int64_t start = c.get_int("start"), len = length->value();
            const int64_t s0 = start < 0 ? start + *n : start;
            if (length->is_constant() && (s0 < 0 || len < 0 || s0 + len > *n))
              c.fail("start " + std::to_string(start) + " and length " + std::to_string(len) +
                     " do not fit a dim of size " + std::to_string(*n));
          }
          t.shape[static_cast<size_t>(d)] = *length;
          return {t};
        });
  r.add("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.rank() == 0) c.fail("cannot select from a rank-0 tensor");
          const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
          const int64_t idx = c.get_int("index");
          if (auto n = t.shape[static_cast<size_t>(d)].as_constant();
              n && (idx < -*n || idx >= *n)) {
            c.fail("index " + std::to_string(idx) + " is out of range for dim of size " +
                   std::to_string(*n));
          }
          t.shape.erase(t.shape.begin() + d);
          return {t};
        });
  r.add(
      "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
      "SymInt step=1) -> Tensor",
      M, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = c.input(0);
        const TensorType& src = c.input(1);
        const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
        if (src.rank() != t.rank())
          c.fail("src has rank " + std::to_string(src.rank()) + ", expected " +
                 std::to_string(t.rank()));
        const Dim len = slice_len(c, t.shape[static_cast<size_t>(d)], c.get_opt_dim("start"),
                                  c.get_opt_dim("end"), c.get_int("step"));
        if (!(src.shape[static_cast<size_t>(d)] == len))
          c.fail("src has " + c.graph().dim_to_string(src.shape[static_cast<size_t>(d)]) +
                 " elements along dim " + std::to_string(d) + ", expected the slice's " +
                 c.graph().dim_to_string(len));
        return {t};
      });
  r.add("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  r.add("cat(Tensor[] tensors, int dim=0) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          std::vector<const TensorType*> ts = c.list_inputs();
          // PyTorch skips legacy empty 1-D tensors of shape [0].
          std::vector<const TensorType*> parts;
          for (const TensorType* t : ts) {
            if (!(t->rank() == 1 && t->shape[0] == Dim::constant(0))) parts.push_back(t);
          }
          if (parts.empty()) {
            if (ts.empty()) c.fail("expected a non-empty list of tensors");
            return {*ts[0]};
          }
          TensorType out = *parts[0];
          const int64_t d = normalize_dim(c, c.get_int("dim"), out.rank());
          Monomial sum_const;
          int64_t total = 0;
          Dim sym_total = out.shape[static_cast<size_t>(d)];
          bool symbolic = false;
          for (size_t i = 0; i < parts.size(); ++i) {
            const TensorType& t = *parts[i];
            if (t.rank() != out.rank()) {
              c.fail("tensor " + std::to_string(i) + " has rank " + std::to_string(t.rank()) +
                     ", expected " + std::to_string(out.rank()));
            }
            out.dtype = i ? promote_types(out.dtype, t.dtype) : t.dtype;
            for (int64_t k = 0; k < t.rank(); ++k) {
              if (k == d) continue;
              if (!(t.shape[static_cast<size_t>(k)] == out.shape[static_cast<size_t>(k)])) {
                c.fail("tensor " + std::to_string(i) + " has shape " + shape_str(c, t.shape) +
                       ", expected " + shape_str(c, out.shape) + " outside dim " +
                       std::to_string(d));
              }
            }
            const Dim& cd = t.shape[static_cast<size_t>(d)];
            if (cd.is_constant())
              total += cd.value();
            else
              symbolic = true;
          }
          if (symbolic) {
            // Concatenating k copies of the same symbolic size is k*s.
            bool same = true;
            for (const TensorType* t : parts) same &= t->shape[static_cast<size_t>(d)] == sym_total;
            if (!same)
              c.fail("concatenating different symbolic sizes along dim " + std::to_string(d));
            out.shape[static_cast<size_t>(d)] =
                Dim::sym(sym_total.symbol, sym_total.coeff * static_cast<int64_t>(parts.size()));
          } else {
            out.shape[static_cast<size_t>(d)] = Dim::constant(total);
          }
          (void)sum_const;
          return {out};
        });
  r.add("stack(Tensor[] tensors, int dim=0) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          std::vector<const TensorType*> ts = c.list_inputs();
          if (ts.empty()) c.fail("expected a non-empty list of tensors");
          TensorType out = *ts[0];
          for (size_t i = 1; i < ts.size(); ++i) {
            if (ts[i]->shape != out.shape) {
              c.fail("tensor " + std::to_string(i) + " has shape " + shape_str(c, ts[i]->shape) +
                     ", expected " + shape_str(c, out.shape));
            }
          }
          const int64_t d = normalize_dim(c, c.get_int("dim"), out.rank() + 1);
          out.shape.insert(out.shape.begin() + d, Dim::constant(static_cast<int64_t>(ts.size())));
          return {out};
        });
  r.add("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const int64_t d = normalize_dim(c, c.get_int("dim"), x.rank());
          const int64_t n = require_constant(c, x.shape[static_cast<size_t>(d)], "split dim");
          const int64_t s = c.get_int("split_size");
          if (s <= 0) c.fail("split_size must be positive, found " + std::to_string(s));
          std::vector<int64_t> sizes;
          for (int64_t off = 0; off < n; off += s) sizes.push_back(std::min(s, n - off));
          if (sizes.empty()) sizes.push_back(0);
          return split_parts(c, x, d, sizes);
        });
  r.add("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]", M,
        D, [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const int64_t d = normalize_dim(c, c.get_int("dim"), x.rank());
          const int64_t n = require_constant(c, x.shape[static_cast<size_t>(d)], "split dim");
          std::vector<int64_t> sizes = c.get_ints("split_sizes");
          int64_t sum = 0;
          for (int64_t s : sizes) sum += s;
          if (sum != n) {
            c.fail("split sizes add up to " + std::to_string(sum) + ", expected " +
                   std::to_string(n));
          }
          return split_parts(c, x, d, sizes);
        });
  // tensor_split: each part is a slice (ExpandComposites rewrites them so).
  for (const char* schema :
       {"tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]",
        "tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]"}) {
    r.add(schema, M, D, [](const ShapeContext& c) -> std::vector<TensorType> {
      const TensorType& x = c.input(0);
      const int64_t d = normalize_dim(c, c.get_int("dim"), x.rank());
      const int64_t n = require_constant(c, x.shape[static_cast<size_t>(d)], "split dim");
      std::vector<int64_t> points;
      if (c.attr("sections")) {
        const int64_t k = c.get_int("sections");
        if (k <= 0) c.fail("sections must be positive, found " + std::to_string(k));
        points = tensor_split_section_points(n, k);
      } else {
        points = c.get_ints("indices");
      }
      std::vector<int64_t> sizes;
      for (const auto& [s, e] : tensor_split_ranges(n, points)) sizes.push_back(e - s);
      return split_parts(c, x, d, sizes);
    });
  }
  r.add("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const int64_t d = normalize_dim(c, c.get_int("dim"), x.rank());
          const int64_t n = require_constant(c, x.shape[static_cast<size_t>(d)], "chunk dim");
          const int64_t k = c.get_int("chunks");
          if (k <= 0) c.fail("chunks must be positive, found " + std::to_string(k));
          const int64_t s = (n + k - 1) / k;
          std::vector<int64_t> sizes;
          for (int64_t off = 0; off < n; off += s) sizes.push_back(std::min(s, n - off));
          return split_parts(c, x, d, sizes);
        });
  r.add("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const int64_t d = normalize_dim(c, c.get_int("dim"), x.rank());
          const int64_t n = require_constant(c, x.shape[static_cast<size_t>(d)], "unbind dim");
          TensorType t = x;
          t.shape.erase(t.shape.begin() + d);
          return std::vector<TensorType>(static_cast<size_t>(n), t);
        });

  // Copies, aliases and conversions.
  auto same = [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; };
  for (const char* s : {
           "contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> "
           "Tensor(a)",
           "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
           "alias(Tensor(a) self) -> Tensor(a)",
           "detach(Tensor(a) self) -> Tensor(a)",
           "detach_(Tensor(a!) self) -> Tensor(a!)",
           "lift_fresh_copy(Tensor self) -> Tensor",
       }) {
    r.add(s, M, D, same);
  }
  r.add("dropout(Tensor input, float p, bool train) -> Tensor", Meta, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          if (c.get_bool("train") && c.get_float("p") > 0) {
            c.fail("dropout in training mode is not supported: export the model in eval mode");
          }
          return {c.input(0)};
        });
  r.add("dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", Meta, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          if (c.get_bool("train") && c.get_float("p") > 0) {
            c.fail("dropout in training mode is not supported: export the model in eval mode");
          }
          return {c.input(0)};
        });
  r.add("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", Meta, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          return {x, {DType::boolean, x.shape}};
        });
  auto to_dtype = [](const ShapeContext& c) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    if (auto d = c.get_opt_dtype("dtype")) t.dtype = *d;
    return {t};
  };
  r.add(
      "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)",
      M, D, to_dtype);
  r.add(
      "to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
      "device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)",
      M, D, to_dtype);
  r.add(
      "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool "
      "copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
      M, D, to_dtype);
  r.add(
      "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
      M, D, to_dtype);
  r.add("type_as(Tensor self, Tensor other) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          return {{c.input(1).dtype, c.input(0).shape}};
        });
  r.add("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          if (broadcast(c, c.input(0).shape, c.input(1).shape) != c.input(0).shape) {
            c.fail("src " + shape_str(c, c.input(1).shape) + " does not broadcast to self " +
                   shape_str(c, c.input(0).shape));
          }
          return {c.input(0)};
        });
  r.add(
      "_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, "
      "ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()",
      Meta, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& a = c.input(0);
        if (auto d = c.get_opt_dtype("dtype"); d && *d != a.dtype) {
          c.fail("tensor has dtype " + std::string(dtype_name(a.dtype)) + ", asserted " +
                 std::string(dtype_name(*d)));
        }
        if (!c.is_none("size")) {
          std::vector<Dim> s = c.get_dims("size");
          if (s != a.shape) {
            c.fail("tensor has shape " + shape_str(c, a.shape) + ", asserted " + shape_str(c, s));
          }
        }
        return {};
      });
}

}  // namespace neuronc::ir
