// The compile cache (`neuronc compile --cache-dir`, on by default): a compile's artifact and
// report stored under a key naming everything the artifact depends on, so an unchanged model
// recompiles by linking (or copying) the artifact out instead of compiling it again.
//
//   CompileCache cache(CompileCache::default_dir());
//   CacheKey key = cache.key(req);
//   std::string why;
//   if (auto hit = cache.fetch(key, "model.nca", &why)) ...        // artifact linked out
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
// An entry is two files: `entries/<key>.nce`, a checksummed header (with the artifact's size and
// CRC32C) and the report as JSON; and `entries/<key>.nca`, the artifact itself. The header's,
// the report's and the whole artifact's CRC32C and the entry's own key are checked before
// anything is used; an entry that fails any check is deleted and the compile runs again.
//
// The artifact goes out as a hard link: a hit gives the output a second name for the entry's
// artifact file, and a store makes the compile's output file the entry's, so neither writes the
// artifact's bytes again (copying 0.7 GB of them took 0.3-1.7 s on the machines bench/ ran on).
// The output and the entry then share one file. Nothing here writes into a file in place (every
// file is written under a temporary name and renamed), so a recompile replaces the output and
// a store or eviction leaves it be; a program that writes into the output in place (`cp other
// out.nca` does) changes the entry too, and the next hit finds it by the CRC and compiles again.
// Where a link cannot be made (the output on another filesystem), or with `link_outputs` false
// (`--cache-copy`), the bytes are copied.
//
// Every file is written to a temporary name and renamed into place, the artifact before the
// entry that vouches for it, so concurrent writers each leave a complete entry (the last rename
// wins; a key's writers write the same bytes) and a reader never sees a partial one. After a
// store, the least recently used entries (fetch refreshes an entry's modification time) are
// deleted until the cache fits its limit.
//
// Thread-safety: a CompileCache holds no mutable state; any number of threads and processes may
// use one directory at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
  explicit CompileCache(std::filesystem::path dir, uint64_t max_bytes = kDefaultMaxBytes,
                        bool link_outputs = true);

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

  // The cached compile of `key`: its report, with the artifact put at `output` (a link or a
  // copy made under a temporary name beside it and renamed into place; `output` left as it is
  // when it already holds the artifact's bytes); the report's `artifact` stays empty and
  // `artifact_bytes` gives its size. nullopt when there is no usable entry; an entry that fails
  // a check is deleted and `*why` says what was wrong (empty for a plain miss).
  enum class HitOutput { kUnchanged, kLinked, kCopied };
  struct Hit {
    CompileResult result;
    uint64_t artifact_bytes = 0;
    HitOutput output = HitOutput::kCopied;
  };
  std::optional<Hit> fetch(const CacheKey& key, const std::filesystem::path& output,
                           std::string* why) const;

  // Stores `result` (with its artifact bytes) under `key`. Returns false, with `*why`, when it
  // did not: a source file changed since the key was taken (the artifact may not be the key's),
  // or the cache directory cannot be written. Then deletes the least recently used entries
  // beyond the limit, and temporaries a crashed writer left more than an hour ago.
  bool store(const CacheKey& key, const CompileResult& result, std::string* why) const;
  // The same for a result whose artifact was written to `artifact_file` (CompileRequest::output)
  // rather than returned: the file becomes the entry's artifact (linked; copied where it cannot
  // be), and must hold result.artifact_size bytes.
  bool store(const CacheKey& key, const CompileResult& result,
             const std::filesystem::path& artifact_file, std::string* why) const;

 private:
  std::filesystem::path dir_;
  uint64_t max_bytes_;
  bool link_outputs_;
};

// An entry's `.nce` file, as fetch() reads it and store() writes it; exposed for the
// malformed-input tests and the fuzzer (tests/fuzz/fuzz_cache_entry.cpp).
struct CacheEntry {
  CompileResult report;         // the compile's report (its `artifact` empty)
  uint64_t artifact_bytes = 0;  // the size and the CRC32C of the artifact file beside it
  uint32_t artifact_crc = 0;
};
// The `.nce` bytes of `key_hex`'s entry whose report is `report` (JSON).
std::string encode_cache_entry(const std::string& key_hex, std::string_view report,
                               uint64_t artifact_bytes, uint32_t artifact_crc);
// Decodes `bytes`, read as `key_hex`'s entry, checking everything in order: size, magic, header
// CRC32C, version, key, size again, report CRC32C, then the report's fields. Throws
// std::runtime_error naming the first check that fails ("bad magic", "report: …").
CacheEntry decode_cache_entry(std::span<const std::byte> bytes, const std::string& key_hex);

}  // namespace neuronc::compiler
