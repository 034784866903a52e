// Model loading (model.h): map or copy the bytes, read + verify the artifact, build the public
// signature, resolve and dry-run host kernels.
#include <algorithm>
#include <cstring>
#include <new>
#include <set>
#include <string>

#include "loader/model_impl.h"

namespace neuronc {
namespace {

using std::to_string;

DType public_dtype(artifact::TensorDType t) {
  return static_cast<DType>(t);
}

// Artifact dims (a plan value's, or a shape bucket's declared ones) as the public DimSpecs.
std::vector<DimSpec> dim_specs(const artifact::ArtifactContents& c,
                               const std::vector<artifact::Dim>& dims) {
  std::vector<DimSpec> out;
  for (const artifact::Dim& d : dims) {
    DimSpec ds;
    if (d.is_constant()) {
      ds.value = ds.min = ds.max = d.value;
    } else {
      const artifact::Symbol& y = c.signature.symbols[d.symbol];
      ds.symbol = y.name;
      ds.coeff = d.coeff;
      ds.min = y.min;
      ds.max = y.max;
    }
    out.push_back(std::move(ds));
  }
  return out;
}

TensorSpec spec_of(const artifact::ArtifactContents& c, const artifact::TensorSpec& s) {
  const artifact::Value& v = c.plan.values[s.value];
  TensorSpec out;
  out.name = s.name;
  out.dtype = public_dtype(v.dtype);
  out.dims = dim_specs(c, v.dims);
  if (s.index_bound)
    out.valid_range = ValueRange{s.index_bound->lo, s.index_bound->hi, s.index_bound->what};
  return out;
}

std::string hex(const std::vector<uint8_t>& b) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s += k[x >> 4];
    s += k[x & 15];
  }
  return s;
}

// The entries of `c` (one implicit entry "main" without any), with the values each touches.
std::vector<EntryPlan> entry_plans(const artifact::ArtifactContents& c) {
  const auto& sig = c.signature;
  std::vector<EntryPlan> out;
  const size_t n = std::max<size_t>(sig.entries.size(), 1);
  for (size_t e = 0; e < n; ++e) {
    EntryPlan p;
    if (sig.entries.empty()) {
      p.info.name = artifact::kImplicitEntryName;
      for (uint32_t i = 0; i < sig.inputs.size(); ++i) p.inputs.push_back(i);
      for (uint32_t i = 0; i < sig.outputs.size(); ++i) p.outputs.push_back(i);
      for (const auto& s : sig.states) p.state_updates.push_back(s.update);
    } else {
      const artifact::EntrySpec& en = sig.entries[e];
      p.info.name = en.name;
      if (en.bucket) {
        p.info.bucket_group = en.bucket->group;
        for (size_t k = 0; k < en.bucket->symbols.size(); ++k)
          p.info.bucket.push_back({sig.symbols[en.bucket->symbols[k]].name, en.bucket->values[k],
                                   static_cast<EntryInfo::Padding>(en.bucket->padding[k])});
      }
      p.inputs = en.inputs;
      p.outputs = en.outputs;
      p.state_updates = en.state_updates;
    }
    p.steps = artifact::entry_steps(c, e);
    std::set<uint32_t> used;
    for (uint32_t i : p.inputs) {
      used.insert(sig.inputs[i].value);
      p.info.inputs.push_back(spec_of(c, sig.inputs[i]));
    }
    for (uint32_t i : p.outputs) {
      used.insert(sig.outputs[i].value);
      p.info.outputs.push_back(spec_of(c, sig.outputs[i]));
    }
    for (size_t i = 0; i < sig.states.size(); ++i) {
      used.insert(sig.states[i].value);
      used.insert(p.state_updates[i]);
    }
    for (uint32_t i = p.steps.first; i < p.steps.first + p.steps.count; ++i) {
      if (const auto* call = std::get_if<artifact::DeviceCall>(&c.plan.steps[i])) {
        for (const auto& b : call->inputs) used.insert(b.value);
        for (const auto& b : call->outputs) used.insert(b.value);
      } else {
        const auto& op = std::get<artifact::HostOp>(c.plan.steps[i]);
        for (const auto& a : op.args)
          for (int32_t v : a.tensors)
            if (v >= 0) used.insert(static_cast<uint32_t>(v));
        for (uint32_t v : op.outputs) used.insert(v);
      }
    }
    p.values.assign(used.begin(), used.end());
    p.traffic = plan::entry_traffic(c, e);
    out.push_back(std::move(p));
  }
  return out;
}

