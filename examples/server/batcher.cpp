// The batching decision (plan_batching, check_concat_exact) and the worker pool that forms and
// runs batches.
#include "examples/server/batcher.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "examples/server/tensor_json.h"

namespace neuronc::server {
namespace {

using Clock = std::chrono::steady_clock;

double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

// Bytes of one dim-0 row of `t` (0 for a tensor without rows).
size_t row_bytes(const Tensor& t) {
  return t.shape().empty() || t.shape()[0] == 0 ? 0
                                                : t.nbytes() / static_cast<size_t>(t.shape()[0]);
}

// A request's shapes without dim 0, which must agree for requests to share a concatenated run.
std::string shape_key(const std::vector<Tensor>& inputs) {
  std::string key;
  for (const Tensor& t : inputs) {
    for (size_t d = 1; d < t.shape().size(); ++d) key += std::to_string(t.shape()[d]) + ",";
    key += ";";
  }
  return key;
}

// splitmix64: the probe's deterministic values.
uint64_t next_random(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A probe tensor for `spec` with `rows` rows and the other symbols at `values` (by name).
Tensor probe_tensor(const TensorSpec& spec, int64_t rows,
                    const std::vector<std::pair<std::string, int64_t>>& values, uint64_t seed) {
  Shape shape;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    const DimSpec& ds = spec.dims[d];
    if (!ds.is_symbolic()) {
      shape.push_back(ds.value);
    } else if (d == 0) {
      shape.push_back(ds.coeff * rows);
    } else {
      int64_t v = std::max<int64_t>(ds.min, 1);
      for (const auto& [name, value] : values)
        if (name == ds.symbol) v = value;
      shape.push_back(ds.coeff * v);
    }
  }
  Tensor t(spec.dtype, shape);
  auto* p = static_cast<std::byte*>(t.mutable_data());
  const size_t n = static_cast<size_t>(t.numel());
  uint64_t s = seed;
  for (size_t k = 0; k < n; ++k) {
    const uint64_t r = next_random(s);
    const float f = static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-53 * 4.0 - 2.0);
    std::byte* e = p + k * dtype_size(spec.dtype);
    if (dtype_is_integral(spec.dtype)) {
      int64_t lo = 0, hi = 2;
      if (spec.valid_range && spec.valid_range->hi > spec.valid_range->lo) {
        lo = spec.valid_range->lo;
        hi = spec.valid_range->hi;
      }
      const int64_t v =
          lo + static_cast<int64_t>(r % static_cast<uint64_t>(std::min<int64_t>(hi - lo, 1 << 20)));
      std::memcpy(e, &v, dtype_size(spec.dtype));  // little-endian: the low bytes
      continue;
    }
    switch (spec.dtype) {
      case DType::f64: {
        const double d = f;
        std::memcpy(e, &d, 8);
        break;
      }
      case DType::f16: {
        const uint16_t h = f32_to_f16_bits(f);
        std::memcpy(e, &h, 2);
        break;
      }
      case DType::bf16: {
        const uint16_t h = f32_to_bf16_bits(f);
        std::memcpy(e, &h, 2);
        break;
      }
      case DType::c64:
        std::memcpy(e, &f, 4);
        std::memcpy(e + 4, &f, 4);
        break;
      case DType::f8e4m3:
      case DType::f8e5m2:
        *e = static_cast<std::byte>(r % 0x30);  // small positive finite values
        break;
      default:
        std::memcpy(e, &f, 4);
        break;
    }
  }
  return t;
}

}  // namespace

Signature Signature::of(const Model& model) {
  return {model.inputs(), model.outputs(), model.states(), model.entries()};
}

const char* batch_mode_name(BatchMode mode) {
  return mode == BatchMode::concat ? "concat" : "sequential";
}

Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  Shape shape = parts.front()->shape();
  shape[0] = 0;
  for (const Tensor* p : parts) shape[0] += p->shape()[0];
  Tensor out(parts.front()->dtype(), shape);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (const Tensor* p : parts) {
    if (p->nbytes()) std::memcpy(dst, p->data(), p->nbytes());
    dst += p->nbytes();
  }
  return out;
}

