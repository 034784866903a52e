// The compiler: a program file in, artifact bytes out (see compiler.h).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "artifact_format/crc32c.h"
#include "artifact_format/writer.h"
#include "codegen/codegen.h"
#include "codegen/hbm_plan.h"
#include "compiler/compiler.h"
#include "compiler/index_bounds.h"
#include "compiler/pipeline.h"
#include "compiler/placement.h"
#include "device/target.h"
#include "frontend/load.h"
#include "frontend/sha256.h"
#include "ir/op_registry.h"
#include "passes/host_eval.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"

#ifndef NEURONC_VERSION
#define NEURONC_VERSION "0.0.0"
#endif

namespace neuronc::compiler {
namespace {

namespace art = neuronc::artifact;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

art::TensorDType to_tensor_dtype(ir::DType t) {
  return ir::element_type(t);
}

// The plan dtype whose bytes the device reads for a device dtype.
art::TensorDType from_device_dtype(device::DType t) {
  if (!neuronc::is_tensor_dtype(t))
    throw ir::Error("device dtype " + std::string(device::dtype_name(t)) + " has no plan dtype");
  return t;
}

// bool and u8 share their bytes: binding one as the other needs no conversion.
bool same_bytes(art::TensorDType a, art::TensorDType b) {
  auto norm = [](art::TensorDType t) {
    return t == art::TensorDType::boolean ? art::TensorDType::u8 : t;
  };
  return norm(a) == norm(b);
}

std::vector<art::Dim> plan_dims(const ir::Shape& s) {
  std::vector<art::Dim> out;
  for (const ir::Dim& d : s) {
    if (!d.is_constant()) throw ir::Error("internal: symbolic dim left after specialisation");
    out.push_back(art::Dim::constant(d.value()));
  }
  return out;
}

std::vector<art::Dim> plan_dims(const std::vector<int64_t>& s) {
  std::vector<art::Dim> out;
  for (int64_t d : s) out.push_back(art::Dim::constant(d));
  return out;
}

// Where a partition's HBM bytes go in the artifact's arena: its own buffers at `base`, packed
// down over the constants an earlier partition (of this program or of an earlier entry) already
// placed, which it reads where they are instead.
class HbmPlacement {
 public:
  explicit HbmPlacement(uint64_t base) : base_(base) {}
  // Local range [start, end) is a constant already placed at absolute offset `at`.
  void share(uint64_t start, uint64_t end, uint64_t at) { shared_.push_back({start, end, at}); }
  void finish() {
    std::sort(shared_.begin(), shared_.end(),
              [](const Shared& a, const Shared& b) { return a.start < b.start; });
    uint64_t below = 0;
    for (Shared& s : shared_) {
      s.removed_below = below;
      below += s.end - s.start;
    }
    removed_ = below;
  }
  // The absolute arena offset of local offset `o` (a buffer never straddles a shared range).
  uint64_t map(uint64_t o) const {
    auto it = std::upper_bound(shared_.begin(), shared_.end(), o,
                               [](uint64_t x, const Shared& s) { return x < s.start; });
    if (it == shared_.begin()) return base_ + o;
    const Shared& s = *std::prev(it);
    if (o < s.end) return s.at + (o - s.start);
    return base_ + o - s.removed_below - (s.end - s.start);
  }
  uint64_t hbm_size(uint64_t local_size) const { return base_ + local_size - removed_; }
  bool empty() const { return shared_.empty(); }

 private:
  struct Shared {
    uint64_t start, end, at, removed_below = 0;
  };
  uint64_t base_;
  uint64_t removed_ = 0;
  std::vector<Shared> shared_;
};

// Places a program's HBM addresses by `place` and moves its debug ids up by `debug_base`.
void relocate(device::Program& p, const HbmPlacement& place, uint32_t debug_base) {
  for (device::CoreProgram& core : p.cores) {
    for (auto& stream : core.streams) {
      for (device::Instruction& ins : stream) {
        device::for_each_operand(ins.op, [&](device::MemRef& m, device::Access) {
          if (m.memory == device::MemoryKind::hbm) m.offset = place.map(m.offset);
        });
        if (ins.debug_id != device::kNoDebugId) ins.debug_id += debug_base;
      }
    }
  }
  p.hbm_size = place.hbm_size(p.hbm_size);
}

// Bytes of a constant's stored tensor (its data, or what absent data would take).
uint64_t constant_size(const codegen::ConstantBinding& cb) {
  uint64_t n = device::dtype_size(cb.dtype);
  for (int64_t d : cb.shape) n *= static_cast<uint64_t>(d);
  return n;
}

// What identifies a constant across partitions and programs: its origin (the weight it holds),
// device dtype, stored shape and layout, and its bytes' size and CRC (or that they are absent).
// Empty (never shared) for a constant without an origin.
std::string constant_key(const codegen::ConstantBinding& cb) {
  if (cb.origin.empty()) return {};
  std::string k = cb.origin + "|" + std::string(device::dtype_name(cb.dtype)) + "|";
  for (int64_t d : cb.shape) k += std::to_string(d) + ",";
  k += cb.transposed ? "|T|" : "|N|";
  for (int64_t d : cb.permutation) k += std::to_string(d) + ",";
  k += "|" + std::to_string(cb.row_interleave) + "|" + std::to_string(cb.column_block) + "|";
  if (cb.absent)
    k += "absent";
  else if (cb.fill)  // one program (DeviceArena::defer_constants): the payload it is made from
    k += "from:" + cb.fill_source;
  else
    k += std::to_string(cb.data.size()) + ":" + std::to_string(art::crc32c(cb.data));
  return k;
}

// Contiguous row-major bytes of `payload` as a value of `type` (a constant graph input's, or a
// state's initial bytes), in its IR dtype.
std::vector<std::byte> payload_bytes(const std::string& name, const ir::ConstantPayload& payload,
                                     const ir::TensorType& type) {
  auto d = passes::dense_payload(payload, type);
  if (!d)
    throw ir::Error("constant '" + name +
                    "': its payload is shorter than its shape and strides need");
  return std::vector<std::byte>(d->data, d->data + d->nbytes());
}

class ArtifactBuilder {
 public:
  // `constant_names`: the names given so far, shared by every program of the artifact.
  ArtifactBuilder(ir::Graph& g, art::ArtifactWriter& w, std::set<std::string>& constant_names)
      : g_(g), w_(w), constant_names_(constant_names) {}

