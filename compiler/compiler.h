// The compiler as a library: a PyTorch program file in, artifact bytes out. Runs the frontend,
// the pass pipeline (pipeline.h), placement and partitioning (placement.h), codegen for each
// device partition and host-op emission for each host partition, then lays out the artifact
// (signature, plan, programs, constants, debug info). tools/ is command-line code over it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/buckets.h"
#include "compiler/placement.h"
#include "device/target.h"
#include "frontend/load.h"
#include "passes/auto_cast.h"
#include "passes/partition.h"
#include "passes/tensor_parallel.h"

namespace neuronc::compiler {

struct CompileRequest {
  std::string model;
  std::string target = "trn1";
  passes::AutoCastMode auto_cast = passes::AutoCastMode::none;
  int opt_level = 2;
  int threads = 0;  // codegen and artifact-writing workers; 0 = oneTBB default (one per core)
  std::set<std::string> print_after;    // pass names (or "all") to print the IR after
  std::map<std::string, int64_t> dims;  // symbol bindings (`--dim`: one value, no buckets)
  // `--buckets`: the values each open symbolic dim gets an entry for (buckets.h); a program
  // with open symbolic dims and no given input shapes gets default buckets.
  std::map<std::string, std::vector<int64_t>> buckets;
  // The shapes of the inputs the artifact will run on, by user-input position: symbolic dims
  // not in `dims` are bound from these instead of the program's own sample inputs.
  std::vector<std::vector<int64_t>> input_shapes;
  // Optional progress: the step the compile is in, and an estimate of the fraction of the whole
  // compile done, for an ETA. The estimate weighs the phases as a large model spends its time
  // (reading 10 %, optimising 25 %, code generation 40 %, writing 25 %; bench/results/compile.md)
  // and moves within them by passes run and partition nodes generated; it is not a measurement.
  std::function<void(const std::string& step, double fraction)> progress;
  // Also expose every node result as an output named "debug:<value>" (for per-node
  // verification against PyTorch's intermediates).
  bool debug_all_values = false;
  // Place every node the loader has a host kernel for on the host, and only the rest on the
  // device: the reference side of differential testing (tests/difftest), whose host kernels
  // are an implementation independent of codegen's lowerings.
  bool host_only = false;
  // `--tp N`: tensor parallelism over N NeuronCores (passes/tensor_parallel.h). The artifact
  // holds one program per device partition run by every core over its own weights' chunks.
  int tp = 1;
  // SHA-256s of source files the caller already computed (the compile cache's key), by file
  // identity: a source opened with one of these identities is not hashed again.
  std::vector<frontend::KnownDigest> known_sha256;
  // Where to write the artifact. When set, the writer streams it to this file (a temporary
  // renamed into place when whole, nothing left behind on failure) and CompileResult::artifact
  // stays empty: no copy of the artifact is held in memory. When empty, the bytes are returned.
  std::string output;
};

// A node result exposed by CompileRequest::debug_all_values, in execution order.
struct DebugValue {
  std::string value, node, op, location;
};

struct HostNodeReport {
  std::string node, op, reason, location;
};

struct PartitionReport {
  bool device = true;
  size_t nodes = 0;
  uint64_t instructions = 0;
  uint64_t hbm_bytes = 0;
  uint32_t sbuf_peak_bytes = 0;
  uint32_t psum_peak_bytes = 0;
  double flops = 0;
};

struct CompileResult {
  std::vector<std::byte> artifact;  // empty when CompileRequest::output named a file
  uint64_t artifact_size = 0;       // its bytes, in memory or in the file
  std::string container, torch_version;
  size_t imported_nodes = 0, optimized_nodes = 0;
  std::vector<PartitionReport> partitions;
  std::vector<HostNodeReport> host_nodes;
  std::map<std::string, int64_t> specialized;  // symbol -> bound value
  std::vector<BucketSymbol> buckets;           // the shape buckets' symbols (none: one shape)
  std::string specialized_from;                // "--dim", "sample inputs"
  std::vector<DebugValue> debug_values;
  uint64_t constant_bytes = 0;
  double flops = 0;
  passes::TensorParallelStats tensor_parallel;  // what --tp split (summed over programs)
  double seconds_frontend = 0, seconds_passes = 0, seconds_codegen = 0, seconds_write = 0;
  // Each pass of core 0's pipeline and its wall time, in order (summed over entries).
  std::vector<std::pair<std::string, double>> pass_seconds;
};

// The target named `name` ("trn1", "trn2", "trn3", or the alias "inf2"); an unknown name throws
// an error listing the valid ones.
const device::Target& resolve_target(const std::string& name);

// Compiles `req.model`: a program file, or a directory of one model's programs
// (frontend::is_program_set), which becomes one artifact with an entry per program. Throws
// std::runtime_error subclasses (frontend::Error, ir::Error, codegen::Error) whose message names
// the file or the node.
CompileResult compile_model(const CompileRequest& req);

// Compiles a program already loaded (or built in memory, as the differential tester does);
// `req.model` only names it in the artifact's provenance.
CompileResult compile_program(frontend::LoadedProgram prog, const CompileRequest& req);

// Compiles several programs of one model into one artifact, an entry each (artifact::EntrySpec)
// in the given order: they share the artifact's constants' storage (identical bytes once) and
// its states (a prefill program fills the KV cache a decode program reads). Each program keeps
// its own device partitions and their weights' copies in the HBM arena.
CompileResult compile_entries(std::vector<std::pair<std::string, frontend::LoadedProgram>> programs,
                              const CompileRequest& req);

}  // namespace neuronc::compiler
