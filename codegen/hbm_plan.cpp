// HBM planning (see hbm_plan.h).
#include "codegen/hbm_plan.h"

#include <algorithm>
#include <string>
#include <utility>

#include "codegen/codegen.h"

namespace neuronc::codegen {
namespace {

// Bytes a buffer occupies in the arena (an empty buffer still gets its own aligned slot).
uint64_t footprint(const HbmBuffer& b) {
  return (std::max<uint64_t>(b.bytes, 1) + kHbmAlign - 1) / kHbmAlign * kHbmAlign;
}

}  // namespace

HbmPlan plan_hbm(std::vector<HbmBuffer>& buffers, const device::Target& t) {
  HbmPlan plan;
  uint64_t cursor = 0;
  for (auto region : {HbmBuffer::input, HbmBuffer::output, HbmBuffer::constant}) {
    for (HbmBuffer& b : buffers) {
      if (b.region != region) continue;
      b.offset = cursor;
      cursor += footprint(b);
    }
  }
  plan.scratch_base = plan.scratch_end = cursor;
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].region == HbmBuffer::scratch) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t id : order) {
    HbmBuffer& b = buffers[id];
    const uint64_t size = footprint(b);
    plan.scratch_unshared += size;
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [start, end) of overlapping lifetimes
    for (size_t o : placed) {
      const HbmBuffer& c = buffers[o];
      if (c.first <= b.last && b.first <= c.last)
        busy.push_back({c.offset, c.offset + footprint(c)});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t off = plan.scratch_base;
    for (const auto& [s, e] : busy) {
      if (off + size <= s) break;
      off = std::max(off, e);
    }
    b.offset = off;
    plan.scratch_end = std::max(plan.scratch_end, off + size);
    placed.push_back(id);
  }
  plan.size = std::max<uint64_t>(plan.scratch_end, kHbmAlign);
  if (plan.size > t.hbm_bytes_per_core)
    throw Error("the partition needs " + std::to_string(plan.size) +
                " bytes of HBM (constants, inputs, outputs and scratch after reuse), but a " +
                std::string(t.name) + " NeuronCore has " + std::to_string(t.hbm_bytes_per_core) +
                ": expected a model (at these shapes) that fits one NeuronCore's HBM");
  return plan;
}

}  // namespace neuronc::codegen
