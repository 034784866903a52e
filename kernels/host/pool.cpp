// Host pooling kernels: max_pool1d/2d and max_pool2d_with_indices, avg_pool1d/2d,
// adaptive_avg_pool1d/2d (and _adaptive_avg_pool2d), on batched [N, C, *spatial] or unbatched
// [C, *spatial] inputs. PyTorch's window rules: implicit -inf (max) or zero (avg) padding,
// ceil_mode's extra window only when it starts inside the input or the left padding, avg's
// divisor from count_include_pad or divisor_override, adaptive windows [floor(i L / O),
// ceil((i + 1) L / O)). A 1-D pool is a 2-D pool over a height of 1. Sums run in double.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kernels/host_kernel.h"
#include "kernels/window.h"

namespace neuronc::host {
namespace {

// One spatial axis of a window (height first; a 1-D pool's height is the identity window).
struct Axis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, pad = 0, dilation = 1;
};

// Output length of a window over `in` (kernels/window.h, the IR's shape rule's formula too).
int64_t window_out(const Axis& a, bool ceil_mode) {
  return kernels::window_out(a.in, a.kernel, a.stride, a.pad, a.dilation, ceil_mode);
}

struct Pool {
  const HostTensor* x = nullptr;
  int64_t planes = 0;      // product of the leading (batch, channel) dims
  std::array<Axis, 2> ax;  // height, width
  std::vector<int64_t> out_shape;
};

// The input and its planes for a pool over `sp` spatial dims.
Result<Pool> pool_input(const HostOpContext& c, int64_t sp) {
  Pool p;
  NEURONC_ASSIGN_OR_RETURN_(p.x, c.required("self"));
  const HostTensor& x = *p.x;
  if (x.rank() != sp + 1 && x.rank() != sp + 2)
    return c.error("input " + shape_str(x.shape) + " has rank " + std::to_string(x.rank()) +
                   ", expected " + std::to_string(sp + 1) + " or " + std::to_string(sp + 2));
  if (x.dtype == TensorDType::c64) return c.error("complex tensors are not supported here");
  p.planes = 1;
  for (int64_t d = 0; d < x.rank() - sp; ++d) p.planes *= x.shape[d];
  for (int64_t d = 0; d < sp; ++d) p.ax[2 - sp + d].in = x.shape[x.rank() - sp + d];
  p.out_shape.assign(x.shape.begin(), x.shape.end() - sp);
  return p;
}

// Integer list argument `name` with one entry per spatial dim (a single entry is repeated);
// `dflt` when absent or empty.
Result<std::vector<int64_t>> per_dim(const HostOpContext& c, const char* name, int64_t sp,
                                     std::vector<int64_t> dflt) {
  std::vector<int64_t> v = c.get_ints(name);
  if (v.empty()) v = std::move(dflt);
  if (v.size() == 1) v.resize(static_cast<size_t>(sp), v[0]);
  if (static_cast<int64_t>(v.size()) != sp)
    return c.error(std::string(name) + " has " + std::to_string(v.size()) + " entries, expected " +
                   std::to_string(sp));
  return v;
}

// The windows of a max (dilated) or avg pool: kernel_size, stride (kernel_size when empty),
// padding, dilation; checked as PyTorch does, output shape compared with the plan's.
Result<Pool> windowed(const HostOpContext& c, int64_t sp, bool is_max) {
  NEURONC_ASSIGN_OR_RETURN_(Pool p, pool_input(c, sp));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> k, per_dim(c, "kernel_size", sp, {}));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> s, per_dim(c, "stride", sp, k));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> pad, per_dim(c, "padding", sp, {0}));
  std::vector<int64_t> dil(static_cast<size_t>(sp), 1);
  if (is_max) {
    NEURONC_ASSIGN_OR_RETURN_(dil, per_dim(c, "dilation", sp, {1}));
  }
  const bool ceil_mode = c.get_bool("ceil_mode", false);
  for (int64_t d = 0; d < sp; ++d) {
    Axis& a = p.ax[2 - sp + d];
    a.kernel = k[d];
    a.stride = s[d];
    a.pad = pad[d];
    a.dilation = dil[d];
    if (a.kernel < 1 || a.stride < 1 || a.dilation < 1 || a.pad < 0)
      return c.error("kernel_size " + std::to_string(a.kernel) + ", stride " +
                     std::to_string(a.stride) + ", padding " + std::to_string(a.pad) +
                     ", dilation " + std::to_string(a.dilation) +
                     ": expected positive sizes and a non-negative padding");
    // PyTorch: padding at most half the (dilated) kernel.
    const int64_t half = (is_max ? a.dilation * (a.kernel - 1) + 1 : a.kernel) / 2;
    if (a.pad > half)
      return c.error("padding " + std::to_string(a.pad) + " exceeds half the kernel (" +
                     std::to_string(half) + ")");
    a.out = window_out(a, ceil_mode);
    if (a.out < 1)
      return c.error("a window of " + std::to_string(a.dilation * (a.kernel - 1) + 1) +
                     " does not fit spatial size " + std::to_string(a.in) + " with padding " +
                     std::to_string(a.pad));
    p.out_shape.push_back(a.out);
  }
  return p;
}

