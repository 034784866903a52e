// Host convolution: aten.conv1d/2d/3d (int or "same"/"valid" padding) and aten.convolution (not
// transposed), any groups, stride and dilation, 1 to 3 spatial dims. It runs what the NeuronCore
// kernel refuses (3-D video convolutions, weights too large for a chunk of SBUF). Direct
// convolution in double, one output channel at a time: for every kernel tap and input channel
// it adds a scaled, strided run of an input row to a run of the output row, the range of valid
// output columns computed once per tap, so there is no per-element padding test.
#include <algorithm>
#include <array>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// Per spatial dim (padded to 3 with size-1 dims in front): sizes and window parameters.
struct Geometry {
  int64_t n = 0, c = 0, o = 0, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0},
      dil{1, 1, 1};
};

// The output index range [lo, hi) whose input index o * s - p + t * d lies in [0, size).
std::pair<int64_t, int64_t> valid_range(int64_t out, int64_t size, int64_t s, int64_t p,
                                        int64_t off) {
  // o * s + (off - p) >= 0  and  o * s + (off - p) < size
  const int64_t base = off - p;
  int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
  int64_t hi = size - base <= 0 ? 0 : (size - base - 1) / s + 1;
  return {std::min(lo, out), std::clamp<int64_t>(hi, 0, out)};
}

