// Host data-movement kernels. Every view-like op (permute, transpose, expand, slice, select,
// flip, split) is a strided gather from its input; reshape-like ops and inference dropout are
// byte copies; cat, index_select and embedding copy rows.
#include <algorithm>
#include <cstring>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// out[i...] = in[offset + sum(i_d * strides_d)] (element units); `shape` must equal out.shape.
void gather_strided(const HostTensor& in, int64_t offset, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& strides, HostTensor& out) {
  const size_t es = dtype_size(in.dtype);
  const int64_t n = out.numel();
  if (n == 0) return;
  std::vector<int64_t> pos(shape.size(), 0);
  int64_t src = offset;
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(out.data + k * es, in.data + src * es, es);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++pos[d] < shape[d]) {
        src += strides[d];
        break;
      }
      src -= strides[d] * (shape[d] - 1);
      pos[d] = 0;
    }
  }
}

Status expect_view(const HostOpContext& c, const HostTensor& x, const std::vector<int64_t>& shape) {
  return c.expect_output(0, x.dtype, shape);
}

Status reshape(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  HostTensor& o = c.output(0);
  if (o.dtype != x->dtype || o.numel() != x->numel())
    return c.error("output " + dtype_str(o.dtype) + shape_str(o.shape) + " does not hold the " +
                   std::to_string(x->numel()) + " elements of input " + dtype_str(x->dtype) +
                   shape_str(x->shape));
  if (c.dry_run()) return Status::ok();
  if (x->nbytes()) std::memcpy(o.data, x->data, x->nbytes());
  return Status::ok();
}

Status permute(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const int64_t r = x->rank();
  std::vector<int64_t> perm;
  if (c.op_name() == "aten.permute.default") {
    perm = c.get_ints("dims");
  } else {  // transpose.int / t.default
    perm.resize(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) perm[i] = i;
    const int64_t d0 = c.get_int("dim0", 0), d1 = c.get_int("dim1", 1);
    if (r >= 2 || c.op_name() != "aten.t.default") {
      NEURONC_ASSIGN_OR_RETURN_(int64_t a, normalize_dim(c, d0, r));
      NEURONC_ASSIGN_OR_RETURN_(int64_t b, normalize_dim(c, d1, r));
      if (r > 0) std::swap(perm[a], perm[b]);
    }
  }
  if (static_cast<int64_t>(perm.size()) != r)
    return c.error("permutation has " + std::to_string(perm.size()) + " dims, expected " +
                   std::to_string(r));
  std::vector<bool> seen(static_cast<size_t>(r), false);
  const auto st = contiguous_strides(x->shape);
  std::vector<int64_t> shape, strides;
  for (int64_t& p : perm) {
    NEURONC_ASSIGN_OR_RETURN_(p, normalize_dim(c, p, r));
    if (seen[p]) return c.error("dim " + std::to_string(p) + " appears twice in the permutation");
    seen[p] = true;
    shape.push_back(x->shape[p]);
    strides.push_back(st[p]);
  }
  NEURONC_RETURN_IF_ERROR_(expect_view(c, *x, shape));
  if (!c.dry_run()) gather_strided(*x, 0, shape, strides, c.output(0));
  return Status::ok();
}

// as_strided over the input's contiguous storage; every element the view reaches must lie
// inside the input (checked before any read).
Status as_strided(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const std::vector<int64_t> size = c.get_ints("size");
  const std::vector<int64_t> stride = c.get_ints("stride");
  const int64_t offset = c.opt_int("storage_offset").value_or(0);
  if (size.size() != stride.size())
    return c.error("size " + shape_str(size) + " and stride " + shape_str(stride) +
                   " have different ranks");
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] < 0 || stride[i] < 0)
      return c.error("negative size or stride in " + shape_str(size) + " / " + shape_str(stride));
    if (size[i] == 0)
      empty = true;
    else
      last += (size[i] - 1) * stride[i];
  }
  if (offset < 0 || (!empty && last >= x->numel()))
    return c.error("view reaches element " + std::to_string(last) + " of an input with " +
                   std::to_string(x->numel()) + " elements");
  NEURONC_RETURN_IF_ERROR_(expect_view(c, *x, size));
  if (!c.dry_run()) gather_strided(*x, offset, size, stride, c.output(0));
  return Status::ok();
}