// max_pool1d / max_pool2d / max_pool2d_with_indices: the index is the flat position in its input
// plane of the first maximum, or of the last NaN (which wins), as in PyTorch's CPU kernel.
Status max_pool(const HostOpContext& c) {
  const std::string_view op = c.op_name();
  const int64_t sp = op == "aten.max_pool1d.default" ? 1 : 2;
  const bool with_indices = op == "aten.max_pool2d_with_indices.default";
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(with_indices ? 2 : 1));
  NEURONC_ASSIGN_OR_RETURN_(Pool p, windowed(c, sp, true));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, p.x->dtype, p.out_shape));
  if (with_indices) NEURONC_RETURN_IF_ERROR_(c.expect_output(1, TensorDType::i64, p.out_shape));
  if (c.dry_run()) return Status::ok();
  const Axis &h = p.ax[0], &w = p.ax[1];
  const std::vector<double> xv = to_double(*p.x);
  std::vector<double> out(static_cast<size_t>(p.planes * h.out * w.out));
  std::vector<int64_t> idx(with_indices ? out.size() : 0);
  size_t o = 0;
  for (int64_t q = 0; q < p.planes; ++q) {
    const double* plane = xv.data() + q * h.in * w.in;
    for (int64_t i = 0; i < h.out; ++i)
      for (int64_t j = 0; j < w.out; ++j, ++o) {
        int64_t y0 = i * h.stride - h.pad, x0 = j * w.stride - w.pad;
        while (y0 < 0) y0 += h.dilation;
        while (x0 < 0) x0 += w.dilation;
        const int64_t y1 = std::min(i * h.stride - h.pad + (h.kernel - 1) * h.dilation + 1, h.in);
        const int64_t x1 = std::min(j * w.stride - w.pad + (w.kernel - 1) * w.dilation + 1, w.in);
        double best = -std::numeric_limits<double>::infinity();
        int64_t at = y0 * w.in + x0;
        for (int64_t y = y0; y < y1; y += h.dilation)
          for (int64_t x = x0; x < x1; x += w.dilation) {
            const double v = plane[y * w.in + x];
            if (v > best || std::isnan(v)) {
              best = v;
              at = y * w.in + x;
            }
          }
        out[o] = best;
        if (with_indices) idx[o] = at;
      }
  }
  from_double(c.output(0), out);
  if (with_indices) from_int64(c.output(1), idx);
  return Status::ok();
}

// The sum of plane[y * width + x] over the window [y0, y1) x [x0, x1).
double window_sum(const double* plane, int64_t width, int64_t y0, int64_t y1, int64_t x0,
                  int64_t x1) {
  double sum = 0;
  for (int64_t y = y0; y < y1; ++y)
    for (int64_t x = x0; x < x1; ++x) sum += plane[y * width + x];
  return sum;
}

// cell(plane, i, j) for every output position of every plane, in output order.
template <class Cell>
std::vector<double> per_output(const Pool& p, const std::vector<double>& xv, Cell cell) {
  const Axis &h = p.ax[0], &w = p.ax[1];
  std::vector<double> out(static_cast<size_t>(p.planes * h.out * w.out));
  size_t o = 0;
  for (int64_t q = 0; q < p.planes; ++q) {
    const double* plane = xv.data() + q * h.in * w.in;
    for (int64_t i = 0; i < h.out; ++i)
      for (int64_t j = 0; j < w.out; ++j) out[o++] = cell(plane, i, j);
  }
  return out;
}