Status convolution_impl(const HostOpContext& c, bool accept_string_padding) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* w, c.required("weight"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const HostTensor* bias = c.tensor("bias");
  if (c.has("transposed") && c.get_bool("transposed", false))
    return c.error("transposed convolution has no host kernel");
  const int64_t sp = w->rank() - 2;
  if (sp < 1 || sp > 3)
    return c.error("weight of rank " + std::to_string(w->rank()) + ", expected 3 to 5");
  if (x->rank() != sp + 2)
    return c.error("input of rank " + std::to_string(x->rank()) + " for a weight of rank " +
                   std::to_string(w->rank()) + ", expected " + std::to_string(sp + 2) +
                   " (batched)");
  if (!dtype_is_float(x->dtype) || !dtype_is_float(w->dtype))
    return c.error("input and weight are " + dtype_str(x->dtype) + " and " + dtype_str(w->dtype) +
                   ", expected float types");
  Geometry g;
  g.n = x->shape[0];
  g.c = x->shape[1];
  g.o = w->shape[0];
  g.groups = c.get_int("groups", 1);
  if (g.groups < 1 || g.c % g.groups || g.o % g.groups || w->shape[1] != g.c / g.groups)
    return c.error("weight " + shape_str(w->shape) + " with groups " + std::to_string(g.groups) +
                   " does not fit input " + shape_str(x->shape));
  if (bias && (bias->rank() != 1 || bias->shape[0] != g.o))
    return c.error("bias " + shape_str(bias->shape) + ", expected [" + std::to_string(g.o) + "]");
  auto per_dim = [&](const char* name, int64_t dflt) -> Result<std::vector<int64_t>> {
    std::vector<int64_t> v = c.has(name) ? c.get_ints(name) : std::vector<int64_t>{};
    if (v.empty()) v.push_back(dflt);
    if (v.size() == 1) v.resize(static_cast<size_t>(sp), v[0]);
    if (static_cast<int64_t>(v.size()) != sp)
      return c.error(std::string(name) + " has " + std::to_string(v.size()) +
                     " entries, expected " + std::to_string(sp));
    return v;
  };
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> stride, per_dim("stride", 1));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> dil, per_dim("dilation", 1));
  std::vector<int64_t> lo_pad(static_cast<size_t>(sp), 0);
  std::optional<std::string> mode = accept_string_padding ? c.get_string("padding") : std::nullopt;
  if (mode && *mode != "same" && *mode != "valid")
    return c.error("padding is '" + *mode + "', expected 'same', 'valid' or integers");
  if (mode && *mode == "same" &&
      std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s != 1; }))
    return c.error("padding 'same' needs stride 1, as in PyTorch");
  if (!mode) {
    NEURONC_ASSIGN_OR_RETURN_(lo_pad, per_dim("padding", 0));
  }
  const int64_t off = 3 - sp;
  std::vector<int64_t> oshape = {g.n, g.o};
  for (int64_t d = 0; d < sp; ++d) {
    const size_t i = static_cast<size_t>(off + d);
    g.in[i] = x->shape[2 + d];
    g.k[i] = w->shape[2 + d];
    g.stride[i] = stride[d];
    g.dil[i] = dil[d];
    if (g.stride[i] < 1 || g.dil[i] < 1) return c.error("stride and dilation must be positive");
    const int64_t span = g.dil[i] * (g.k[i] - 1) + 1;
    // "same": PyTorch puts the odd element of the total padding on the far side.
    g.pad[i] = mode && *mode == "same" ? g.dil[i] * (g.k[i] - 1) / 2 : mode ? 0 : lo_pad[d];
    const int64_t total = mode && *mode == "same" ? span - 1 : 2 * g.pad[i];
    g.out[i] = mode && *mode == "same" ? g.in[i] : (g.in[i] + total - span) / g.stride[i] + 1;
    if (g.pad[i] < 0 || g.out[i] < 1)
      return c.error("a window of " + std::to_string(span) + " does not fit spatial dim " +
                     std::to_string(d) + " of size " + std::to_string(g.in[i]));
    oshape.push_back(g.out[i]);
  }
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, oshape));
  if (c.dry_run()) return Status::ok();

  const std::vector<double> xv = to_double(*x), wv = to_double(*w);
  const std::vector<double> bv = bias ? to_double(*bias) : std::vector<double>{};
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t taps = g.k[0] * g.k[1] * g.k[2];
  std::vector<double> out(static_cast<size_t>(g.n * g.o * out_plane));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oc = 0; oc < g.o; ++oc) {
      double* dst = out.data() + (n * g.o + oc) * out_plane;
      std::fill(dst, dst + out_plane, bv.empty() ? 0.0 : bv[oc]);
      const int64_t grp = oc / og;
      for (int64_t ic = 0; ic < cg; ++ic) {
        const double* src = xv.data() + (n * g.c + grp * cg + ic) * in_plane;
        const double* wk = wv.data() + (oc * cg + ic) * taps;
        for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
          const auto [a0, b0] =
              valid_range(g.out[0], g.in[0], g.stride[0], g.pad[0], t0 * g.dil[0]);
          for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
            const auto [a1, b1] =
                valid_range(g.out[1], g.in[1], g.stride[1], g.pad[1], t1 * g.dil[1]);
            for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
              const double wt = wk[(t0 * g.k[1] + t1) * g.k[2] + t2];
              const auto [a2, b2] =
                  valid_range(g.out[2], g.in[2], g.stride[2], g.pad[2], t2 * g.dil[2]);
              for (int64_t o0 = a0; o0 < b0; ++o0) {
                const int64_t i0 = o0 * g.stride[0] - g.pad[0] + t0 * g.dil[0];
                for (int64_t o1 = a1; o1 < b1; ++o1) {
                  const int64_t i1 = o1 * g.stride[1] - g.pad[1] + t1 * g.dil[1];
                  const double* row = src + (i0 * g.in[1] + i1) * g.in[2];
                  double* orow = dst + (o0 * g.out[1] + o1) * g.out[2];
                  const int64_t s2 = g.stride[2], base = t2 * g.dil[2] - g.pad[2];
                  for (int64_t o2 = a2; o2 < b2; ++o2) orow[o2] += wt * row[o2 * s2 + base];
                }
              }
            }
          }
        }
      }
    }
  from_double(c.output(0), out);
  return Status::ok();
}

Status convolution(const HostOpContext& c) {
  return convolution_impl(c, false);
}
Status conv_padding(const HostOpContext& c) {
  return convolution_impl(c, true);
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  for (const char* op : {"aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default",
                         "aten.convolution.default"})
    t.add(op, convolution);
  for (const char* op : {"aten.conv1d.padding", "aten.conv2d.padding", "aten.conv3d.padding"})
    t.add(op, conv_padding);
}

}  // namespace neuronc::host