Status expand(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const std::vector<int64_t> size = c.get_ints("size");
  if (size.size() < x->shape.size())
    return c.error("expand to " + shape_str(size) + " has fewer dims than input " +
                   shape_str(x->shape));
  const size_t lead = size.size() - x->shape.size();
  const auto st = contiguous_strides(x->shape);
  std::vector<int64_t> shape(size.size()), strides(size.size(), 0);
  for (size_t i = 0; i < size.size(); ++i) {
    if (i < lead) {
      if (size[i] < 0) return c.error("expand size -1 is not allowed in a leading dim");
      shape[i] = size[i];
      continue;
    }
    const int64_t d = x->shape[i - lead];
    const int64_t want = size[i] == -1 ? d : size[i];
    if (d != want && d != 1)
      return c.error("cannot expand dim " + std::to_string(i) + " of size " + std::to_string(d) +
                     " to " + std::to_string(want));
    shape[i] = want;
    strides[i] = d == 1 ? 0 : st[i - lead];
  }
  NEURONC_RETURN_IF_ERROR_(expect_view(c, *x, shape));
  if (!c.dry_run()) gather_strided(*x, 0, shape, strides, c.output(0));
  return Status::ok();
}

Status slice(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->rank() == 0) return c.error("cannot slice a scalar");
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  const int64_t n = x->shape[d];
  const int64_t step = c.get_int("step", 1);
  if (step <= 0) return c.error("step is " + std::to_string(step) + ", expected > 0");
  int64_t start = c.opt_int("start").value_or(0), end = c.opt_int("end").value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  const auto st = contiguous_strides(x->shape);
  std::vector<int64_t> shape = x->shape, strides = st;
  shape[d] = (end - start + step - 1) / step;
  strides[d] = st[d] * step;
  NEURONC_RETURN_IF_ERROR_(expect_view(c, *x, shape));
  if (!c.dry_run()) gather_strided(*x, start * st[d], shape, strides, c.output(0));
  return Status::ok();
}

Status select(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->rank() == 0) return c.error("cannot select from a scalar");
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  int64_t i = c.get_int("index", 0);
  const int64_t n = x->shape[d];
  if (i < -n || i >= n)
    return c.error("index " + std::to_string(i) + " is out of range for dim " + std::to_string(d) +
                   " of size " + std::to_string(n));
  if (i < 0) i += n;
  const auto st = contiguous_strides(x->shape);
  std::vector<int64_t> shape = x->shape, strides = st;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  NEURONC_RETURN_IF_ERROR_(expect_view(c, *x, shape));
  if (!c.dry_run()) gather_strided(*x, i * st[d], shape, strides, c.output(0));
  return Status::ok();
}

Status flip(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  auto strides = contiguous_strides(x->shape);
  int64_t offset = 0;
  for (int64_t d : c.get_ints("dims")) {
    NEURONC_ASSIGN_OR_RETURN_(d, normalize_dim(c, d, x->rank()));
    if (x->rank() == 0) continue;
    offset += (x->shape[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  if (!c.dry_run()) gather_strided(*x, offset, x->shape, strides, c.output(0));
  return Status::ok();
}

Status cat(const HostOpContext& c) {
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  std::vector<const HostTensor*> xs;
  for (const HostTensor* t : c.tensor_list("tensors")) {
    if (!t) return c.error("tensors list holds None");
    // PyTorch skips legacy empty 1-D tensors in cat.
    if (!(t->rank() == 1 && t->shape[0] == 0)) xs.push_back(t);
  }
  HostTensor& o = c.output(0);
  if (xs.empty()) return c.expect_output(0, o.dtype, o.shape);
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), xs[0]->rank()));
  std::vector<int64_t> shape = xs[0]->shape;
  if (shape.empty()) return c.error("cannot concatenate scalars");
  shape[d] = 0;
  for (const HostTensor* t : xs) {
    if (t->rank() != xs[0]->rank() || t->dtype != xs[0]->dtype)
      return c.error("tensor " + dtype_str(t->dtype) + shape_str(t->shape) +
                     " does not match the first " + dtype_str(xs[0]->dtype) +
                     shape_str(xs[0]->shape));
    for (int64_t i = 0; i < t->rank(); ++i)
      if (i != d && t->shape[i] != xs[0]->shape[i])
        return c.error("tensor shape " + shape_str(t->shape) + " differs from " +
                       shape_str(xs[0]->shape) + " outside dim " + std::to_string(d));
    shape[d] += t->shape[d];
  }
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, xs[0]->dtype, shape));
  if (c.dry_run()) return Status::ok();
  const size_t es = dtype_size(o.dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= shape[i];
  for (int64_t i = d + 1; i < static_cast<int64_t>(shape.size()); ++i) inner *= shape[i];
  std::byte* dst = o.data;
  for (int64_t k = 0; k < outer; ++k)
    for (const HostTensor* t : xs) {
      const size_t bytes = static_cast<size_t>(t->shape[d] * inner) * es;
      if (bytes) std::memcpy(dst, t->data + k * bytes, bytes);
      dst += bytes;
    }
  return Status::ok();
}

