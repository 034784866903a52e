// Host indexing kernels: index (advanced indexing), gather, index_put (advanced indexing
// assignment, optional accumulate) and index_copy. Index tensors may be any integer dtype or bool
// masks; negative indices wrap; out-of-bounds indices are an error, as in PyTorch.
#include <algorithm>
#include <cstring>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// Advanced indexing, x[indices] with a Tensor?[] list (None keeps a dim whole), shared by index
// (read) and index_put (write): per dim its index values, the broadcast shape of the index
// tensors and the result shape, where that shape goes (PyTorch: in place of the indexed dims
// when they are adjacent, else first).
struct DimIndex {
  bool sliced = true;
  std::vector<int64_t> shape;   // of the index tensor
  std::vector<int64_t> values;  // empty in dry run
};

struct AdvancedIndex {
  std::vector<DimIndex> per_dim;
  std::vector<int64_t> bshape, rshape;
  std::vector<int> rsrc;        // per result dim: >= 0 a sliced input dim; -1 - i broadcast dim i
  bool data_dependent = false;  // a bool mask in a dry run: the result shape is not known yet
};

Status plan_index(const HostOpContext& c, const HostTensor& x,
                  const std::vector<const HostTensor*>& list, AdvancedIndex& a) {
  std::vector<DimIndex>& per_dim = a.per_dim;
  for (const HostTensor* t : list) {
    if (!t) {
      per_dim.push_back({});
      continue;
    }
    if (t->dtype == TensorDType::boolean) {
      const size_t first = per_dim.size();
      if (first + t->shape.size() > x.shape.size())
        return c.error("bool mask of rank " + std::to_string(t->rank()) + " at dim " +
                       std::to_string(first) + " exceeds the input rank " +
                       std::to_string(x.rank()));
      for (size_t i = 0; i < t->shape.size(); ++i)
        if (t->shape[i] != x.shape[first + i])
          return c.error("bool mask shape " + shape_str(t->shape) + " does not match input dims " +
                         shape_str(x.shape) + " from dim " + std::to_string(first));
      if (c.dry_run()) {  // the mask's true count is data-dependent; checked at run time
        a.data_dependent = true;
        return Status::ok();
      }
      std::vector<std::vector<int64_t>> coords(t->shape.size());
      const auto mask = to_int64(*t);
      const auto st = contiguous_strides(t->shape);
      for (int64_t k = 0; k < t->numel(); ++k)
        if (mask[k])
          for (size_t i = 0; i < st.size(); ++i) coords[i].push_back((k / st[i]) % t->shape[i]);
      for (auto& cv : coords) {
        const int64_t n = static_cast<int64_t>(cv.size());
        per_dim.push_back({false, {n}, std::move(cv)});
      }
      continue;
    }
    if (!dtype_is_integral(t->dtype))
      return c.error("index dtype is " + dtype_str(t->dtype) +
                     ", expected an integer or bool type");
    per_dim.push_back({false, t->shape, c.dry_run() ? std::vector<int64_t>() : to_int64(*t)});
  }
  if (per_dim.size() > x.shape.size())
    return c.error(std::to_string(per_dim.size()) + " indices for a tensor of rank " +
                   std::to_string(x.rank()));
  per_dim.resize(x.shape.size());
  // Broadcast shape of the index tensors; whether they are adjacent.
  std::vector<int64_t>& bshape = a.bshape;
  int first = -1, last = -1;
  for (size_t d = 0; d < per_dim.size(); ++d) {
    if (per_dim[d].sliced) continue;
    if (first < 0) first = static_cast<int>(d);
    last = static_cast<int>(d);
    NEURONC_ASSIGN_OR_RETURN_(bshape, broadcast_shapes(c, bshape, per_dim[d].shape));
  }
  bool adjacent = true;
  for (int d = first; d >= 0 && d <= last; ++d)
    if (per_dim[d].sliced) adjacent = false;
  auto push_b = [&] {
    for (size_t i = 0; i < bshape.size(); ++i) {
      a.rshape.push_back(bshape[i]);
      a.rsrc.push_back(-1 - static_cast<int>(i));
    }
  };
  if (first >= 0 && !adjacent) push_b();
  for (size_t d = 0; d < per_dim.size(); ++d) {
    if (first >= 0 && adjacent && static_cast<int>(d) == first) push_b();
    if (per_dim[d].sliced) {
      a.rshape.push_back(x.shape[d]);
      a.rsrc.push_back(static_cast<int>(d));
    }
  }
  return Status::ok();
}

