// Reductions, normalisations, softmax and attention.
#include <algorithm>

#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

using namespace shape_rules;

// Shape after reducing `dims` (all dims when empty or None).
Shape reduce_shape(const ShapeContext& c, const Shape& in, std::optional<std::vector<int64_t>> dims,
                   bool keepdim) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), false);
  if (!dims || dims->empty()) {
    std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (int64_t d : *dims) {
      if (rank == 0) {
        normalize_dim(c, d, rank);
        continue;
      }
      const int64_t n = normalize_dim(c, d, rank);
      if (reduced[static_cast<size_t>(n)]) c.fail("dim " + std::to_string(d) + " appears twice");
      reduced[static_cast<size_t>(n)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i])
      out.push_back(in[i]);
    else if (keepdim)
      out.push_back(Dim::constant(1));
  }
  return out;
}

DType sum_dtype(const ShapeContext& c, DType in) {
  if (auto d = c.get_opt_dtype("dtype")) return *d;
  // PyTorch sums integers and bools into int64.
  return is_floating(in) ? in : DType::i64;
}

std::vector<TensorType> softmax_rule(const ShapeContext& c) {
  TensorType t = c.input(0);
  normalize_dim(c, c.get_int("dim"), t.rank());
  if (c.attr("half_to_float") && c.get_bool("half_to_float")) t.dtype = DType::f32;
  if (auto d = c.get_opt_dtype("dtype")) t.dtype = *d;
  if (!is_floating(t.dtype))
    c.fail("expected a floating input, found " + std::string(dtype_name(t.dtype)));
  return {t};
}

void check_normalized_shape(const ShapeContext& c, const TensorType& x,
                            const std::vector<Dim>& ns) {
  if (ns.size() > x.shape.size()) {
    c.fail("normalized_shape has " + std::to_string(ns.size()) + " dims but input has rank " +
           std::to_string(x.rank()));
  }
  for (size_t i = 0; i < ns.size(); ++i) {
    const Dim& xd = x.shape[x.shape.size() - ns.size() + i];
    if (!(xd == ns[i])) {
      c.fail("normalized_shape " + shape_str(c, ns) + " does not match the trailing dims of " +
             shape_str(c, x.shape));
    }
  }
}

}  // namespace

