// Store-to-load forwarding across kernels: an activation stays in SBUF from its producer to its
// consumers when the bytes allow it.
//
// Kernels meet through HBM: a producer stores its result tile, a consumer loads it back. When
// every byte a load reads was last written by stores from SBUF tiles no instruction has written
// since, on the same partitions, the load becomes SBUF-to-SBUF copies on GpSimdE (bit-exact in
// one dtype; a float cast the load did is done by the copy, rounding as the DMA does) and
// leaves the DMA queues to the weights. A store into scratch
// HBM none of whose bytes any DMA reads any more is dropped. Runs on the relocated instruction
// list in program order, before synchronisation, so the emitter derives every dependency of the
// rewritten program from its bytes as usual. Deterministic; O(instructions x live stores).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/kernel.h"

namespace neuronc::codegen {

struct ForwardingStats {
  uint64_t loads_forwarded = 0;
  uint64_t stores_elided = 0;
  uint64_t dma_bytes_saved = 0;  // bytes of forwarded loads and elided stores
};

// Rewrites `insts` (program order, relocated). Stores whose HBM bytes start at or after
// `elidable_hbm_begin` (the scratch region) may be dropped; stores elsewhere (partition
// outputs) always stay.
ForwardingStats forward_stores(std::vector<PendingInstruction>& insts, uint64_t elidable_hbm_begin);

}  // namespace neuronc::codegen
