// Zeroed byte blocks for results the size of a model's weights (a folded bf16 cast, stacked
// sibling weights) and for the device model's memories (the HBM arena, SBUF). A large block is an
// anonymous mapping of its own with transparent huge pages asked for: the kernel hands it out
// zeroed, so nothing clears it twice, and it is faulted in 2 MiB at a time instead of 4 KiB. On
// this project's VMs a 4 KiB fault costs microseconds: 672 MB of 8 MB calloc blocks took 4.8-5.3 s
// to fill where huge-page mappings took 1.0-1.2 s.
#pragma once

#include <cstddef>
#include <memory>

namespace neuronc::kernels {

// `n` zero bytes, freed when the last owner goes (an empty block for n = 0 is still non-null).
// Throws std::bad_alloc when the memory cannot be had.
std::shared_ptr<std::byte> zeroed_bytes(size_t n);

// Zeroed blocks cut from large zeroed_bytes blocks (`chunk` bytes each), so many results smaller
// than a huge page (a ResNet's batch-norm-folded convolution weights) still fault in 2 MiB at a
// time. A block keeps the chunk it was cut from alive; one of at least half a chunk gets a
// zeroed_bytes block of its own. Blocks are 64-byte aligned. Not thread-safe.
class ZeroedArena {
 public:
  explicit ZeroedArena(size_t chunk = size_t{64} << 20) : chunk_(chunk) {}
  std::shared_ptr<std::byte> take(size_t n);

 private:
  size_t chunk_;
  std::shared_ptr<std::byte> block_;
  size_t used_ = 0, size_ = 0;
};

}  // namespace neuronc::kernels