// Every symbol a value of an entry uses must be fixed by some input dim of that entry, or its
// size is unknown at run time.
Status check_symbols_bound(const artifact::ArtifactContents& c, const EntryPlan& p) {
  std::set<int32_t> bound;
  for (uint32_t i : p.inputs)
    for (const artifact::Dim& d : c.plan.values[c.signature.inputs[i].value].dims)
      if (!d.is_constant()) bound.insert(d.symbol);
  for (uint32_t v : p.values)
    for (const artifact::Dim& d : c.plan.values[v].dims)
      if (!d.is_constant() && !bound.count(d.symbol))
        return Status(StatusCode::data_loss, "value '" + c.plan.values[v].name + "' uses symbol '" +
                                                 c.signature.symbols[d.symbol].name +
                                                 "', which no input dimension determines");
  return Status::ok();
}

Result<Model> finish_load(std::shared_ptr<Model::Impl> impl, std::span<const std::byte> bytes,
                          const LoadOptions& options) {
  artifact::ReadOptions ro;
  ro.verify_segment_checksums = options.verify_segment_checksums;
  ro.expand_replicas = false;
  auto art = artifact::read_artifact(bytes, ro);
  if (!art) return from_artifact(art.status());
  impl->art = std::move(art).value();
  // A model that can run (it holds its weights) gets every core of a tensor-parallel program; a
  // timing-only one (no weights: nothing can run it) is only timed, so its programs stay core 0
  // alone and their copies are timed without being made (the plan walker).
  if (!impl->art.contents.timing_only()) artifact::expand_replicas(impl->art.contents);
  const artifact::ArtifactContents& c = impl->art.contents;
  impl->target = &device::target(*device::parse_target(c.target));  // verified
  if (options.max_hbm_arena_bytes != 0 &&
      c.memory_plan.hbm_arena_bytes > options.max_hbm_arena_bytes)
    return Status(StatusCode::resource_exhausted,
                  "hbm arena of " + to_string(c.memory_plan.hbm_arena_bytes) +
                      " bytes exceeds the limit of " + to_string(options.max_hbm_arena_bytes));
  impl->entries = entry_plans(c);
  for (const EntryPlan& p : impl->entries) {
    if (Status s = check_symbols_bound(c, p); !s.is_ok()) return s;
    impl->entry_infos.push_back(p.info);
  }
  impl->model_inputs = impl->entry_infos[0].inputs;
  impl->model_outputs = impl->entry_infos[0].outputs;
  if (!c.signature.entries.empty() && c.signature.entries[0].bucket) {
    const artifact::ShapeBucket& b = *c.signature.entries[0].bucket;
    for (auto [specs, declared] : {std::pair{&impl->model_inputs, &b.input_dims},
                                   std::pair{&impl->model_outputs, &b.output_dims}})
      for (size_t i = 0; i < specs->size(); ++i) (*specs)[i].dims = dim_specs(c, (*declared)[i]);
  }
  for (const auto& s : c.signature.states) impl->states.push_back(spec_of(c, {s.name, s.value}));

  // Host kernels: every host op must have one, and static shapes are checked now.
  impl->kernels.assign(c.plan.steps.size(), nullptr);
  std::vector<host::HostTensor> storage(c.plan.values.size());
  std::vector<const host::HostTensor*> values(c.plan.values.size(), nullptr);
  for (size_t i = 0; i < c.plan.steps.size(); ++i) {
    const auto* op = std::get_if<artifact::HostOp>(&c.plan.steps[i]);
    if (!op) continue;
    host::HostKernelFn fn = host::find_host_kernel(op->op);
    if (!fn)
      return Status(StatusCode::unimplemented, "plan step " + to_string(i) + ": host op '" +
                                                   op->op + "' has no kernel in this loader");
    impl->kernels[i] = fn;
    // Dry run with the declared shapes when they are all static.
    bool is_static = true;
    std::vector<uint32_t> touched;
    auto make = [&](uint32_t v) -> host::HostTensor* {
      const artifact::Value& val = c.plan.values[v];
      host::HostTensor& t = storage[v];
      t.dtype = val.dtype;
      t.shape.clear();
      for (const auto& d : val.dims) {
        if (!d.is_constant()) is_static = false;
        t.shape.push_back(d.value);
      }
      values[v] = &t;
      touched.push_back(v);
      return &t;
    };
    for (const auto& a : op->args)
      for (int32_t v : a.tensors)
        if (v >= 0) make(static_cast<uint32_t>(v));
    std::vector<host::HostTensor*> outs;
    for (uint32_t v : op->outputs) outs.push_back(make(v));
    Status s = Status::ok();
    if (is_static) {
      host::HostOpContext ctx(op->op, op->args, values, outs, /*dry_run=*/true);
      s = fn(ctx);
    }
    for (uint32_t v : touched) values[v] = nullptr;
    if (!s.is_ok())
      return Status(StatusCode::data_loss, "plan step " + to_string(i) + ": " + s.message());
  }

  ModelInfo& info = impl->info;
  info.format_major = impl->art.header.format_major;
  info.format_minor = impl->art.header.format_minor;
  info.producer = c.producer.name + (c.producer.version.empty() ? "" : " " + c.producer.version);
  info.target = c.target;
  info.num_cores = c.num_cores;
  info.source_container = c.source.container;
  info.source_sha256 = hex(c.source.sha256);
  for (const auto& s : c.plan.steps)
    (std::holds_alternative<artifact::DeviceCall>(s) ? info.device_partitions : info.host_ops)++;
  info.zero_copy_constants = true;
  for (const auto& k : c.constants) {
    info.constant_bytes += k.size;
    if (k.absent()) {
      info.timing_only = true;
      info.absent_constant_bytes += k.size;
    } else if (c.segments[k.segment].compression != artifact::Compression::none) {
      info.zero_copy_constants = false;
    }
  }
  info.hbm_arena_bytes = c.memory_plan.hbm_arena_bytes;
  info.file_bytes = bytes.size();
  return Model(std::move(impl));
}

}  // namespace

