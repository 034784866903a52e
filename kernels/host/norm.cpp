// Host normalisation kernels: _native_batch_norm_legit_functional (training statistics and
// functional running-stat updates), _native_batch_norm_legit_no_training, batch_norm (both
// modes; the training IR's in-place running-stat update is not visible to later reads because
// host kernels do not write their operands: a graph that reads the statistics again is
// exported functionally), native_layer_norm, layer_norm, rms_norm, group_norm,
// native_group_norm. Statistics accumulate in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

Status check_channel_vec(const HostOpContext& c, const HostTensor* t, const char* name,
                         int64_t ch) {
  if (t && (t->rank() != 1 || t->shape[0] != ch))
    return c.error(std::string(name) + " shape is " + shape_str(t->shape) + ", expected [" +
                   std::to_string(ch) + "]");
  return Status::ok();
}

// _native_batch_norm_legit_functional(input, weight?, bias?, running_mean, running_var,
//   bool training, float momentum, float eps) -> (out, save_mean, save_invstd,
//   running_mean_out, running_var_out)
// _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
//   float momentum, float eps) -> (out, save_mean, save_invstd)
// batch_norm(input, weight?, bias?, running_mean?, running_var?, bool training,
//   float momentum, float eps, bool cudnn_enabled) -> out
Status batch_norm(const HostOpContext& c) {
  const bool functional = c.op_name() == "aten._native_batch_norm_legit_functional.default";
  const bool plain = c.op_name() == "aten.batch_norm.default";
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(functional ? 5 : plain ? 1 : 3));
  if (x->rank() < 2) return c.error("input must have rank >= 2, found " + shape_str(x->shape));
  if (!dtype_is_float(x->dtype))
    return c.error("input is " + dtype_str(x->dtype) + ", expected a float type");
  const int64_t ch = x->shape[1];
  const HostTensor* w = c.tensor("weight");
  const HostTensor* b = c.tensor("bias");
  const HostTensor* rm = c.tensor("running_mean");
  const HostTensor* rv = c.tensor("running_var");
  if (!plain) {
    NEURONC_ASSIGN_OR_RETURN_(rm, c.required("running_mean"));
    NEURONC_ASSIGN_OR_RETURN_(rv, c.required("running_var"));
  }
  for (auto [t, name] :
       {std::pair{w, "weight"}, {b, "bias"}, {rm, "running_mean"}, {rv, "running_var"}})
    NEURONC_RETURN_IF_ERROR_(check_channel_vec(c, t, name, ch));
  const bool training = (functional || plain) && c.get_bool("training", true);
  if (!training && (!rm || !rv))
    return c.error("inference-mode batch norm needs running_mean and running_var");
  const double momentum = c.get_float("momentum", 0.1);
  const double eps = c.get_float("eps", 1e-5);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (plain) break;
    const HostTensor& s = c.output(i);
    if (s.rank() != 1 || (s.shape[0] != ch && s.shape[0] != 0))
      return c.error("output " + std::to_string(i) + " shape is " + shape_str(s.shape) +
                     ", expected [" + std::to_string(ch) + "] or [0]");
  }
  if (functional) {
    NEURONC_RETURN_IF_ERROR_(c.expect_output(3, rm->dtype, rm->shape));
    NEURONC_RETURN_IF_ERROR_(c.expect_output(4, rv->dtype, rv->shape));
  }
  if (c.dry_run()) return Status::ok();
  const int64_t n = x->shape[0];
  int64_t inner = 1;
  for (int64_t i = 2; i < x->rank(); ++i) inner *= x->shape[i];
  const auto xv = to_double(*x);
  const std::vector<double> rmv = rm ? to_double(*rm) : std::vector<double>(ch, 0.0);
  const std::vector<double> rvv = rv ? to_double(*rv) : std::vector<double>(ch, 1.0);
  const std::vector<double> wv = w ? to_double(*w) : std::vector<double>(ch, 1.0);
  const std::vector<double> bv = b ? to_double(*b) : std::vector<double>(ch, 0.0);
  std::vector<double> mean(ch), invstd(ch), out(xv.size()), new_rm(rmv), new_rv(rvv);
  const double count = static_cast<double>(n * inner);
  for (int64_t k = 0; k < ch; ++k) {
    double m, var;
    if (training) {
      double s = 0;
      for (int64_t a = 0; a < n; ++a)
        for (int64_t i = 0; i < inner; ++i) s += xv[(a * ch + k) * inner + i];
      m = count > 0 ? s / count : 0;
      double q = 0;
      for (int64_t a = 0; a < n; ++a)
        for (int64_t i = 0; i < inner; ++i) {
          const double e = xv[(a * ch + k) * inner + i] - m;
          q += e * e;
        }
      var = count > 0 ? q / count : 0;
      const double unbiased = count > 1 ? q / (count - 1) : var;
      new_rm[k] = (1 - momentum) * rmv[k] + momentum * m;
      new_rv[k] = (1 - momentum) * rvv[k] + momentum * unbiased;
    } else {
      m = rmv[k];
      var = rvv[k];
    }
    mean[k] = m;
    invstd[k] = 1 / std::sqrt(var + eps);
    for (int64_t a = 0; a < n; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        const size_t j = static_cast<size_t>((a * ch + k) * inner + i);
        out[j] = (xv[j] - m) * invstd[k] * wv[k] + bv[k];
      }
  }
  from_double(c.output(0), out);
  if (plain) return Status::ok();
  if (c.output(1).numel()) from_double(c.output(1), mean);
  if (c.output(2).numel()) from_double(c.output(2), invstd);
  if (functional) {
    from_double(c.output(3), new_rm);
    from_double(c.output(4), new_rv);
  }
  return Status::ok();
}

