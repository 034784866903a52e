// Writes artifacts. A compiler fills an ArtifactWriter — metadata, signature, plan values,
// constants (borrowed or owned bytes), device programs, plan steps, debug nodes — and calls
// write_file() or write_memory(). The writer lays constants out in 4096-byte-aligned segments
// (raw by default, so the loader can mmap them; optionally zstd), computes every CRC32C and
// emits the header, the FlatBuffers root and the segments. Output bytes are a pure function of
// the inputs and options (deterministic).
//
// Thread-safety: an ArtifactWriter is not thread-safe; build it from one thread. Borrowed
// constant bytes must stay valid until the last write call returns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "artifact_format/artifact.h"
#include "artifact_format/status.h"

namespace neuronc::artifact {

// A constant's bytes made when the writer places them: `fill` writes exactly `size` bytes into
// the span it is given (the artifact's own buffer, or a reused scratch buffer streamed to the
// file), so a weight cast or re-laid out by the compiler is never held whole beside the
// artifact. `fill` may throw; the write then fails and leaves no file behind. It must give the
// same bytes every time it is called, and may be called on any thread, beside other fills
// (WriteOptions::threads).
struct ConstantFill {
  uint64_t size = 0;
  std::function<void(std::span<std::byte>)> fill;
  // When the bytes already exist as they are to be stored (a weight kept in its file's dtype
  // and layout): those `size` bytes, kept alive by whatever `fill` holds. A file is then
  // written straight from them, with no copy through the writer's buffer.
  std::span<const std::byte> as_is;
  // When set, called with `as_is` once a file has them: they lie in a read-only file mapping
  // whose pages it drops from the process (ir::ConstantPayload::drop_pages; a later read brings
  // them back from the file), so writing a model's weights leaves none of them resident.
  void (*drop_as_is)(const std::byte* p, size_t n) = nullptr;
  // When set, copies `n` bytes at `p` of `as_is` to `out` by reading its file
  // (ir::ConstantPayload::read_bytes, called with `as_is_owner`), false when it cannot: a file is
  // then written from chunks read so, not by touching the mapping (each newly mapped page is
  // costly on a shadow-paged VM), and from `as_is` itself where a read fails.
  bool (*read_as_is)(const void* owner, const std::byte* p, size_t n, std::byte* out) = nullptr;
  const void* as_is_owner = nullptr;  // kept alive by `fill`
};

struct WriteOptions {
  bool compress_constants = false;       // zstd-compress constant segments (not mmap-able then)
  int zstd_level = 3;                    // fixed level: output stays deterministic
  uint64_t small_constant_bytes = 4096;  // constants below this share one packed segment
  // Constants made at write time (ConstantFill) are made by this many threads at once (0: one
  // per core), each with its own buffer; the bytes written are the same for any count.
  int threads = 1;
};

class ArtifactWriter {
 public:
  ArtifactWriter();
  ~ArtifactWriter();
  ArtifactWriter(ArtifactWriter&&) noexcept;
  ArtifactWriter& operator=(ArtifactWriter&&) noexcept;

  // Metadata (producer, source, target, num_cores, options, memory plan) is set directly here;
  // the add_* calls below fill signature, plan, programs, constants and debug nodes.
  ArtifactContents& contents();
  const ArtifactContents& contents() const;

