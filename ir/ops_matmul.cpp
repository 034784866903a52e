// Matmul-family operators: linear, addmm, mm, bmm, baddbmm, matmul.
#include <map>

#include "ir/einsum.h"
#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

using namespace shape_rules;

void check_same(const ShapeContext& c, const Dim& a, const Dim& b, const std::string& what) {
  if (a == b) return;
  c.fail(what + " mismatch: " + c.graph().dim_to_string(a) + " vs " + c.graph().dim_to_string(b));
}

DType result_dtype(const ShapeContext& c, const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype) {
    c.fail(std::string("operand dtypes differ: ") + std::string(dtype_name(a.dtype)) + " vs " +
           std::string(dtype_name(b.dtype)));
  }
  return a.dtype;
}

// torch.matmul semantics for ranks >= 1.
TensorType matmul_type(const ShapeContext& c, const TensorType& a, const TensorType& b) {
  const DType dt = result_dtype(c, a, b);
  if (a.rank() == 0 || b.rank() == 0) c.fail("both operands must have rank >= 1");
  if (a.rank() == 1 && b.rank() == 1) {
    check_same(c, a.shape[0], b.shape[0], "contraction dim");
    return {dt, {}};
  }
  if (a.rank() == 2 && b.rank() == 1) {
    check_same(c, a.shape[1], b.shape[0], "contraction dim");
    return {dt, {a.shape[0]}};
  }
  if (a.rank() == 1 && b.rank() == 2) {
    check_same(c, a.shape[0], b.shape[0], "contraction dim");
    return {dt, {b.shape[1]}};
  }
  // Batched: broadcast batch dims; vectors get a temporary unit dim.
  Shape sa = a.shape, sb = b.shape;
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Dim::constant(1));
  if (b_vec) sb.push_back(Dim::constant(1));
  check_same(c, sa.back(), sb[sb.size() - 2], "contraction dim");
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape out = broadcast(c, ba, bb);
  if (!a_vec) out.push_back(sa[sa.size() - 2]);
  if (!b_vec) out.push_back(sb.back());
  return {dt, out};
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  const auto M = OpCategory::matmul;
  const auto D = Placement::device;
  // transformers' mixture-of-experts fallback (integrations/moe.py): input rows sorted by
  // expert, rows [offs[e-1], offs[e]) times weight[e]; the offsets are data-dependent, so the
  // host runs it.
  r.add("transformers::grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor", M,
        Placement::host, [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType &x = c.input(0), &w = c.input(1), &offs = c.input(2);
          if (x.rank() != 2 || w.rank() != 3 || offs.rank() != 1)
            c.fail("expected input [S, K], weight [E, K, N] and offs [E], found " +
                   shape_str(c, x.shape) + ", " + shape_str(c, w.shape) + " and " +
                   shape_str(c, offs.shape));
          check_same(c, x.shape[1], w.shape[1], "contraction dim");
          check_same(c, offs.shape[0], w.shape[0], "expert count");
          return {{x.dtype, {x.shape[0], w.shape[2]}}};
        });
  // Rewritten into permutes, sums and bmm by passes/expand_composites.cpp.
  r.add("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const std::vector<const TensorType*> xs = c.list_inputs();
          const auto* eq = std::get_if<std::string>(c.attr("equation"));
          if (!eq) c.fail("argument 'equation': expected a string");
          const EinsumEquation e = parse_einsum(*eq, xs.size());
          std::map<char, Dim> size;
          for (size_t i = 0; i < xs.size(); ++i) {
            if (!xs[i]) c.fail("tensors holds None");
            if (static_cast<int64_t>(e.operands[i].size()) != xs[i]->rank())
              c.fail("operand " + std::to_string(i) + " '" + e.operands[i] + "' names " +
                     std::to_string(e.operands[i].size()) + " dims, found rank " +
                     std::to_string(xs[i]->rank()));
            if (xs[i]->dtype != xs[0]->dtype) c.fail("operands have different dtypes");
            for (size_t k = 0; k < e.operands[i].size(); ++k) {
              const Dim& d = xs[i]->shape[k];
              auto [it, fresh] = size.emplace(e.operands[i][k], d);
              if (!fresh && !(it->second == d))
                c.fail(std::string("letter '") + e.operands[i][k] + "' is " +
                       c.graph().dim_to_string(it->second) + " in one operand and " +
                       c.graph().dim_to_string(d) + " in another");
            }
          }
          Shape out;
          for (char l : e.output) out.push_back(size.at(l));
          return {{xs.at(0)->dtype, out}};
        });
  r.add("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const TensorType& w = c.input(1);
          if (w.rank() != 2 && w.rank() != 1) {
            c.fail("weight must have rank 1 or 2, found rank " + std::to_string(w.rank()));
          }
          if (x.rank() < 1) c.fail("input must have rank >= 1");
          const Dim in_features = w.shape.back();
          check_same(c, x.shape.back(), in_features, "in_features");
          result_dtype(c, x, w);
          Shape out(x.shape.begin(), x.shape.end() - 1);
          if (w.rank() == 2) out.push_back(w.shape[0]);
          if (c.has_input(2)) {
            Shape b = c.input(2).shape;
            out = broadcast(c, out, b);
          }
          return {{x.dtype, out}};
        });
  r.add("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        M, D, [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& a = c.input(1);
          const TensorType& b = c.input(2);
          if (a.rank() != 2 || b.rank() != 2) {
            c.fail("mat1 and mat2 must be rank 2, found ranks " + std::to_string(a.rank()) +
                   " and " + std::to_string(b.rank()));
          }
          check_same(c, a.shape[1], b.shape[0], "contraction dim");
          Shape out{a.shape[0], b.shape[1]};
          Shape bc = broadcast(c, c.input(0).shape, out);
          if (bc != out) {
            c.fail("self " + shape_str(c, c.input(0).shape) + " does not broadcast to " +
                   shape_str(c, out));
          }
          return {{result_dtype(c, a, b), out}};
        });
  r.add("mm(Tensor self, Tensor mat2) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& a = c.input(0);
          const TensorType& b = c.input(1);
          if (a.rank() != 2 || b.rank() != 2) {
            c.fail("operands must be rank 2, found ranks " + std::to_string(a.rank()) + " and " +
                   std::to_string(b.rank()));
          }
          check_same(c, a.shape[1], b.shape[0], "contraction dim");
          return {{result_dtype(c, a, b), {a.shape[0], b.shape[1]}}};
        });
  auto bmm_rule = [](const ShapeContext& c, size_t ia, size_t ib) -> TensorType {
    const TensorType& a = c.input(ia);
    const TensorType& b = c.input(ib);
    if (a.rank() != 3 || b.rank() != 3) {
      c.fail("operands must be rank 3, found ranks " + std::to_string(a.rank()) + " and " +
             std::to_string(b.rank()));
    }
    check_same(c, a.shape[0], b.shape[0], "batch dim");
    check_same(c, a.shape[2], b.shape[1], "contraction dim");
    return {result_dtype(c, a, b), {a.shape[0], a.shape[1], b.shape[2]}};
  };
  r.add(
      "bmm(Tensor self, Tensor mat2) -> Tensor", M, D,
      [bmm_rule](const ShapeContext& c) -> std::vector<TensorType> { return {bmm_rule(c, 0, 1)}; });
  r.add(
      "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      M, D, [bmm_rule](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = bmm_rule(c, 1, 2);
        if (broadcast(c, c.input(0).shape, t.shape) != t.shape) {
          c.fail("self " + shape_str(c, c.input(0).shape) + " does not broadcast to " +
                 shape_str(c, t.shape));
        }
        return {t};
      });
  r.add("matmul(Tensor self, Tensor other) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          return {matmul_type(c, c.input(0), c.input(1))};
        });
}

}  // namespace neuronc::ir
