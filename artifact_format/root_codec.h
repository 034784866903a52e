// ArtifactContents <-> the FlatBuffers root table of artifact.fbs. Encoding is deterministic;
// decoding assumes the buffer passed flatbuffers::Verifier and checks every enum value and
// every required field, naming the table and index of what is wrong. Internal to
// artifact_format.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "artifact_format/artifact.h"
#include "artifact_format/status.h"

namespace neuronc::artifact {

// The root buffer with file identifier "NCA1", padded to a multiple of 8 bytes.
std::vector<std::byte> encode_root(const ArtifactContents& contents);

// Writes each segment's CRC (segments[i].crc32c) into `root`, encoded by encode_root from
// contents with these segments but other CRCs (encode_root stores every segment field, so each
// has its place): the root encode_root would give with them, without encoding it again (a
// tensor-parallel root holds every core's copy of the programs).
void patch_segment_crcs(std::span<std::byte> root, std::span<const SegmentInfo> segments);

// Writes `sha256` over the source's 32-byte SHA-256 in `root`, encoded by encode_root from
// contents whose source.sha256 held other 32 bytes: the root encode_root would give with it (a
// byte vector's place does not depend on its bytes).
void patch_source_sha256(std::span<std::byte> root, std::span<const uint8_t> sha256);

// Verifies the FlatBuffer (identifier, bounds, nesting) and decodes it. `root` must be
// 8-byte aligned.
Result<ArtifactContents> decode_root(std::span<const std::byte> root);

}  // namespace neuronc::artifact
