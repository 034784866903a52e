// Session (session.h): binds inputs, resolves symbolic shapes, walks the execution plan through
// the loader's plan walker (plan_walker.h: device calls copy bindings into the HBM arena, run
// the NeuronCore model and copy results back; host ops run their kernel on CPU buffers) and
// hands back outputs.
#include "neuronc/session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

#include "device/simulator.h"
#include "kernels/numerics.h"
#include "kernels/zeroed_bytes.h"
#include "loader/model_impl.h"
#include "loader/plan_walker.h"

namespace neuronc {
namespace {

using std::to_string;
namespace art = ::neuronc::artifact;

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + to_string(s[i]);
  return r + "]";
}

// Element `k` of a tensor of `shape` as "[i, j, ...]".
std::string element_text(const Shape& shape, int64_t k) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
  return shape_text(idx);
}

// A run's statistics, gathered from the plan walk.
class StatsObserver final : public plan::PlanObserver {
 public:
  explicit StatsObserver(RunStats& st) : st_(st) {}
  void device_call(uint32_t, const art::DeviceProgram&, const device::RunReport& report) override {
    st_.device_ns += report.total_time_ns;
    st_.instructions += report.instructions;
    for (const auto& core : report.cores) {
      for (int e = 0; e < 5; ++e) st_.engine_busy_ns[e] += core.engines[e].busy_ns;
      st_.dma_bytes += core.dma_bytes;
    }
    ++st_.device_calls;
  }
  void host_step(uint32_t, const art::HostOp&, bool, double host_ns) override {
    st_.host_ops_ns += host_ns;
    ++st_.host_ops;
  }

 private:
  RunStats& st_;
};

double ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Outputs.

const Tensor* Outputs::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return &tensors_[i];
  return nullptr;
}

