// Validation of a strided view onto a storage of known size: the one check every weight and
// sample tensor passes before the IR points at its bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace neuronc::frontend {

inline constexpr size_t kMaxTensorRank = 64;

// Returns "" when sizes/strides/offset are non-negative, the rank is at most kMaxTensorRank and
// the view fits in `storage_bytes` (elements of `element_size`), all with overflow checks.
// Otherwise a message like "needs 40 bytes (offset 1, sizes [3,3], strides [3,1]) but the
// storage has 36".
std::string view_problem(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                         int64_t storage_offset, size_t element_size, uint64_t storage_bytes);

// Contiguous strides for `sizes`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

// "[3,3]"
std::string int_list_string(const std::vector<int64_t>& v);

}  // namespace neuronc::frontend
