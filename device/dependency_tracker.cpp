// The dependency tracker (dependency_tracker.h).
#include "device/dependency_tracker.h"

namespace neuronc::device {

void DependencyTracker::add_retiring(const MemoryAccess& a) {
  auto& list = accesses_[static_cast<int>(a.rect.memory)];
  if (a.write)
    std::erase_if(list, [&](const MemoryAccess& b) { return covers(a.rect, b.rect); });
  else
    std::erase_if(list, [&](const MemoryAccess& b) {
      return !b.write && b.thread == a.thread && covers(a.rect, b.rect);
    });
  list.push_back(a);
}

size_t DependencyTracker::size() const {
  size_t n = 0;
  for (const auto& list : accesses_) n += list.size();
  return n;
}

void DependencyTracker::clear() {
  for (auto& list : accesses_) list.clear();
}

}  // namespace neuronc::device
