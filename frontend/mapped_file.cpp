// mmap-based file mapping (POSIX). Empty files get a null mapping of size 0.
#include "frontend/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "frontend/error.h"

namespace neuronc::frontend {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  f->identity_ = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                  static_cast<uint64_t>(st.st_size),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                  static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(path + ": cannot mmap " + std::to_string(f->size_) +
                  " bytes: " + std::strerror(e));
    }
    f->data_ = static_cast<const std::byte*>(p);
    f->mapped_ = true;
    f->fd_ = fd;
    return f;
  }
  ::close(fd);
  return f;
}

bool read_exactly(int fd, void* into, size_t n, uint64_t offset) {
  auto* out = static_cast<char*>(into);
  while (n > 0) {
    const ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

bool MappedFile::read_at(uint64_t offset, std::byte* out, size_t n) const {
  if (fd_ < 0 || offset > size_ || n > size_ - offset) return false;
  return read_exactly(fd_, out, n, offset);
}

bool MappedFile::read_mapped(const void* file, const std::byte* p, size_t n, std::byte* out) {
  const auto* f = static_cast<const MappedFile*>(file);
  if (f == nullptr || !f->mapped_ || p < f->data_ || n > f->size_ ||
      static_cast<size_t>(p - f->data_) > f->size_ - n)
    return false;
  return f->read_at(static_cast<uint64_t>(p - f->data_), out, n);
}

void MappedFile::drop_pages(const std::byte* p, size_t n) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::shared_ptr<MappedFile> MappedFile::from_bytes(std::span<const std::byte> bytes,
                                                   std::string name) {
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = std::move(name);
  f->size_ = bytes.size();
  if (!bytes.empty()) {
    f->heap_ = std::make_unique<std::byte[]>(bytes.size());
    std::memcpy(f->heap_.get(), bytes.data(), bytes.size());
    f->data_ = f->heap_.get();
  }
  return f;
}

MappedFile::~MappedFile() {
  if (mapped_ && data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace neuronc::frontend
