#include "frontend/tensor_view.h"

namespace neuronc::frontend {

std::string int_list_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size(), 1);
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    if (sizes[i] > 1 && acc <= INT64_MAX / sizes[i]) acc *= sizes[i];
  }
  return st;
}

std::string view_problem(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                         int64_t storage_offset, size_t element_size, uint64_t storage_bytes) {
  if (sizes.size() > kMaxTensorRank) {
    return "rank " + std::to_string(sizes.size()) + " exceeds the limit of " +
           std::to_string(kMaxTensorRank);
  }
  if (sizes.size() != strides.size()) {
    return "sizes " + int_list_string(sizes) + " and strides " + int_list_string(strides) +
           " differ in rank";
  }
  if (storage_offset < 0)
    return "storage offset is negative (" + std::to_string(storage_offset) + ")";
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      return "size " + std::to_string(i) + " is negative in " + int_list_string(sizes);
    if (strides[i] < 0) {
      return "stride " + std::to_string(i) + " is negative in " + int_list_string(strides);
    }
    if (sizes[i] == 0) empty = true;
  }
  if (empty) return "";
  // Last element index: offset + sum((size_i - 1) * stride_i), then +1 elements, * element size.
  unsigned __int128 last = static_cast<uint64_t>(storage_offset);
  for (size_t i = 0; i < sizes.size(); ++i) {
    last += static_cast<unsigned __int128>(sizes[i] - 1) * static_cast<uint64_t>(strides[i]);
    if (last > (static_cast<unsigned __int128>(1) << 100)) return "view size overflows";
  }
  unsigned __int128 need = (last + 1) * element_size;
  if (need > storage_bytes) {
    std::string n = need > UINT64_MAX ? std::string("more than 2^64")
                                      : std::to_string(static_cast<uint64_t>(need));
    return "needs " + n + " bytes (offset " + std::to_string(storage_offset) + ", sizes " +
           int_list_string(sizes) + ", strides " + int_list_string(strides) +
           ") but the storage has " + std::to_string(storage_bytes);
  }
  return "";
}

}  // namespace neuronc::frontend
