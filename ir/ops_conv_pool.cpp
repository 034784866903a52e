// Convolution and pooling operators (1-D and 2-D).
#include <cmath>

#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

using namespace shape_rules;

// Expands an int list of length 1 to n entries (PyTorch's "int[2] padding=0" convention).
std::vector<int64_t> expand_to(const ShapeContext& c, std::vector<int64_t> v, size_t n,
                               const char* what) {
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n) {
    c.fail(std::string(what) + " has " + std::to_string(v.size()) + " entries, expected " +
           std::to_string(n));
  }
  return v;
}

TensorType conv_type(const ShapeContext& c, size_t spatial, bool transposed) {
  const TensorType& x = c.input(0);
  const TensorType& w = c.input(1);
  const int64_t rank = static_cast<int64_t>(spatial) + 2;
  const bool batched = x.rank() == rank;
  if (!batched && x.rank() != rank - 1) {
    c.fail("input must have rank " + std::to_string(rank) + " (or " + std::to_string(rank - 1) +
           " unbatched), found rank " + std::to_string(x.rank()));
  }
  if (w.rank() != rank) {
    c.fail("weight must have rank " + std::to_string(rank) + ", found rank " +
           std::to_string(w.rank()));
  }
  if (x.dtype != w.dtype) {
    c.fail("input dtype " + std::string(dtype_name(x.dtype)) + " differs from weight dtype " +
           std::string(dtype_name(w.dtype)));
  }
  const int64_t groups = c.get_int("groups");
  if (groups <= 0) c.fail("groups must be positive, found " + std::to_string(groups));
  std::vector<int64_t> stride = expand_to(c, c.get_ints("stride"), spatial, "stride");
  std::vector<int64_t> dilation = expand_to(c, c.get_ints("dilation"), spatial, "dilation");
  std::vector<int64_t> padding;
  const Attribute* pad_attr = c.attr("padding");
  bool same = false;
  if (pad_attr && std::holds_alternative<std::string>(*pad_attr)) {
    const std::string& mode = std::get<std::string>(*pad_attr);
    if (mode == "same")
      same = true;
    else if (mode == "valid")
      padding.assign(spatial, 0);
    else
      c.fail("padding '" + mode + "': expected 'same' or 'valid'");
  } else {
    padding = expand_to(c, c.get_ints("padding"), spatial, "padding");
  }
  const size_t off = batched ? 2 : 1;
  const Dim cin = x.shape[off - 1];
  const int64_t cin_v = require_constant(c, cin, "input channels");
  Shape out;
  if (batched) out.push_back(x.shape[0]);
  int64_t cout = 0;
  if (!transposed) {
    const int64_t w_in = require_constant(c, w.shape[1], "weight input channels");
    if (w_in * groups != cin_v) {
      c.fail("input has " + std::to_string(cin_v) + " channels, weight expects " +
             std::to_string(w_in) + " x " + std::to_string(groups) + " groups");
    }
    cout = require_constant(c, w.shape[0], "weight output channels");
  } else {
    if (require_constant(c, w.shape[0], "weight input channels") != cin_v) {
      c.fail("input has " + std::to_string(cin_v) + " channels, transposed weight expects " +
             c.graph().dim_to_string(w.shape[0]));
    }
    cout = require_constant(c, w.shape[1], "weight output channels") * groups;
  }
  out.push_back(Dim::constant(cout));
  std::vector<int64_t> out_pad(spatial, 0);
  if (transposed) out_pad = expand_to(c, c.get_ints("output_padding"), spatial, "output_padding");
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = require_constant(c, x.shape[off + i], "spatial dim");
    const int64_t k = require_constant(c, w.shape[2 + i], "kernel size");
    if (same) {
      out.push_back(Dim::constant(in));
      continue;
    }
    int64_t o;
    if (transposed) {
      o = (in - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + out_pad[i] + 1;
    } else {
      o = window_out(in, k, stride[i], padding[i], dilation[i], false);
    }
    if (o <= 0) {
      c.fail("output spatial size is " + std::to_string(o) + " for input " + std::to_string(in) +
             ", kernel " + std::to_string(k) + ", padding " + std::to_string(padding[i]));
    }
    out.push_back(Dim::constant(o));
  }
  if (c.has_input(2)) {
    const TensorType& b = c.input(2);
    if (b.rank() != 1 || !(b.shape[0] == Dim::constant(cout))) {
      c.fail("bias must be [" + std::to_string(cout) + "], found " + shape_str(c, b.shape));
    }
  }
  return {x.dtype, out};
}