const Tensor& Outputs::at(std::string_view name) const {
  const Tensor* t = find(name);
  if (!t) {
    std::fprintf(stderr, "neuronc::Outputs::at: no output named '%.*s'\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return *t;
}

Tensor Outputs::release(std::string_view name) {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return std::move(tensors_[i]);
  return Tensor();
}

// ---------------------------------------------------------------------------------------------
// Session.

// The device model's view of the caller's ProcessGroup.
class DeviceProcesses final : public device::ProcessGroup {
 public:
  explicit DeviceProcesses(neuronc::ProcessGroup& g) : g_(g) {}
  int rank() const override { return g_.rank(); }
  int size() const override { return g_.size(); }
  device::Result<std::vector<std::vector<std::byte>>> all_gather(
      std::span<const std::byte> mine) override {
    auto all = g_.all_gather(mine);
    if (!all.is_ok())
      return device::failed_precondition("all-gather between processes failed: " +
                                         all.status().message());
    return std::move(*all);
  }

 private:
  neuronc::ProcessGroup& g_;
};

struct Session::Impl {
  Model model;
  const Model::Impl* m = nullptr;
  SessionOptions options;
  Status status;
  std::unique_ptr<DeviceProcesses> processes;
  std::unique_ptr<device::Simulator> sim;
  std::unique_ptr<plan::ProgramTimings> timings;  // of m->art.contents, kept between runs
  std::shared_ptr<std::byte> hbm;
  uint64_t hbm_size = 0;
  std::vector<std::vector<std::byte>> scratch;  // per plan value (intermediates, symbol values)
  std::vector<host::HostTensor> slots;          // per plan value, valid during a run
  std::vector<Tensor> state;                    // per Signature::states entry
  RunStats stats;
  // The symbol values the slots' shapes and scratch buffers were last prepared for (XNNPACK's
  // reshape / setup split: shape resolution and allocation run once per input shape, and a run
  // with the shapes of the previous one only binds data pointers).
  // Per entry (the values of different entries are disjoint, so each keeps its own).
  std::vector<std::vector<int64_t>> prepared_symbols;
  std::vector<bool> prepared;
  int64_t last_program = -1;  // the program the session's last device call ran (switches)

  explicit Impl(const Model& model) : model(model) {}
  Status init();
  void reset_state();
  Status prepare(size_t entry, const std::vector<int64_t>& sym);
  // `real`: per signature symbol, its value in the caller's inputs when they were padded up
  // to this entry's bucket (-1: the bound value), which the program's symbol values hold.
  Result<Outputs> run(size_t entry, const std::vector<NamedInput>& inputs,
                      const std::vector<NamedOutput>& outputs,
                      const std::vector<int64_t>* real = nullptr);
  Result<size_t> find_entry(std::string_view name) const;
  // Runs the shape bucket of `group` that fits the inputs (EntryInfo::bucket_group), or, with
  // `forced`, that entry of the group (the inputs padded up to it when they fit it).
  Result<Outputs> run_bucket(const std::string& group, const std::vector<NamedInput>& inputs,
                             const std::vector<NamedOutput>& outputs,
                             std::optional<size_t> forced = std::nullopt);
  // The entry Session::run(inputs) and run(name) mean: a bucket group, or one entry.
  bool is_group(std::string_view name) const {
    for (const EntryInfo& e : m->entry_infos)
      if (e.name == name) return false;
    for (const EntryInfo& e : m->entry_infos)
      if (!e.bucket_group.empty() && e.bucket_group == name) return true;
    return false;
  }
};

// Copies the leading box min(src_shape, dst_shape) of a row-major tensor into another: an output
// cut back (dst smaller), or an input padded (dst larger and zeroed). Where `edge[d]`, dst
// indices past src's extent along d read its last index (copies of the last real row); the
// rest of dst keeps its bytes.
void copy_box(const std::byte* src, const Shape& src_shape, std::byte* dst, const Shape& dst_shape,
              size_t elem, const std::vector<bool>& edge) {
  const size_t r = dst_shape.size();
  if (r == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  if (numel(src_shape) == 0 || numel(dst_shape) == 0) return;
  std::vector<int64_t> src_stride(r, 1), dst_stride(r, 1);
  for (size_t d = r - 1; d > 0; --d) {
    src_stride[d - 1] = src_stride[d] * src_shape[d];
    dst_stride[d - 1] = dst_stride[d] * dst_shape[d];
  }
  const int64_t n_dst = dst_shape[r - 1], n_src = std::min(src_shape[r - 1], n_dst);
  std::vector<int64_t> at(r - 1, 0);
  while (true) {
    int64_t so = 0, doff = 0;
    bool real = true;
    for (size_t d = 0; d + 1 < r; ++d) {
      int64_t i = at[d];
      if (i >= src_shape[d]) {
        if (!edge[d]) real = false;
        i = src_shape[d] - 1;
      }
      so += i * src_stride[d];
      doff += at[d] * dst_stride[d];
    }
    if (real) {
      std::byte* row = dst + doff * static_cast<int64_t>(elem);
      std::memcpy(row, src + so * static_cast<int64_t>(elem), static_cast<size_t>(n_src) * elem);
      if (edge[r - 1])
        for (int64_t j = n_src; j < n_dst; ++j)
          std::memcpy(row + j * static_cast<int64_t>(elem),
                      row + (n_src - 1) * static_cast<int64_t>(elem), elem);
    }
    size_t d = r - 1;
    for (; d > 0; --d) {
      if (++at[d - 1] < dst_shape[d - 1]) break;
      at[d - 1] = 0;
    }
    if (d == 0) return;
  }
}

Result<Outputs> Session::Impl::run_bucket(const std::string& group,
                                          const std::vector<NamedInput>& inputs,
                                          const std::vector<NamedOutput>& out_buffers,
                                          std::optional<size_t> forced) {
  const art::ArtifactContents& c = m->art.contents;
  std::vector<size_t> members;
  for (size_t e = 0; e < c.signature.entries.size(); ++e)
    if (c.signature.entries[e].bucket && c.signature.entries[e].bucket->group == group)
      members.push_back(e);
  const art::ShapeBucket& b0 = *c.signature.entries[members[0]].bucket;
  const std::vector<TensorSpec>& specs = m->entries[members[0]].info.inputs;

  // 1. The symbols' values, from the inputs' dims as the program declares them.
  std::vector<int64_t> value(b0.symbols.size(), -1);
  std::vector<std::string> source(b0.symbols.size());
  std::vector<const NamedInput*> given(specs.size(), nullptr);
  for (size_t i = 0; i < specs.size(); ++i) {
    for (const NamedInput& in : inputs)
      if (in.name == specs[i].name) given[i] = &in;
    if (!given[i]) continue;  // the run below names what is missing or unknown
    const Shape& shape = given[i]->tensor.shape();
    const std::vector<art::Dim>& declared = b0.input_dims[i];
    const std::string who = "input '" + specs[i].name + "'";
    if (shape.size() != declared.size())
      return Status(StatusCode::invalid_argument, who + ": rank is " + to_string(shape.size()) +
                                                      ", expected " + to_string(declared.size()) +
                                                      " (" + spec_text(m->model_inputs[i]) + ")");
    for (size_t d = 0; d < declared.size(); ++d) {
      const art::Dim& dd = declared[d];
      const std::string dim = who + ": dim " + to_string(d);
      if (dd.is_constant()) {
        if (shape[d] != dd.value)
          return Status(StatusCode::invalid_argument,
                        dim + " is " + to_string(shape[d]) + ", expected " + to_string(dd.value) +
                            " (" + spec_text(m->model_inputs[i]) + ")");
        continue;
      }
      const size_t k = static_cast<size_t>(
          std::find(b0.symbols.begin(), b0.symbols.end(), static_cast<uint32_t>(dd.symbol)) -
          b0.symbols.begin());
      const art::Symbol& y = c.signature.symbols[dd.symbol];
      if (shape[d] < 0 || shape[d] % dd.coeff != 0)
        return Status(StatusCode::invalid_argument,
                      dim + " is " + to_string(shape[d]) + ", expected a multiple of " +
                          to_string(dd.coeff) + " (" + to_string(dd.coeff) + "*" + y.name + ")");
      const int64_t v = shape[d] / dd.coeff;
      if (v < y.min || v > y.max)
        return Status(StatusCode::out_of_range,
                      dim + " gives symbol '" + y.name + "' = " + to_string(v) + ", expected [" +
                          to_string(y.min) + ", " + to_string(y.max) + "]");
      if (value[k] >= 0 && value[k] != v)
        return Status(StatusCode::invalid_argument, dim + " gives symbol '" + y.name +
                                                        "' = " + to_string(v) + " but " +
                                                        source[k] + " gave " + to_string(value[k]));
      value[k] = v;
      source[k] = who + " dim " + to_string(d);
    }
  }

  // 2. The smallest bucket that fits: at least each padded symbol's value, exactly the others'.
  size_t best = members[0];
  bool found = false;
  double best_volume = 0;
  for (size_t e : members) {
    if (forced && e != *forced) continue;
    const art::ShapeBucket& b = *c.signature.entries[e].bucket;
    bool fits = true;
    double volume = 1;
    for (size_t k = 0; k < b.symbols.size(); ++k) {
      if (value[k] < 0) continue;
      fits &= b.padding[k] != art::BucketPadding::exact ? b.values[k] >= value[k]
                                                        : b.values[k] == value[k];
      volume *= static_cast<double>(b.values[k]);
    }
    if (fits && (!found || volume < best_volume)) {
      best = e;
      best_volume = volume;
      found = true;
    }
  }
  if (!found) {
    std::string why;
    for (size_t k = 0; k < b0.symbols.size(); ++k) {
      std::set<int64_t> vals;
      for (size_t e : members) vals.insert(c.signature.entries[e].bucket->values[k]);
      std::string list;
      for (int64_t v : vals) list += (list.empty() ? "" : ", ") + to_string(v);
      why += (why.empty() ? "" : "; ") + c.signature.symbols[b0.symbols[k]].name + " = " +
             to_string(value[k]) +
             (b0.padding[k] != art::BucketPadding::exact ? " (padded up to a bucket of "
                                                         : " (exactly one of ") +
             list + ")";
    }
    if (forced)
      return Status(StatusCode::out_of_range, "the inputs do not fit shape bucket '" +
                                                  c.signature.entries[*forced].name + "': " + why);
    return Status(StatusCode::out_of_range,
                  "no shape bucket fits the inputs: " + why +
                      ": expected values the artifact was compiled for (compile --buckets)");
  }
  const art::ShapeBucket& b = *c.signature.entries[best].bucket;
  bool exact = true;
  for (size_t k = 0; k < b.symbols.size(); ++k) exact &= value[k] < 0 || b.values[k] == value[k];
  // The real value of each symbol, which the program's symbol values hold (its bucket's value
  // when no input gives it: then nothing is padded along it).
  std::vector<int64_t> real(c.signature.symbols.size(), -1);
  for (size_t k = 0; k < b.symbols.size(); ++k)
    real[b.symbols[k]] = value[k] >= 0 ? value[k] : b.values[k];
  if (exact) return run(best, inputs, out_buffers, &real);

  // 3. Pad: each input whose shape differs from the bucket's is copied into zeros.
  const EntryPlan& plan = m->entries[best];
  std::vector<Tensor> padded_storage;
  padded_storage.reserve(specs.size());
  std::vector<NamedInput> padded_inputs;
  for (const NamedInput& in : inputs) {
    size_t i = 0;
    while (i < specs.size() && specs[i].name != in.name) ++i;
    if (i == specs.size() || in.tensor.dtype() != plan.info.inputs[i].dtype) {
      padded_inputs.push_back(in);  // the run names the unknown input or wrong dtype
      continue;
    }
    Shape want;
    for (const DimSpec& d : plan.info.inputs[i].dims) want.push_back(d.value);
    if (want == in.tensor.shape()) {
      padded_inputs.push_back(in);
      continue;
    }
    padded_storage.emplace_back(in.tensor.dtype(), want);
    Tensor& t = padded_storage.back();
    if (in.tensor.numel() > 0 && in.tensor.data() == nullptr)
      return Status(StatusCode::invalid_argument, "input '" + in.name + "': data pointer is null");
    std::vector<bool> edge;
    for (const art::Dim& d : b.input_dims[i]) {
      const auto k = std::find(b.symbols.begin(), b.symbols.end(), static_cast<uint32_t>(d.symbol));
      edge.push_back(!d.is_constant() && b.padding[static_cast<size_t>(k - b.symbols.begin())] ==
                                             art::BucketPadding::edge);
    }
    if (in.tensor.numel() > 0)
      copy_box(static_cast<const std::byte*>(in.tensor.data()), in.tensor.shape(),
               static_cast<std::byte*>(t.mutable_data()), want, dtype_size(in.tensor.dtype()),
               edge);
    padded_inputs.push_back({in.name, t.view()});
  }
  auto big = run(best, padded_inputs, {}, &real);
  if (!big.is_ok()) return big.status();

  // 4. Cut each output back to the real values of its declared dims.
  Outputs result;
  for (size_t o = 0; o < big->names_.size(); ++o) {
    const Tensor& full = big->tensors_[o];
    Shape real;
    for (const art::Dim& d : b.output_dims[o]) {
      if (d.is_constant()) {
        real.push_back(d.value);
        continue;
      }
      const size_t k = static_cast<size_t>(
          std::find(b.symbols.begin(), b.symbols.end(), static_cast<uint32_t>(d.symbol)) -
          b.symbols.begin());
      real.push_back(d.coeff * (value[k] >= 0 ? value[k] : b.values[k]));
    }
    const MutableTensorView* buf = nullptr;
    for (const NamedOutput& nb : out_buffers)
      if (nb.name == big->names_[o]) buf = &nb.buffer;
    Tensor t;
    if (buf) {
      if (buf->dtype() != full.dtype() || buf->shape() != real)
        return Status(StatusCode::invalid_argument,
                      "output buffer '" + big->names_[o] + "' is " +
                          std::string(dtype_name(buf->dtype())) + shape_text(buf->shape()) +
                          ", expected " + std::string(dtype_name(full.dtype())) + shape_text(real));
      t = Tensor::borrowed(*buf);
    } else {
      t = Tensor(full.dtype(), real);
    }
    if (t.nbytes() > 0)
      copy_box(static_cast<const std::byte*>(full.data()), full.shape(),
               static_cast<std::byte*>(t.mutable_data()), real, dtype_size(full.dtype()),
               std::vector<bool>(real.size(), false));
    result.names_.push_back(big->names_[o]);
    result.tensors_.push_back(std::move(t));
  }
  for (const NamedOutput& nb : out_buffers)
    if (!result.find(nb.name))
      return Status(StatusCode::not_found, "output buffer for unknown output '" + nb.name + "'");
  stats.padded = true;
  return result;
}

Status Session::Impl::init() {
  const art::ArtifactContents& c = m->art.contents;
  if (model.info().timing_only)
    return Status(StatusCode::failed_precondition,
                  "the model is timing-only: it was compiled from a weights-free export and holds "
                  "no weights (" +
                      to_string(model.info().absent_constant_bytes) +
                      " bytes absent), so it computes no outputs; `neuronc bench` and `neuronc "
                      "profile` give its simulated timing");
  const int need = static_cast<int>(c.num_cores);
  if (options.target_cores < 0 || (options.target_cores != 0 && options.target_cores < need))
    return Status(StatusCode::invalid_argument,
                  "session has target_cores = " + to_string(options.target_cores) +
                      " but the model was compiled for " + to_string(need) + " cores");
  device::SimulatorOptions so;
  so.functional = true;
  so.check_races = options.check_races;
  so.parallel = options.parallel;
  if (options.processes) {
    const int rank = options.processes->rank(), size = options.processes->size();
    if (size < 1 || rank < 0 || rank >= size)
      return Status(StatusCode::invalid_argument,
                    "the session's process group says this is process " + to_string(rank) + " of " +
                        to_string(size) + ": expected 0 <= rank < size");
    processes = std::make_unique<DeviceProcesses>(*options.processes);
    so.processes = processes.get();
  }
  sim = std::make_unique<device::Simulator>(*m->target, so);
  timings = std::make_unique<plan::ProgramTimings>(c);
  hbm_size = c.memory_plan.hbm_arena_bytes;
  // A zeroed mapping (huge pages when large): the kernel hands out zero pages lazily, so
  // untouched arena costs no RSS, and a DMA's partition rows do not each miss the TLB.
  try {
    hbm = kernels::zeroed_bytes(std::max<uint64_t>(hbm_size, 1));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::resource_exhausted,
                  "cannot allocate the " + to_string(hbm_size) + "-byte hbm arena");
  }
  for (uint32_t i = 0; i < c.constants.size(); ++i) {
    const art::Constant& k = c.constants[i];
    if (k.hbm_offset == art::kHostOnly) continue;
    const auto bytes = m->art.constant_bytes(i);
    if (!bytes.empty()) std::memcpy(hbm.get() + k.hbm_offset, bytes.data(), bytes.size());
  }
  scratch.resize(c.plan.values.size());
  slots.resize(c.plan.values.size());
  prepared_symbols.resize(m->entries.size());
  prepared.assign(m->entries.size(), false);
  for (const TensorSpec& s : m->states) {
    Shape shape;
    for (const DimSpec& d : s.dims) shape.push_back(d.value);  // static (verified)
    state.emplace_back(s.dtype, shape);
  }
  reset_state();
  return Status::ok();
}

void Session::Impl::reset_state() {
  const art::ArtifactContents& c = m->art.contents;
  for (size_t i = 0; i < state.size(); ++i) {
    const auto bytes = m->art.constant_bytes(c.signature.states[i].initial);
    if (!bytes.empty()) std::memcpy(state[i].mutable_data(), bytes.data(), bytes.size());
  }
}

// Resolves every value's shape for the symbol values `sym` and sizes the scratch buffers. No
// tensor may be larger than the whole chip's HBM: that is refused before anything is allocated.
Status Session::Impl::prepare(size_t entry, const std::vector<int64_t>& sym) {
  prepared[entry] = false;
  const art::ArtifactContents& c = m->art.contents;
  const uint64_t max_value_bytes =
      m->target->hbm_bytes_per_core * static_cast<uint64_t>(m->target->cores_per_chip);
  for (uint32_t v : m->entries[entry].values) {
    const art::Value& val = c.plan.values[v];
    host::HostTensor& slot = slots[v];
    slot.dtype = val.dtype;
    slot.shape.clear();
    uint64_t bytes = dtype_size(val.dtype);
    for (const art::Dim& d : val.dims) {
      // coeff x max fits in int64 (verified), and sym <= max.
      const int64_t n = d.is_constant() ? d.value : d.coeff * sym[d.symbol];
      slot.shape.push_back(n);
      if (n != 0 && bytes > max_value_bytes / static_cast<uint64_t>(n))
        return Status(StatusCode::resource_exhausted,
                      "value '" + val.name + "' would need more than the " +
                          to_string(max_value_bytes) + " bytes of " + std::string(m->target->name) +
                          "'s hbm (" + to_string(m->target->cores_per_chip) + " cores)");
      bytes *= static_cast<uint64_t>(n);
    }
    if (val.kind == art::ValueKind::intermediate || val.kind == art::ValueKind::symbol)
      scratch[v].resize(bytes);
  }
  prepared_symbols[entry] = sym;
  prepared[entry] = true;
  return Status::ok();
}

Result<size_t> Session::Impl::find_entry(std::string_view name) const {
  for (size_t e = 0; e < m->entries.size(); ++e)
    if (m->entries[e].info.name == name) return e;
  std::string names;
  for (const EntryPlan& p : m->entries) names += (names.empty() ? "" : ", ") + p.info.name;
  return Status(StatusCode::not_found,
                "unknown entry '" + std::string(name) + "': expected one of " + names);
}

Result<Outputs> Session::Impl::run(size_t entry, const std::vector<NamedInput>& inputs,
                                   const std::vector<NamedOutput>& out_buffers,
                                   const std::vector<int64_t>* real) {
  if (!status.is_ok())
    return Status(StatusCode::failed_precondition, "session creation failed: " + status.message());
  const auto t0 = std::chrono::steady_clock::now();
  const art::ArtifactContents& c = m->art.contents;
  const EntryPlan& plan = m->entries[entry];
  const auto& specs = plan.info.inputs;

  // 1. Match inputs by name.
  std::vector<const NamedInput*> by_index(specs.size(), nullptr);
  for (const NamedInput& in : inputs) {
    size_t i = 0;
    while (i < specs.size() && specs[i].name != in.name) ++i;
    if (i == specs.size()) {
      std::string names;
      for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
      return Status(StatusCode::not_found,
                    "unknown input '" + in.name + "': expected one of " + names);
    }
    if (by_index[i])
      return Status(StatusCode::invalid_argument, "input '" + in.name + "' is given twice");
    by_index[i] = &in;
  }

  // 2. Check dtypes, shapes and values; bind symbols.
  std::vector<TensorView> views(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!by_index[i])
      return Status(StatusCode::invalid_argument,
                    "input '" + specs[i].name + "' is missing: expected " + spec_text(specs[i]));
    views[i] = by_index[i]->tensor;
  }
  Result<SymbolValues> bound_symbols = check_inputs(specs, views);
  if (!bound_symbols.is_ok()) return bound_symbols.status();
  std::vector<int64_t> sym(c.signature.symbols.size(), -1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& vdims = c.plan.values[c.signature.inputs[plan.inputs[i]].value].dims;
    for (size_t d = 0; d < specs[i].dims.size(); ++d)
      if (specs[i].dims[d].is_symbolic())
        sym[vdims[d].symbol] = bound_symbols->at(specs[i].dims[d].symbol);
  }

  // 3. Shapes and memory: resolved once per set of symbol values, then every value's data
  // pointer is bound for this run.
  const bool prepare_now = !prepared[entry] || sym != prepared_symbols[entry];
  if (prepare_now) {
    if (Status ps = prepare(entry, sym); !ps.is_ok()) return ps;
  }
  for (size_t k = 0; k < plan.inputs.size(); ++k)
    slots[c.signature.inputs[plan.inputs[k]].value].data =
        const_cast<std::byte*>(static_cast<const std::byte*>(by_index[k]->tensor.data()));
  for (uint32_t v : plan.values) {
    const art::Value& val = c.plan.values[v];
    host::HostTensor& slot = slots[v];
    switch (val.kind) {
      case art::ValueKind::input:
        break;  // bound above
      case art::ValueKind::constant:
        slot.data = const_cast<std::byte*>(m->art.constant_bytes(val.index).data());
        break;
      case art::ValueKind::intermediate:
        slot.data = scratch[v].data();
        break;
      case art::ValueKind::state:
        slot.data = static_cast<std::byte*>(state[val.index].mutable_data());
        break;
      case art::ValueKind::symbol: {
        // The symbol's real value: the caller's when the inputs were padded, else the one the
        // inputs bind, else (a symbol only a bucket fixes) the entry's bucket value.
        int64_t x = real && (*real)[val.index] >= 0 ? (*real)[val.index] : sym[val.index];
        if (x < 0 && c.signature.entries.size() > entry && c.signature.entries[entry].bucket) {
          const art::ShapeBucket& eb = *c.signature.entries[entry].bucket;
          for (size_t k = 0; k < eb.symbols.size(); ++k)
            if (eb.symbols[k] == val.index) x = eb.values[k];
        }
        if (x < 0)
          return Status(StatusCode::internal, "symbol value '" + val.name + "': symbol '" +
                                                  c.signature.symbols[val.index].name +
                                                  "' is bound by nothing in this run");
        slot.data = scratch[v].data();
        kernels::store_double(slot.data, val.dtype, static_cast<double>(x));
        break;
      }
    }
  }

  // 4. Outputs: caller buffers and fresh tensors become the storage of their values.
  Outputs result;
  std::vector<bool> bound(c.plan.values.size(), false);
  std::vector<bool> copy_at_end(plan.outputs.size(), false);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const art::TensorSpec& s = c.signature.outputs[plan.outputs[o]];
    const host::HostTensor& slot = slots[s.value];
    const DType dt = static_cast<DType>(slot.dtype);
    const MutableTensorView* buf = nullptr;
    for (const NamedOutput& b : out_buffers)
      if (b.name == s.name) buf = &b.buffer;
    Tensor t;
    if (buf) {
      if (buf->dtype() != dt || buf->shape() != slot.shape)
        return Status(StatusCode::invalid_argument,
                      "output buffer '" + s.name + "' is " + std::string(dtype_name(buf->dtype())) +
                          shape_text(buf->shape()) + ", expected " + std::string(dtype_name(dt)) +
                          shape_text(slot.shape));
      if (buf->nbytes() > 0 && buf->data() == nullptr)
        return Status(StatusCode::invalid_argument,
                      "output buffer '" + s.name + "': data pointer is null");
      t = Tensor::borrowed(*buf);
    } else {
      t = Tensor(dt, slot.shape);
    }
    if (c.plan.values[s.value].kind == art::ValueKind::intermediate && !bound[s.value]) {
      bound[s.value] = true;
      slots[s.value].data = static_cast<std::byte*>(t.mutable_data());
    } else {
      copy_at_end[o] = true;
    }
    result.names_.push_back(s.name);
    result.tensors_.push_back(std::move(t));
  }
  for (const NamedOutput& b : out_buffers)
    if (!result.find(b.name))
      return Status(StatusCode::not_found, "output buffer for unknown output '" + b.name + "'");

  // 5. Execute the plan.
  RunStats st;
  st.shapes_prepared = prepare_now;
  StatsObserver observer(st);
  const plan::PlanBuffers buffers{slots, std::span<std::byte>(hbm.get(), hbm_size), m->kernels};
  if (Status ws = plan::walk_plan(c, *sim, &buffers, observer, plan.steps, timings.get());
      !ws.is_ok())
    return ws;

  // 6. Outputs that are inputs, constants, states or repeated values are copied; then each
  // state takes its new content (no update reads a state's storage: the verifier allows an
  // update to be a state's value only when it is that state's own).
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    if (!copy_at_end[o]) continue;
    const host::HostTensor& s = slots[c.signature.outputs[plan.outputs[o]].value];
    if (s.nbytes()) std::memcpy(result.tensors_[o].mutable_data(), s.data, s.nbytes());
  }
  for (size_t i = 0; i < c.signature.states.size(); ++i) {
    if (plan.state_updates[i] == c.signature.states[i].value) continue;
    const host::HostTensor& u = slots[plan.state_updates[i]];
    if (u.nbytes()) std::memcpy(state[i].mutable_data(), u.data, u.nbytes());
  }
  st.latency_ns = st.device_ns + st.host_ops_ns;
  // End to end: the per-execution time outside the device, for the bytes this run copied.
  const device::ExecutionTraffic traffic = plan::execution_traffic(
      plan.traffic, [&](uint32_t v) { return static_cast<uint64_t>(slots[v].nbytes()); },
      last_program);
  plan::set_end_to_end(st, *m->target, traffic);
  st.host_wall_ns = ns_since(t0);
  st.entry = plan.info.name;
  stats = st;
  return result;
}