void register_reduction_and_norm_ops(OpRegistry& r) {
  const auto R = OpCategory::reduction;
  const auto N = OpCategory::norm;
  const auto S = OpCategory::softmax;
  const auto A = OpCategory::attention;
  const auto D = Placement::device;
  const auto H = Placement::host;

  // Weight norm, v * (g / ||v||) with the norm over every dim but `dim` (passes/decompose.cpp
  // rewrites it into arithmetic that constant folding evaluates on the weights).
  r.add("_weight_norm(Tensor v, Tensor g, int dim=0) -> Tensor", N, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });

  r.add(
      "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        DType dt = c.get_opt_dtype("dtype").value_or(x.dtype);
        if (!is_floating(dt))
          c.fail("mean needs a floating dtype, found " + std::string(dtype_name(dt)));
        return {{dt, reduce_shape(c, x.shape, c.get_opt_ints("dim"), c.get_bool("keepdim"))}};
      });
  // Equal-width histogram (a mixture-of-experts router counts tokens per expert with it); on
  // the host.
  r.add("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", R,
        Placement::host, [](const ShapeContext& c) -> std::vector<TensorType> {
          const int64_t bins = c.get_int("bins");
          if (bins <= 0) c.fail("bins must be positive, found " + std::to_string(bins));
          if (!is_floating(c.input(0).dtype))
            c.fail("histc needs a floating input, found " +
                   std::string(dtype_name(c.input(0).dtype)));
          return {{c.input(0).dtype, {Dim::constant(bins)}}};
        });
  // Rewritten into sums, abs and powers by passes/expand_composites.cpp.
  r.add(
      "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor",
      R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        DType dt = c.get_opt_dtype("dtype").value_or(x.dtype);
        if (!is_floating(dt))
          c.fail("a vector norm needs a floating dtype, found " + std::string(dtype_name(dt)));
        return {{dt, reduce_shape(c, x.shape, c.get_opt_ints("dim"), c.get_bool("keepdim"))}};
      });
  r.add("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", R, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          DType dt = c.get_opt_dtype("dtype").value_or(c.input(0).dtype);
          return {{dt, {}}};
        });
  r.add(
      "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor",
      R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        return {{sum_dtype(c, x.dtype),
                 reduce_shape(c, x.shape, c.get_opt_ints("dim"), c.get_bool("keepdim"))}};
      });
  r.add("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", R, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          return {{sum_dtype(c, c.input(0).dtype), {}}};
        });
  for (const char* s : {"amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
                        "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"}) {
    r.add(s, R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
      const TensorType& x = c.input(0);
      return {{x.dtype, reduce_shape(c, x.shape, c.get_ints("dim"), c.get_bool("keepdim"))}};
    });
  }
  for (const char* s : {"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                        "Tensor indices)",
                        "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                        "Tensor indices)"}) {
    r.add(s, R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
      const TensorType& x = c.input(0);
      Shape s =
          reduce_shape(c, x.shape, std::vector<int64_t>{c.get_int("dim")}, c.get_bool("keepdim"));
      return {{x.dtype, s}, {DType::i64, s}};
    });
  }
  for (const char* s : {"argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
                        "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"}) {
    r.add(s, R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
      const TensorType& x = c.input(0);
      auto dim = c.get_opt_int("dim");
      std::optional<std::vector<int64_t>> dims;
      if (dim) dims = std::vector<int64_t>{*dim};
      return {{DType::i64, reduce_shape(c, x.shape, dims, dim ? c.get_bool("keepdim") : false)}};
    });
  }
  // any / all reduce to bool.
  for (const char* s : {"any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
                        "all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"}) {
    r.add(s, R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
      const TensorType& x = c.input(0);
      return {{DType::boolean, reduce_shape(c, x.shape, std::vector<int64_t>{c.get_int("dim")},
                                            c.get_bool("keepdim"))}};
    });
  }
  for (const char* s : {"any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
                        "all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"}) {
    r.add(s, R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
      const TensorType& x = c.input(0);
      return {
          {DType::boolean, reduce_shape(c, x.shape, c.get_opt_ints("dim"), c.get_bool("keepdim"))}};
    });
  }
  for (const char* s : {"any(Tensor self) -> Tensor", "all(Tensor self) -> Tensor"}) {
    r.add(s, R, D, [](const ShapeContext&) -> std::vector<TensorType> {
      return {{DType::boolean, {}}};
    });
  }
  r.add(
      "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
      "keepdim=False) -> Tensor",
      R, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        return {{x.dtype, reduce_shape(c, x.shape, c.get_opt_ints("dim"), c.get_bool("keepdim"))}};
      });
  // torch.var(x, dim, unbiased) in the training IR: var.correction with correction 1 or 0.
  r.add(
      "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", R, D,
      [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        return {{x.dtype, reduce_shape(c, x.shape, c.get_opt_ints("dim"), c.get_bool("keepdim"))}};
      });
  r.add("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", R, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          normalize_dim(c, c.get_int("dim"), x.rank());
          return {{sum_dtype(c, x.dtype), x.shape}};
        });

  r.add("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", R, Placement::host,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          normalize_dim(c, c.get_int("dim"), x.rank());
          return {{sum_dtype(c, x.dtype), x.shape}};
        });
  // Selection along a dim (a mixture-of-experts router's top-k, an LLM sampler's): on the
  // device along the last dim for k <= 64 (codegen/topk_kernel.cpp: sorted, ties by the lower
  // index, as the host kernel orders them), else on the host.
  r.add(
      "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> "
      "(Tensor values, Tensor indices)",
      R, Placement::device, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = c.input(0);
        const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
        const int64_t k = c.get_int("k");
        if (t.rank() > 0) {
          if (auto n = t.shape[static_cast<size_t>(d)].as_constant(); n && (k < 0 || k > *n))
            c.fail("k " + std::to_string(k) + " is out of range for a dim of size " +
                   std::to_string(*n));
          t.shape[static_cast<size_t>(d)] = Dim::constant(k);
        }
        return {t, {DType::i64, t.shape}};
      });
  auto sort_rule = [](const ShapeContext& c) -> std::vector<TensorType> {
    const TensorType& x = c.input(0);
    normalize_dim(c, c.get_int("dim"), x.rank());
    return {x, {DType::i64, x.shape}};
  };
  r.add("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
        R, Placement::host, sort_rule);
  r.add(
      "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor "
      "values, Tensor indices)",
      R, Placement::host, sort_rule);
  auto argsort_rule = [](const ShapeContext& c) -> std::vector<TensorType> {
    const TensorType& x = c.input(0);
    normalize_dim(c, c.get_int("dim"), x.rank());
    return {{DType::i64, x.shape}};
  };
  r.add("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor", R, Placement::host,
        argsort_rule);
  r.add("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
        R, Placement::host, argsort_rule);

  // Softmax family.
  r.add("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", S, D, softmax_rule);
  r.add("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", S, D, softmax_rule);
  r.add("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", S, D,
        softmax_rule);
  r.add("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", S, D, softmax_rule);

  // Normalisation.
  r.add(
      "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? "
      "bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
      N, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        check_normalized_shape(c, c.input(0), c.get_dims("normalized_shape"));
        return {c.input(0)};
      });
  r.add(
      "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      N, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        const std::vector<Dim> ns = c.get_dims("normalized_shape");
        check_normalized_shape(c, x, ns);
        Shape stat(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(ns.size()));
        stat.resize(x.shape.size(), Dim::constant(1));
        return {x, {DType::f32, stat}, {DType::f32, stat}};
      });
  r.add(
      "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) "
      "-> Tensor",
      N, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        check_normalized_shape(c, c.input(0), c.get_dims("normalized_shape"));
        return {c.input(0)};
      });
  r.add(
      "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float "
      "eps=1e-05, bool cudnn_enabled=True) -> Tensor",
      N, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        if (x.rank() < 2) c.fail("input must have rank >= 2, found " + std::to_string(x.rank()));
        const int64_t g = c.get_int("num_groups");
        const int64_t ch = require_constant(c, x.shape[1], "channels");
        if (g <= 0 || ch % g != 0) {
          c.fail("channels " + std::to_string(ch) + " are not divisible by num_groups " +
                 std::to_string(g));
        }
        return {x};
      });
  r.add(
      "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt "
      "HxW, int group, float eps) -> (Tensor, Tensor, Tensor)",
      N, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& x = c.input(0);
        if (x.rank() < 2) c.fail("input must have rank >= 2, found " + std::to_string(x.rank()));
        Shape stat{x.shape[0], Dim::constant(c.get_int("group"))};
        return {x, {x.dtype, stat}, {x.dtype, stat}};
      });
  auto bn_check = [](const ShapeContext& c) {
    const TensorType& x = c.input(0);
    if (x.rank() < 2) c.fail("input must have rank >= 2, found rank " + std::to_string(x.rank()));
    for (size_t i = 1; i < 5 && i < c.num_inputs(); ++i) {
      if (!c.has_input(i)) continue;
      const TensorType& p = c.input(i);
      if (p.rank() != 1 || !(p.shape[0] == x.shape[1])) {
        c.fail("per-channel operand " + std::to_string(i) + " must be [" +
               c.graph().dim_to_string(x.shape[1]) + "], found " + shape_str(c, p.shape));
      }
    }
  };
  r.add(
      "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? "
      "running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
      N, D, [bn_check](const ShapeContext& c) -> std::vector<TensorType> {
        bn_check(c);
        return {c.input(0)};
      });
  r.add(
      "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor "
      "running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
      N, D, [bn_check](const ShapeContext& c) -> std::vector<TensorType> {
        bn_check(c);
        const TensorType& x = c.input(0);
        return {x, {x.dtype, {Dim::constant(0)}}, {x.dtype, {Dim::constant(0)}}};
      });
  r.add(
      "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor "
      "running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, "
      "Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
      N, H, [bn_check](const ShapeContext& c) -> std::vector<TensorType> {
        bn_check(c);
        const TensorType& x = c.input(0);
        TensorType stat{DType::f32, {x.shape[1]}};
        return {x, stat, stat, c.input(3), c.input(4)};
      });

  // Attention.
  r.add(
      "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? "
      "attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool "
      "enable_gqa=False) -> Tensor",
      A, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& q = c.input(0);
        const TensorType& k = c.input(1);
        const TensorType& v = c.input(2);
        if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank()) {
          c.fail("query, key and value must share a rank >= 2, found " + std::to_string(q.rank()) +
                 ", " + std::to_string(k.rank()) + ", " + std::to_string(v.rank()));
        }
        if (!(q.shape.back() == k.shape.back())) {
          c.fail("query head dim " + c.graph().dim_to_string(q.shape.back()) +
                 " differs from key head dim " + c.graph().dim_to_string(k.shape.back()));
        }
        if (!(k.shape[k.shape.size() - 2] == v.shape[v.shape.size() - 2])) {
          c.fail("key length " + c.graph().dim_to_string(k.shape[k.shape.size() - 2]) +
                 " differs from value length " +
                 c.graph().dim_to_string(v.shape[v.shape.size() - 2]));
        }
        // Batch dims broadcast, as PyTorch's attention does: a key/value dim of 1 serves every
        // query row there (canonicalize expands it).
        for (size_t i = 0; i + 2 < q.shape.size(); ++i) {
          for (const TensorType* t : {&k, &v}) {
            if (!(t->shape[i] == q.shape[i]) && !(t->shape[i] == Dim::constant(1)) &&
                !(i == 1 && q.rank() == 4)) {
              c.fail("key/value batch dim " + std::to_string(i) + " is " +
                     c.graph().dim_to_string(t->shape[i]) + ", the query's " +
                     c.graph().dim_to_string(q.shape[i]) + ": expected equal or 1");
            }
          }
        }
        if (q.rank() == 4 && !(q.shape[1] == k.shape[1]) && !(k.shape[1] == Dim::constant(1))) {
          const bool gqa = c.get_bool("enable_gqa");
          auto hq = q.shape[1].as_constant(), hk = k.shape[1].as_constant();
          if (!gqa || !hq || !hk || *hk == 0 || *hq % *hk != 0) {
            c.fail("query has " + c.graph().dim_to_string(q.shape[1]) + " heads and key " +
                   c.graph().dim_to_string(k.shape[1]) +
                   (gqa ? ": not a multiple" : ": differ without enable_gqa"));
          }
        }
        Shape out(q.shape.begin(), q.shape.end() - 1);
        out.push_back(v.shape.back());
        return {{q.dtype, out}};
      });
  r.add(
      "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float "
      "dropout_p=0.0, bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> "
      "(Tensor output, Tensor logsumexp)",
      A, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& q = c.input(0);
        const TensorType& v = c.input(2);
        if (q.rank() != 4) c.fail("query must have rank 4, found " + std::to_string(q.rank()));
        Shape out(q.shape.begin(), q.shape.end() - 1);
        out.push_back(v.shape.back());
        Shape lse(q.shape.begin(), q.shape.end() - 1);
        return {{q.dtype, out}, {DType::f32, lse}};
      });
}

}  // namespace neuronc::ir