  uint32_t plan_value(const ir::Value* v) {
    if (auto it = index_.find(v); it != index_.end()) return it->second;
    if (v->payload() && !v->producer()) {
      std::string target;
      for (const ir::GraphInput& in : g_.inputs()) {
        if (in.value == v) target = in.target;
      }
      const std::string name = unique_constant_name(target.empty() ? v->name() : target);
      const uint32_t idx =
          v->payload()->absent
              ? w_.add_absent_constant(name, to_tensor_dtype(v->dtype()), plan_dims(v->shape()))
              : w_.add_constant(name, to_tensor_dtype(v->dtype()), plan_dims(v->shape()),
                                payload_bytes(v->name(), *v->payload(), v->type()));
      index_[v] = idx;
      return idx;
    }
    throw ir::Error("internal: value '" + v->name() + "' has no plan value");
  }

  void define(const ir::Value* v, uint32_t idx) { index_[v] = idx; }

  // The plan value holding `v` in dtype `want` (a host _to_copy when the bytes differ).
  uint32_t as_dtype(const ir::Value* v, art::TensorDType want) {
    const uint32_t src = plan_value(v);
    if (same_bytes(to_tensor_dtype(v->dtype()), want)) return src;
    auto key = std::make_pair(v, want);
    if (auto it = converted_.find(key); it != converted_.end()) return it->second;
    const uint32_t dst =
        w_.add_value(v->name() + "@" + std::string(dtype_name(want)), want, plan_dims(v->shape()));
    bound_narrowed_input(src, want);
    add_cast(src, dst, want);
    converted_[key] = dst;
    return dst;
  }

  // A user input narrowed from 64 to 32 bits for the device would wrap silently (2^32 + 3
  // becomes 3, where PyTorch computes with the 64-bit value): unless a tighter bound (an
  // embedding's rows) is already recorded, the loader refuses values outside 32 bits.
  void bound_narrowed_input(uint32_t src, art::TensorDType want) {
    const art::Value& sv = w_.contents().plan.values[src];
    if (sv.kind != art::ValueKind::input || sv.dtype != art::TensorDType::i64 ||
        want != art::TensorDType::i32)
      return;
    art::TensorSpec& spec = w_.contents().signature.inputs[sv.index];
    if (spec.index_bound) return;
    spec.index_bound = art::IndexBound{INT32_MIN, int64_t{INT32_MAX} + 1,
                                       "the 32-bit integers the NeuronCore computes this input in"};
  }

  void add_cast(uint32_t src, uint32_t dst, art::TensorDType to) {
    art::HostOp op;
    op.op = "aten._to_copy.default";
    op.args = {art::Arg::tensor("self", static_cast<int32_t>(src)),
               art::Arg::scalar_type("dtype", to)};
    op.outputs = {dst};
    w_.add_host_op(std::move(op));
  }

  std::string unique_constant_name(const std::string& base) {
    std::string name = base;
    for (int i = 1; !constant_names_.insert(name).second; ++i)
      name = base + "#" + std::to_string(i);
    return name;
  }

  void host_node(const ir::Node& n) {
    art::HostOp op;
    op.op = n.op();
    op.args = passes::kernel_args(
        n, [&](size_t, const ir::Value& v) { return static_cast<int32_t>(plan_value(&v)); });
    for (const ir::Value* out : n.outputs()) {
      const uint32_t idx =
          w_.add_value(out->name(), to_tensor_dtype(out->dtype()), plan_dims(out->shape()));
      op.outputs.push_back(idx);
      define(out, idx);
    }
    op.debug_id = w_.add_debug_node(debug_node(n));
    w_.add_host_op(std::move(op));
  }

  static art::DebugNode debug_node(const ir::Node& n) {
    art::DebugNode d;
    d.name = n.name();
    d.op = n.op();
    d.file = n.location().file;
    d.line = n.location().line;
    d.stack = n.location().module_path;
    return d;
  }

