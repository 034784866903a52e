// The nearest-rank percentile that `bench`, `verify --dataset` and `compare` report.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace neuronc::tools {

// The p-th percentile (0 < p <= 100) of `v` by nearest rank: the smallest value with at least
// p % of the values at or below it. 0 for no values.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace neuronc::tools
