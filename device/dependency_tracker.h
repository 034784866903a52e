// The one dependency tracker: which earlier memory accesses a new access depends on. Accesses
// are byte rects (device::ByteRect) made by threads (an engine stream, a DMA queue, a
// collective unit, or, in codegen's scheduler, one instruction each); two accesses conflict
// when their rects overlap, at least one is a write and they come from different threads (a
// thread's own accesses are ordered by the thread). Four users, one geometry and one rule:
//  - the race checker (simulator.cpp) asks whether each conflicting access is ordered before
//    the new one by the vector clocks;
//  - the functional simulator's graph of a run's log (simulator.cpp, each logged instruction
//    one thread) orders each instruction after every conflicting one, to run them in parallel;
//  - codegen's emitter waits on the latest conflicting access of each other thread;
//  - codegen's scheduler orders an instruction after every conflicting one.
// What a user does with a conflict, and when it forgets accesses, is its own: the emitter, the
// scheduler and the functional simulator's log graph record in program (or log) order and
// retire covered accesses (add_retiring_after_conflicts, an instruction's accesses at once);
// the race checker records in completion order and prunes by clock (erase_if).
// Not thread-safe, not even for concurrent queries (they share a scratch list); deterministic
// (conflicts come in recording order within a memory kind).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
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
    const List& l = lists_[static_cast<int>(rect.memory)];
    for_each_in_bytes(l, rect, [&](size_t i) {
      const MemoryAccess& a = l.accesses[i];
      if (a.thread != thread && (write || a.write) && overlaps(rect, a.rect)) f(a);
      return false;
    });
  }
  // The first conflicting access for which `pred(const MemoryAccess&)` holds, or null.
  template <typename P>
  const MemoryAccess* find_conflict(const ByteRect& rect, bool write, uint32_t thread,
                                    P&& pred) const {
    const List& l = lists_[static_cast<int>(rect.memory)];
    const MemoryAccess* found = nullptr;
    for_each_in_bytes(l, rect, [&](size_t i) {
      const MemoryAccess& a = l.accesses[i];
      if (a.thread != thread && (write || a.write) && overlaps(rect, a.rect) && pred(a)) found = &a;
      return found != nullptr;
    });
    return found;
  }

  // Records an access.
  void add(const MemoryAccess& a);
  // Records an access the caller has ordered after every access it conflicts with, and retires
  // what it makes redundant: a write every access it covers, a read its thread's reads it
  // covers. Every later access that would conflict with a retired one conflicts with this one
  // or follows it in its thread, so it is still ordered after the retired access.
  void add_retiring(const MemoryAccess& a);

  // One instruction's accesses `as` (all by one thread): calls `f(const MemoryAccess&)` for
  // every recorded access that conflicts with each of them in turn, then records them in order,
  // each retiring what it makes redundant (as add_retiring says). The same as for_each_conflict
  // of each and then add_retiring of each, one call after another, but each access's bytes are
  // looked up once, not twice (in codegen's whole-program placements, the lookups were a third
  // of the time).
  template <typename F>
  void add_retiring_after_conflicts(std::span<const MemoryAccess> as, F&& f) {
    if (found_.size() < as.size()) found_.resize(as.size());
    pushed_.resize(as.size());
    for (size_t k = 0; k < as.size(); ++k) {
      const MemoryAccess& n = as[k];
      const List& l = lists_[static_cast<int>(n.rect.memory)];
      const int64_t b0 = n.rect.b0, b1 = n.rect.b1;
      // Those sharing its bytes (its conflicts among them), and those within its bytes (what
      // it may retire).
      gather(
          l, b0, b1,
          [&](int64_t x, int64_t y) {
            return (x < b1 && b0 < y) || (b0 <= x && y <= b1 && x <= y);
          },
          found_[k]);
      for (uint32_t i : found_[k]) {
        const MemoryAccess& a = l.accesses[i];
        if (a.thread != n.thread && (n.write || a.write) && overlaps(n.rect, a.rect)) f(a);
      }
    }
    for (size_t k = 0; k < as.size(); ++k) {
      const MemoryAccess& n = as[k];
      List& l = lists_[static_cast<int>(n.rect.memory)];
      // What a lookup of n's bytes now would find: the accesses found above that are still
      // live (the instruction's earlier accesses may have retired some), and those earlier
      // accesses themselves.
      auto retire_covered = [&](uint32_t i) {
        const MemoryAccess& b = l.accesses[i];
        if (l.live(i) && retires(n, b)) l.retire(i);
      };
      for (uint32_t i : found_[k]) retire_covered(i);
      for (size_t j = 0; j < k; ++j)
        if (as[j].rect.memory == n.rect.memory) retire_covered(pushed_[j]);
      pushed_[k] = static_cast<uint32_t>(l.accesses.size());
      l.push(n);
    }
    // Compacting renumbers the accesses: only once the instruction's are all in.
    for (List& l : lists_) l.compact_if_sparse();
  }

  // Forgets every access for which `pred(const MemoryAccess&)` holds.
  template <typename P>
  void erase_if(P&& pred) {
    for (List& l : lists_) {
      for (size_t i = 0; i < l.accesses.size(); ++i)
        if (l.live(i) && pred(l.accesses[i])) l.retire(i);
      l.compact_if_sparse();
    }
  }
  size_t size() const;
  void clear();

 private:
  // One memory kind's accesses in recording order. A retired access stays in place, marked by
  // an empty byte range, until retired ones outnumber the rest. `lo` and `hi` (each access's
  // bytes [b0, b1)) sit apart from the accesses so a test reads no access.
  // The index: buckets of 2^kShift bytes, in levels. An access whose last byte is at most
  // kLevelSpan[L] buckets after its first (for the least such L) is listed under the bucket of
  // its first byte in level L; any longer one (and any beyond kMaxBuckets: HBM's few accesses
  // far into the arena) in `wide`. A query looks, in each level, at the buckets from
  // kLevelSpan[L] before its first byte's to its last byte's, and at `wide`. Most accesses are
  // a tile's row of at most two buckets, so a query mostly reads the buckets its bytes touch.
  // (While compiling ResNet-101 an SBUF list holds ~1500 accesses, of which ~6 share bytes with
  // a new one; one level, looking 16 buckets back, read ~200 of them per query.)
  static constexpr int kShift = 11;
  static constexpr std::array<int64_t, 3> kLevelSpan = {1, 3, 15};
  static constexpr int64_t kMaxBuckets = int64_t{1} << 12;  // 8 MiB: any SBUF or PSUM partition
  struct List {
    std::vector<MemoryAccess> accesses;
    std::vector<int64_t> lo, hi;
    std::array<std::vector<std::vector<uint32_t>>, kLevelSpan.size()> levels;
    std::vector<uint32_t> wide;
    size_t retired = 0;
    bool live(size_t i) const { return lo[i] <= hi[i]; }
    void retire(size_t i) {
      lo[i] = std::numeric_limits<int64_t>::max();
      hi[i] = std::numeric_limits<int64_t>::min();
      ++retired;
    }
    void push(const MemoryAccess& a);
    void index(uint32_t i);
    void compact_if_sparse();
  };
  // The accesses of `l` for which `keep(lo, hi)` holds among those the index finds for bytes
  // [b0, b1), into `out` in recording order.
  template <typename K>
  static void gather(const List& l, int64_t b0, int64_t b1, K&& keep, std::vector<uint32_t>& out) {
    out.clear();
    for (uint32_t i : l.wide)
      if (keep(l.lo[i], l.hi[i])) out.push_back(i);
    for (size_t level = 0; level < kLevelSpan.size(); ++level) {
      const std::vector<std::vector<uint32_t>>& buckets = l.levels[level];
      const int64_t nb = static_cast<int64_t>(buckets.size());
      const int64_t first = std::max<int64_t>(0, (b0 >> kShift) - kLevelSpan[level]);
      // Through b0's bucket even when b1 == b0: an empty access at a bucket's first byte is
      // listed there, and an empty write at that byte covers it.
      const int64_t last = std::min<int64_t>(nb - 1, std::max(b0, b1 - 1) >> kShift);
      for (int64_t b = first; b <= last; ++b)
        for (uint32_t i : buckets[static_cast<size_t>(b)])
          if (keep(l.lo[i], l.hi[i])) out.push_back(i);
    }
    std::sort(out.begin(), out.end());
  }
  // Calls `visit(i)` for the accesses of `l` whose bytes overlap `rect`'s, in recording order,
  // until it returns true.
  template <typename V>
  void for_each_in_bytes(const List& l, const ByteRect& rect, V&& visit) const {
    const int64_t b0 = rect.b0, b1 = rect.b1;
    gather(
        l, b0, b1, [&](int64_t lo, int64_t hi) { return lo < b1 && b0 < hi; }, scratch_);
    for (uint32_t i : scratch_)
      if (visit(i)) return;
  }
  // Whether recording `a` (ordered after every access it conflicts with) retires `b`.
  static bool retires(const MemoryAccess& a, const MemoryAccess& b) {
    return covers(a.rect, b.rect) && (a.write || (!b.write && b.thread == a.thread));
  }
  std::array<List, 3> lists_;  // per MemoryKind
  mutable std::vector<uint32_t> scratch_;
  std::vector<std::vector<uint32_t>> found_;  // add_retiring_after_conflicts' lookups
  std::vector<uint32_t> pushed_;              // and where it recorded each access
};

}  // namespace neuronc::device
