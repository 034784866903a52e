// The compile cache (`neuronc compile --cache-dir`, on by default): a compile's artifact and
// report stored under a key naming everything the artifact depends on, so an unchanged model
// recompiles by copying the artifact out instead of compiling it again.
//
//   CompileCache cache(CompileCache::default_dir());
//   CacheKey key = cache.key(req);
//   std::string why;
//   if (auto hit = cache.fetch(key, "model.nca", &why)) ...        // artifact copied out
//   else { CompileResult r = compile_model(req); write it; cache.store(key, r, &why); }
//
// The key is the SHA-256 of: the cache's format, this compiler's own code (the SHA-256 of the
// executable or shared object compile_model lives in), the artifact format version, every
// option the artifact depends on (target, auto-cast, -O, --tp, --dim, --buckets, input shapes;
// not --threads, which never changes the bytes) and the SHA-256 of every source file. A source
// file's SHA-256 is remembered under the cache directory with its device, inode, size and
// modification and change times, and read again whenever any of them differs or the file was
// modified within two seconds of being hashed (a write the clock's granularity could hide).
//
// An entry is one file, `entries/<key>.nce`: a checksummed header, the report as JSON, then the
// artifact's bytes at a page-aligned offset. The header's, the report's and the artifact's
// CRC32C and the entry's own key are checked before anything is used; an entry that fails any
// check is deleted and the compile runs again. Every file is written to a temporary name and
// renamed into place, so concurrent writers each leave a complete entry (the last rename wins)
// and a reader never sees a partial one. After a store, the least recently used entries
// (fetch refreshes an entry's modification time) are deleted until the cache fits its limit.
//
// Thread-safety: a CompileCache holds no mutable state; any number of threads and processes may
// use one directory at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "frontend/mapped_file.h"

namespace neuronc::compiler {

// A source file as it was when its SHA-256 went into a key.
struct CacheSource {
  std::filesystem::path path;
  frontend::FileIdentity file;
  std::string sha256;
};

struct CacheKey {
  std::string hex;                   // SHA-256 of `text`, lower-case hex: the entry's name
  std::string text;                  // what was hashed, one "field value" line each
  std::vector<CacheSource> sources;  // the files whose SHA-256 the key holds
};

class CompileCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{16} << 30;

  // $XDG_CACHE_HOME/neuronc, else $HOME/.cache/neuronc; empty when neither is set.
  static std::filesystem::path default_dir();

  // The directory is created when the first entry is stored.
  explicit CompileCache(std::filesystem::path dir, uint64_t max_bytes = kDefaultMaxBytes);

  // Why a compile of `req` is not cached, or empty when it is: a compile that prints IR
  // (`--print-after`) or exposes debug values must run.
  static std::string uncacheable(const CompileRequest& req);

  // The key of compiling `req` with this compiler. Throws std::runtime_error naming the file
  // when a source cannot be read.
  CacheKey key(const CompileRequest& req) const;

  // The same key, taken without waiting for the sources' digests that are not remembered: those
  // are computed on a thread of its own, so a compile can start beside it (the CLI's cold
  // compile of a new model: the compile runs while the source is hashed, and is dropped if the
  // key then hits). begin_key() itself reads the remembered digests and opens every file, and
  // throws as key() does when one cannot be read; a read error while hashing comes out of
  // `key.get()`, and of the digests that were still to be made.
  struct PendingKey {
    // The model's files' digests for CompileRequest::known_sha256, each ready or in the making.
    std::vector<frontend::KnownDigest> digests;
    std::shared_future<CacheKey> key;
    bool ready() const {
      return key.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    }
  };
  PendingKey begin_key(const CompileRequest& req) const;

  // The cached compile of `key`: its report, with the artifact's bytes copied to `output`
  // (through a temporary file beside it, renamed into place); the report's `artifact` stays
  // empty and `artifact_bytes` gives its size. nullopt when there is no usable entry; an entry
  // that fails a check is deleted and `*why` says what was wrong (empty for a plain miss).
  struct Hit {
    CompileResult result;
    uint64_t artifact_bytes = 0;
  };
  std::optional<Hit> fetch(const CacheKey& key, const std::filesystem::path& output,
                           std::string* why) const;

  // Stores `result` (with its artifact bytes) under `key`. Returns false, with `*why`, when it
  // did not: a source file changed since the key was taken (the artifact may not be the key's),
  // or the cache directory cannot be written. Then deletes the least recently used entries
  // beyond the limit, and temporaries a crashed writer left more than an hour ago.
  bool store(const CacheKey& key, const CompileResult& result, std::string* why) const;
  // The same for a result whose artifact was written to `artifact_file` (CompileRequest::output)
  // rather than returned: its bytes are copied from the file, which must hold
  // result.artifact_size of them.
  bool store(const CacheKey& key, const CompileResult& result,
             const std::filesystem::path& artifact_file, std::string* why) const;

 private:
  std::filesystem::path dir_;
  uint64_t max_bytes_;
};

}  // namespace neuronc::compiler