TensorType pool_type(const ShapeContext& c, size_t spatial, bool has_dilation) {
  const TensorType& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(spatial) + 2;
  if (x.rank() != rank && x.rank() != rank - 1) {
    c.fail("input must have rank " + std::to_string(rank) + " or " + std::to_string(rank - 1) +
           ", found rank " + std::to_string(x.rank()));
  }
  std::vector<int64_t> k = expand_to(c, c.get_ints("kernel_size"), spatial, "kernel_size");
  std::vector<int64_t> s = c.get_ints("stride");
  if (s.empty()) s = k;
  s = expand_to(c, s, spatial, "stride");
  std::vector<int64_t> p = expand_to(c, c.get_ints("padding"), spatial, "padding");
  std::vector<int64_t> d(spatial, 1);
  if (has_dilation) d = expand_to(c, c.get_ints("dilation"), spatial, "dilation");
  const bool ceil_mode = c.get_bool("ceil_mode");
  Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(spatial));
  for (size_t i = 0; i < spatial; ++i) {
    if (2 * p[i] > k[i]) {
      c.fail("padding " + std::to_string(p[i]) + " exceeds half the kernel size " +
             std::to_string(k[i]));
    }
    const int64_t in = require_constant(c, x.shape[x.shape.size() - spatial + i], "spatial dim");
    const int64_t o = window_out(in, k[i], s[i], p[i], d[i], ceil_mode);
    if (o <= 0) c.fail("output spatial size is " + std::to_string(o));
    out.push_back(Dim::constant(o));
  }
  return {x.dtype, out};
}

TensorType adaptive_type(const ShapeContext& c, size_t spatial) {
  const TensorType& x = c.input(0);
  if (x.rank() != static_cast<int64_t>(spatial) + 2 &&
      x.rank() != static_cast<int64_t>(spatial) + 1) {
    c.fail("input must have rank " + std::to_string(spatial + 2) + " or " +
           std::to_string(spatial + 1) + ", found rank " + std::to_string(x.rank()));
  }
  std::vector<int64_t> o = expand_to(c, c.get_ints("output_size"), spatial, "output_size");
  Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(spatial));
  for (int64_t v : o) {
    if (v <= 0) c.fail("output_size entries must be positive, found " + std::to_string(v));
    out.push_back(Dim::constant(v));
  }
  return {x.dtype, out};
}

}  // namespace

