// The dependency tracker (dependency_tracker.h).
#include "device/dependency_tracker.h"

namespace neuronc::device {

void DependencyTracker::List::index(uint32_t i) {
  const int64_t b0 = lo[i], b1 = hi[i];
  const int64_t bucket = b0 >> kShift;
  const int64_t span = ((b1 - 1) >> kShift) - bucket;  // -1 for an empty access
  size_t level = 0;
  while (level < kLevelSpan.size() && span > kLevelSpan[level]) ++level;
  if (b0 < 0 || bucket >= kMaxBuckets || level == kLevelSpan.size()) {
    wide.push_back(i);
    return;
  }
  std::vector<std::vector<uint32_t>>& buckets = levels[level];
  if (static_cast<size_t>(bucket) >= buckets.size())
    buckets.resize(static_cast<size_t>(bucket) + 1);
  buckets[static_cast<size_t>(bucket)].push_back(i);
}

void DependencyTracker::List::push(const MemoryAccess& a) {
  accesses.push_back(a);
  lo.push_back(a.rect.b0);
  hi.push_back(std::max(a.rect.b0, a.rect.b1));
  index(static_cast<uint32_t>(accesses.size() - 1));
}

void DependencyTracker::List::compact_if_sparse() {
  if (retired < 64 || retired * 2 < accesses.size()) return;
  size_t k = 0;
  for (size_t i = 0; i < accesses.size(); ++i) {
    if (!live(i)) continue;
    accesses[k] = accesses[i];
    lo[k] = lo[i];
    hi[k] = hi[i];
    ++k;
  }
  accesses.resize(k);
  lo.resize(k);
  hi.resize(k);
  retired = 0;
  for (auto& buckets : levels)
    for (auto& b : buckets) b.clear();
  wide.clear();
  for (size_t i = 0; i < k; ++i) index(static_cast<uint32_t>(i));
}

void DependencyTracker::add(const MemoryAccess& a) {
  lists_[static_cast<int>(a.rect.memory)].push(a);
}

void DependencyTracker::add_retiring(const MemoryAccess& a) {
  add_retiring_after_conflicts(std::span<const MemoryAccess>(&a, 1), [](const MemoryAccess&) {});
}

size_t DependencyTracker::size() const {
  size_t n = 0;
  for (const List& l : lists_) n += l.accesses.size() - l.retired;
  return n;
}

void DependencyTracker::clear() {
  for (List& l : lists_) l = List{};
}

}  // namespace neuronc::device
