// A compiled neuronc model (.nca), loaded once and shared. load() maps the file, checks the
// header, version, checksums and every offset, index and device instruction against the
// target's limits (artifact verifier), and resolves every host op to a kernel — all before
// anything runs. Weights stay in the mapping (zero-copy) unless the file stores them
// compressed.
//
// Thread-safety: a Model is an immutable, reference-counted handle. Copying it is cheap, and any
// number of threads may use one Model (and copies of it) concurrently, e.g. to create one
// Session per thread. The mapping lives until the last copy and the last Session are gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "neuronc/status.h"
#include "neuronc/tensor.h"

namespace neuronc {

struct LoadOptions {
  // CRC32C over every segment (reads every page of the weights once). Header and root CRCs
  // are always checked.
  bool verify_segment_checksums = true;
  // Refuse artifacts whose HBM arena (allocated by every Session) is larger; 0 = no limit
  // beyond the target's HBM.
  uint64_t max_hbm_arena_bytes = 0;
};

// One dimension of a signature tensor: fixed (`symbol` empty) or `coeff` x a named symbol whose
// value must lie in [min, max].
struct DimSpec {
  int64_t value = 0;
  std::string symbol;
  int64_t coeff = 1;
  int64_t min = 0;
  int64_t max = 0;
  bool is_symbolic() const { return !symbol.empty(); }
};

// The values an integer input may hold, [lo, hi), and why: it indexes a table (an embedding's
// rows) or the device computes it in 32 bits. Session::run refuses any other value before
// running, naming the element.
struct ValueRange {
  int64_t lo = 0;
  int64_t hi = 0;  // exclusive
  std::string reason;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<DimSpec> dims;
  std::optional<ValueRange> valid_range = std::nullopt;  // inputs only
};

// "f32[1, 2*s0]": the spec's dtype and dims, for messages.
std::string spec_text(const TensorSpec& spec);

// The value each symbol of a signature takes for one set of inputs, by symbol name.
using SymbolValues = std::map<std::string, int64_t>;

// Checks `tensors`, one per spec and in the specs' order, as Session::run does before it runs
// anything: the count; each dtype and rank; each dim against its value, or against its symbol
// (a multiple of the coefficient, within the symbol's range, one value per symbol); the data
// pointer; integer inputs against their valid_range. The first mismatch is an error naming the
// input, what was expected and what was found; otherwise the symbols' values. A service can
// refuse a request with this before it queues it.
Result<SymbolValues> check_inputs(std::span<const TensorSpec> specs,
                                  std::span<const TensorView> tensors);

// One program of a model that holds several over the same weights and states (a prefill and a
// decode program, the shape buckets of one model): Session::run(entry, ...) runs it.
struct EntryInfo {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  // A shape bucket ("main[s0=4,s1=64]"): one of the programs `compile` writes for a model with
  // dynamic dims, each for some values of its symbols. Session::run(inputs), or
  // run(bucket_group, ...), runs the smallest bucket that fits the inputs. Unless a symbol's
  // padding is `none`, a smaller value runs with the inputs padded at the end of its dims (with
  // zeros, or with copies of the last real index) and the outputs cut back (the compiler proved
  // that exact); with `none` only the bucket's own value runs there.
  enum class Padding { none, zeros, edge };
  struct BucketDim {
    std::string symbol;
    int64_t value = 0;
    Padding padding = Padding::none;
  };
  std::string bucket_group;  // empty: not a bucket
  std::vector<BucketDim> bucket;
};

struct ModelInfo {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  std::string producer;  // "neuronc 0.1.0"
  std::string target;    // "trn1" | "trn2" | "trn3"
  uint32_t num_cores = 0;
  std::string source_container;  // "pt2-archive", ...
  std::string source_sha256;     // hex, empty if unknown
  uint32_t device_partitions = 0;
  uint32_t host_ops = 0;
  uint64_t constant_bytes = 0;
  uint64_t hbm_arena_bytes = 0;
  uint64_t file_bytes = 0;
  bool zero_copy_constants = false;  // every constant is read in place from the file mapping
  // Compiled from a weights-free export: the programs and their simulated costs are there, the
  // weights are not, so a Session cannot run it (tools time it: `neuronc bench`, `profile`).
  bool timing_only = false;
  uint64_t absent_constant_bytes = 0;  // bytes of the weights the file does not hold
};

class Model {
 public:
  // Maps `path` read-only and verifies it.
  static Result<Model> load(const std::string& path, const LoadOptions& options = {});
  // Copies `bytes` into memory the model owns, then verifies it.
  static Result<Model> load_from_memory(std::span<const std::byte> bytes,
                                        const LoadOptions& options = {});
  // Zero-copy variant: `bytes` must stay valid and unchanged for the lifetime of the model and
  // of every Session on it, and be 8-byte aligned.
  static Result<Model> load_from_borrowed_memory(std::span<const std::byte> bytes,
                                                 const LoadOptions& options = {});

  // The first entry's inputs and outputs (the model's, when it has one program); for a model
  // compiled into shape buckets, their dims as the program declares them ("i64[s0, s1]", each
  // symbol in its range).
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  // Every program the model holds, in file order; one entry named "main" for an artifact
  // compiled from one program.
  const std::vector<EntryInfo>& entries() const;
  // Tensors the model reads and rewrites on every run (a KV cache, BatchNorm's running
  // statistics), kept by each Session from one run to the next; static shapes.
  const std::vector<TensorSpec>& states() const;
  const ModelInfo& info() const;

  struct Impl;                                                                  // internal
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}  // internal

 private:
  friend class Session;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace neuronc