// Calls fn(k, offset) for every result position k (row-major over rshape) with the element
// offset it reads or writes in x; an index out of bounds is an error, as in PyTorch.
template <typename F>
Status for_each_indexed(const HostOpContext& c, const HostTensor& x, const AdvancedIndex& a, F fn) {
  const auto xst = contiguous_strides(x.shape);
  int64_t total = 1;
  for (int64_t s : a.rshape) total *= s;
  std::vector<int64_t> pos(a.rshape.size(), 0);
  for (int64_t k = 0; k < total; ++k) {
    std::vector<int64_t> bpos(a.bshape.size(), 0);
    for (size_t r = 0; r < a.rshape.size(); ++r)
      if (a.rsrc[r] < 0) bpos[static_cast<size_t>(-1 - a.rsrc[r])] = pos[r];
    int64_t off = 0;
    for (size_t d = 0; d < a.per_dim.size(); ++d) {
      int64_t i;
      if (a.per_dim[d].sliced) {
        size_t r = 0;
        while (a.rsrc[r] != static_cast<int>(d)) ++r;
        i = pos[r];
      } else {
        const auto& s = a.per_dim[d].shape;
        const auto st = contiguous_strides(s);
        int64_t e = 0;
        for (size_t j = 0; j < s.size(); ++j)
          if (s[j] != 1) e += bpos[a.bshape.size() - s.size() + j] * st[j];
        i = a.per_dim[d].values[static_cast<size_t>(e)];
        const int64_t n = x.shape[d];
        if (i < -n || i >= n)
          return c.error("index " + std::to_string(i) + " is out of bounds for dim " +
                         std::to_string(d) + " of size " + std::to_string(n));
        if (i < 0) i += n;
      }
      off += i * xst[d];
    }
    fn(k, pos, off);
    for (int64_t d = static_cast<int64_t>(a.rshape.size()) - 1; d >= 0; --d) {
      if (++pos[d] < a.rshape[d]) break;
      pos[d] = 0;
    }
  }
  return Status::ok();
}

// index.Tensor(Tensor self, Tensor?[] indices): x[indices], indices known only at run time
// (CLIP's argmax pooling); the elements are copied as bytes (exact for every dtype).
Status index(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  AdvancedIndex a;
  NEURONC_RETURN_IF_ERROR_(plan_index(c, *x, c.tensor_list("indices"), a));
  if (a.data_dependent) return Status::ok();
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, a.rshape));
  if (c.dry_run()) return Status::ok();
  const size_t es = dtype_size(x->dtype);
  HostTensor& o = c.output(0);
  return for_each_indexed(c, *x, a, [&](int64_t k, const std::vector<int64_t>&, int64_t off) {
    std::memcpy(o.data + k * es, x->data + off * es, es);
  });
}

