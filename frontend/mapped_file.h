// A read-only memory mapping of a whole file. Weight payloads in the IR point into it, so it is
// always held by a shared_ptr that the payloads share (ir::ConstantPayload::owner).
// Thread-safety: immutable after open(); any number of threads may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace neuronc::frontend {

// What stat(2) says identifies a file's contents: a file with the same identity has not been
// written since (the compile cache and the frontend share a SHA-256 through it).
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// Reads exactly `n` bytes at `offset` of the open file `fd` with pread(2), retrying short and
// interrupted reads; false at the end of the file or on an error.
bool read_exactly(int fd, void* into, size_t n, uint64_t offset);

class MappedFile {
 public:
  // Maps `path` read-only. Throws frontend::Error naming the path and the OS error.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  // Wraps bytes already in memory (tests, fuzzers); the buffer is copied once.
  static std::shared_ptr<MappedFile> from_bytes(std::span<const std::byte> bytes, std::string name);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // True when the bytes are the file mapped read-only (not a heap copy).
  bool mapped() const { return mapped_; }
  // The file's identity when it was opened (all zero for bytes not from a file).
  const FileIdentity& identity() const { return identity_; }
  // Reads `n` bytes at `offset` of a mapped() file with pread(2), which is faster than touching
  // the mapping for a one-pass scan (no page faults); false on a read error.
  bool read_at(uint64_t offset, std::byte* out, size_t n) const;
  // Drops the pages wholly inside [p, p + n) of a read-only file mapping from this process: they
  // read back from the file when touched again. Only for bytes of a mapped() file.
  static void drop_pages(const std::byte* p, size_t n);
  // Copies the `n` bytes at `p`, inside the mapping of the MappedFile `file` points to, to `out`
  // with read_at (ir::ConstantPayload::read_bytes); false for bytes outside it or a read error.
  static bool read_mapped(const void* file, const std::byte* p, size_t n, std::byte* out);

 private:
  MappedFile() = default;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // true: munmap on destruction; false: owned heap copy
  int fd_ = -1;          // the open file of a mapping
  FileIdentity identity_;
  std::unique_ptr<std::byte[]> heap_;
  std::string path_;
};

}  // namespace neuronc::frontend