// avg_pool1d / avg_pool2d: a window clipped to the padded input counts (count_include_pad) its
// padding; divisor_override replaces the count.
Status avg_pool(const HostOpContext& c) {
  const int64_t sp = c.op_name() == "aten.avg_pool1d.default" ? 1 : 2;
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(Pool p, windowed(c, sp, false));
  if (!dtype_is_float(p.x->dtype))
    return c.error("input is " + dtype_str(p.x->dtype) + ", expected a float type");
  const bool include_pad = c.get_bool("count_include_pad", true);
  const std::optional<int64_t> divisor = c.opt_int("divisor_override");
  if (divisor && *divisor == 0)
    return c.error("divisor_override is 0, expected a non-zero divisor");
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, p.x->dtype, p.out_shape));
  if (c.dry_run()) return Status::ok();
  const Axis &h = p.ax[0], &w = p.ax[1];
  from_double(c.output(0),
              per_output(p, to_double(*p.x), [&](const double* plane, int64_t i, int64_t j) {
                int64_t y0 = i * h.stride - h.pad, x0 = j * w.stride - w.pad;
                int64_t y1 = std::min(y0 + h.kernel, h.in + h.pad);
                int64_t x1 = std::min(x0 + w.kernel, w.in + w.pad);
                const int64_t padded_count = (y1 - y0) * (x1 - x0);
                y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
                y1 = std::min(y1, h.in), x1 = std::min(x1, w.in);
                if (y0 >= y1 || x0 >= x1) return 0.0;  // a window wholly in the padding is 0
                const int64_t count = divisor       ? *divisor
                                      : include_pad ? padded_count
                                                    : (y1 - y0) * (x1 - x0);
                return window_sum(plane, w.in, y0, y1, x0, x1) / static_cast<double>(count);
              }));
  return Status::ok();
}

// adaptive_avg_pool1d / adaptive_avg_pool2d / _adaptive_avg_pool2d(self, output_size).
Status adaptive_avg_pool(const HostOpContext& c) {
  const int64_t sp = c.op_name() == "aten.adaptive_avg_pool1d.default" ? 1 : 2;
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(Pool p, pool_input(c, sp));
  if (!dtype_is_float(p.x->dtype))
    return c.error("input is " + dtype_str(p.x->dtype) + ", expected a float type");
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> size, per_dim(c, "output_size", sp, {}));
  for (int64_t d = 0; d < sp; ++d) {
    if (size[d] < 1) return c.error("output_size " + shape_str(size) + ": expected positive sizes");
    p.ax[2 - sp + d].out = size[d];
    p.out_shape.push_back(size[d]);
  }
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, p.x->dtype, p.out_shape));
  if (c.dry_run()) return Status::ok();
  const Axis &h = p.ax[0], &w = p.ax[1];
  from_double(
      c.output(0), per_output(p, to_double(*p.x), [&](const double* plane, int64_t i, int64_t j) {
        const int64_t y0 = i * h.in / h.out, y1 = ((i + 1) * h.in + h.out - 1) / h.out;
        const int64_t x0 = j * w.in / w.out, x1 = ((j + 1) * w.in + w.out - 1) / w.out;
        const int64_t count = (y1 - y0) * (x1 - x0);
        return count ? window_sum(plane, w.in, y0, y1, x0, x1) / static_cast<double>(count) : 0.0;
      }));
  return Status::ok();
}

}  // namespace

void register_pool_kernels(KernelTable& t) {
  for (const char* op : {"aten.max_pool1d.default", "aten.max_pool2d.default",
                         "aten.max_pool2d_with_indices.default"})
    t.add(op, max_pool);
  for (const char* op : {"aten.avg_pool1d.default", "aten.avg_pool2d.default"}) t.add(op, avg_pool);
  for (const char* op : {"aten.adaptive_avg_pool1d.default", "aten.adaptive_avg_pool2d.default",
                         "aten._adaptive_avg_pool2d.default"})
    t.add(op, adaptive_avg_pool);
}

}  // namespace neuronc::host