 private:
  ir::Graph& g_;
  art::ArtifactWriter& w_;
  std::unordered_map<const ir::Value*, uint32_t> index_;
  std::map<std::pair<const ir::Value*, art::TensorDType>, uint32_t> converted_;
  std::set<std::string>& constant_names_;
};

}  // namespace

namespace {

// What the device partitions of one artifact share: one NeuronCore's HBM arena (partitions are
// relocated one after another) and the SBUF / PSUM peaks.
struct DeviceArena {
  uint64_t end = 0;
  uint32_t sbuf_peak = 0, psum_peak = 0;
  // Constants placed so far (constant_key -> absolute offset): a later partition, of the same
  // program or of another entry, reads the one copy (prefill and decode share their weights).
  std::map<std::string, uint64_t> placed;
  // One program on one core: a weight codegen lays out from its payload is made by the writer,
  // straight into the artifact (ConstantBinding::fill). With several programs (entries, shape
  // buckets) or cores, its bytes are made at once: sharing between programs and cores compares
  // them.
  bool defer_constants = false;
};

// Tensor parallelism (--tp N): every device program is compiled once, for core 0, from the graph
// the TensorParallel pass made for core 0; finish() replicates it over the cores (core r's HBM
// region is core 0's moved by r x the arena's size) and fills each core's constants from the
// graph made for that core. These are what finish() needs.
struct TensorParallelBuild {
  int cores = 1;
  // A constant placed in core 0's region; `graph` indexes `graphs`.
  struct Constant {
    codegen::ConstantBinding layout;  // data kept only for one codegen made up (no origin)
    uint64_t at = 0;
    std::string name;
    std::vector<art::Dim> dims;
    size_t graph = 0;
    // A one-element constant's bytes on core 0: codegen makes such a constant an immediate of
    // the program every core shares, so no other core may need another value.
    std::optional<std::vector<std::byte>> scalar;
  };
  // A binding of core `core`'s copy of a value, at `offset` in core 0's region.
  struct Binding {
    size_t step = 0;
    bool output = false;
    uint32_t value = 0;
    uint64_t offset = 0;
    int core = 0;
  };
  // Per compiled program: the graphs of cores 1..N-1 (empty for a weights-free program, whose
  // cores differ in nothing).
  std::vector<std::vector<std::unique_ptr<ir::Graph>>> graphs;
  std::vector<Constant> constants;
  std::vector<Binding> bindings;
  // Per value of the program being compiled (core 0's graph): the plan values of its copies on
  // cores 1..N-1 (states, and every device partition's results). Reset per program.
  std::unordered_map<const ir::Value*, std::vector<uint32_t>> core_values;
};

std::string core_name(const std::string& base, int core) {
  return base + "@core" + std::to_string(core);
}

// Codegen options for an optimisation level.
codegen::CodegenOptions codegen_options(const CompileRequest& req) {
  codegen::CodegenOptions copts;
  copts.threads = req.threads;
  // -O0: no fusion, every op its own kernel (for debugging a fused kernel against its ops).
  copts.fuse = req.opt_level >= 1;
  copts.update_in_place = req.opt_level >= 1;
  copts.block_weights = req.opt_level >= 1;
  // -O2 (the default) and up: activations stay in SBUF between kernels when they can.
  copts.forward_stores = req.opt_level >= 2;
  copts.schedule = req.opt_level >= 2;
  // -O3: a wider search over instruction orders, each timed by the device model.
  if (req.opt_level >= 3) copts.schedule_windows = {1024, 4096, 16384};
  return copts;
}

// Partitions the optimised graph for `target`; an unsupported node is an error naming it.
passes::PartitionPlan partition_or_fail(const ir::Graph& g, const device::Target& target,
                                        bool host_only, CompileResult& result) {
  passes::PartitionPlan plan =
      passes::partition_graph(g, host_only ? host_first_oracle(target) : placement_oracle(target));
  if (!plan.unsupported.empty()) {
    const ir::Node* n = plan.unsupported.front().node;
    throw ir::Error(
        n->describe() + ": not supported: " + plan.unsupported.front().reason +
        (plan.unsupported.size() > 1
             ? " (and " + std::to_string(plan.unsupported.size() - 1) + " more unsupported nodes)"
             : ""));
  }
  for (const passes::HostReason& r : plan.host_reasons) {
    result.host_nodes.push_back(
        {r.node->name(), r.node->op(), r.reason, r.node->location().to_string()});
  }
  return plan;
}

// Provenance (but the source's SHA-256: see begin_artifact), target and options of the artifact.
void write_metadata(art::ArtifactContents& c, const frontend::LoadedProgram& prog,
                    const CompileRequest& req, const std::map<std::string, int64_t>& dims) {
  c.producer = {"neuronc", NEURONC_VERSION};
  c.source.container = prog.container;
  c.source.schema_version =
      std::to_string(prog.schema_major) + "." + std::to_string(prog.schema_minor);
  c.source.torch_version = prog.torch_version;
  c.source.file_name = std::filesystem::path(req.model).filename().string();
  c.target = req.target;
  c.num_cores = static_cast<uint32_t>(std::max(1, req.tp));
  c.options.auto_cast = passes::auto_cast_name(req.auto_cast);
  c.options.opt_level = req.opt_level;
  for (const auto& [name, value] : dims)
    c.options.extra.emplace_back("dim." + name, std::to_string(value));
}

// Compiles device partition `p` (number `part_no`) and adds its program, bindings, constants
// and debug nodes to the artifact, relocated after the partitions before it in `arena`.
PartitionReport add_device_partition(const ir::Graph& g, const passes::Partition& p, size_t part_no,
                                     const device::Target& target, const CompileRequest& req,
                                     art::ArtifactWriter& w, ArtifactBuilder& b, DeviceArena& arena,
                                     TensorParallelBuild& tp, CompileResult& result) {
  PartitionReport rep;
  rep.nodes = p.nodes.size();
  art::ArtifactContents& c = w.contents();
  codegen::CodegenOptions copts = codegen_options(req);
  copts.defer_constant_bytes = arena.defer_constants;
  codegen::CompiledPartition cp =
      codegen::compile_partition(g, p.nodes, p.inputs, p.outputs, target, copts);
  const uint64_t base = (arena.end + 4095) / 4096 * 4096;
  // Debug nodes of this partition, in debug-id order.
  const uint32_t debug_base = static_cast<uint32_t>(c.debug_nodes.size());
  for (const codegen::DebugName& d : cp.debug_names) {
    art::DebugNode dn;
    if (const ir::Node* n = g.find_node(d.node)) {
      dn = ArtifactBuilder::debug_node(*n);
    } else {
      dn.name = d.node;
      dn.op = d.op;
    }
    w.add_debug_node(dn);
  }
  HbmPlacement place(base);
  std::vector<std::string> keys(cp.constants.size());
  std::vector<bool> shared(cp.constants.size(), false);
  for (size_t i = 0; i < cp.constants.size(); ++i) {
    const codegen::ConstantBinding& cb = cp.constants[i];
    keys[i] = constant_key(cb);
    if (keys[i].empty()) continue;
    if (auto it = arena.placed.find(keys[i]); it != arena.placed.end()) {
      const uint64_t bytes =
          codegen::kHbmAlign * ((constant_size(cb) + codegen::kHbmAlign - 1) / codegen::kHbmAlign);
      place.share(cb.offset, cb.offset + bytes, it->second);
      shared[i] = true;
    }
  }
  place.finish();
  relocate(cp.program, place, debug_base);
  arena.end = cp.program.hbm_size;

  art::DeviceCall call;
  std::unordered_map<std::string, const ir::Value*> by_name;
  for (const ir::Value* v : p.inputs) by_name[v->name()] = v;
  for (const ir::Value* v : p.outputs) by_name[v->name()] = v;
  // Bindings of cores 1..N-1; their step is the call's, known once it is added.
  std::vector<TensorParallelBuild::Binding> core_bindings;
  for (const codegen::TensorBinding& tb : cp.inputs) {
    const ir::Value* v = by_name.at(tb.name);
    call.inputs.push_back({b.as_dtype(v, from_device_dtype(tb.dtype)), place.map(tb.offset)});
    // Each core reads its own copy: of a state or an earlier partition's result, its core's; of
    // anything else (a user input, a host op's result), the one value every core shares.
    auto own = tp.core_values.find(v);
    if (own != tp.core_values.end() && call.inputs.back().value != b.plan_value(v))
      throw ir::Error("tensor parallelism: value '" + v->name() +
                      "' would need a dtype conversion on each core, which is not supported");
    for (int r = 1; r < tp.cores; ++r) {
      const uint32_t value =
          own != tp.core_values.end() ? own->second[r - 1] : call.inputs.back().value;
      core_bindings.push_back({0, false, value, place.map(tb.offset), r});
    }
  }
  for (size_t i = 0; i < cp.constants.size(); ++i) {
    codegen::ConstantBinding& cb = cp.constants[i];
    if (shared[i]) continue;  // read where an earlier partition placed it
    std::vector<int64_t> shape = cb.shape;
    if (cb.transposed && shape.size() == 2) std::swap(shape[0], shape[1]);
    const std::string name = b.unique_constant_name(cb.target.empty() ? cb.name : cb.target);
    const uint64_t at = place.map(cb.offset);
    if (!keys[i].empty()) arena.placed.emplace(keys[i], at);
    if (cb.absent) {
      w.add_absent_constant(name, from_device_dtype(cb.dtype), plan_dims(shape), at);
      if (tp.cores > 1)
        tp.constants.push_back({cb, at, name, plan_dims(shape), tp.graphs.size() - 1, {}});
      continue;
    }
    if (cb.fill) {  // made by the writer (one program, one core)
      result.constant_bytes += constant_size(cb);
      w.add_constant(name, from_device_dtype(cb.dtype), plan_dims(shape),
                     art::ConstantFill{constant_size(cb), std::move(cb.fill), cb.as_is,
                                       cb.drop_as_is, cb.read_as_is, cb.as_is_owner},
                     at);
      continue;
    }
    result.constant_bytes += cb.data.size();
    // The writer takes the bytes (tensor parallelism still reads them below: a copy).
    w.add_constant(name, from_device_dtype(cb.dtype), plan_dims(shape),
                   tp.cores > 1 ? std::vector<std::byte>(cb.data) : std::move(cb.data), at);
    if (tp.cores > 1) {
      TensorParallelBuild::Constant k{cb, at, name, plan_dims(shape), tp.graphs.size() - 1, {}};
      int64_t count = 1;
      for (int64_t d : cb.shape) count *= d;
      if (count == 1) k.scalar = cb.data;
      // Core r's bytes come from core r's graph; a weights-free program has none, and every
      // constant with bytes is then the same on every core (made from no weight).
      if (!cb.origin.empty() && !tp.graphs.back().empty()) k.layout.data.clear();
      tp.constants.push_back(std::move(k));
    }
  }
  std::vector<std::pair<uint32_t, const ir::Value*>> casts_back;
  for (const codegen::TensorBinding& tb : cp.outputs) {
    const ir::Value* v = by_name.at(tb.name);
    const art::TensorDType dev = from_device_dtype(tb.dtype);
    const art::TensorDType want = to_tensor_dtype(v->dtype());
    if (same_bytes(dev, want)) {
      const uint32_t idx = w.add_value(v->name(), want, plan_dims(v->shape()));
      b.define(v, idx);
      call.outputs.push_back({idx, place.map(tb.offset)});
      for (int r = 1; r < tp.cores; ++r) {
        std::vector<uint32_t>& copies = tp.core_values[v];
        copies.push_back(w.add_value(core_name(v->name(), r), want, plan_dims(v->shape())));
        core_bindings.push_back({0, true, copies.back(), place.map(tb.offset), r});
      }
    } else {
      const uint32_t raw = w.add_value(v->name() + "@device", dev, plan_dims(tb.shape));
      call.outputs.push_back({raw, place.map(tb.offset)});
      casts_back.emplace_back(raw, v);
    }
  }

  {
    art::DeviceProgram dp;
    dp.name = "partition" + std::to_string(part_no);
    dp.program = std::move(cp.program);
    dp.sbuf_peak_bytes = cp.stats.sbuf_peak_bytes;
    dp.psum_peak_bytes = cp.stats.psum_peak_bytes;
    call.program = w.add_program(std::move(dp));
  }
  w.add_device_call(std::move(call));
  for (TensorParallelBuild::Binding& cb : core_bindings) {
    cb.step = c.plan.steps.size() - 1;
    tp.bindings.push_back(cb);
  }
  for (const auto& [raw, v] : casts_back) {
    const uint32_t idx = w.add_value(v->name(), to_tensor_dtype(v->dtype()), plan_dims(v->shape()));
    b.add_cast(raw, idx, to_tensor_dtype(v->dtype()));
    b.define(v, idx);
  }
  uint64_t instructions = 0;
  for (uint64_t n : cp.stats.instructions) instructions += n;
  rep.instructions = instructions;
  rep.hbm_bytes = cp.stats.hbm_bytes;
  rep.sbuf_peak_bytes = cp.stats.sbuf_peak_bytes;
  rep.psum_peak_bytes = cp.stats.psum_peak_bytes;
  // Every core runs the program: the model's FLOPs are all cores' (with replicated KV heads a
  // few are computed twice).
  rep.flops = cp.stats.flops * tp.cores;
  result.flops += rep.flops;
  arena.sbuf_peak = std::max(arena.sbuf_peak, cp.stats.sbuf_peak_bytes);
  arena.psum_peak = std::max(arena.psum_peak, cp.stats.psum_peak_bytes);
  return rep;
}

}  // namespace

const device::Target& resolve_target(const std::string& name) {
  auto kind = device::parse_target(name);
  if (!kind.is_ok()) throw ir::Error(kind.status().message());
  return device::target(*kind);
}

CompileResult compile_model(const CompileRequest& req) {
  resolve_target(req.target);  // an unknown target is reported before the model is read
  const auto t0 = Clock::now();
  if (req.progress) req.progress("[1/4] reading " + req.model, 0.0);
  if (frontend::is_program_set(req.model)) {
    frontend::ProgramSetHeads heads;
    auto programs = frontend::load_program_set(req.model, &heads, req.known_sha256);
    // Attention splits by heads: a degree that cuts a query head, or a KV head that neither
    // divides over the cores nor is shared by a whole number of them, is refused.
    if (req.tp > 1 && heads.attention > 0 &&
        (heads.attention % req.tp != 0 ||
         (heads.kv > 0 && heads.kv % req.tp != 0 && req.tp % heads.kv != 0)))
      throw ir::Error("--tp " + std::to_string(req.tp) + ": the model's " +
                      std::to_string(heads.attention) + " attention heads (" +
                      std::to_string(heads.kv) + " KV heads) do not split over " +
                      std::to_string(req.tp) +
                      " cores: expected a degree that divides the attention heads and divides, "
                      "or is a multiple of, the KV heads");
    const double seconds_frontend = since(t0);
    CompileResult result = compile_entries(std::move(programs), req);
    result.seconds_frontend = seconds_frontend;
    return result;
  }
  frontend::LoadedProgram prog = frontend::load_program(req.model, req.known_sha256);
  const double seconds_frontend = since(t0);
  CompileResult result = compile_program(std::move(prog), req);
  result.seconds_frontend = seconds_frontend;
  return result;
}

namespace {

// What the programs of one artifact share while they are compiled into it.
struct ArtifactUnderConstruction {
  art::ArtifactWriter w;
  DeviceArena arena;
  std::set<std::string> constant_names;
  bool has_metadata = false;
  // The source's SHA-256, hashed on a thread of its own (LoadedProgram::sha256): waited for
  // only once the artifact's constants are written, so hashing overlaps optimising, code
  // generation and writing the weights.
  std::shared_future<std::string> source_sha256;
  TensorParallelBuild tp;
  size_t entry = 0, entries = 1;  // the program compile_into compiles, of how many (progress)
  // A bucketed compile's open symbols, each with its signature index: a program's reads of
  // their sizes become symbol values the loader fills with the run's real sizes.
  std::map<std::string, uint32_t> bucket_symbols;
};

// The artifact's metadata from `prog`, once; its SHA-256 is kept as the future it is, read only
// when the artifact is written (finish()).
void begin_artifact(ArtifactUnderConstruction& u, const frontend::LoadedProgram& prog,
                    const CompileRequest& req, const std::map<std::string, int64_t>& dims) {
  write_metadata(u.w.contents(), prog, req, dims);
  u.source_sha256 = prog.sha256;
  u.has_metadata = true;
}

// The phases' shares of a compile's time, for the progress estimate (CompileRequest::progress).
constexpr double kReadShare = 0.10, kOptimiseShare = 0.25, kCodegenShare = 0.40;

// The fraction of the whole compile done when entry `u.entry` of `u.entries` is `local` of the
// way through its optimising and code generation.
double compile_fraction(const ArtifactUnderConstruction& u, double local) {
  return kReadShare + (kOptimiseShare + kCodegenShare) * (static_cast<double>(u.entry) + local) /
                          static_cast<double>(std::max<size_t>(1, u.entries));
}

// Whether no constant or state of `g` carries bytes (a weights-free export): then the cores of
// a tensor-parallel program differ in nothing.
bool weights_free(const ir::Graph& g) {
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) continue;
    if (in.role == ir::InputRole::state) {
      if (in.initial && !in.initial->absent) return false;
      continue;
    }
    if (in.value->payload() && !in.value->payload()->absent) return false;
  }
  return true;
}

