// The dependency tracker (device/dependency_tracker.h): which recorded accesses conflict with
// a new one (overlapping bytes, one a write, another thread), and what recording with
// retirement forgets.
#include "device/dependency_tracker.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace neuronc::device