Tensor slice_rows(const Tensor& tensor, int64_t begin, int64_t count) {
  Shape shape = tensor.shape();
  shape[0] = count;
  Tensor out(tensor.dtype(), shape);
  const size_t rb = row_bytes(tensor);
  if (rb && count)
    std::memcpy(out.mutable_data(),
                static_cast<const std::byte*>(tensor.data()) + static_cast<size_t>(begin) * rb,
                static_cast<size_t>(count) * rb);
  return out;
}

BatchPlan plan_batching(const Signature& sig, int max_batch, bool allow_concat) {
  BatchPlan plan;
  auto sequential = [&](const std::string& why) {
    plan.mode = BatchMode::sequential;
    plan.reason = "requests run back to back on a worker's session (" + why + ")";
    return plan;
  };
  if (!allow_concat) return sequential("--batching sequential");
  if (max_batch <= 1) return sequential("--max-batch is 1");
  if (!sig.states.empty())
    return sequential("the model keeps state '" + sig.states[0].name +
                      "' between runs, reset before every request");
  if (sig.inputs.empty() || sig.outputs.empty())
    return sequential("the model has no inputs or no outputs");
  const TensorSpec& first = sig.inputs[0];
  if (first.dims.empty() || !first.dims[0].is_symbolic() || first.dims[0].coeff != 1)
    return sequential("input '" + first.name + "' has a fixed batch dim: " + spec_text(first));
  const DimSpec& batch = first.dims[0];
  for (const auto* list : {&sig.inputs, &sig.outputs}) {
    const char* kind = list == &sig.inputs ? "input" : "output";
    for (const TensorSpec& s : *list) {
      if (s.dims.empty() || s.dims[0].symbol != batch.symbol || s.dims[0].coeff != 1)
        return sequential(std::string(kind) + " '" + s.name + "' dim 0 is not the batch symbol " +
                          batch.symbol + ": " + spec_text(s));
      for (size_t d = 1; d < s.dims.size(); ++d)
        if (s.dims[d].symbol == batch.symbol)
          return sequential("the batch symbol " + batch.symbol + " also sizes " + kind + " '" +
                            s.name + "' dim " + std::to_string(d) + ": " + spec_text(s));
    }
  }
  int64_t max_rows = std::min<int64_t>(max_batch, batch.max);
  std::string buckets;
  if (!sig.entries.empty() && !sig.entries[0].bucket_group.empty()) {
    int64_t largest = 0;
    for (const EntryInfo& e : sig.entries) {
      if (e.bucket_group != sig.entries[0].bucket_group) continue;
      for (const EntryInfo::BucketDim& b : e.bucket) {
        if (b.symbol != batch.symbol) continue;
        if (b.padding == EntryInfo::Padding::none)
          return sequential("the shape buckets do not pad " + batch.symbol +
                            ": only their own sizes run, which a sum of requests may miss");
        largest = std::max(largest, b.value);
      }
    }
    if (largest > 0) {
      max_rows = std::min(max_rows, largest);
      buckets = ", buckets up to " + std::to_string(largest);
    }
  }
  if (max_rows < 2 * std::max<int64_t>(batch.min, 1))
    return sequential("at most " + std::to_string(max_rows) +
                      " rows fit one run, fewer than two "
                      "requests of " +
                      std::to_string(std::max<int64_t>(batch.min, 1)));
  plan.mode = BatchMode::concat;
  plan.symbol = batch.symbol;
  plan.max_rows = max_rows;
  plan.reason = "every input and output has the symbolic batch dim " + batch.symbol + " [" +
                std::to_string(batch.min) + ", " + std::to_string(batch.max) + "] at dim 0" +
                buckets + ": requests with equal other dims are concatenated along it, up to " +
                std::to_string(max_rows) + " rows per run, and the outputs split";
  return plan;
}