// The program core r runs must be core 0's instruction for instruction: the graphs the
// TensorParallel pass made for them may differ only in their constants' bytes.
void check_same_structure(const ir::Graph& a, const ir::Graph& b, int core) {
  auto fail = [&](const std::string& what) {
    throw ir::Error("internal: tensor parallelism: core " + std::to_string(core) +
                    "'s program differs from core 0's (" + what + ")");
  };
  if (a.nodes().size() != b.nodes().size()) fail("node count");
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const ir::Node& x = *a.nodes()[i];
    const ir::Node& y = *b.nodes()[i];
    if (x.op() != y.op() || x.name() != y.name() || x.attrs() != y.attrs() ||
        x.inputs().size() != y.inputs().size() || x.outputs().size() != y.outputs().size())
      fail("node " + x.name());
    for (size_t k = 0; k < x.outputs().size(); ++k)
      if (x.output(k)->type() != y.output(k)->type() || x.output(k)->name() != y.output(k)->name())
        fail("result of node " + x.name());
  }
}

// Compiles `prog` into `u`: its inputs, outputs, steps, programs, constants and states (a state
// another program of the artifact already added is shared, and must agree in dtype and shape).
// Returns the positions in the optimised graph's outputs of the signature outputs it added, in
// their order.
std::vector<size_t> compile_into(frontend::LoadedProgram& prog, const CompileRequest& req,
                                 ArtifactUnderConstruction& u, CompileResult& result) {
  // `local`: the fraction of this program's optimising and code generation done.
  auto progress = [&](const std::string& s, double local) {
    if (req.progress) req.progress(s, compile_fraction(u, local));
  };
  constexpr double kOptimised = kOptimiseShare / (kOptimiseShare + kCodegenShare);
  const device::Target& target = resolve_target(req.target);
  ir::Graph& g = *prog.graph;
  result.container = prog.container;
  result.torch_version = prog.torch_version;
  result.imported_nodes = g.nodes().size();

  // Bind symbolic dims: explicit --dim values first, then the inputs the caller will run on,
  // else the program's sample inputs.
  auto t0 = Clock::now();
  progress("[2/4] optimising", 0.0);
  PipelineOptions popts;
  std::vector<frontend::SampleInput> shapes = prog.sample_inputs;
  if (!req.input_shapes.empty()) {
    shapes.clear();
    for (const ir::GraphInput& in : g.inputs()) {
      if (in.role != ir::InputRole::user_input) continue;
      if (shapes.size() == req.input_shapes.size()) break;
      shapes.push_back({in.value->name(), in.value->dtype(), req.input_shapes[shapes.size()], {}});
    }
  }
  popts.dims = bind_symbolic_dims(g, shapes, req.dims);
  if (!g.symbols().empty()) {
    result.specialized_from = !req.dims.empty()           ? "--dim"
                              : !req.input_shapes.empty() ? "the given inputs"
                                                          : "sample inputs";
  }
  popts.opt_level = req.opt_level;
  popts.auto_cast = req.auto_cast;
  for (const auto& [name, index] : u.bucket_symbols) popts.symbol_values.insert(name);
  // --tp N: core 0's graph here, cores 1..N-1's (the same program over their weights' chunks)
  // beside it.
  TensorParallelBuild& tp = u.tp;
  tp.core_values.clear();
  std::vector<std::unique_ptr<ir::Graph>> core_graphs;
  passes::TensorParallelStats tp_stats;
  if (!device::valid_tensor_parallel_degree(target, req.tp))
    throw ir::Error("--tp " + std::to_string(req.tp) + ": " + std::string(target.name) +
                    " instances run tensor parallelism over " +
                    device::tensor_parallel_degrees_text(target) + " NeuronCores");
  if (req.tp > 1) {
    if (req.debug_all_values)
      throw ir::Error("--tp: per-node debug values are not available with tensor parallelism");
    tp.cores = req.tp;
    const passes::PlacementOracle oracle =
        req.host_only ? host_first_oracle(target) : placement_oracle(target);
    popts.tensor_parallel.ranks = req.tp;
    popts.tensor_parallel.on_device = [oracle](const ir::Node& n) {
      return oracle(n).kind == passes::Placement::device;
    };
    if (!weights_free(g)) {
      for (int r = 1; r < req.tp; ++r) {
        std::unique_ptr<ir::Graph> gr = g.clone();
        PipelineOptions ro = popts;
        ro.tensor_parallel.rank = r;
        passes::PassManager rpm;
        build_compile_pipeline(rpm, ro);
        rpm.run(*gr);
        core_graphs.push_back(std::move(gr));
      }
    }
    popts.tensor_parallel_stats = &tp_stats;
  }
  passes::PassManagerOptions pm_opts;
  pm_opts.print_after = req.print_after;
  if (req.progress)
    pm_opts.after_pass = [&](size_t done, size_t total) {
      progress("[2/4] optimising", kOptimised * static_cast<double>(done) /
                                       static_cast<double>(std::max<size_t>(1, total)));
    };
  passes::PassManager pm(pm_opts);
  build_compile_pipeline(pm, popts);
  std::vector<std::string> output_names;
  for (const ir::GraphOutput& o : g.outputs())
    if (o.role == ir::OutputRole::user_output) output_names.push_back(o.value->name());
  pm.run(g);
  for (const passes::PassRecord& rec : pm.records()) {
    auto it = std::find_if(result.pass_seconds.begin(), result.pass_seconds.end(),
                           [&](const auto& p) { return p.first == rec.name; });
    if (it == result.pass_seconds.end())
      result.pass_seconds.emplace_back(rec.name, rec.seconds);
    else
      it->second += rec.seconds;
  }
  for (size_t r = 0; r < core_graphs.size(); ++r)
    check_same_structure(g, *core_graphs[r], static_cast<int>(r) + 1);
  if (req.tp > 1) {
    result.tensor_parallel.column_parallel += tp_stats.column_parallel;
    result.tensor_parallel.row_parallel += tp_stats.row_parallel;
    result.tensor_parallel.embeddings += tp_stats.embeddings;
    result.tensor_parallel.all_reduces += tp_stats.all_reduces;
    result.tensor_parallel.all_gathers += tp_stats.all_gathers;
    for (const auto& [k, v] : tp_stats.split_states) result.tensor_parallel.split_states[k] = v;
  }
  result.specialized = popts.dims;
  result.optimized_nodes = g.nodes().size();
  std::vector<const ir::Value*> debug_outputs;
  if (req.debug_all_values) {
    for (const auto& n : g.nodes()) {
      for (ir::Value* v : n->outputs()) {
        debug_outputs.push_back(v);
        result.debug_values.push_back({v->name(), n->name(), n->op(), n->location().to_string()});
        g.add_output(v, ir::OutputRole::user_output, "debug");
      }
    }
  }
  const passes::PartitionPlan plan = partition_or_fail(g, target, req.host_only, result);
  result.seconds_passes = since(t0);

  art::ArtifactWriter& w = u.w;
  art::ArtifactContents& c = w.contents();
  if (!u.has_metadata) begin_artifact(u, prog, req, popts.dims);
  ArtifactBuilder b(g, w, u.constant_names);
  const auto bounds = index_bounds(g);
  // A state (a buffer the program mutates) starts from its exported bytes; one exported with no
  // bytes (a meta export) starts from zeros, as PyTorch's loader fills an empty buffer.
  std::map<std::string, uint32_t> state_values;
  std::map<std::string, std::vector<uint32_t>> core_states;  // --tp: per core, core 0 first
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role != ir::InputRole::state) continue;
    const ir::TensorType& t = in.value->type();
    auto n = ir::numel(t.shape);
    if (!n || !n->is_constant())
      throw ir::Error("state '" + in.target + "' has the symbolic shape " +
                      g.shape_to_string(t.shape) + ": expected a static shape");
    // With --tp each core keeps its own state (its chunk, or a whole copy), "<fqn>@core<r>".
    std::vector<uint32_t> values;
    for (int r = 0; r < tp.cores; ++r) {
      const std::string name = tp.cores > 1 ? core_name(in.target, r) : in.target;
      const ir::GraphInput* src = &in;
      if (r > 0 && !core_graphs.empty()) {
        src = nullptr;
        for (const ir::GraphInput& ci : core_graphs[r - 1]->inputs())
          if (ci.role == ir::InputRole::state && ci.target == in.target) src = &ci;
        if (!src) throw ir::Error("internal: tensor parallelism lost state '" + in.target + "'");
      }
      if (auto shared = w.find_state(name)) {
        const art::Value& sv = c.plan.values[*shared];
        if (sv.dtype != to_tensor_dtype(t.dtype) || sv.dims != plan_dims(t.shape))
          throw ir::Error("state '" + in.target + "' is " + g.type_to_string(t) +
                          " here but has another dtype or shape in an earlier program of the "
                          "artifact: expected programs of one model over one state");
        values.push_back(*shared);
        continue;
      }
      std::optional<std::vector<std::byte>> initial;  // nullopt: absent (weights-free)
      if (!src->initial)
        initial.emplace(static_cast<size_t>(n->coeff) * ir::dtype_size(t.dtype));
      else if (!src->initial->absent)
        initial = payload_bytes(name, *src->initial, t);
      values.push_back(w.add_state(name, to_tensor_dtype(t.dtype), plan_dims(t.shape),
                                   b.unique_constant_name(name + ".initial"), std::move(initial)));
    }
    b.define(in.value, values[0]);
    state_values[in.target] = values[0];
    if (tp.cores > 1) {
      tp.core_values[in.value] = std::vector<uint32_t>(values.begin() + 1, values.end());
      core_states[in.target] = values;
    }
  }
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role != ir::InputRole::user_input) continue;
    b.define(in.value, w.add_input(in.value->name(), to_tensor_dtype(in.value->dtype()),
                                   plan_dims(in.value->shape())));
    if (auto it = bounds.find(in.value); it != bounds.end())
      c.signature.inputs.back().index_bound = it->second;
  }
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role != ir::InputRole::symbol) continue;
    auto it = u.bucket_symbols.find(in.target);
    if (it == u.bucket_symbols.end())
      throw ir::Error("internal: symbol input '" + in.value->name() + "' reads '" + in.target +
                      "', which is not a symbol of the artifact's shape buckets");
    b.define(in.value,
             w.add_symbol_value(in.value->name(), to_tensor_dtype(in.value->dtype()), it->second));
  }

  if (tp.cores > 1) tp.graphs.push_back(std::move(core_graphs));
  t0 = Clock::now();
  DeviceArena& arena = u.arena;
  size_t part_no = 0;
  size_t device_nodes = 0, nodes_done = 0;  // progress by nodes generated
  for (const passes::Partition& p : plan.partitions)
    if (p.kind == passes::PartitionKind::device) device_nodes += p.nodes.size();
  for (const passes::Partition& p : plan.partitions) {
    ++part_no;
    if (p.kind != passes::PartitionKind::device) {
      PartitionReport rep;
      rep.device = false;
      rep.nodes = p.nodes.size();
      for (const ir::Node* n : p.nodes) b.host_node(*n);
      result.partitions.push_back(rep);
      continue;
    }
    progress("[3/4] generating code for device partition " + std::to_string(part_no) + " of " +
                 std::to_string(plan.partitions.size()) + " (" + std::to_string(p.nodes.size()) +
                 " nodes)",
             kOptimised + (1 - kOptimised) * static_cast<double>(nodes_done) /
                              static_cast<double>(std::max<size_t>(1, device_nodes)));
    result.partitions.push_back(
        add_device_partition(g, p, part_no, target, req, w, b, arena, u.tp, result));
    nodes_done += p.nodes.size();
  }
  result.seconds_codegen += since(t0);

  // Signature outputs: the user outputs in order, then buffer mutations (named after the
  // buffer) so no result of the program is lost.
  std::vector<size_t> signature_outputs;  // their positions in g.outputs()
  {
    // A user output keeps the name its value had on import, even when a pass forwarded it to
    // another value (a zero pad, an identity view); a program returning one tensor twice gets
    // "_<position>" on the repeats, so signature names stay unique.
    std::set<std::string> taken;
    size_t k = 0;
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const ir::GraphOutput& o = g.outputs()[i];
      if (o.role != ir::OutputRole::user_output || o.target == "debug") continue;
      std::string name = k < output_names.size() ? output_names[k] : o.value->name();
      if (!taken.insert(name).second) taken.insert(name += "_" + std::to_string(k));
      ++k;
      w.add_output(name, b.plan_value(o.value));
      signature_outputs.push_back(i);
    }
  }
  // A state's mutation output is its new content, kept by the Session; other mutation outputs
  // (a user input written in place) are outputs named after what they wrote.
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::GraphOutput& o = g.outputs()[i];
    if (o.role == ir::OutputRole::user_output) continue;
    auto st = state_values.find(o.target);
    if (o.role == ir::OutputRole::buffer_mutation && st != state_values.end()) {
      w.set_state_update(st->second, b.plan_value(o.value));
      for (int r = 1; r < tp.cores; ++r) {
        auto own = tp.core_values.find(o.value);
        uint32_t update = b.plan_value(o.value);
        if (own != tp.core_values.end())
          update = own->second[r - 1];
        else if (tp_stats.split_states.count(o.target))
          throw ir::Error("tensor parallelism: state '" + o.target +
                          "' is updated by the host, but each core keeps a chunk of it");
        w.set_state_update(core_states.at(o.target)[r], update);
      }
    } else {
      w.add_output(o.target, b.plan_value(o.value));
      signature_outputs.push_back(i);
    }
  }
  for (const ir::Value* v : debug_outputs) w.add_output("debug:" + v->name(), b.plan_value(v));
  return signature_outputs;
}