// Mean and reciprocal standard deviation of each row of `inner` elements (biased variance, as
// PyTorch); `rms`: the root mean square instead, with mean 0.
void row_stats(const std::vector<double>& x, int64_t inner, bool rms, double eps,
               std::vector<double>& mean, std::vector<double>& rstd) {
  const int64_t rows = inner ? static_cast<int64_t>(x.size()) / inner : 0;
  mean.assign(static_cast<size_t>(rows), 0.0);
  rstd.assign(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* p = x.data() + r * inner;
    double m = 0, q = 0;
    if (!rms) {
      for (int64_t i = 0; i < inner; ++i) m += p[i];
      m /= static_cast<double>(inner);
    }
    for (int64_t i = 0; i < inner; ++i) q += (p[i] - m) * (p[i] - m);
    mean[r] = m;
    rstd[r] = 1 / std::sqrt(q / static_cast<double>(inner) + eps);
  }
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
// layer_norm(input, normalized_shape, weight?, bias?, eps=1e-5, cudnn_enable) -> out
// rms_norm(input, normalized_shape, weight?, eps?) -> out: x * rsqrt(mean(x^2) + eps) * weight,
//   eps by default the epsilon of the input's compute type (f64's for f64, else f32's), as ATen.
Status layer_norm(const HostOpContext& c) {
  const bool native = c.op_name() == "aten.native_layer_norm.default";
  const bool rms = c.op_name() == "aten.rms_norm.default";
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(native ? 3 : 1));
  if (!dtype_is_float(x->dtype))
    return c.error("input is " + dtype_str(x->dtype) + ", expected a float type");
  const std::vector<int64_t> ns = c.get_ints("normalized_shape");
  if (ns.size() > x->shape.size() ||
      !std::equal(ns.begin(), ns.end(), x->shape.end() - static_cast<int64_t>(ns.size())))
    return c.error("normalized_shape " + shape_str(ns) + " is not a suffix of input shape " +
                   shape_str(x->shape));
  int64_t inner = 1;
  for (int64_t d : ns) inner *= d;
  const HostTensor* w = c.tensor("weight");
  const HostTensor* b = c.tensor("bias");
  for (const HostTensor* t : {w, b})
    if (t && t->shape != ns)
      return c.error("weight/bias shape " + shape_str(t->shape) + ", expected " + shape_str(ns));
  std::vector<int64_t> stat = x->shape;
  for (size_t i = x->shape.size() - ns.size(); i < stat.size(); ++i) stat[i] = 1;
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  if (native && (c.output(1).shape != stat || c.output(2).shape != stat))
    return c.error("mean/rstd shapes " + shape_str(c.output(1).shape) + ", expected " +
                   shape_str(stat));
  if (c.dry_run()) return Status::ok();
  const double default_eps = !rms                           ? 1e-5
                             : x->dtype == TensorDType::f64 ? std::numeric_limits<double>::epsilon()
                                                            : std::numeric_limits<float>::epsilon();
  const double eps = c.get_float("eps", default_eps);
  const auto xv = to_double(*x);
  const std::vector<double> wv = w ? to_double(*w) : std::vector<double>(inner, 1.0);
  const std::vector<double> bv = b ? to_double(*b) : std::vector<double>(inner, 0.0);
  std::vector<double> out(xv.size()), mean, rstd;
  row_stats(xv, inner, rms, eps, mean, rstd);
  for (size_t r = 0; r < mean.size(); ++r)
    for (int64_t i = 0; i < inner; ++i) {
      const size_t k = r * static_cast<size_t>(inner) + static_cast<size_t>(i);
      out[k] = (xv[k] - mean[r]) * rstd[r] * wv[i] + bv[i];
    }
  from_double(c.output(0), out);
  if (native) {
    from_double(c.output(1), mean);
    from_double(c.output(2), rstd);
  }
  return Status::ok();
}

