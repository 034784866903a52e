// Strided HBM views (hbm_view.h).
#include "codegen/hbm_view.h"

#include <algorithm>
#include <stdexcept>

namespace neuronc::codegen {

int64_t HbmView::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

bool HbmView::is_contiguous() const {
  int64_t expect = 1;
  for (int64_t i = rank() - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

HbmView HbmView::contiguous(device::DType dtype, uint64_t base, std::vector<int64_t> shape) {
  HbmView v;
  v.dtype = dtype;
  v.base = base;
  v.shape = std::move(shape);
  v.strides.assign(v.shape.size(), 1);
  for (int64_t i = v.rank() - 2; i >= 0; --i) v.strides[i] = v.strides[i + 1] * v.shape[i + 1];
  return v;
}

HbmView HbmView::permute(const std::vector<int64_t>& dims) const {
  HbmView v = *this;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i] < 0 ? dims[i] + rank() : dims[i];
    v.shape[i] = shape.at(d);
    v.strides[i] = strides.at(d);
  }
  return v;
}

HbmView HbmView::expand(const std::vector<int64_t>& to) const {
  HbmView v = *this;
  const int64_t lead = static_cast<int64_t>(to.size()) - rank();
  if (lead < 0) throw std::logic_error("expand to a lower rank");
  v.shape = to;
  v.strides.assign(to.size(), 0);
  for (int64_t i = 0; i < rank(); ++i) {
    const int64_t j = i + lead;
    if (shape[i] == to[j]) {
      v.strides[j] = shape[i] == 1 ? 0 : strides[i];
    } else if (shape[i] == 1) {
      v.strides[j] = 0;
    } else {
      throw std::logic_error("expand of a non-singleton dimension");
    }
  }
  return v;
}

HbmView HbmView::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  HbmView v = *this;
  const int64_t n = shape.at(dim);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  v.offset += start * strides[dim];
  v.shape[dim] = (end - start + step - 1) / step;
  v.strides[dim] = strides[dim] * step;
  return v;
}

HbmView HbmView::select(int64_t dim, int64_t index) const {
  HbmView v = *this;
  if (index < 0) index += shape.at(dim);
  v.offset += index * strides.at(dim);
  v.shape.erase(v.shape.begin() + dim);
  v.strides.erase(v.strides.begin() + dim);
  return v;
}

std::optional<HbmView> HbmView::reshape(const std::vector<int64_t>& to) const {
  // PyTorch's at::detail::computeStride: walk chunks of old dims that are contiguous among
  // themselves and match them to runs of new dims with the same element count.
  HbmView v = *this;
  v.shape = to;
  v.strides.assign(to.size(), 1);
  int64_t numel_old = numel();
  if (numel_old == 0) {
    v = contiguous(dtype, base, to);
    v.offset = offset;
    return v;
  }
  if (rank() == 0) {
    for (auto& s : v.strides) s = 1;
    return v;
  }
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = rank() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= shape[tensor_d];
    if (tensor_d == 0 ||
        (shape[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || to[view_d] == 1)) {
        v.strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= to[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return v;
}

void coalesce(std::vector<int64_t>& sizes, std::vector<std::vector<int64_t>>& strides) {
  std::vector<int64_t> s;
  std::vector<std::vector<int64_t>> st(strides.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!s.empty()) {
      bool merge = true;
      for (size_t k = 0; k < strides.size(); ++k)
        merge = merge && st[k].back() == strides[k][d] * sizes[d];
      if (merge) {
        s.back() *= sizes[d];
        for (size_t k = 0; k < strides.size(); ++k) st[k].back() = strides[k][d];
        continue;
      }
    }
    s.push_back(sizes[d]);
    for (size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
  }
  if (s.empty()) {
    s.push_back(1);
    for (auto& x : st) x.push_back(0);
  }
  sizes = std::move(s);
  strides = std::move(st);
}

}  // namespace neuronc::codegen