// --tp N: every device program runs on N cores, core r's HBM region at r x the arena's size
// (core 0's region is the arena compile laid out), its constants filled from core r's graph and
// its states and partition results bound to core r's own plan values. The artifact holds each
// program's core 0 and the replication (artifact::DeviceProgram::replicas); its reader makes
// the copies.
void replicate_over_cores(ArtifactUnderConstruction& u) {
  TensorParallelBuild& tp = u.tp;
  art::ArtifactContents& c = u.w.contents();
  const uint64_t region = std::max<uint64_t>(4096, (u.arena.end + 4095) / 4096 * 4096);
  for (art::DeviceProgram& p : c.programs) {
    p.replicas = static_cast<uint32_t>(tp.cores);
    p.replica_stride = region;
  }
  for (const TensorParallelBuild::Constant& k : tp.constants) {
    const std::vector<std::unique_ptr<ir::Graph>>& graphs = tp.graphs.at(k.graph);
    for (int r = 1; r < tp.cores; ++r) {
      const std::string name = core_name(k.name, r);
      const uint64_t at = k.at + static_cast<uint64_t>(r) * region;
      const art::TensorDType dt = from_device_dtype(k.layout.dtype);
      if (k.layout.absent) {
        u.w.add_absent_constant(name, dt, k.dims, at);
        continue;
      }
      std::optional<std::vector<std::byte>> bytes;
      if (!graphs.empty()) bytes = codegen::constant_bytes_for(k.layout, *graphs[r - 1]);
      if (!bytes) {
        if (!k.layout.origin.empty() && !graphs.empty())
          throw ir::Error("internal: tensor parallelism has no bytes of constant '" + k.name +
                          "' for core " + std::to_string(r));
        bytes = k.layout.data;
      }
      if (k.scalar && *bytes != *k.scalar)
        throw ir::Error("internal: tensor parallelism gives the one-element constant '" + k.name +
                        "' another value on core " + std::to_string(r) +
                        ", but the cores share its value as an immediate");
      u.w.add_constant(name, dt, k.dims, std::move(*bytes), at);
    }
  }
  for (const TensorParallelBuild::Binding& b : tp.bindings) {
    auto& call = std::get<art::DeviceCall>(c.plan.steps.at(b.step));
    (b.output ? call.outputs : call.inputs)
        .push_back({b.value, b.offset + static_cast<uint64_t>(b.core) * region});
  }
  c.num_cores = static_cast<uint32_t>(tp.cores);
}

