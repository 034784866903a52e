// zstd segment codec (segment_codec.h).
#include "artifact_format/segment_codec.h"

#include <zstd.h>

#include <string>

namespace neuronc::artifact {

std::vector<std::byte> zstd_compress(std::span<const std::byte> raw, int level) {
  std::vector<std::byte> out(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), level);
  if (ZSTD_isError(n)) return {};  // cannot happen with a bound-sized buffer
  out.resize(n);
  return out;
}

Result<std::vector<std::byte>> zstd_decompress(std::span<const std::byte> stored,
                                               uint64_t raw_size) {
  const unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR)
    return Status(StatusCode::corrupt, "zstd frame header is malformed");
  if (declared != raw_size)  // our writer always records the content size
    return Status(StatusCode::corrupt,
                  "zstd frame declares " +
                      (declared == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("no content size")
                                                            : std::to_string(declared) + " bytes") +
                      " but the segment table says " + std::to_string(raw_size));
  std::vector<std::byte> out(raw_size);
  const size_t n = ZSTD_decompress(out.data(), out.size(), stored.data(), stored.size());
  if (ZSTD_isError(n))
    return Status(StatusCode::corrupt, std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != out.size())
    return Status(StatusCode::corrupt, "zstd frame holds " + std::to_string(n) +
                                           " bytes but the segment table says " +
                                           std::to_string(out.size()));
  return out;
}

}  // namespace neuronc::artifact