// group_norm(input, num_groups, weight?, bias?, eps=1e-5, cudnn_enabled) -> out
// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean [N, group],
//   rstd [N, group])
// Statistics over each (sample, group) of C / group channels and all their positions.
Status group_norm(const HostOpContext& c) {
  const bool native = c.op_name() == "aten.native_group_norm.default";
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(native ? 3 : 1));
  if (x->rank() < 2) return c.error("input must have rank >= 2, found " + shape_str(x->shape));
  if (!dtype_is_float(x->dtype))
    return c.error("input is " + dtype_str(x->dtype) + ", expected a float type");
  const int64_t n = x->shape[0], ch = x->shape[1];
  const int64_t plane = n * ch != 0 ? x->numel() / (n * ch) : 0;
  const int64_t groups = native ? c.get_int("group", 0) : c.get_int("num_groups", 0);
  if (groups < 1 || ch % groups)
    return c.error(std::to_string(ch) + " channels are not divisible into " +
                   std::to_string(groups) + " groups");
  if (native) {
    const int64_t gn = c.get_int("N", -1), gc = c.get_int("C", -1), ghw = c.get_int("HxW", -1);
    if (gn != n || gc != ch || ghw != plane)
      return c.error("N, C, HxW are " + std::to_string(gn) + ", " + std::to_string(gc) + ", " +
                     std::to_string(ghw) + "; the input " + shape_str(x->shape) + " gives " +
                     std::to_string(n) + ", " + std::to_string(ch) + ", " + std::to_string(plane));
  }
  const HostTensor* w = c.tensor("weight");
  const HostTensor* b = c.tensor("bias");
  NEURONC_RETURN_IF_ERROR_(check_channel_vec(c, w, "weight", ch));
  NEURONC_RETURN_IF_ERROR_(check_channel_vec(c, b, "bias", ch));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  if (native) {
    NEURONC_RETURN_IF_ERROR_(c.expect_output(1, x->dtype, {n, groups}));
    NEURONC_RETURN_IF_ERROR_(c.expect_output(2, x->dtype, {n, groups}));
  }
  if (c.dry_run()) return Status::ok();
  const auto xv = to_double(*x);
  const std::vector<double> wv = w ? to_double(*w) : std::vector<double>(ch, 1.0);
  const std::vector<double> bv = b ? to_double(*b) : std::vector<double>(ch, 0.0);
  const int64_t per_group = ch / groups;
  std::vector<double> out(xv.size()), mean, rstd;
  row_stats(xv, per_group * plane, false, c.get_float("eps", 1e-5), mean, rstd);
  for (int64_t k = 0; k < n * ch; ++k) {
    const size_t r = static_cast<size_t>(k / per_group);
    const int64_t chan = k % ch;
    for (int64_t i = 0; i < plane; ++i) {
      const size_t j = static_cast<size_t>(k * plane + i);
      out[j] = (xv[j] - mean[r]) * rstd[r] * wv[chan] + bv[chan];
    }
  }
  from_double(c.output(0), out);
  if (native) {
    from_double(c.output(1), mean);
    from_double(c.output(2), rstd);
  }
  return Status::ok();
}

}  // namespace

void register_norm_kernels(KernelTable& t) {
  t.add("aten._native_batch_norm_legit_functional.default", batch_norm);
  t.add("aten._native_batch_norm_legit_no_training.default", batch_norm);
  t.add("aten.batch_norm.default", batch_norm);
  t.add("aten.native_layer_norm.default", layer_norm);
  t.add("aten.layer_norm.default", layer_norm);
  t.add("aten.rms_norm.default", layer_norm);
  t.add("aten.group_norm.default", group_norm);
  t.add("aten.native_group_norm.default", group_norm);
}

}  // namespace neuronc::host