Status from_artifact(const artifact::Status& s) {
  using A = artifact::StatusCode;
  switch (s.code()) {
    case A::ok:
      return Status::ok();
    case A::invalid_argument:
      return Status(StatusCode::invalid_argument, s.message());
    case A::io_error:
      return Status(StatusCode::io_error, s.message());
    case A::truncated:
    case A::corrupt:
    case A::out_of_range:
      return Status(StatusCode::data_loss, s.message());
    case A::incompatible_version:
      return Status(StatusCode::incompatible_version, s.message());
    case A::unimplemented:
      return Status(StatusCode::unimplemented, s.message());
  }
  return Status(StatusCode::internal, s.message());
}

Result<Model> Model::load(const std::string& path, const LoadOptions& options) {
  try {
    auto impl = std::make_shared<Impl>();
    auto f = artifact::MappedFile::open(path);
    if (!f) return from_artifact(f.status());
    impl->file = std::move(f).value();
    const auto bytes = impl->file.bytes();
    auto m = finish_load(std::move(impl), bytes, options);
    if (!m) return Status(m.status().code(), "'" + path + "': " + m.status().message());
    return m;
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::resource_exhausted, "out of memory loading '" + path + "'");
  } catch (const std::exception& e) {
    return Status(StatusCode::internal, std::string("loading '") + path + "': " + e.what());
  }
}

Result<Model> Model::load_from_memory(std::span<const std::byte> bytes,
                                      const LoadOptions& options) {
  try {
    auto impl = std::make_shared<Impl>();
    impl->owned.reset(new std::byte[std::max<size_t>(bytes.size(), 1)]);
    if (!bytes.empty()) std::memcpy(impl->owned.get(), bytes.data(), bytes.size());
    const std::span<const std::byte> copy(impl->owned.get(), bytes.size());
    return finish_load(std::move(impl), copy, options);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::resource_exhausted,
                  "out of memory loading an artifact of " + to_string(bytes.size()) + " bytes");
  } catch (const std::exception& e) {
    return Status(StatusCode::internal, e.what());
  }
}

Result<Model> Model::load_from_borrowed_memory(std::span<const std::byte> bytes,
                                               const LoadOptions& options) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % 8 != 0)
    return Status(StatusCode::invalid_argument,
                  "borrowed artifact bytes must be 8-byte aligned (use load_from_memory)");
  try {
    return finish_load(std::make_shared<Impl>(), bytes, options);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::resource_exhausted, "out of memory loading an artifact");
  } catch (const std::exception& e) {
    return Status(StatusCode::internal, e.what());
  }
}

std::string spec_text(const TensorSpec& s) {
  std::string r = std::string(dtype_name(s.dtype)) + "[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    const DimSpec& d = s.dims[i];
    r += i ? ", " : "";
    if (!d.is_symbolic())
      r += std::to_string(d.value);
    else
      r += (d.coeff != 1 ? std::to_string(d.coeff) + "*" : "") + d.symbol;
  }
  return r + "]";
}

const std::vector<TensorSpec>& Model::inputs() const {
  return impl_->model_inputs;
}
const std::vector<TensorSpec>& Model::outputs() const {
  return impl_->model_outputs;
}
const std::vector<EntryInfo>& Model::entries() const {
  return impl_->entry_infos;
}
const std::vector<TensorSpec>& Model::states() const {
  return impl_->states;
}
const ModelInfo& Model::info() const {
  return impl_->info;
}

}  // namespace neuronc