Status check_concat_exact(Session& session, const Signature& sig, const BatchPlan& plan) {
  const int64_t lo = std::max<int64_t>(sig.inputs[0].dims[0].min, 1), hi = plan.max_rows;
  std::vector<std::pair<std::string, int64_t>> values;  // other symbols: the first bucket's
  if (!sig.entries.empty())
    for (const EntryInfo::BucketDim& b : sig.entries[0].bucket)
      values.emplace_back(b.symbol, b.value);
  std::vector<std::vector<int64_t>> patterns;
  for (const std::vector<int64_t>& p : std::vector<std::vector<int64_t>>{
           {lo, lo}, {lo, hi - lo}, {lo + 1, hi - lo - 1}, {lo, lo, lo}, {hi - 2 * lo, lo, lo}}) {
    int64_t sum = 0;
    bool ok = true;
    for (int64_t r : p) {
      ok &= r >= lo;
      sum += r;
    }
    if (ok && sum <= hi && std::find(patterns.begin(), patterns.end(), p) == patterns.end())
      patterns.push_back(p);
  }
  uint64_t seed = 0x5eed;
  for (const std::vector<int64_t>& pattern : patterns) {
    std::string text;
    for (int64_t r : pattern) text += (text.empty() ? "" : "+") + std::to_string(r);
    std::vector<std::vector<Tensor>> parts;  // per request, per input
    std::vector<std::vector<Tensor>> alone;  // per request, per output
    for (int64_t rows : pattern) {
      std::vector<Tensor> in;
      std::vector<NamedInput> named;
      for (const TensorSpec& s : sig.inputs) in.push_back(probe_tensor(s, rows, values, ++seed));
      for (size_t i = 0; i < in.size(); ++i) named.push_back({sig.inputs[i].name, in[i].view()});
      Result<Outputs> out = session.run(named);
      if (!out)
        return Status(out.status().code(), "a single probe run of " + std::to_string(rows) +
                                               " rows failed: " + out.status().message());
      std::vector<Tensor> outs;
      for (const TensorSpec& s : sig.outputs) outs.push_back(out->release(s.name));
      parts.push_back(std::move(in));
      alone.push_back(std::move(outs));
    }
    std::vector<Tensor> joined;
    std::vector<NamedInput> named;
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      std::vector<const Tensor*> ps;
      for (const auto& p : parts) ps.push_back(&p[i]);
      joined.push_back(concat_rows(ps));
    }
    for (size_t i = 0; i < joined.size(); ++i)
      named.push_back({sig.inputs[i].name, joined[i].view()});
    Result<Outputs> out = session.run(named);
    if (!out)
      return Status(out.status().code(), "the concatenated probe run (rows " + text +
                                             ") failed: " + out.status().message());
    for (size_t o = 0; o < sig.outputs.size(); ++o) {
      const Tensor& all = out->at(sig.outputs[o].name);
      int64_t begin = 0;
      for (size_t r = 0; r < pattern.size(); ++r) {
        const Tensor part = slice_rows(all, begin, pattern[r]);
        begin += pattern[r];
        const Tensor& want = alone[r][o];
        if (part.shape() != want.shape() || part.nbytes() != want.nbytes() ||
            std::memcmp(part.data(), want.data(), want.nbytes()) != 0)
          return Status(StatusCode::failed_precondition,
                        "output '" + sig.outputs[o].name + "' of request " + std::to_string(r) +
                            " in a concatenated probe run (rows " + text +
                            ") differs from its single run");
      }
    }
  }
  return Status::ok();
}

struct Batcher::Job {
  std::vector<Tensor> inputs;
  int64_t rows = 1;
  std::string key;  // concat: the dims besides dim 0, which a batch's requests share
  Clock::time_point enqueued;
  std::promise<JobResult> promise;
  JobResult result;
};

