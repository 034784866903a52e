// Artifact reader (reader.h). The order of checks follows the file: header, root range and
// CRC, root verification and decode, segment table against the file, segment CRCs, contents.
#include "artifact_format/reader.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "artifact_format/crc32c.h"
#include "artifact_format/root_codec.h"
#include "artifact_format/segment_codec.h"
#include "artifact_format/verifier.h"
#include "device/replicate.h"

namespace neuronc::artifact {
namespace {

using std::to_string;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// [offset, offset + size) inside [0, limit)?
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

}  // namespace

std::span<const std::byte> LoadedArtifact::constant_bytes(uint32_t i) const {
  const Constant& k = contents.constants[i];
  if (k.absent()) return {};
  return segments_[k.segment].subspan(k.offset, k.size);
}

void expand_replicas(ArtifactContents& c) {
  for (DeviceProgram& p : c.programs)
    if (p.holds_core0_alone())
      p.program = device::replicate_unchecked(p.program, p.replicas, p.replica_stride);
}

Result<LoadedArtifact> read_artifact(std::span<const std::byte> file, const ReadOptions& options) {
  LoadedArtifact out;
  NEURONC_ARTIFACT_ASSIGN_OR_RETURN(out.header, decode_header(file, options.reader_format_minor));
  const FileHeader& h = out.header;
  if (h.header_size < kHeaderSize)
    return Status(StatusCode::corrupt, "header size is " + to_string(h.header_size) +
                                           ", expected at least " + to_string(kHeaderSize));
  if (h.flags != 0)
    return Status(StatusCode::unimplemented,
                  "header flags " + hex32(h.flags) + " are not defined in format 1.x: expected 0");
  if (h.root_offset < h.header_size || h.root_offset % 8 != 0)
    return Status(StatusCode::corrupt, "root offset " + to_string(h.root_offset) +
                                           " must be 8-aligned and after the " +
                                           to_string(h.header_size) + "-byte header");
  if (!fits(h.root_offset, h.root_size, file.size()))
    return Status(StatusCode::truncated,
                  "root table [" + to_string(h.root_offset) + ", +" + to_string(h.root_size) +
                      ") ends past the end of the file (" + to_string(file.size()) + " bytes)");
  if (h.segments_offset < h.root_offset + h.root_size)
    return Status(StatusCode::corrupt, "segment region starts at " + to_string(h.segments_offset) +
                                           ", inside the root table ending at " +
                                           to_string(h.root_offset + h.root_size));
  if (!fits(h.segments_offset, h.segments_size, file.size()))
    return Status(StatusCode::truncated, "segment region [" + to_string(h.segments_offset) + ", +" +
                                             to_string(h.segments_size) +
                                             ") ends past the end of the file (" +
                                             to_string(file.size()) + " bytes)");
  if (h.segments_offset + h.segments_size != file.size())
    return Status(StatusCode::corrupt, "file is " + to_string(file.size()) +
                                           " bytes but the header describes " +
                                           to_string(h.segments_offset + h.segments_size));
  std::span<const std::byte> root = file.subspan(h.root_offset, h.root_size);
  const uint32_t root_crc = crc32c(root);
  if (root_crc != h.root_crc32c)
    return Status(StatusCode::corrupt, "root table checksum mismatch: stored " +
                                           hex32(h.root_crc32c) + ", computed " + hex32(root_crc));
  std::vector<std::byte> aligned_root;
  if (reinterpret_cast<uintptr_t>(root.data()) % 8 != 0) {
    aligned_root.assign(root.begin(), root.end());  // operator new aligns to >= 16
    root = aligned_root;
  }
  NEURONC_ARTIFACT_ASSIGN_OR_RETURN(out.contents, decode_root(root));
  ArtifactContents& c = out.contents;
  if (c.format_major != h.format_major || c.format_minor != h.format_minor)
    return Status(StatusCode::corrupt, "root says format " + to_string(c.format_major) + "." +
                                           to_string(c.format_minor) + " but the header says " +
                                           to_string(h.format_major) + "." +
                                           to_string(h.format_minor));

  // Bytes no checksum covers (alignment padding) must be zero, so no bit of the file can change
  // unnoticed.
  auto zero_gap = [&](uint64_t from, uint64_t to) -> Status {
    for (uint64_t i = from; i < to && i < file.size(); ++i)
      if (file[i] != std::byte{0})
        return Status(StatusCode::corrupt,
                      "padding byte at offset " + to_string(i) + " is not zero");
    return Status::ok();
  };
  NEURONC_ARTIFACT_RETURN_IF_ERROR(zero_gap(h.root_offset + h.root_size, h.segments_offset));
  // The root is verified before any segment is decompressed, so nothing of a size the root
  // declares is allocated before every size and index in it has been checked.
  if (options.verify) {
    NEURONC_ARTIFACT_RETURN_IF_ERROR(verify_contents(c));
  } else {
    // Even unverified, constant ranges must hold so constant_bytes() is safe.
    for (uint32_t i = 0; i < c.constants.size(); ++i) {
      const Constant& k = c.constants[i];
      if (k.absent()) continue;
      if (k.segment >= c.segments.size() || !fits(k.offset, k.size, c.segments[k.segment].raw_size))
        return Status(StatusCode::out_of_range,
                      "constant " + to_string(i) + " is outside its segment");
    }
  }
  // A replicated program runs as every copy of its core 0, made once core 0 is verified
  // (unverified, it stays as the file holds it: core 0 alone).
  if (options.verify && options.expand_replicas) expand_replicas(c);
  // Segments: inside the region, aligned, CRC, decompress.
  const std::span<const std::byte> region = file.subspan(h.segments_offset, h.segments_size);
  for (uint32_t i = 0; i < c.segments.size(); ++i) {
    const SegmentInfo& s = c.segments[i];
    const std::string name = "segment " + to_string(i) + " ('" + s.name + "')";
    if (s.offset % kSegmentAlignment != 0)
      return Status(StatusCode::corrupt, name + " offset " + to_string(s.offset) +
                                             " is not a multiple of " +
                                             to_string(kSegmentAlignment));
    if (!fits(s.offset, s.stored_size, region.size()))
      return Status(StatusCode::truncated,
                    name + " [" + to_string(s.offset) + ", +" + to_string(s.stored_size) +
                        ") ends past the segment region of " + to_string(region.size()) + " bytes");
    const std::span<const std::byte> stored = region.subspan(s.offset, s.stored_size);
    if (options.verify_segment_checksums) {
      const uint32_t crc = crc32c(stored);
      if (crc != s.crc32c)
        return Status(StatusCode::corrupt, name + " checksum mismatch: stored " + hex32(s.crc32c) +
                                               ", computed " + hex32(crc));
    }
    if (s.compression == Compression::none) {
      if (s.raw_size != s.stored_size)
        return Status(StatusCode::corrupt,
                      name + " is uncompressed but its raw size " + to_string(s.raw_size) +
                          " differs from its stored size " + to_string(s.stored_size));
      out.segments_.push_back(stored);
      continue;
    }
    // A hostile raw size must not make us allocate without bound: zstd cannot expand more than
    // 1:32768 (a 4-byte RLE block yields at most 128 KiB), so anything more is refused.
    const uint64_t limit = std::max<uint64_t>(s.stored_size, 1) * 32768;
    if (s.raw_size > limit || s.raw_size > (uint64_t{1} << 40))
      return Status(StatusCode::corrupt, name + " declares " + to_string(s.raw_size) +
                                             " raw bytes from " + to_string(s.stored_size) +
                                             " stored bytes, more than zstd can expand");
    auto raw = zstd_decompress(stored, s.raw_size);
    if (!raw) return raw.status().with_context(name);
    out.owned_.push_back(std::move(raw).value());
    out.segments_.push_back(out.owned_.back());
  }
  // Padding between segments (in offset order).
  {
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const SegmentInfo& s : c.segments) spans.emplace_back(s.offset, s.offset + s.stored_size);
    std::sort(spans.begin(), spans.end());
    uint64_t at = 0;
    for (const auto& [b, e] : spans) {
      if (b < at)
        return Status(StatusCode::corrupt, "segments overlap at region offset " + to_string(b));
      NEURONC_ARTIFACT_RETURN_IF_ERROR(zero_gap(h.segments_offset + at, h.segments_offset + b));
      at = e;
    }
    NEURONC_ARTIFACT_RETURN_IF_ERROR(zero_gap(h.segments_offset + at, file.size()));
  }
  return out;
}

}  // namespace neuronc::artifact
