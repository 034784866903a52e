// zeroed_bytes (zeroed_bytes.h).
#include "kernels/zeroed_bytes.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace neuronc::kernels {
namespace {

// From this size a block gets its own mapping: at least one whole huge page.
constexpr size_t kMappedFrom = size_t{4} << 20;

}  // namespace

std::shared_ptr<std::byte> zeroed_bytes(size_t n) {
  if (n >= kMappedFrom) {
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(p, n, MADV_HUGEPAGE);  // advice only: without it the block is still zero
#endif
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                      [n](std::byte* q) { ::munmap(q, n); });
  }
  void* p = std::calloc(n == 0 ? 1 : n, 1);
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

std::shared_ptr<std::byte> ZeroedArena::take(size_t n) {
  // The first 64-byte boundary at or after `used` bytes into `block`.
  auto aligned = [](const std::shared_ptr<std::byte>& block, size_t used) {
    const auto base = reinterpret_cast<uintptr_t>(block.get());
    return static_cast<size_t>((base + used + 63) / 64 * 64 - base);
  };
  if (n >= chunk_ / 2) {
    std::shared_ptr<std::byte> own = zeroed_bytes(n + 63);
    return std::shared_ptr<std::byte>(own, own.get() + aligned(own, 0));
  }
  if (!block_ || aligned(block_, used_) + n > size_) {
    block_ = zeroed_bytes(chunk_ + 63);
    used_ = 0;
    size_ = chunk_ + 63;
  }
  const size_t at = aligned(block_, used_);
  used_ = at + n;
  return std::shared_ptr<std::byte>(block_, block_.get() + at);
}

}  // namespace neuronc::kernels
