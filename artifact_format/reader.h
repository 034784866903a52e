// Reads an artifact from bytes (a MappedFile or a caller's buffer): header, version
// compatibility, root CRC and FlatBuffers verification, decoding into ArtifactContents, the
// segment table against the file, segment CRCs and zstd decompression, then verify_contents().
// Every failure is a Status naming what was expected and what was found; no input crashes it.
//
// Raw segments are views into the input bytes (zero-copy), so the input must outlive the
// LoadedArtifact; compressed segments are decompressed into buffers it owns.
// Thread-safety: a LoadedArtifact is immutable after read_artifact(); share it freely.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "artifact_format/artifact.h"
#include "artifact_format/file_header.h"
#include "artifact_format/status.h"

namespace neuronc::artifact {

struct ReadOptions {
  // CRC32C of every segment (touches every page of the weights). The header and root CRCs are
  // always checked.
  bool verify_segment_checksums = true;
  // Run verify_contents() (cross references and device::verify_program) after decoding. Only a
  // verified replicated program (DeviceProgram::replicas) is given as every copy (with
  // expand_replicas); unverified, it stays core 0 alone, as the file holds it.
  bool verify = true;
  // Gives a verified replicated program as every copy (expand_replicas below). False keeps core 0
  // alone, verified as every copy: for readers that only time the programs (the plan walker
  // without buffers times the copies without making them), which then hold one copy of each
  // program rather than N.
  bool expand_replicas = true;
  // Newest format minor this reader accepts; tests raise it to simulate a newer reader
  // loading an older file.
  uint16_t reader_format_minor = kFormatMinor;
};

class LoadedArtifact {
 public:
  FileHeader header;
  ArtifactContents contents;

  // Raw bytes of segment i (decompressed when stored compressed).
  std::span<const std::byte> segment(uint32_t i) const { return segments_[i]; }
  size_t num_segments() const { return segments_.size(); }
  // Bytes of constant i (inside its segment; checked by the reader).
  // Empty for an absent constant (ArtifactContents::timing_only).
  std::span<const std::byte> constant_bytes(uint32_t i) const;

 private:
  friend Result<LoadedArtifact> read_artifact(std::span<const std::byte>, const ReadOptions&);
  std::vector<std::span<const std::byte>> segments_;
  std::vector<std::vector<std::byte>> owned_;
};

// `file` must be 8-byte aligned (mmap and operator new are) — else the root is copied first.
Result<LoadedArtifact> read_artifact(std::span<const std::byte> file,
                                     const ReadOptions& options = {});

// Makes every replicated program of `c` that holds core 0 alone into all its copies
// (device::replicate_unchecked), as a verified read does with ReadOptions::expand_replicas. For
// contents read verified with expand_replicas false: the copies are those of verified core 0s.
void expand_replicas(ArtifactContents& c);

}  // namespace neuronc::artifact