// split.Tensor(self, split_size, dim=0) and split_with_sizes(self, split_sizes, dim=0): one
// output per part along dim (split.Tensor's last part may be shorter), each a slice.
Status split(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  if (x->rank() == 0) return c.error("cannot split a scalar");
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  const int64_t n = x->shape[d];
  std::vector<int64_t> sizes;
  if (c.op_name() == "aten.split.Tensor") {
    const int64_t s = c.get_int("split_size", 0);
    if (s < 1 && n > 0) return c.error("split_size is " + std::to_string(s) + ", expected > 0");
    for (int64_t off = 0; off < n; off += s) sizes.push_back(std::min(s, n - off));
    if (sizes.empty()) sizes.push_back(0);
  } else {
    sizes = c.get_ints("split_sizes");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) return c.error("split_sizes " + shape_str(sizes) + " holds a negative size");
      sum += s;
    }
    if (sum != n)
      return c.error("split_sizes " + shape_str(sizes) + " add up to " + std::to_string(sum) +
                     ", expected the size " + std::to_string(n) + " of dim " + std::to_string(d));
  }
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(sizes.size()));
  const auto st = contiguous_strides(x->shape);
  std::vector<int64_t> shape = x->shape;
  for (size_t k = 0; k < sizes.size(); ++k) {
    shape[d] = sizes[k];
    NEURONC_RETURN_IF_ERROR_(c.expect_output(k, x->dtype, shape));
  }
  if (c.dry_run()) return Status::ok();
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    shape[d] = sizes[k];
    gather_strided(*x, start * st[d], shape, st, c.output(k));
    start += sizes[k];
  }
  return Status::ok();
}

// dropout(input, p, train): the identity in inference (train false, or p 0); training-mode
// dropout draws random numbers, which a compiled program does not.
Status dropout(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  const double p = c.get_float("p", 0.5);
  if (c.get_bool("train", false) && p != 0)
    return c.error("dropout in training mode (p " + std::to_string(p) +
                   ") is not supported, expected train false");
  if (c.dry_run()) return Status::ok();
  if (x->nbytes()) std::memcpy(c.output(0).data, x->data, x->nbytes());
  return Status::ok();
}

// Reads index tensor entries (any integer dtype), wrapping negatives, checking bounds.
Result<std::vector<int64_t>> read_indices(const HostOpContext& c, const HostTensor& idx,
                                          int64_t limit) {
  if (!dtype_is_integral(idx.dtype) || idx.dtype == TensorDType::boolean)
    return c.error("index dtype is " + dtype_str(idx.dtype) + ", expected an integer type");
  std::vector<int64_t> v = c.dry_run() ? std::vector<int64_t>() : to_int64(idx);
  for (int64_t& i : v) {
    if (i < -limit || i >= limit)
      return c.error("index " + std::to_string(i) + " is out of bounds for size " +
                     std::to_string(limit));
    if (i < 0) i += limit;
  }
  return v;
}

Status index_select(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* idx, c.required("index"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (idx->rank() > 1)
    return c.error("index must be 0-D or 1-D, found rank " + std::to_string(idx->rank()));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  const int64_t n = x->rank() ? x->shape[d] : 1;
  std::vector<int64_t> shape = x->shape;
  if (!shape.empty()) shape[d] = idx->numel();
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, shape));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> iv, read_indices(c, *idx, n));
  if (c.dry_run()) return Status::ok();
  const size_t es = dtype_size(x->dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x->shape[i];
  for (int64_t i = d + 1; i < x->rank(); ++i) inner *= x->shape[i];
  const size_t row = static_cast<size_t>(inner) * es;
  std::byte* dst = c.output(0).data;
  for (int64_t k = 0; k < outer; ++k)
    for (int64_t i : iv) {
      if (row) std::memcpy(dst, x->data + (k * n + i) * row, row);
      dst += row;
    }
  return Status::ok();
}

// embedding(weight [V, D], indices [...]) -> [..., D].
Status embedding(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* w, c.required("weight"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* idx, c.required("indices"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (w->rank() != 2) return c.error("weight must be 2-D, found " + shape_str(w->shape));
  std::vector<int64_t> shape = idx->shape;
  shape.push_back(w->shape[1]);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, w->dtype, shape));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> iv, read_indices(c, *idx, w->shape[0]));
  if (c.dry_run()) return Status::ok();
  const size_t row = static_cast<size_t>(w->shape[1]) * dtype_size(w->dtype);
  for (size_t k = 0; k < iv.size(); ++k)
    if (row) std::memcpy(c.output(0).data + k * row, w->data + iv[k] * row, row);
  return Status::ok();
}

