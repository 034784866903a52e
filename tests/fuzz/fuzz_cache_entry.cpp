// Fuzzes the compile cache's entry reader (compiler::decode_cache_entry, what
// CompileCache::fetch reads an entry's `.nce` file with): any bytes must decode or throw
// std::runtime_error, never crash, and an entry that decodes gives back the artifact's size and
// CRC32C it was written with.
// Each input is tried twice: as the whole file, and as the report (JSON) of an entry whose
// header and CRC32Cs are right, so that mutations reach the report's parser past the checksums.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "compiler/compile_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neuronc::compiler;
  static const std::string kKey(64, 'a');
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decode = [](std::string_view bytes) -> std::optional<CacheEntry> {
    try {
      return decode_cache_entry(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())),
                                kKey);
    } catch (const std::runtime_error&) {
      return std::nullopt;
    }
  };
  (void)decode(text);
  // A report that decodes says where the artifact is as it was written.
  const std::optional<CacheEntry> e = decode(encode_cache_entry(kKey, text, size, 0x1234u));
  if (e && (e->artifact_bytes != size || e->artifact_crc != 0x1234u)) abort();
  return 0;
}
