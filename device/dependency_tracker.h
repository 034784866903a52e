// The one dependency tracker: which earlier memory accesses a new access depends on. Accesses
// are byte rects (device::ByteRect) made by threads (an engine stream, a DMA queue, a
// collective unit, or, in codegen's scheduler, one instruction each); two accesses conflict
// when their rects overlap, at least one is a write and they come from different threads (a
// thread's own accesses are ordered by the thread). Three users, one geometry and one rule:
//  - the race checker (simulator.cpp) asks whether each conflicting access is ordered before
//    the new one by the vector clocks;
//  - codegen's emitter waits on the latest conflicting access of each other thread;
//  - codegen's scheduler orders an instruction after every conflicting one.
// What a user does with a conflict, and when it forgets accesses, is its own: the emitter and
// the scheduler record in program order and retire covered accesses (add_retiring); the race
// checker records in completion order and prunes by clock (erase_if).
// Not thread-safe; deterministic (conflicts come in recording order within a memory kind).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/verifier.h"

namespace neuronc::device {

struct MemoryAccess {
  ByteRect rect;
  bool write = false;
  uint32_t thread = 0;  // who made it
  uint32_t seq = 0;     // its position in the user's order (a clock value, an instruction index)
  uint64_t tag = 0;     // the user's, e.g. which instruction (the race checker's message)
};

class DependencyTracker {
 public:
  // Calls `f(const MemoryAccess&)` for every recorded access that conflicts with an access of
  // `rect` (a write when `write`) by `thread`, in recording order.
  template <typename F>
  void for_each_conflict(const ByteRect& rect, bool write, uint32_t thread, F&& f) const {
    for (const MemoryAccess& a : accesses_[static_cast<int>(rect.memory)])
      if (a.thread != thread && (write || a.write) && overlaps(rect, a.rect)) f(a);
  }
  // The first conflicting access for which `pred(const MemoryAccess&)` holds, or null.
  template <typename P>
  const MemoryAccess* find_conflict(const ByteRect& rect, bool write, uint32_t thread,
                                    P&& pred) const {
    for (const MemoryAccess& a : accesses_[static_cast<int>(rect.memory)])
      if (a.thread != thread && (write || a.write) && overlaps(rect, a.rect) && pred(a)) return &a;
    return nullptr;
  }

  // Records an access.
  void add(const MemoryAccess& a) { accesses_[static_cast<int>(a.rect.memory)].push_back(a); }
  // Records an access the caller has ordered after every access it conflicts with, and retires
  // what it makes redundant: a write every access it covers, a read its thread's reads it
  // covers. Every later access that would conflict with a retired one conflicts with this one
  // or follows it in its thread, so it is still ordered after the retired access.
  void add_retiring(const MemoryAccess& a);

  // Forgets every access for which `pred(const MemoryAccess&)` holds.
  template <typename P>
  void erase_if(P&& pred) {
    for (auto& list : accesses_) std::erase_if(list, pred);
  }
  size_t size() const;
  void clear();

 private:
  std::array<std::vector<MemoryAccess>, 3> accesses_;  // per MemoryKind, in recording order
};

}  // namespace neuronc::device
