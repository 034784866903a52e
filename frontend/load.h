// The frontend's entry point: any supported PyTorch program file into an ir::Graph whose
// weights point into the memory-mapped file.
//
//   auto prog = neuronc::frontend::load_program("model.pt2");
//   prog.graph->nodes().size();  prog.container;  prog.sample_inputs;
//
// Thread-safety: load_program is re-entrant; the returned LoadedProgram is owned by the caller.
#pragma once

#include <cstddef>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "frontend/error.h"
#include "frontend/mapped_file.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace neuronc::frontend {

// One example input saved with the program (torch.export's sample/example inputs), contiguous.
struct SampleInput {
  std::string name;  // the graph's user input it feeds
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;  // row-major, little-endian; small, so copied
};

struct LoadedProgram {
  std::unique_ptr<ir::Graph> graph;
  std::string container;      // container_kind_name(): "pt2_archive", "legacy_export_zip", ...
  std::string torch_version;  // as the file says ("2.14.1+debian"; "<=2.4" when absent)
  int schema_major = 0;
  int schema_minor = 0;
  // Of the whole input file, lower-case hex. Computed on a thread of its own from the moment the
  // file is opened, while the parse and then the compile go on (a multi-GB model takes a second
  // to hash); get() waits for it and rethrows a read error.
  std::shared_future<std::string> sha256;
  std::vector<SampleInput> sample_inputs;
  std::shared_ptr<MappedFile> file;  // keeps the weight payloads valid
};

// A file's SHA-256 someone else computes, with the identity the file has: a file opened with the
// same identity is not hashed again (the compile cache's key holds every source's). The digest
// may still be in the making on another thread (the cache hashing the source while the compile
// goes on); it is waited for only where LoadedProgram::sha256 is.
struct KnownDigest {
  FileIdentity file;
  std::shared_future<std::string> sha256;
};

// Loads `path`, deciding the format from its contents. Throws frontend::Error with a message
// that names the file, the entry and the field.
LoadedProgram load_program(const std::string& path, std::span<const KnownDigest> known = {});

// Same, for a file already mapped (tests, fuzzers). `file->path()` names it in messages.
LoadedProgram load_program(std::shared_ptr<MappedFile> file);

// The lower-case hex SHA-256 of `f`'s bytes, as LoadedProgram::sha256 records it. A mapped file
// is read with pread(2) rather than through its mapping, so hashing a multi-GB model neither
// faults in nor keeps resident any of its pages.
std::string file_sha256(const MappedFile& f);
// A digest already known, as LoadedProgram::sha256 holds one.
std::shared_future<std::string> digest_ready(std::string sha256);

// Whether `path` is a directory of programs of one model (a manifest.json beside them, as
// models/scripts/export_causal_lm.py writes).
bool is_program_set(const std::string& path);

// The programs of such a directory, by name, in the manifest's order (the prefill buckets, then
// decode). The manifest must say "format": "neuronc-causal-lm/1" and list each program's
// "name" and "file" (relative, inside the directory); errors name the manifest and the field.
// `heads`, when given, receives the manifest's "attention_heads" and "kv_heads" (0 when absent),
// which tensor parallelism checks its degree against.
struct ProgramSetHeads {
  int64_t attention = 0, kv = 0;
};
std::vector<std::pair<std::string, LoadedProgram>> load_program_set(
    const std::string& dir, ProgramSetHeads* heads = nullptr,
    std::span<const KnownDigest> known = {});

}  // namespace neuronc::frontend
