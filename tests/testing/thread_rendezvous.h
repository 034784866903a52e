// Threads standing in for the processes (MPI ranks) a run is split over, in tests: each thread
// is one process, and all_gather is a rendezvous of all of them. The device model's and the
// loader's ProcessGroup interfaces wrap it (tests/device/process_split_test.cpp,
// tests/e2e/tensor_parallel_test.cpp).
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

}  // namespace neuronc::testing