void register_conv_and_pool_ops(OpRegistry& r) {
  const auto C = OpCategory::conv;
  const auto P = OpCategory::pooling;
  const auto D = Placement::device;
  // NCHW upsampling (rewritten by passes/expand_composites.cpp): output_size, or
  // floor(in * scale_factor) per spatial dim.
  auto upsample_rule = [](const ShapeContext& c) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    if (t.rank() != 4) c.fail("expected an NCHW input, found rank " + std::to_string(t.rank()));
    if (!c.is_none("output_size")) {
      const std::vector<int64_t> size = c.get_ints("output_size");
      if (size.size() != 2) c.fail("output_size must have 2 entries");
      for (int i = 0; i < 2; ++i) t.shape[2 + i] = Dim::constant(size[i]);
      return {t};
    }
    const Attribute* f = c.attr("scale_factors");
    const auto* v = f ? std::get_if<std::vector<double>>(f) : nullptr;
    if (!v || v->size() != 2) c.fail("expected output_size or two scale_factors");
    for (int i = 0; i < 2; ++i) {
      const int64_t in = require_constant(c, t.shape[2 + i], "spatial dim");
      t.shape[2 + i] = Dim::constant(static_cast<int64_t>(std::floor(in * (*v)[i])));
    }
    return {t};
  };
  r.add(
      "upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> "
      "Tensor",
      P, D, upsample_rule);
  r.add(
      "upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
      "float[]? scale_factors) -> Tensor",
      P, D, upsample_rule);
  r.add(
      "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] "
      "padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
      C, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {conv_type(c, 1, false)}; });
  r.add(
      "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, str "
      "padding=\"valid\", SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
      C, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {conv_type(c, 1, false)}; });
  r.add(
      "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] "
      "padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
      C, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {conv_type(c, 2, false)}; });
  r.add(
      "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, str "
      "padding=\"valid\", SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
      C, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {conv_type(c, 2, false)}; });
  // 3-D (video): no NeuronCore lowering yet, so codegen refuses it and it runs on the host.
  r.add(
      "conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] "
      "padding=0, SymInt[3] dilation=1, SymInt groups=1) -> Tensor",
      C, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {conv_type(c, 3, false)}; });
  r.add(
      "conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, str "
      "padding=\"valid\", SymInt[3] dilation=1, SymInt groups=1) -> Tensor",
      C, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {conv_type(c, 3, false)}; });
  r.add(
      "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
      C, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        const int64_t spatial = c.input(1).rank() - 2;
        if (spatial < 1 || spatial > 3) {
          c.fail("weight rank " + std::to_string(c.input(1).rank()) + ": expected 3 to 5");
        }
        return {conv_type(c, static_cast<size_t>(spatial), c.get_bool("transposed"))};
      });

  r.add(
      "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] "
      "dilation=1, bool ceil_mode=False) -> Tensor",
      P, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {pool_type(c, 2, true)}; });
  r.add(
      "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
      "padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
      P, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = pool_type(c, 2, true);
        return {t, {DType::i64, t.shape}};
      });
  // 3-D max pooling (video models): ExpandComposites rewrites it into two 2-D pools.
  r.add(
      "max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] "
      "dilation=1, bool ceil_mode=False) -> Tensor",
      P, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {pool_type(c, 3, true)}; });
  r.add(
      "max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] "
      "padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
      P, D, [](const ShapeContext& c) -> std::vector<TensorType> {
        TensorType t = pool_type(c, 3, true);
        return {t, {DType::i64, t.shape}};
      });
  // 3-D average pooling (S3D's head): ExpandComposites rewrites it into two 2-D pools.
  r.add(
      "avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool "
      "ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
      P, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {pool_type(c, 3, false)}; });
  r.add(
      "max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] "
      "dilation=1, bool ceil_mode=False) -> Tensor",
      P, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {pool_type(c, 1, true)}; });
  r.add(
      "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool "
      "ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
      P, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {pool_type(c, 2, false)}; });
  r.add(
      "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool "
      "ceil_mode=False, bool count_include_pad=True) -> Tensor",
      P, D,
      [](const ShapeContext& c) -> std::vector<TensorType> { return {pool_type(c, 1, false)}; });
  r.add("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", P, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {adaptive_type(c, 2)}; });
  r.add("_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", P, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {adaptive_type(c, 2)}; });
  r.add("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", P, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {adaptive_type(c, 1)}; });
  // Video heads; passes/expand_composites.cpp rewrites even windows into a view and a mean.
  r.add("adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", P, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {adaptive_type(c, 3)}; });
  r.add("_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", P, D,
        [](const ShapeContext& c) -> std::vector<TensorType> { return {adaptive_type(c, 3)}; });
}

}  // namespace neuronc::ir