Session::Session(const Model& model, const SessionOptions& options)
    : impl_(std::make_unique<Impl>(model)) {
  impl_->m = model.impl_.get();
  impl_->options = options;
  try {
    impl_->status = impl_->init();
  } catch (const std::bad_alloc&) {
    impl_->status = Status(StatusCode::resource_exhausted, "out of memory creating a session");
  } catch (const std::exception& e) {
    impl_->status = Status(StatusCode::internal, e.what());
  }
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const Status& Session::status() const {
  return impl_->status;
}

Result<SymbolValues> check_inputs(std::span<const TensorSpec> specs,
                                  std::span<const TensorView> tensors) {
  if (tensors.size() != specs.size()) {
    std::string names;
    for (const TensorSpec& s : specs) names += (names.empty() ? "" : ", ") + s.name;
    return Status(StatusCode::invalid_argument, to_string(tensors.size()) +
                                                    " inputs given, expected " +
                                                    to_string(specs.size()) + " (" + names + ")");
  }
  SymbolValues bound;
  std::map<std::string, std::string> source;  // symbol -> the dim that bound it
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& s = specs[i];
    const TensorView& t = tensors[i];
    const std::string who = "input '" + s.name + "'";
    if (t.dtype() != s.dtype)
      return Status(StatusCode::invalid_argument,
                    who + ": dtype is " + std::string(dtype_name(t.dtype())) + ", expected " +
                        std::string(dtype_name(s.dtype)));
    if (t.shape().size() != s.dims.size())
      return Status(StatusCode::invalid_argument, who + ": rank is " + to_string(t.shape().size()) +
                                                      " (shape " + shape_text(t.shape()) +
                                                      "), expected " + to_string(s.dims.size()) +
                                                      " (" + spec_text(s) + ")");
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const int64_t got = t.shape()[d];
      const DimSpec& ds = s.dims[d];
      const std::string dim = who + ": dim " + to_string(d);
      if (got < 0) return Status(StatusCode::invalid_argument, dim + " is " + to_string(got));
      if (!ds.is_symbolic()) {
        if (got != ds.value)
          return Status(StatusCode::invalid_argument, dim + " is " + to_string(got) +
                                                          ", expected " + to_string(ds.value) +
                                                          " (" + spec_text(s) + ")");
        continue;
      }
      if (ds.coeff <= 0 || got % ds.coeff != 0)
        return Status(StatusCode::invalid_argument,
                      dim + " is " + to_string(got) + ", expected a multiple of " +
                          to_string(ds.coeff) + " (" + to_string(ds.coeff) + "*" + ds.symbol + ")");
      const int64_t v = got / ds.coeff;
      if (v < ds.min || v > ds.max)
        return Status(StatusCode::out_of_range,
                      dim + " gives symbol '" + ds.symbol + "' = " + to_string(v) + ", expected [" +
                          to_string(ds.min) + ", " + to_string(ds.max) + "]");
      const auto [it, fresh] = bound.try_emplace(ds.symbol, v);
      if (!fresh && it->second != v)
        return Status(StatusCode::invalid_argument,
                      dim + " gives symbol '" + ds.symbol + "' = " + to_string(v) + " but " +
                          source[ds.symbol] + " gave " + to_string(it->second));
      if (fresh) source[ds.symbol] = who + " dim " + to_string(d);
    }
    if (t.numel() > 0 && t.data() == nullptr)
      return Status(StatusCode::invalid_argument, who + ": data pointer is null");
    if (s.valid_range && dtype_is_integral(t.dtype())) {
      const ValueRange& r = *s.valid_range;
      host::HostTensor h;
      h.data = const_cast<std::byte*>(static_cast<const std::byte*>(t.data()));
      h.dtype = static_cast<art::TensorDType>(t.dtype());
      h.shape = t.shape();
      const std::vector<int64_t> values = host::to_int64(h);
      for (size_t k = 0; k < values.size(); ++k) {
        if (values[k] >= r.lo && values[k] < r.hi) continue;
        return Status(StatusCode::out_of_range,
                      who + ": element " + element_text(t.shape(), static_cast<int64_t>(k)) +
                          " is " + to_string(values[k]) + ", outside [" + to_string(r.lo) + ", " +
                          to_string(r.hi) + "), " + r.reason);
      }
    }
  }
  return bound;
}