  uint32_t add_symbol(std::string name, int64_t min, int64_t max);
  // A plan value defined by a step (device call output or host op output).
  uint32_t add_value(std::string name, TensorDType dtype, std::vector<Dim> dims);
  // A signature input and its plan value; returns the value index.
  uint32_t add_input(std::string name, TensorDType dtype, std::vector<Dim> dims);
  // A one-element value the loader fills with the real value of signature symbol `symbol` in
  // each run (format 1.5); returns the value index.
  uint32_t add_symbol_value(std::string name, TensorDType dtype, uint32_t symbol);
  // Names plan value `value` as signature output `name`.
  void add_output(std::string name, uint32_t value);
  // A constant (weight) and its plan value; `bytes` is borrowed, row-major, exactly
  // numel * dtype size. `hbm_offset`: where sessions place it in the HBM arena, or kHostOnly.
  uint32_t add_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                        std::span<const std::byte> bytes, uint64_t hbm_offset = kHostOnly);
  uint32_t add_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                        std::vector<std::byte> owned_bytes, uint64_t hbm_offset = kHostOnly);
  // A constant whose bytes `fill` makes at write time (see ConstantFill).
  uint32_t add_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                        ConstantFill fill, uint64_t hbm_offset = kHostOnly);
  // A constant whose bytes the compiler never had (a weights-free export): its size is its
  // value's, its bytes are not in the file, and the artifact is timing-only.
  uint32_t add_absent_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                               uint64_t hbm_offset = kHostOnly);
  // A state (StateSpec): its plan value, returned, and a host-only constant `initial_name`
  // holding `initial` (numel * dtype size bytes; nullopt: absent, see add_absent_constant). Its
  // update is the value itself until set_state_update() names the value holding its new content.
  uint32_t add_state(std::string name, TensorDType dtype, std::vector<Dim> dims,
                     std::string initial_name, std::optional<std::vector<std::byte>> initial);
  void set_state_update(uint32_t state_value, uint32_t update);
  // The plan value of the state named `name`, if one was added.
  std::optional<uint32_t> find_state(const std::string& name) const;
  // Starts entry `name` (EntrySpec): the inputs, outputs, steps and state updates added from
  // now on are its own, until the next begin_entry(). An artifact with one entry or more
  // stores its constants' identical bytes once (segments shared between entries).
  void begin_entry(std::string name);
  // Makes the current entry a shape bucket (EntrySpec::bucket).
  void set_entry_bucket(ShapeBucket bucket);
  uint32_t add_program(DeviceProgram program);
  void add_device_call(DeviceCall call);
  void add_host_op(HostOp op);
  uint32_t add_debug_node(DebugNode node);
  // The source's SHA-256 (contents().source.sha256) when it is still being computed: a write
  // makes the constants' segments first and calls `digest` only then, to fill in the 32 bytes it
  // returns, so hashing a large source overlaps writing its weights instead of delaying it. The
  // bytes written are the same as with the digest set beforehand. `digest` may throw (a source
  // that could not be read): the write then fails and leaves no file behind.
  void set_source_sha256(std::function<std::vector<uint8_t>()> digest);

  // Fills memory_plan.hbm_arena_bytes (when 0) with the largest program HBM size, then checks
  // the whole artifact with verify_contents() before writing. write_file() streams the
  // segments to the file (a temporary renamed to `path` when complete), holding no copy of the
  // artifact in memory.
  Result<std::vector<std::byte>> write_memory(const WriteOptions& options = {});
  Status write_file(const std::string& path, const WriteOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Moves the finished file `from` to `to`, atomically replacing any file there (a reader sees the
// old file or the new one, never neither). A file already at `to` is exchanged with `from` and
// then removed: renamed over, ext4 first allocates and starts writing back every block of the
// new file (its auto_da_alloc), half a second for a 0.7 GB artifact. Where the exchange is not
// supported, or nothing is at `to`, a plain rename. On failure, errno says why.
bool replace_file(const std::string& from, const std::string& to);

// Low level, for tests that craft malformed artifacts: serialises `contents` as it is (no
// checks), placing segment i's stored bytes `payloads[i]` at the next 4096-aligned offset.
// Segment offsets and stored sizes are filled in from the layout unless `keep_segment_table`;
// raw sizes, compression and CRCs are taken from `contents` as given.
std::vector<std::byte> encode_artifact(const ArtifactContents& contents,
                                       std::span<const std::span<const std::byte>> payloads,
                                       bool keep_segment_table = false);

}  // namespace neuronc::artifact