// view_as_real: c64[...] -> f32[..., 2].
Status view_as_real(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  if (x->dtype != TensorDType::c64)
    return c.error("input is " + dtype_str(x->dtype) + ", expected c64");
  std::vector<int64_t> shape = x->shape;
  shape.push_back(2);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::f32, shape));
  if (!c.dry_run() && x->nbytes()) std::memcpy(c.output(0).data, x->data, x->nbytes());
  return Status::ok();
}

// im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride):
// [N, C, H, W] (or [C, H, W]) -> [N, C * kh * kw, oh * ow], every window's elements as a column
// (torch.nn.functional.unfold; ConvBERT's span-based convolution), zeros where a window leaves
// the padded input.
Status im2col(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->rank() != 3 && x->rank() != 4)
    return c.error("input of rank " + std::to_string(x->rank()) + ", expected 3 or 4");
  auto pair = [&](const char* name) { return c.get_ints(name); };
  const auto k = pair("kernel_size"), dl = pair("dilation"), pd = pair("padding"),
             st = pair("stride");
  for (const auto* v : {&k, &dl, &pd, &st})
    if (v->size() != 2) return c.error("kernel_size, dilation, padding and stride take 2 ints");
  if (k[0] < 1 || k[1] < 1 || dl[0] < 1 || dl[1] < 1 || st[0] < 1 || st[1] < 1 || pd[0] < 0 ||
      pd[1] < 0)
    return c.error("kernel_size, dilation and stride must be positive and padding non-negative");
  const bool batched = x->rank() == 4;
  const int64_t N = batched ? x->shape[0] : 1, C = x->shape[x->rank() - 3];
  const int64_t H = x->shape[x->rank() - 2], W = x->shape[x->rank() - 1];
  const int64_t oh = (H + 2 * pd[0] - (dl[0] * (k[0] - 1) + 1)) / st[0] + 1;
  const int64_t ow = (W + 2 * pd[1] - (dl[1] * (k[1] - 1) + 1)) / st[1] + 1;
  if (oh < 1 || ow < 1)
    return c.error("a " + std::to_string(k[0]) + " x " + std::to_string(k[1]) +
                   " window does not fit the padded " + std::to_string(H) + " x " +
                   std::to_string(W) + " input");
  std::vector<int64_t> shape = {C * k[0] * k[1], oh * ow};
  if (batched) shape.insert(shape.begin(), N);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, shape));
  if (c.dry_run()) return Status::ok();
  const size_t es = dtype_size(x->dtype);
  std::byte* out = c.output(0).data;
  std::memset(out, 0, static_cast<size_t>(c.output(0).numel()) * es);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < k[0]; ++i)
        for (int64_t j = 0; j < k[1]; ++j) {
          const int64_t row = (n * C + ch) * k[0] * k[1] + i * k[1] + j;
          for (int64_t y = 0; y < oh; ++y) {
            const int64_t h = y * st[0] - pd[0] + i * dl[0];
            if (h < 0 || h >= H) continue;
            for (int64_t xo = 0; xo < ow; ++xo) {
              const int64_t w = xo * st[1] - pd[1] + j * dl[1];
              if (w < 0 || w >= W) continue;
              std::memcpy(out + (row * oh * ow + y * ow + xo) * es,
                          x->data + (((n * C + ch) * H + h) * W + w) * es, es);
            }
          }
        }
  return Status::ok();
}

}  // namespace

void register_data_movement_kernels(KernelTable& t) {
  for (const char* op :
       {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
        "aten.view_copy.default", "aten.flatten.using_ints", "aten.squeeze.default",
        "aten.squeeze.dim", "aten.squeeze.dims", "aten.unsqueeze.default", "aten.unflatten.int",
        "aten._reshape_alias.default"})
    t.add(op, reshape);
  t.add("aten.permute.default", permute);
  t.add("aten.transpose.int", permute);
  t.add("aten.t.default", permute);
  t.add("aten.expand.default", expand);
  t.add("aten.as_strided.default", as_strided);
  t.add("aten.slice.Tensor", slice);
  t.add("aten.select.int", select);
  t.add("aten.flip.default", flip);
  t.add("aten.cat.default", cat);
  t.add("aten.split.Tensor", split);
  t.add("aten.split_with_sizes.default", split);
  t.add("aten.dropout.default", dropout);
  t.add("aten.index_select.default", index_select);
  t.add("aten.embedding.default", embedding);
  t.add("aten.view_as_real.default", view_as_real);
  t.add("aten.im2col.default", im2col);
}

}  // namespace neuronc::host