Result<Outputs> Session::run(const std::vector<NamedInput>& inputs,
                             const std::vector<NamedOutput>& outputs) {
  try {
    const std::string& group = impl_->m->entry_infos[0].bucket_group;
    if (!group.empty()) return impl_->run_bucket(group, inputs, outputs);
    return impl_->run(0, inputs, outputs);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::resource_exhausted, "out of memory during run");
  } catch (const std::exception& e) {
    return Status(StatusCode::internal, e.what());
  }
}

Result<Outputs> Session::run(std::string_view entry, const std::vector<NamedInput>& inputs,
                             const std::vector<NamedOutput>& outputs) {
  try {
    if (impl_->is_group(entry)) return impl_->run_bucket(std::string(entry), inputs, outputs);
    auto e = impl_->find_entry(entry);
    if (!e.is_ok()) return e.status();
    // A shape bucket named on its own runs its inputs padded up to it when they fit it.
    const std::string& group = impl_->m->entry_infos[*e].bucket_group;
    if (!group.empty()) return impl_->run_bucket(group, inputs, outputs, *e);
    return impl_->run(*e, inputs, outputs);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::resource_exhausted, "out of memory during run");
  } catch (const std::exception& e) {
    return Status(StatusCode::internal, e.what());
  }
}

const RunStats& Session::stats() const {
  return impl_->stats;
}

