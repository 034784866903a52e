// A read-only memory mapping of a whole file (POSIX mmap), the zero-copy source the reader and
// the loader use. Movable, not copyable; the bytes stay valid until the last owner releases it.
// Thread-safety: immutable after open(); bytes() may be read from any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "artifact_format/status.h"

namespace neuronc::artifact {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace neuronc::artifact