Batcher::Batcher(const Model& model, Signature sig, BatchPlan plan, BatchOptions options)
    : model_(model), sig_(std::move(sig)), plan_(std::move(plan)), options_(options) {
  options_.threads = std::max(options_.threads, 1);
  options_.max_batch = std::max(options_.max_batch, 1);
  sessions_.reserve(static_cast<size_t>(options_.threads));
  for (int i = 0; i < options_.threads; ++i) {
    sessions_.emplace_back(model_);
    if (!sessions_.back().status().is_ok()) {
      status_ = sessions_.back().status();
      return;
    }
  }
  // A session's first run costs far more than the next ones (some 0.3 s against 0.3 ms for
  // models/dynamic_batch): pay it here, before the server says it listens, and not in the first
  // clients' latency. A failed warm-up run is no error; real requests will say what is wrong.
  std::vector<std::pair<std::string, int64_t>> values;
  if (!sig_.entries.empty())
    for (const EntryInfo::BucketDim& b : sig_.entries[0].bucket)
      values.emplace_back(b.symbol, b.value);
  for (Session& session : sessions_) {
    std::vector<Tensor> in;
    std::vector<NamedInput> named;
    for (const TensorSpec& s : sig_.inputs) {
      int64_t rows = s.dims.empty() ? 1 : std::max<int64_t>(s.dims[0].min, 1);
      for (const auto& [name, value] : values)
        if (!s.dims.empty() && name == s.dims[0].symbol) rows = value;
      in.push_back(probe_tensor(s, rows, values, 1));
      named.push_back({s.name, in.back().view()});
    }
    (void)session.run(named);
    session.reset_state();
  }
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this, i] { worker(i); });
}

Batcher::~Batcher() {
  shutdown();
}

std::future<JobResult> Batcher::submit(std::vector<Tensor> inputs) {
  auto job = std::make_unique<Job>();
  if (plan_.mode == BatchMode::concat) {
    job->rows = inputs[0].shape()[0];
    job->key = shape_key(inputs);
  }
  job->inputs = std::move(inputs);
  job->enqueued = Clock::now();
  std::future<JobResult> done = job->promise.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_ || threads_.empty()) {
      JobResult r;
      r.status = Status(StatusCode::failed_precondition,
                        status_.is_ok() ? "the server is shutting down"
                                        : "no session could be created: " + status_.message());
      job->promise.set_value(std::move(r));
      return done;
    }
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
  return done;
}

void Batcher::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
}

Batcher::Counters Batcher::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  c.queued = queue_.size();
  return c;
}

void Batcher::worker(int index) {
  Session& session = sessions_[static_cast<size_t>(index)];
  const bool concat = plan_.mode == BatchMode::concat;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock,
             [&] { return (!queue_.empty() && !collecting_) || (stopping_ && queue_.empty()); });
    if (queue_.empty()) return;  // stopping, and every queued request answered
    collecting_ = true;
    std::vector<std::unique_ptr<Job>> batch;
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
    // The delay counts from the oldest request's arrival: one that already waited for a free
    // worker does not wait again.
    const Clock::time_point deadline = batch[0]->enqueued + options_.max_delay;
    int64_t rows = batch[0]->rows;
    auto full = [&] {
      return concat ? rows >= plan_.max_rows
                    : batch.size() >= static_cast<size_t>(options_.max_batch);
    };
    while (!full()) {
      for (auto it = queue_.begin(); it != queue_.end() && !full();) {
        Job& j = **it;
        if (!concat || (j.key == batch[0]->key && rows + j.rows <= plan_.max_rows)) {
          rows += j.rows;
          batch.push_back(std::move(*it));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      if (full() || stopping_ || Clock::now() >= deadline) break;
      cv_.wait_until(lock, deadline);
    }
    collecting_ = false;
    lock.unlock();
    cv_.notify_all();
    run_batch(session, batch);
    lock.lock();
  }
}

