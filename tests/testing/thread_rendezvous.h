// Threads standing in for the processes (MPI ranks) a run is split over, in tests: each thread
// is one process, and all_gather is a rendezvous of all of them (tests/device/
// process_split_test.cpp, tests/e2e/tensor_parallel_test.cpp).
#pragma once

#include <barrier>
#include <cstddef>
#include <span>
#include <vector>

namespace neuronc::testing {

class ThreadRendezvous {
 public:
  explicit ThreadRendezvous(int size) : slots_(size), barrier_(size) {}
  int size() const { return static_cast<int>(slots_.size()); }
  // Called by the thread of each rank; returns every rank's bytes, in rank order.
  std::vector<std::vector<std::byte>> all_gather(int rank, std::span<const std::byte> mine) {
    slots_[rank].assign(mine.begin(), mine.end());
    barrier_.arrive_and_wait();
    std::vector<std::vector<std::byte>> all = slots_;
    barrier_.arrive_and_wait();  // nobody writes a slot before everyone has read them all
    return all;
  }

 private:
  std::vector<std::vector<std::byte>> slots_;
  std::barrier<> barrier_;
};

// Rank `rank` of a rendezvous as a ProcessGroup: `Group` is device::ProcessGroup or the
// loader's neuronc::ProcessGroup, `Gathered` its all_gather's result type. Counts its calls.
template <typename Group, typename Gathered>
class ThreadProcess final : public Group {
 public:
  ThreadProcess(ThreadRendezvous& r, int rank) : r_(r), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return r_.size(); }
  Gathered all_gather(std::span<const std::byte> mine) override {
    ++calls;
    return r_.all_gather(rank_, mine);
  }
  int calls = 0;

 private:
  ThreadRendezvous& r_;
  int rank_;
};

}  // namespace neuronc::testing
