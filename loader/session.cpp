// Session (session.h): binds inputs, resolves symbolic shapes, walks the execution plan through
// the loader's plan walker (plan_walker.h: device calls copy bindings into the HBM arena, run
// the NeuronCore model and copy results back; host ops run their kernel on CPU buffers) and
// hands back outputs.
#include "neuronc/session.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device/simulator.h"
#include "loader/model_impl.h"
#include "loader/plan_walker.h"

namespace neuronc {
namespace {

using std::to_string;
namespace art = ::neuronc::artifact;

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

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

// Every element of `t` within the input's bound (art::IndexBound), or why not: the element,
// its value and the bound.
Status check_index_bound(const std::string& who, const TensorView& t, const art::IndexBound& b) {
  host::HostTensor h;
  h.data = const_cast<std::byte*>(static_cast<const std::byte*>(t.data()));
  h.dtype = static_cast<art::TensorDType>(t.dtype());
  h.shape = t.shape();
  const std::vector<int64_t> v = host::to_int64(h);
  for (size_t k = 0; k < v.size(); ++k) {
    if (v[k] >= b.lo && v[k] < b.hi) continue;
    return Status(StatusCode::out_of_range,
                  who + ": element " + element_text(t.shape(), static_cast<int64_t>(k)) + " is " +
                      to_string(v[k]) + ", outside [" + to_string(b.lo) + ", " + to_string(b.hi) +
                      "), " + b.what);
  }
  return Status::ok();
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

struct Session::Impl {
  Model model;
  const Model::Impl* m = nullptr;
  SessionOptions options;
  Status status;
  std::unique_ptr<device::Simulator> sim;
  std::unique_ptr<std::byte, FreeDeleter> hbm;
  uint64_t hbm_size = 0;
  std::vector<std::vector<std::byte>> scratch;  // per plan value (intermediates)
  std::vector<host::HostTensor> slots;          // per plan value, valid during a run
  std::vector<Tensor> state;                    // per Signature::states entry
  RunStats stats;
  // The symbol values the slots' shapes and scratch buffers were last prepared for (XNNPACK's
  // reshape / setup split: shape resolution and allocation run once per input shape, and a run
  // with the shapes of the previous one only binds data pointers).
  // Per entry (the values of different entries are disjoint, so each keeps its own).
  std::vector<std::vector<int64_t>> prepared_symbols;
  std::vector<bool> prepared;

  explicit Impl(const Model& model) : model(model) {}
  Status init();
  void reset_state();
  Status prepare(size_t entry, const std::vector<int64_t>& sym);
  Result<Outputs> run(size_t entry, const std::vector<NamedInput>& inputs,
                      const std::vector<NamedOutput>& outputs);
  Result<size_t> find_entry(std::string_view name) const;
};

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
  sim = std::make_unique<device::Simulator>(*m->target, so);
  hbm_size = c.memory_plan.hbm_arena_bytes;
  // calloc: the kernel hands out zero pages lazily, so untouched arena costs no RSS.
  hbm.reset(static_cast<std::byte*>(std::calloc(std::max<uint64_t>(hbm_size, 1), 1)));
  if (!hbm)
    return Status(StatusCode::resource_exhausted,
                  "cannot allocate the " + to_string(hbm_size) + "-byte hbm arena");
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
    if (val.kind == art::ValueKind::intermediate) scratch[v].resize(bytes);
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
                                   const std::vector<NamedOutput>& out_buffers) {
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

  // 2. Check dtypes and shapes; bind symbols.
  std::vector<int64_t> sym(c.signature.symbols.size(), -1);
  std::vector<std::string> sym_source(sym.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& s = specs[i];
    if (!by_index[i])
      return Status(StatusCode::invalid_argument,
                    "input '" + s.name + "' is missing: expected " + spec_text(s));
    const TensorView& t = by_index[i]->tensor;
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
    const art::TensorSpec& sig_in = c.signature.inputs[plan.inputs[i]];
    const auto& vdims = c.plan.values[sig_in.value].dims;
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
      if (got % ds.coeff != 0)
        return Status(StatusCode::invalid_argument,
                      dim + " is " + to_string(got) + ", expected a multiple of " +
                          to_string(ds.coeff) + " (" + to_string(ds.coeff) + "*" + ds.symbol + ")");
      const int64_t v = got / ds.coeff;
      if (v < ds.min || v > ds.max)
        return Status(StatusCode::out_of_range,
                      dim + " gives symbol '" + ds.symbol + "' = " + to_string(v) + ", expected [" +
                          to_string(ds.min) + ", " + to_string(ds.max) + "]");
      const int32_t y = vdims[d].symbol;
      if (sym[y] >= 0 && sym[y] != v)
        return Status(StatusCode::invalid_argument,
                      dim + " gives symbol '" + ds.symbol + "' = " + to_string(v) + " but " +
                          sym_source[y] + " gave " + to_string(sym[y]));
      sym[y] = v;
      sym_source[y] = who + " dim " + to_string(d);
    }
    if (t.numel() > 0 && t.data() == nullptr)
      return Status(StatusCode::invalid_argument, who + ": data pointer is null");
    if (const auto& bound = sig_in.index_bound)
      if (Status bs = check_index_bound(who, t, *bound); !bs.is_ok()) return bs;
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
  if (Status ws = plan::walk_plan(c, *sim, &buffers, observer, plan.steps); !ws.is_ok()) return ws;

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
  st.host_wall_ns = ns_since(t0);
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

Result<Outputs> Session::run(const std::vector<NamedInput>& inputs,
                             const std::vector<NamedOutput>& outputs) {
  try {
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
    auto e = impl_->find_entry(entry);
    if (!e.is_ok()) return e.status();
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
