// Tensor creation (arange, full, ones, zeros, *_like, fill) and indexing (embedding, gather,
// index, index_select, pad, roll, repeat, diff, tril/triu).
#include <cmath>

#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

using namespace shape_rules;

double scalar_value(const ShapeContext& c, const char* name) {
  return c.get_float(name);
}

bool scalar_is_float(const ShapeContext& c, const char* name) {
  const Attribute* a = c.attr(name);
  return a && std::holds_alternative<double>(*a);
}

std::vector<TensorType> arange_rule(const ShapeContext& c, bool has_start, bool has_step) {
  // arange(s) and arange(0, s, 1) over a symbolic s (BERT's position ids): s elements.
  if (const auto* e = std::get_if<Dim>(c.attr("end")); e && e->is_symbolic()) {
    const bool from_zero = !has_start || (!scalar_is_float(c, "start") && c.get_int("start") == 0);
    const bool unit = !has_step || (!scalar_is_float(c, "step") && c.get_int("step") == 1);
    if (!from_zero || !unit)
      c.fail("a symbolic end " + c.graph().dim_to_string(*e) +
             " is supported only from 0 with step 1");
    return {{c.get_opt_dtype("dtype").value_or(DType::i64), {*e}}};
  }
  const double start = has_start ? scalar_value(c, "start") : 0.0;
  const double end = scalar_value(c, "end");
  const double step = has_step ? scalar_value(c, "step") : 1.0;
  if (step == 0) c.fail("step must be nonzero");
  const double n = std::ceil((end - start) / step);
  if (!(n >= 0) || n > 1e12) {
    c.fail("range [" + std::to_string(start) + ", " + std::to_string(end) + ") with step " +
           std::to_string(step) + " is invalid");
  }
  DType dt = DType::i64;
  if ((has_start && scalar_is_float(c, "start")) || scalar_is_float(c, "end") ||
      (has_step && scalar_is_float(c, "step"))) {
    dt = DType::f32;
  }
  if (auto d = c.get_opt_dtype("dtype")) dt = *d;
  return {{dt, {Dim::constant(static_cast<int64_t>(n))}}};
}

std::vector<TensorType> full_rule(const ShapeContext& c, DType fallback) {
  DType dt = fallback;
  if (auto d = c.get_opt_dtype("dtype")) dt = *d;
  return {{dt, c.get_dims("size")}};
}

const char* kFactoryKw =
    "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

}  // namespace

