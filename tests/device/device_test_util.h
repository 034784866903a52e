// Small helpers for device tests: one-instruction programs and typed SBUF/HBM access.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "device/isa.h"
#include "device/numerics.h"
#include "device/simulator.h"

namespace neuronc::device::device_test {

inline Instruction inst(Operation op, std::vector<SemaphoreWait> waits = {},
                        std::vector<SemaphoreSignal> signals = {}) {
  Instruction i;
  i.op = std::move(op);
  i.waits = std::move(waits);
  i.signals = std::move(signals);
  return i;
}

inline Program program(int cores = 1, uint64_t hbm_size = 1 << 20, uint32_t semaphores = 8) {
  Program p;
  p.cores.resize(cores);
  p.hbm_size = hbm_size;
  p.num_semaphores = semaphores;
  return p;
}

inline Program single(Engine e, Operation op, uint64_t hbm_size = 1 << 20) {
  Program p = program(1, hbm_size);
  p.cores[0].stream(e).push_back(inst(std::move(op)));
  return p;
}

// Partition p of an on-chip operand's memory.
inline std::span<std::byte> partition_of(Simulator& sim, int core, const MemRef& m, int p) {
  return m.memory == MemoryKind::sbuf ? sim.sbuf(core, m.partition_start + p)
                                      : sim.psum(core, m.partition_start + p);
}

// Row-major values of a contiguous on-chip operand: [partition][element].
inline void write(Simulator& sim, int core, const MemRef& m, const std::vector<float>& v) {
  const uint64_t n = m.free_size();
  const uint32_t sz = dtype_size(m.dtype);
  for (int p = 0; p < m.partition_count; ++p) {
    std::span<std::byte> mem = partition_of(sim, core, m, p);
    for (uint64_t i = 0; i < n; ++i)
      store_f32(mem.data() + m.offset + i * sz, m.dtype, v[p * n + i]);
  }
}

inline std::vector<float> read(Simulator& sim, int core, const MemRef& m) {
  const uint64_t n = m.free_size();
  const uint32_t sz = dtype_size(m.dtype);
  std::vector<float> v(m.partition_count * n);
  for (int p = 0; p < m.partition_count; ++p) {
    std::span<std::byte> mem = partition_of(sim, core, m, p);
    for (uint64_t i = 0; i < n; ++i)
      v[p * n + i] = load_f32(mem.data() + m.offset + i * sz, m.dtype);
  }
  return v;
}

// Deterministic pseudo-random floats in [-1, 1), rounded to `t`.
inline std::vector<float> random_values(size_t n, DType t, uint64_t seed) {
  StochasticRounder g(seed);
  std::vector<float> v(n);
  std::byte buf[4];
  for (auto& x : v) {
    x = static_cast<float>(g.next_u32()) / 2147483648.0f - 1.0f;
    store_f32(buf, t, x);
    x = load_f32(buf, t);
  }
  return v;
}

}  // namespace neuronc::device::device_test