void Batcher::run_batch(Session& session, std::vector<std::unique_ptr<Job>>& batch) {
  const Clock::time_point start = Clock::now();
  for (auto& j : batch) j->result.queue_ns = ns_between(j->enqueued, start);
  bool fallback = false;
  try {
    bool done = false;
    if (plan_.mode == BatchMode::concat && batch.size() > 1) {
      done = run_concat(session, batch);
      fallback = !done;
    }
    if (!done)
      for (auto& j : batch) run_one(session, *j, static_cast<int>(batch.size()));
  } catch (const std::bad_alloc&) {
    for (auto& j : batch) {
      j->result.status = Status(StatusCode::resource_exhausted, "out of memory running a batch");
      j->result.outputs.clear();
    }
  }
  {
    std::lock_guard lock(mu_);
    ++counters_.batches;
    counters_.fallback_batches += fallback;
    counters_.max_batch_requests = std::max<uint64_t>(counters_.max_batch_requests, batch.size());
    for (auto& j : batch) {
      if (j->result.status.is_ok())
        ++counters_.requests;
      else
        ++counters_.failed_requests;
    }
  }
  for (auto& j : batch) j->promise.set_value(std::move(j->result));
}

bool Batcher::run_concat(Session& session, std::vector<std::unique_ptr<Job>>& batch) {
  int64_t rows = 0;
  for (auto& j : batch) rows += j->rows;
  std::vector<Tensor> joined;
  std::vector<NamedInput> named;
  for (size_t i = 0; i < sig_.inputs.size(); ++i) {
    std::vector<const Tensor*> parts;
    for (auto& j : batch) parts.push_back(&j->inputs[i]);
    joined.push_back(concat_rows(parts));
  }
  for (size_t i = 0; i < joined.size(); ++i)
    named.push_back({sig_.inputs[i].name, joined[i].view()});
  Result<Outputs> out = session.run(named);
  {
    std::lock_guard lock(mu_);
    ++counters_.runs;
    if (out) {
      ++counters_.concat_runs;
      counters_.device_ns += session.stats().device_ns;
      counters_.latency_ns += session.stats().latency_ns;
    }
  }
  if (!out) return false;
  for (const TensorSpec& s : sig_.outputs) {
    const Tensor& t = out->at(s.name);
    if (t.shape().empty() || t.shape()[0] != rows) return false;  // not split-able: run singly
  }
  int64_t begin = 0;
  for (auto& j : batch) {
    JobResult& r = j->result;
    for (const TensorSpec& s : sig_.outputs)
      r.outputs.push_back(slice_rows(out->at(s.name), begin, j->rows));
    begin += j->rows;
    r.stats = session.stats();
    r.batch_requests = static_cast<int>(batch.size());
    r.batch_rows = rows;
  }
  return true;
}

void Batcher::run_one(Session& session, Job& job, int batch_requests) {
  // A response must not depend on the requests before it: state starts fresh every time.
  if (!sig_.states.empty()) session.reset_state();
  std::vector<NamedInput> named;
  for (size_t i = 0; i < sig_.inputs.size(); ++i)
    named.push_back({sig_.inputs[i].name, job.inputs[i].view()});
  Result<Outputs> out = session.run(named);
  JobResult& r = job.result;
  r.batch_requests = batch_requests;
  r.batch_rows = plan_.mode == BatchMode::concat ? job.rows : 0;
  r.outputs.clear();
  {
    std::lock_guard lock(mu_);
    ++counters_.runs;
    if (out) {
      counters_.device_ns += session.stats().device_ns;
      counters_.latency_ns += session.stats().latency_ns;
    }
  }
  if (!out) {
    r.status = out.status();
    return;
  }
  r.status = Status::ok();
  r.stats = session.stats();
  for (const TensorSpec& s : sig_.outputs) r.outputs.push_back(out->release(s.name));
}

}  // namespace neuronc::server
