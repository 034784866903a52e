// Host creation kernels: full / zeros / ones and their _like and new_ forms, scalar_tensor,
// fill, arange, lift_fresh_copy, and tril / triu. The plan gives each output's dtype and shape;
// the kernels check them against the size, dtype and start/end/step arguments. Integer fill
// values and integer aranges are exact in int64; float ones round once to the output dtype.
#include <cmath>
#include <cstring>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// The output must have the "dtype" argument's type when one is given, and be real.
Status check_dtype_arg(const HostOpContext& c, const HostTensor& o) {
  NEURONC_RETURN_IF_ERROR_(c.expect_dtype_arg(o));
  if (o.dtype == TensorDType::c64) return c.error("complex tensors are not supported here");
  return Status::ok();
}

// Checks output 0 against `shape` and the dtype argument.
Result<HostTensor*> creation_output(const HostOpContext& c, const std::vector<int64_t>& shape) {
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  HostTensor& o = c.output(0);
  if (o.shape != shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(shape));
  NEURONC_RETURN_IF_ERROR_(check_dtype_arg(c, o));
  return &o;
}

// Fills `o` with scalar argument `name`, or with `def` when `name` is null; an integer scalar
// stays exact.
void fill_with(const HostOpContext& c, HostTensor& o, const char* name, double def) {
  const int64_t n = o.numel();
  if (dtype_is_integral(o.dtype)) {
    const std::optional<int64_t> i = name ? c.opt_int(name) : std::nullopt;
    const int64_t v = i ? *i : kernels::double_to_int64(name ? c.get_float(name, def) : def);
    from_int64(o, std::vector<int64_t>(static_cast<size_t>(n), v));
  } else {
    from_double(o,
                std::vector<double>(static_cast<size_t>(n), name ? c.get_float(name, def) : def));
  }
}

// full(size, fill_value), zeros(size), ones(size); new_*(self, size, ...) take size too.
template <int kFill>  // 0, 1, or -1 for the fill_value argument
Status sized(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(HostTensor * o, creation_output(c, c.get_ints("size")));
  if (c.dry_run()) return Status::ok();
  fill_with(c, *o, kFill < 0 ? "fill_value" : nullptr, kFill < 0 ? 0.0 : kFill);
  return Status::ok();
}

// zeros_like(self), ones_like(self), full_like(self, fill_value).
template <int kFill>
Status like(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(HostTensor * o, creation_output(c, x->shape));
  if (c.dry_run()) return Status::ok();
  fill_with(c, *o, kFill < 0 ? "fill_value" : nullptr, kFill < 0 ? 0.0 : kFill);
  return Status::ok();
}

// fill.Scalar(self, value): self's shape and dtype.
Status fill_scalar(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(HostTensor * o, creation_output(c, x->shape));
  if (o->dtype != x->dtype)
    return c.error("output dtype " + dtype_str(o->dtype) + ", expected " + dtype_str(x->dtype));
  if (c.dry_run()) return Status::ok();
  fill_with(c, *o, "value", 0.0);
  return Status::ok();
}

// scalar_tensor(s): a rank-0 tensor.
Status scalar_tensor(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(HostTensor * o, creation_output(c, {}));
  if (c.dry_run()) return Status::ok();
  fill_with(c, *o, "s", 0.0);
  return Status::ok();
}

// lift_fresh_copy(self): a copy.
Status lift_fresh_copy(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(HostTensor * o, creation_output(c, x->shape));
  if (o->dtype != x->dtype)
    return c.error("output dtype " + dtype_str(o->dtype) + ", expected " + dtype_str(x->dtype));
  if (c.dry_run()) return Status::ok();
  if (x->nbytes()) std::memcpy(o->data, x->data, x->nbytes());
  return Status::ok();
}

// arange(end), arange(start, end), arange(start, end, step): ceil((end - start) / step) values
// start + i * step, in int64 when every bound is an integer and the output is integral.
Status arange(const HostOpContext& c) {
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  HostTensor& o = c.output(0);
  NEURONC_RETURN_IF_ERROR_(check_dtype_arg(c, o));
  const double start = c.get_float("start", 0), end = c.get_float("end", 0);
  const double step = c.get_float("step", 1);
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    return c.error("start, end and step must be finite and step non-zero");
  const double count = std::ceil((end - start) / step);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  if (o.shape != std::vector<int64_t>{n})
    return c.error("output shape " + shape_str(o.shape) + ", expected [" + std::to_string(n) + "]");
  if (c.dry_run()) return Status::ok();
  const bool ints = dtype_is_integral(o.dtype) && c.opt_int("end") &&
                    (!c.has("start") || c.opt_int("start")) &&
                    (!c.has("step") || c.opt_int("step"));
  if (ints) {
    const int64_t s = c.get_int("start", 0), d = c.get_int("step", 1);
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = s + i * d;
    from_int64(o, v);
  } else {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = start + static_cast<double>(i) * step;
    from_double(o, v);
  }
  return Status::ok();
}

// tril(self, diagonal) keeps element (.., i, j) when j - i <= diagonal, triu when j - i >=
// diagonal; the rest become zero.
template <bool kLower>
Status triangle(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(HostTensor * o, creation_output(c, x->shape));
  if (x->rank() < 2)
    return c.error("self has rank " + std::to_string(x->rank()) + ", expected >= 2");
  if (o->dtype != x->dtype)
    return c.error("output dtype " + dtype_str(o->dtype) + ", expected " + dtype_str(x->dtype));
  if (c.dry_run()) return Status::ok();
  const int64_t diagonal = c.get_int("diagonal", 0);
  const int64_t rows = x->shape[x->rank() - 2], cols = x->shape[x->rank() - 1];
  const size_t es = dtype_size(x->dtype);
  const int64_t n = x->numel();
  for (int64_t e = 0; e < n; ++e) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    const bool keep = kLower ? j - i <= diagonal : j - i >= diagonal;
    std::byte* dst = o->data + static_cast<size_t>(e) * es;
    if (keep)
      std::memcpy(dst, x->data + static_cast<size_t>(e) * es, es);
    else
      std::memset(dst, 0, es);
  }
  return Status::ok();
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  t.add("aten.full.default", sized<-1>);
  t.add("aten.zeros.default", sized<0>);
  t.add("aten.ones.default", sized<1>);
  t.add("aten.new_full.default", sized<-1>);
  t.add("aten.new_zeros.default", sized<0>);
  t.add("aten.new_ones.default", sized<1>);
  t.add("aten.full_like.default", like<-1>);
  t.add("aten.zeros_like.default", like<0>);
  t.add("aten.ones_like.default", like<1>);
  t.add("aten.fill.Scalar", fill_scalar);
  t.add("aten.scalar_tensor.default", scalar_tensor);
  t.add("aten.lift_fresh_copy.default", lift_fresh_copy);
  t.add("aten.arange.default", arange);
  t.add("aten.arange.start", arange);
  t.add("aten.arange.start_step", arange);
  t.add("aten.tril.default", triangle<true>);
  t.add("aten.triu.default", triangle<false>);
}

}  // namespace neuronc::host