// Checks the device partitions of every program fit one NeuronCore's HBM, records the model's
// FLOPs (when given) and the memory plan, and writes the artifact.
void finish(ArtifactUnderConstruction& u, const CompileRequest& req,
            std::optional<double> model_flops, CompileResult& result) {
  const device::Target& target = resolve_target(req.target);
  art::ArtifactWriter& w = u.w;
  art::ArtifactContents& c = w.contents();
  const DeviceArena& arena = u.arena;
  // All device partitions share one NeuronCore's HBM arena (relocated one after another).
  if (arena.end > target.hbm_bytes_per_core)
    throw ir::Error("the device partitions need " + std::to_string(arena.end) +
                    " bytes of HBM together, but a " + std::string(target.name) +
                    " NeuronCore has " + std::to_string(target.hbm_bytes_per_core) +
                    ": expected a model (at these shapes) that fits one NeuronCore's HBM");
  // The model's matmul FLOPs, for MFU in `neuronc bench` (extra options stay sorted by key).
  // Shape buckets record none: each bucket has its own, and bench estimates the one it times.
  if (model_flops)
    c.options.extra.emplace_back("model_flops",
                                 std::to_string(static_cast<uint64_t>(*model_flops)));
  std::sort(c.options.extra.begin(), c.options.extra.end());
  c.memory_plan.sbuf_peak_bytes = arena.sbuf_peak;
  c.memory_plan.psum_peak_bytes = arena.psum_peak;
  // The write phase includes the tensor-parallel bindings and constants of every core (--tp),
  // so the phases add up to the compile.
  const auto t0 = Clock::now();
  if (req.progress)
    req.progress("[4/4] writing the artifact", kReadShare + kOptimiseShare + kCodegenShare);
  if (u.tp.cores > 1) replicate_over_cores(u);
  if (u.source_sha256.valid())
    w.set_source_sha256(
        [sha256 = u.source_sha256] { return frontend::digest_from_hex(sha256.get()); });
  if (!req.output.empty()) {
    art::WriteOptions wo;
    wo.threads = req.threads;
    if (art::Status st = w.write_file(req.output, wo); !st.is_ok())
      throw ir::Error("writing the artifact: " + st.message());
    std::error_code ec;
    result.artifact_size = std::filesystem::file_size(req.output, ec);
    if (ec) throw ir::Error("writing the artifact: '" + req.output + "': " + ec.message());
  } else {
    art::Result<std::vector<std::byte>> bytes = w.write_memory();
    if (!bytes.is_ok()) throw ir::Error("writing the artifact: " + bytes.status().message());
    result.artifact = std::move(*bytes);
    result.artifact_size = result.artifact.size();
  }
  result.seconds_write = since(t0);
}

