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

// Verifies the FlatBuffer (identifier, bounds, nesting) and decodes it. `root` must be
// 8-byte aligned.
Result<ArtifactContents> decode_root(std::span<const std::byte> root);

}  // namespace neuronc::artifact
