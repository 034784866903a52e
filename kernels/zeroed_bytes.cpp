// zeroed_bytes (zeroed_bytes.h).
#include "kernels/zeroed_bytes.h"

#include <sys/mman.h>

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

}  // namespace neuronc::kernels