// The dims of `shape` as a bucket declares them: symbol k of the plan as signature symbol
// signature_index[k], a `--dim` symbol as its value.
std::vector<art::Dim> declared_dims(const ir::Graph& g, const ir::Shape& shape,
                                    const std::vector<BucketSymbol>& symbols,
                                    const std::vector<uint32_t>& signature_index,
                                    const std::map<std::string, int64_t>& fixed,
                                    const std::string& what) {
  std::vector<art::Dim> out;
  for (const ir::Dim& d : shape) {
    if (d.is_constant()) {
      out.push_back(art::Dim::constant(d.value()));
      continue;
    }
    const ir::Symbol& s = g.symbol(d.symbol);
    if (auto f = fixed.find(s.name); f != fixed.end()) {
      out.push_back(art::Dim::constant(d.coeff * f->second));
      continue;
    }
    auto it = std::find_if(symbols.begin(), symbols.end(),
                           [&](const BucketSymbol& b) { return b.name == s.name; });
    if (s.is_product() || it == symbols.end())
      throw ir::Error(what + " has the dim " + g.dim_to_string(d) +
                      ": shape buckets need each dim to be a constant or one symbol times a "
                      "constant; pass --dim for its symbols");
    out.push_back(art::Dim::sym(
        static_cast<int32_t>(signature_index[static_cast<size_t>(it - symbols.begin())]), d.coeff));
  }
  return out;
}