// index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False)
Status index_put(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* values, c.required("values"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  if (x->dtype == TensorDType::c64) return c.error("complex tensors are not supported here");
  const bool accumulate = c.get_bool("accumulate", false);
  AdvancedIndex a;
  NEURONC_RETURN_IF_ERROR_(plan_index(c, *x, c.tensor_list("indices"), a));
  if (a.data_dependent) return Status::ok();
  const std::vector<int64_t>& rshape = a.rshape;
  // values must broadcast to rshape.
  if (values->dtype == TensorDType::c64) return c.error("complex values are not supported");
  if (values->shape.size() > rshape.size())
    return c.error("values shape " + shape_str(values->shape) + " cannot broadcast to " +
                   shape_str(rshape));
  for (size_t i = 0; i < values->shape.size(); ++i) {
    const int64_t v = values->shape[values->shape.size() - 1 - i];
    const int64_t r = rshape[rshape.size() - 1 - i];
    if (v != r && v != 1)
      return c.error("values shape " + shape_str(values->shape) + " cannot broadcast to " +
                     shape_str(rshape));
  }
  if (c.dry_run()) return Status::ok();
  // Copy self, then scatter.
  HostTensor& o = c.output(0);
  if (x->nbytes()) std::memcpy(o.data, x->data, x->nbytes());
  std::vector<double> ov = to_double(o);
  const std::vector<double> vv = to_double(*values);
  const auto vst = contiguous_strides(values->shape);
  NEURONC_RETURN_IF_ERROR_(
      for_each_indexed(c, *x, a, [&](int64_t, const std::vector<int64_t>& pos, int64_t off) {
        int64_t voff = 0;
        for (size_t j = 0; j < values->shape.size(); ++j)
          if (values->shape[j] != 1) voff += pos[rshape.size() - values->shape.size() + j] * vst[j];
        ov[off] = accumulate ? ov[off] + vv[voff] : vv[voff];
      }));
  if (dtype_is_integral(o.dtype)) {
    std::vector<int64_t> iv(ov.begin(), ov.end());
    from_int64(o, iv);
  } else {
    from_double(o, ov);
  }
  return Status::ok();
}

// gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False): out[p] = self[p with
// dim replaced by index[p]], indices known only at run time (RoBERTa's cumsum position ids).
Status gather(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* idx, c.required("index"));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  if (!dtype_is_integral(idx->dtype) || idx->dtype == TensorDType::boolean)
    return c.error("index dtype is " + dtype_str(idx->dtype) + ", expected an integer type");
  if (idx->rank() != x->rank())
    return c.error("index " + shape_str(idx->shape) + " and self " + shape_str(x->shape) +
                   " must have the same rank");
  for (int64_t i = 0; i < x->rank(); ++i)
    if (i != d && idx->shape[i] > x->shape[i])
      return c.error("index " + shape_str(idx->shape) + " is larger than self " +
                     shape_str(x->shape) + " in dim " + std::to_string(i));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, idx->shape));
  if (c.dry_run()) return Status::ok();
  const size_t es = dtype_size(x->dtype);
  const auto xst = contiguous_strides(x->shape);
  const auto ist = contiguous_strides(idx->shape);
  const auto iv = to_int64(*idx);
  HostTensor& o = c.output(0);
  for (int64_t k = 0; k < idx->numel(); ++k) {
    int64_t off = 0;
    for (int64_t i = 0; i < x->rank(); ++i) {
      int64_t p = (k / ist[i]) % idx->shape[i];
      if (i == d) {
        p = iv[static_cast<size_t>(k)];
        const int64_t n = x->shape[d];
        if (p < -n || p >= n)
          return c.error("index " + std::to_string(p) + " is out of bounds for dim " +
                         std::to_string(d) + " of size " + std::to_string(n));
        if (p < 0) p += n;
      }
      off += p * xst[i];
    }
    std::memcpy(o.data + k * es, x->data + off * es, es);
  }
  return Status::ok();
}

// index_copy(Tensor self, int dim, Tensor index, Tensor source)
Status index_copy(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* idx, c.required("index"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* src, c.required("source"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  if (idx->rank() > 1 || !dtype_is_integral(idx->dtype) || idx->dtype == TensorDType::boolean)
    return c.error("index must be a 0-D or 1-D integer tensor, found " + dtype_str(idx->dtype) +
                   shape_str(idx->shape));
  std::vector<int64_t> want = x->shape;
  if (!want.empty()) want[d] = idx->numel();
  if (src->dtype != x->dtype || src->shape != want)
    return c.error("source is " + dtype_str(src->dtype) + shape_str(src->shape) + ", expected " +
                   dtype_str(x->dtype) + shape_str(want));
  if (c.dry_run()) return Status::ok();
  HostTensor& o = c.output(0);
  if (x->nbytes()) std::memcpy(o.data, x->data, x->nbytes());
  const int64_t n = x->rank() ? x->shape[d] : 1;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x->shape[i];
  for (int64_t i = d + 1; i < x->rank(); ++i) inner *= x->shape[i];
  const size_t row = static_cast<size_t>(inner) * dtype_size(x->dtype);
  const auto iv = to_int64(*idx);
  const int64_t m = static_cast<int64_t>(iv.size());
  for (int64_t j = 0; j < m; ++j) {
    int64_t i = iv[j];
    if (i < -n || i >= n)
      return c.error("index " + std::to_string(i) + " is out of bounds for dim " +
                     std::to_string(d) + " of size " + std::to_string(n));
    if (i < 0) i += n;
    for (int64_t a = 0; a < outer; ++a)
      if (row) std::memcpy(o.data + (a * n + i) * row, src->data + (a * m + j) * row, row);
  }
  return Status::ok();
}

}  // namespace

void register_indexing_kernels(KernelTable& t) {
  t.add("aten.index.Tensor", index);
  t.add("aten.gather.default", gather);
  t.add("aten.index_put.default", index_put);
  t.add("aten.index_put_.default", index_put);
  t.add("aten.index_copy.default", index_copy);
}

}  // namespace neuronc::host
