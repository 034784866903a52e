// The dependency tracker (device/dependency_tracker.h): which recorded accesses conflict with
// a new one (overlapping bytes, one a write, another thread), and what recording with
// retirement forgets.
#include "device/dependency_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace neuronc::device {
namespace {

ByteRect rect(MemoryKind m, uint16_t p0, uint16_t p1, int64_t b0, int64_t b1) {
  ByteRect r;
  r.memory = m;
  r.p0 = p0;
  r.p1 = p1;
  r.b0 = b0;
  r.b1 = b1;
  return r;
}

std::vector<uint32_t> conflicts(const DependencyTracker& t, const ByteRect& r, bool write,
                                uint32_t thread) {
  std::vector<uint32_t> seqs;
  t.for_each_conflict(r, write, thread, [&](const MemoryAccess& a) { seqs.push_back(a.seq); });
  return seqs;
}

TEST(DependencyTracker, ConflictsNeedOverlapAWriteAndAnotherThread) {
  DependencyTracker t;
  t.add({rect(MemoryKind::sbuf, 0, 64, 0, 256), /*write=*/true, /*thread=*/0, /*seq=*/1});
  t.add({rect(MemoryKind::sbuf, 0, 64, 256, 512), /*write=*/false, 1, 2});
  t.add({rect(MemoryKind::psum, 0, 64, 0, 256), /*write=*/true, 1, 3});
  // A read of the written bytes by another thread; the same bytes in PSUM are another memory.
  EXPECT_EQ(conflicts(t, rect(MemoryKind::sbuf, 32, 33, 100, 101), false, 2),
            std::vector<uint32_t>{1});
  // Reads do not conflict with reads; the writing thread is ordered with itself.
  EXPECT_TRUE(conflicts(t, rect(MemoryKind::sbuf, 0, 64, 300, 310), false, 2).empty());
  EXPECT_TRUE(conflicts(t, rect(MemoryKind::sbuf, 0, 64, 0, 10), false, 0).empty());
  // A write conflicts with both, in recording order; disjoint partitions do not overlap.
  EXPECT_EQ(conflicts(t, rect(MemoryKind::sbuf, 0, 64, 200, 300), true, 2),
            (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(conflicts(t, rect(MemoryKind::sbuf, 64, 128, 0, 512), true, 2).empty());
  // find_conflict: the first conflicting access the predicate accepts.
  const MemoryAccess* a = t.find_conflict(rect(MemoryKind::sbuf, 0, 64, 200, 300), true, 2,
                                          [](const MemoryAccess& x) { return x.seq > 1; });
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->seq, 2u);
  EXPECT_EQ(t.size(), 3u);
  t.erase_if([](const MemoryAccess& x) { return x.seq <= 2; });
  EXPECT_EQ(t.size(), 1u);
  t.clear();
  EXPECT_EQ(t.size(), 0u);
}

TEST(DependencyTracker, RetiringWriteForgetsWhatItCoversAndReadItsThreadsReads) {
  DependencyTracker t;
  const ByteRect small = rect(MemoryKind::hbm, 0, 1, 0, 64);
  const ByteRect big = rect(MemoryKind::hbm, 0, 1, 0, 128);
  t.add_retiring({small, false, 0, 1});
  t.add_retiring({small, false, 1, 2});
  // A read retires only its own thread's covered reads.
  t.add_retiring({big, false, 0, 3});
  EXPECT_EQ(conflicts(t, small, true, 5), (std::vector<uint32_t>{2, 3}));
  // A write retires everything it covers, any thread, reads and writes.
  t.add_retiring({big, true, 4, 4});
  EXPECT_EQ(conflicts(t, small, false, 5), std::vector<uint32_t>{4});
  EXPECT_EQ(t.size(), 1u);
  // An access it does not cover stays.
  t.add_retiring({rect(MemoryKind::hbm, 0, 1, 64, 256), false, 1, 5});
  t.add_retiring({small, true, 2, 6});
  EXPECT_EQ(conflicts(t, big, true, 7), (std::vector<uint32_t>{4, 5, 6}));
}

// Against a plain list of every access: the same conflicts, in the same order, whatever the
// lengths (one byte to far past the index's longest level, so every level and the wide list
// hold some), offsets near 2 KiB bucket edges and far into HBM, with retirement and the
// compaction it triggers interleaved.
// Random byte rects in HBM and SBUF: lengths around the index's bucket sizes, starts on and
// beside bucket edges, some empty, some far beyond the buckets.
class RandomRects {
 public:
  explicit RandomRects(uint64_t seed) : rng_(seed) {}
  int64_t pick(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  ByteRect operator()() {
    const MemoryKind m = pick(4) == 0 ? MemoryKind::hbm : MemoryKind::sbuf;
    int64_t b0 = pick(4) == 0 ? pick(64) * 2048 - pick(3) : pick(192 * 1024);
    if (m == MemoryKind::hbm && pick(8) == 0) b0 += int64_t{1} << 33;  // beyond the buckets
    static constexpr int64_t kLengths[] = {1,    64,   2047,  2048,  2049,  4096,
                                           6000, 8192, 20000, 32768, 40000, 100000};
    const int64_t len = pick(6) == 0 ? 0 : kLengths[pick(std::size(kLengths))] + pick(3) - 1;
    const auto p0 = static_cast<uint16_t>(pick(4) * 32);
    return rect(m, p0, static_cast<uint16_t>(p0 + 32 * (1 + pick(4 - p0 / 32))), b0,
                b0 + std::max<int64_t>(0, len));
  }

 private:
  std::mt19937_64 rng_;
};

TEST(DependencyTracker, FindsWhatAScanOfEveryAccessFinds) {
  RandomRects random_rect(20261205);
  auto pick = [&](int64_t n) { return random_rect.pick(n); };
  struct Ref {
    MemoryAccess a;
    bool live = true;
  };
  std::vector<Ref> all;
  DependencyTracker t;
  for (uint32_t seq = 0; seq < 4000; ++seq) {
    const ByteRect r = random_rect();
    const bool write = pick(3) == 0;
    const auto thread = static_cast<uint32_t>(pick(5));
    // Query first, as the emitter does, then record.
    std::vector<uint32_t> want;
    for (const Ref& x : all)
      if (x.live && x.a.thread != thread && (write || x.a.write) && overlaps(r, x.a.rect))
        want.push_back(x.a.seq);
    ASSERT_EQ(conflicts(t, r, write, thread), want) << "query " << seq;
    const MemoryAccess a{r, write, thread, seq};
    if (pick(2) == 0) {
      t.add(a);
    } else {
      for (Ref& x : all)
        if (x.live && x.a.rect.memory == r.memory && covers(r, x.a.rect) &&
            r.b0 <= std::min(x.a.rect.b0, x.a.rect.b1) && x.a.rect.b1 <= r.b1 &&
            (write || (!x.a.write && x.a.thread == thread)))
          x.live = false;
      t.add_retiring(a);
    }
    all.push_back({a, true});
    ASSERT_EQ(t.size(), static_cast<size_t>(std::count_if(all.begin(), all.end(),
                                                          [](const Ref& x) { return x.live; })))
        << "after " << seq;
  }
}

// add_retiring_after_conflicts is the calls it stands for, one after another: for an
// instruction's accesses (one thread; some sharing bytes with each other, some empty), the
// conflicts of each in turn, then add_retiring of each. Checked by what each finds, by how
// many accesses stay recorded, and by a query of both trackers after each instruction.
TEST(DependencyTracker, AnInstructionsAccessesAtOnceAreTheCallsOneAfterAnother) {
  RandomRects random_rect(20261206);
  DependencyTracker one_by_one, at_once;
  for (uint32_t seq = 0; seq < 3000; ++seq) {
    const auto thread = static_cast<uint32_t>(random_rect.pick(5));
    std::vector<MemoryAccess> as;
    const int64_t n = 1 + random_rect.pick(6);
    for (int64_t k = 0; k < n; ++k) {
      // Reads, then writes, as both users record them; now and then one within an earlier one.
      ByteRect r = random_rect();
      if (k > 0 && random_rect.pick(3) == 0) {
        r = as[static_cast<size_t>(random_rect.pick(k))].rect;
        r.b1 = r.b0 + (r.b1 - r.b0) / 2;
      }
      as.push_back({r, k * 2 >= n, thread, seq});
    }
    // The conflicting accesses' seqs, in the order found: each access's in turn.
    std::vector<uint32_t> want, got;
    for (const MemoryAccess& a : as) {
      const std::vector<uint32_t> c = conflicts(one_by_one, a.rect, a.write, thread);
      want.insert(want.end(), c.begin(), c.end());
    }
    for (const MemoryAccess& a : as) one_by_one.add_retiring(a);
    at_once.add_retiring_after_conflicts(as, [&](const MemoryAccess& a) { got.push_back(a.seq); });
    ASSERT_EQ(got, want) << "instruction " << seq;
    ASSERT_EQ(at_once.size(), one_by_one.size()) << "after " << seq;
    const ByteRect probe = random_rect();
    const bool write = random_rect.pick(2) == 0;
    const auto other = static_cast<uint32_t>(random_rect.pick(5));
    ASSERT_EQ(conflicts(at_once, probe, write, other), conflicts(one_by_one, probe, write, other))
        << "after " << seq;
  }
}

}  // namespace
}  // namespace neuronc::device