// Compiles `prog` once per bucket of `plan` into `u`, an entry each: "main[s0=4,s1=64]", in the
// order of bucket_combinations(), each marked with its bucket (artifact::ShapeBucket).
void compile_buckets(frontend::LoadedProgram& prog, const CompileRequest& req,
                     const BucketPlan& plan, ArtifactUnderConstruction& u, CompileResult& result) {
  const std::string group = "main";
  const ir::Graph& sym = *plan.graph;
  art::ShapeBucket proto;
  proto.group = group;
  for (const BucketSymbol& b : plan.symbols) {
    proto.symbols.push_back(u.w.add_symbol(b.name, b.min, b.max));
    u.bucket_symbols[b.name] = proto.symbols.back();
    proto.padding.push_back(!b.padded                              ? art::BucketPadding::exact
                            : b.pad_with == passes::PadWith::zeros ? art::BucketPadding::zeros
                                                                   : art::BucketPadding::edge);
  }
  // Declared dims: the open graph's user inputs, in the order compile_into adds them.
  for (const ir::GraphInput& in : sym.inputs())
    if (in.role == ir::InputRole::user_input)
      proto.input_dims.push_back(declared_dims(sym, in.value->shape(), plan.symbols, proto.symbols,
                                               req.dims, "input '" + in.value->name() + "'"));

  begin_artifact(u, prog, req, req.dims);
  const auto combinations = bucket_combinations(plan.symbols);
  u.entries = combinations.size();
  for (const auto& values : combinations) {
    frontend::LoadedProgram copy{prog.graph->clone(), prog.container,    prog.torch_version,
                                 prog.schema_major,   prog.schema_minor, prog.sha256,
                                 prog.sample_inputs,  prog.file};
    CompileRequest r = req;
    r.buckets.clear();
    r.dims.insert(values.begin(), values.end());
    const std::string name = bucket_entry_name(group, plan.symbols, values);
    u.w.begin_entry(name);
    std::vector<size_t> outputs;
    try {
      outputs = compile_into(copy, r, u, result);
    } catch (const ir::Error& e) {
      throw ir::Error("shape bucket " + name + ": " + e.what());
    }
    // The same pipeline ran on the open graph, so its outputs are the bucket's, position for
    // position; their dims are the declared ones.
    art::ShapeBucket b = proto;
    for (const BucketSymbol& s : plan.symbols) b.values.push_back(values.at(s.name));
    for (size_t i : outputs) {
      if (i >= sym.outputs().size())
        throw ir::Error("internal: shape bucket " + name + " has output " + std::to_string(i) +
                        " but the open program " + std::to_string(sym.outputs().size()));
      const ir::GraphOutput& o = sym.outputs()[i];
      b.output_dims.push_back(
          declared_dims(sym, o.value->shape(), plan.symbols, proto.symbols, req.dims,
                        "output '" + (o.target.empty() ? o.value->name() : o.target) + "'"));
    }
    u.w.set_entry_bucket(std::move(b));
    ++u.entry;
  }
  result.specialized = req.dims;
  result.specialized_from = req.dims.empty() ? "" : "--dim";
}

}  // namespace

CompileResult compile_program(frontend::LoadedProgram prog, const CompileRequest& req) {
  CompileResult result;
  ArtifactUnderConstruction u;
  BucketPlan plan;
  if (req.input_shapes.empty() && !req.debug_all_values)
    plan = plan_buckets(prog, {req.dims, req.buckets, req.opt_level, req.auto_cast});
  else if (!req.buckets.empty())
    throw ir::Error("--buckets: the program is compiled for the given input shapes, not buckets");
  if (plan.symbols.empty()) {
    u.arena.defer_constants = req.tp <= 1;
    compile_into(prog, req, u, result);
    // The folded weights the writer still lays out stay alive through its fills; the rest go.
    prog.graph.reset();
    finish(u, req, result.flops, result);
    return result;
  }
  compile_buckets(prog, req, plan, u, result);
  result.buckets = std::move(plan.symbols);
  finish(u, req, std::nullopt, result);
  return result;
}

CompileResult compile_entries(std::vector<std::pair<std::string, frontend::LoadedProgram>> programs,
                              const CompileRequest& req) {
  if (programs.empty()) throw ir::Error("no program to compile: expected one or more");
  CompileResult result;
  ArtifactUnderConstruction u;
  u.entries = programs.size();
  double first_flops = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    auto& [name, prog] = programs[i];
    u.entry = i;
    u.w.begin_entry(name);
    try {
      compile_into(prog, req, u, result);
    } catch (const ir::Error& e) {
      throw ir::Error("program '" + name + "': " + e.what());
    }
    prog.graph.reset();  // as in compile_program
    if (i == 0) first_flops = result.flops;
  }
  finish(u, req, first_flops, result);
  return result;
}

}  // namespace neuronc::compiler
