// Test expectation shared by the device, codegen and loader tests: two runs of the device model
// report the same timing.
#pragma once

#include <gtest/gtest.h>

#include "device/simulator.h"

namespace neuronc::device::device_test {

// Two runs' reports agree in every time and count, core by core, and in their traces, event by
// event.
inline void expect_same_timing(const RunReport& a, const RunReport& b) {
  EXPECT_EQ(a.total_time_ns, b.total_time_ns);
  EXPECT_EQ(a.instructions, b.instructions);
  EXPECT_EQ(a.hbm_read_bytes, b.hbm_read_bytes);
  EXPECT_EQ(a.hbm_write_bytes, b.hbm_write_bytes);
  EXPECT_EQ(a.mbu_percent, b.mbu_percent);
  ASSERT_EQ(a.cores.size(), b.cores.size());
  for (size_t c = 0; c < a.cores.size(); ++c) {
    EXPECT_EQ(a.cores[c].dma_active_ns, b.cores[c].dma_active_ns) << "core " << c;
    EXPECT_EQ(a.cores[c].dma_bytes, b.cores[c].dma_bytes) << "core " << c;
    for (int e = 0; e < kNumEngines; ++e) {
      EXPECT_EQ(a.cores[c].engines[e].busy_ns, b.cores[c].engines[e].busy_ns);
      EXPECT_EQ(a.cores[c].engines[e].instructions, b.cores[c].engines[e].instructions);
    }
  }
  ASSERT_EQ(a.trace.size(), b.trace.size());
  for (size_t i = 0; i < a.trace.size(); ++i) {
    EXPECT_EQ(a.trace[i].core, b.trace[i].core) << "event " << i;
    EXPECT_EQ(a.trace[i].unit, b.trace[i].unit) << "event " << i;
    EXPECT_EQ(a.trace[i].start_ns, b.trace[i].start_ns) << "event " << i;
    EXPECT_EQ(a.trace[i].end_ns, b.trace[i].end_ns) << "event " << i;
  }
}

}  // namespace neuronc::device::device_test