void register_creation_and_indexing_ops(OpRegistry& r) {
  const auto Cr = OpCategory::creation;
  const auto I = OpCategory::indexing;
  const auto M = OpCategory::data_movement;
  const auto D = Placement::device;
  const auto H = Placement::host;
  const std::string kw = kFactoryKw;

  r.add("arange(Scalar end, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return arange_rule(c, false, false); });
  r.add("arange.start(Scalar start, Scalar end, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return arange_rule(c, true, false); });
  r.add("arange.start_step(Scalar start, Scalar end, Scalar step=1, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return arange_rule(c, true, true); });
  r.add("full(SymInt[] size, Scalar fill_value, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) {
          return full_rule(c, scalar_is_float(c, "fill_value")                      ? DType::f32
                              : std::holds_alternative<bool>(*c.attr("fill_value")) ? DType::boolean
                                                                                    : DType::i64);
        });
  r.add("ones(SymInt[] size, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return full_rule(c, DType::f32); });
  r.add("zeros(SymInt[] size, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return full_rule(c, DType::f32); });
  r.add("scalar_tensor(Scalar s, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          return {{c.get_opt_dtype("dtype").value_or(DType::f32), {}}};
        });
  for (const char* n : {"new_ones", "new_zeros"}) {
    r.add(std::string(n) + "(Tensor self, SymInt[] size, " + kw + ") -> Tensor", Cr, D,
          [](const ShapeContext& c) { return full_rule(c, c.input(0).dtype); });
  }
  r.add("new_full(Tensor self, SymInt[] size, Scalar fill_value, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return full_rule(c, c.input(0).dtype); });
  auto like = [](const ShapeContext& c) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    if (auto d = c.get_opt_dtype("dtype")) t.dtype = *d;
    return {t};
  };
  r.add("full_like(Tensor self, Scalar fill_value, " + kw +
            ", MemoryFormat? memory_format=None) -> Tensor",
        Cr, D, like);
  for (const char* n : {"zeros_like", "ones_like", "empty_like"}) {
    r.add(std::string(n) + "(Tensor self, " + kw + ", MemoryFormat? memory_format=None) -> Tensor",
          Cr, D, like);
  }
  r.add("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", Cr, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  r.add("fill.Scalar(Tensor self, Scalar value) -> Tensor", Cr, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  // In place only: functionalize makes fill_.Tensor a copy of the 0-dim value, zero_ fill 0.
  r.add("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)", Cr, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          if (c.input(1).rank() != 0)
            c.fail("value must be a 0-dim tensor, found " + shape_str(c, c.input(1).shape));
          return {c.input(0)};
        });
  r.add("zero_(Tensor(a!) self) -> Tensor(a!)", Cr, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  for (const char* n : {"tril", "triu"}) {
    r.add(std::string(n) + "(Tensor self, int diagonal=0) -> Tensor", Cr, D,
          [](const ShapeContext& c) -> std::vector<TensorType> {
            if (c.input(0).rank() < 2)
              c.fail("expected rank >= 2, found " + std::to_string(c.input(0).rank()));
            return {c.input(0)};
          });
  }

  // Indexing.
  r.add(
      "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
      "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
      I, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const TensorType& w = c.input(0);
        const TensorType& idx = c.input(1);
        if (w.rank() != 2) c.fail("weight must be rank 2, found rank " + std::to_string(w.rank()));
        if (!is_integral(idx.dtype)) {
          c.fail("indices must be integers, found " + std::string(dtype_name(idx.dtype)));
        }
        Shape out = idx.shape;
        out.push_back(w.shape[1]);
        return {{w.dtype, out}};
      });
  r.add("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", I, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const TensorType& idx = c.input(1);
          normalize_dim(c, c.get_int("dim"), x.rank());
          if (idx.rank() != x.rank()) {
            c.fail("index rank " + std::to_string(idx.rank()) + " differs from input rank " +
                   std::to_string(x.rank()));
          }
          return {{x.dtype, idx.shape}};
        });
  r.add("index_select(Tensor self, int dim, Tensor index) -> Tensor", I, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          const TensorType& idx = c.input(1);
          if (idx.rank() > 1)
            c.fail("index must be rank 0 or 1, found " + std::to_string(idx.rank()));
          const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
          if (t.rank() > 0)
            t.shape[static_cast<size_t>(d)] = idx.rank() ? idx.shape[0] : Dim::constant(1);
          return {t};
        });
  r.add("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", I, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          std::vector<const TensorType*> idx = c.list_inputs();
          if (static_cast<int64_t>(idx.size()) > x.rank()) {
            c.fail("too many indices: " + std::to_string(idx.size()) + " for rank " +
                   std::to_string(x.rank()));
          }
          // Advanced indexing: broadcast the index tensors; if they are adjacent the result
          // dims replace the indexed dims in place, otherwise they go first.
          Shape bshape;
          bool first = true;
          int first_pos = -1, last_pos = -1;
          for (size_t i = 0; i < idx.size(); ++i) {
            if (!idx[i]) continue;
            if (idx[i]->dtype == DType::boolean) c.fail("boolean mask indices are not supported");
            if (!is_integral(idx[i]->dtype)) {
              c.fail("index " + std::to_string(i) + " must be an integer tensor, found " +
                     std::string(dtype_name(idx[i]->dtype)));
            }
            bshape = first ? idx[i]->shape : broadcast(c, bshape, idx[i]->shape);
            first = false;
            if (first_pos < 0) first_pos = static_cast<int>(i);
            last_pos = static_cast<int>(i);
          }
          if (first) c.fail("expected at least one index tensor");
          bool adjacent = true;
          for (int i = first_pos; i <= last_pos; ++i)
            adjacent &= idx[static_cast<size_t>(i)] != nullptr;
          Shape out;
          if (adjacent) {
            out.insert(out.end(), x.shape.begin(), x.shape.begin() + first_pos);
            out.insert(out.end(), bshape.begin(), bshape.end());
            out.insert(out.end(), x.shape.begin() + last_pos + 1, x.shape.end());
          } else {
            out = bshape;
            for (size_t i = 0; i < x.shape.size(); ++i) {
              if (i >= idx.size() || !idx[i]) out.push_back(x.shape[i]);
            }
          }
          return {{x.dtype, out}};
        });
  auto pad_rule = [](const ShapeContext& c, const char* arg) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    std::vector<int64_t> pad = c.get_ints(arg);
    if (pad.size() % 2 != 0 || static_cast<int64_t>(pad.size() / 2) > t.rank()) {
      c.fail("pad has " + std::to_string(pad.size()) + " entries for rank " +
             std::to_string(t.rank()) + ": expected an even count of at most twice the rank");
    }
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      Dim& d = t.shape[t.shape.size() - 1 - i];
      const int64_t n = require_constant(c, d, "padded dim") + pad[2 * i] + pad[2 * i + 1];
      if (n < 0)
        c.fail("padding makes dim " + std::to_string(t.shape.size() - 1 - i) + " negative");
      d = Dim::constant(n);
    }
    return {t};
  };
  r.add("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", M, D,
        [pad_rule](const ShapeContext& c) { return pad_rule(c, "pad"); });
  r.add("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", M, D,
        [pad_rule](const ShapeContext& c) { return pad_rule(c, "pad"); });
  // Older core-ATen spellings of the reflect / replicate modes (passes/decompose.cpp).
  for (const char* mode : {"reflection", "replication"}) {
    for (int n = 1; n <= 3; ++n) {
      r.add(std::string(mode) + "_pad" + std::to_string(n) + "d(Tensor self, SymInt[" +
                std::to_string(2 * n) + "] padding) -> Tensor",
            M, D, [pad_rule](const ShapeContext& c) { return pad_rule(c, "padding"); });
    }
  }
  r.add(
      "empty.memory_format(SymInt[] size, " + kw + ", MemoryFormat? memory_format=None) -> Tensor",
      Cr, D, [](const ShapeContext& c) { return full_rule(c, DType::f32); });
  r.add("empty_permuted(SymInt[] size, int[] physical_layout, " + kw + ") -> Tensor", Cr, D,
        [](const ShapeContext& c) { return full_rule(c, DType::f32); });
  r.add("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const std::vector<int64_t> shifts = c.get_ints("shifts");
          const std::vector<int64_t> dims = c.get_ints("dims");
          if (!dims.empty() && dims.size() != shifts.size()) {
            c.fail("shifts has " + std::to_string(shifts.size()) + " entries but dims has " +
                   std::to_string(dims.size()));
          }
          for (int64_t d : dims) normalize_dim(c, d, c.input(0).rank());
          return {c.input(0)};
        });
  // A reversed view the device's access patterns cannot express (negative strides): the host
  // copies it.
  r.add("flip(Tensor self, int[] dims) -> Tensor", M, Placement::host,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          for (int64_t d : c.get_ints("dims")) normalize_dim(c, d, c.input(0).rank());
          return {c.input(0)};
        });
  // Each element repeated `repeats` times along dim (flattened when dim is None); rewritten by
  // passes/expand_composites.cpp.
  r.add(
      "repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? "
      "output_size=None) -> Tensor",
      M, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = c.input(0);
        const int64_t k = c.get_int("repeats");
        if (k < 0) c.fail("repeats must be non-negative, found " + std::to_string(k));
        if (c.is_none("dim")) {
          const std::optional<Monomial> n = numel(t.shape);
          if (!n) c.fail("element count overflows");
          Monomial m = *n;
          m.coeff *= k;
          return {{t.dtype, {c.graph().dim_of(m)}}};
        }
        const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
        Dim& x = t.shape[static_cast<size_t>(d)];
        x = x.is_constant() ? Dim::constant(x.value() * k) : Dim::sym(x.symbol, x.coeff * k);
        return {t};
      });
  r.add("repeat(Tensor self, SymInt[] repeats) -> Tensor", M, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& x = c.input(0);
          const std::vector<int64_t> rep = c.get_ints("repeats");
          if (static_cast<int64_t>(rep.size()) < x.rank()) {
            c.fail("repeats has " + std::to_string(rep.size()) + " entries for rank " +
                   std::to_string(x.rank()));
          }
          Shape out;
          const size_t lead = rep.size() - x.shape.size();
          for (size_t i = 0; i < rep.size(); ++i) {
            if (i < lead) {
              out.push_back(Dim::constant(rep[i]));
            } else {
              const Dim& d = x.shape[i - lead];
              out.push_back(d.is_constant() ? Dim::constant(d.value() * rep[i])
                                            : Dim::sym(d.symbol, d.coeff * rep[i]));
            }
          }
          return {{x.dtype, out}};
        });
  r.add(
      "diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor",
      M, H, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = c.input(0);
        if (t.rank() == 0) c.fail("expected rank >= 1");
        const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
        int64_t len = require_constant(c, t.shape[static_cast<size_t>(d)], "diff dim");
        if (c.has_input(1))
          len += require_constant(c, c.input(1).shape[static_cast<size_t>(d)], "prepend dim");
        if (c.has_input(2))
          len += require_constant(c, c.input(2).shape[static_cast<size_t>(d)], "append dim");
        const int64_t n = c.get_int("n");
        if (n < 0) c.fail("n must be non-negative, found " + std::to_string(n));
        t.shape[static_cast<size_t>(d)] = Dim::constant(std::max<int64_t>(len - n, 0));
        if (t.dtype == DType::boolean) t.dtype = DType::boolean;
        return {t};
      });
  // FFTs have no NeuronCore lowering: they run on the host and produce complex64.
  r.add("fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor", M, H,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.rank() == 0) c.fail("expected rank >= 1");
          const int64_t d = normalize_dim(c, c.get_int("dim"), t.rank());
          const int64_t n = c.get_opt_int("n").value_or(
              require_constant(c, t.shape[static_cast<size_t>(d)], "transformed dim"));
          if (n <= 0) c.fail("n must be positive, found " + std::to_string(n));
          t.shape[static_cast<size_t>(d)] = Dim::constant(n / 2 + 1);
          t.dtype = DType::c64;
          return {t};
        });
  r.add("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", M, H,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          const std::vector<int64_t> dims = c.get_ints("dim");
          if (dims.empty()) c.fail("expected at least one dim");
          if (c.get_bool("onesided")) {
            const int64_t d = normalize_dim(c, dims.back(), t.rank());
            const int64_t n =
                require_constant(c, t.shape[static_cast<size_t>(d)], "transformed dim");
            t.shape[static_cast<size_t>(d)] = Dim::constant(n / 2 + 1);
          }
          t.dtype = DType::c64;
          return {t};
        });
  // Full complex transforms (FNet's token mixing) and the real views of their results.
  r.add("fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor", M,
        H, [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          t.dtype = DType::c64;
          return {t};
        });
  r.add("_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor", M, H,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.dtype != DType::c64) c.fail("expected a complex64 input");
          return {t};
        });
  r.add(
      "im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) "
      "-> Tensor",
      M, H, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = c.input(0);
        const int64_t r = t.rank();
        if (r != 3 && r != 4) c.fail("expected a 3-D or 4-D input");
        const auto k = c.get_ints("kernel_size"), dl = c.get_ints("dilation"),
                   pd = c.get_ints("padding"), st = c.get_ints("stride");
        if (k.size() != 2 || dl.size() != 2 || pd.size() != 2 || st.size() != 2)
          c.fail("kernel_size, dilation, padding and stride take 2 ints");
        const int64_t C = require_constant(c, t.shape[r - 3], "channels");
        const int64_t H = require_constant(c, t.shape[r - 2], "height");
        const int64_t W = require_constant(c, t.shape[r - 1], "width");
        const int64_t oh = (H + 2 * pd[0] - (dl[0] * (k[0] - 1) + 1)) / st[0] + 1;
        const int64_t ow = (W + 2 * pd[1] - (dl[1] * (k[1] - 1) + 1)) / st[1] + 1;
        if (oh < 1 || ow < 1 || st[0] < 1 || st[1] < 1) c.fail("the window does not fit");
        Shape s = {Dim::constant(C * k[0] * k[1]), Dim::constant(oh * ow)};
        if (r == 4) s.insert(s.begin(), t.shape[0]);
        t.shape = s;
        return {t};
      });
  r.add("real(Tensor self) -> Tensor", M, H, [](const ShapeContext& c) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    if (t.dtype != DType::c64) c.fail("expected a complex64 input");
    t.dtype = DType::f32;
    return {t};
  });
  r.add("view_as_real(Tensor self) -> Tensor", M, H,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (t.dtype != DType::c64) c.fail("expected a complex64 input");
          t.dtype = DType::f32;
          t.shape.push_back(Dim::constant(2));
          return {t};
        });
  r.add("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
        I, H, [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  r.add(
      "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
      "Tensor(a!)",
      I, H, [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  // On the device: an indirect scatter of the source rows (codegen/embedding_kernel.cpp).
  r.add("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", I, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
  // A static KV cache's update (transformers' StaticCache): functionalization makes it
  // index_copy on the cache buffer, written back as a buffer mutation.
  r.add("index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)", I, H,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {c.input(0)}; });
}

}  // namespace neuronc::ir