const Tensor* Session::state(std::string_view name) const {
  const auto& specs = impl_->m->states;
  for (size_t i = 0; i < specs.size() && i < impl_->state.size(); ++i)
    if (specs[i].name == name) return &impl_->state[i];
  return nullptr;
}

Status Session::set_state(std::string_view name, const TensorView& value) {
  if (!impl_->status.is_ok())
    return Status(StatusCode::failed_precondition,
                  "session creation failed: " + impl_->status.message());
  const auto& specs = impl_->m->states;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name != name) continue;
    Tensor& t = impl_->state[i];
    if (value.dtype() != t.dtype() || value.shape() != t.shape())
      return Status(StatusCode::invalid_argument,
                    "state '" + specs[i].name + "' is " + std::string(dtype_name(t.dtype())) +
                        shape_text(t.shape()) + ", given " +
                        std::string(dtype_name(value.dtype())) + shape_text(value.shape()));
    if (t.nbytes() > 0 && value.data() == nullptr)
      return Status(StatusCode::invalid_argument,
                    "state '" + specs[i].name + "': data pointer is null");
    if (t.nbytes()) std::memcpy(t.mutable_data(), value.data(), t.nbytes());
    return Status::ok();
  }
  std::string names;
  for (const TensorSpec& s : specs) names += (names.empty() ? "" : ", ") + s.name;
  return Status(StatusCode::not_found, "unknown state '" + std::string(name) +
                                           "': expected one of " +
                                           (names.empty() ? "(the model has none)" : names));
}

void Session::reset_state() {
  if (impl_->status.is_ok()) impl_->reset_state();
}

}  // namespace neuronc
