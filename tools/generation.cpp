// Greedy generation (generation.h).
#include "tools/generation.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>

#include "tools/cli_output.h"
#include "tools/runner.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {
namespace {

const TensorSpec* find_spec(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (const TensorSpec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

bool is_static(const TensorSpec& s, std::initializer_list<int64_t> want_rank_dims, size_t rank) {
  if (s.dims.size() != rank) return false;
  for (const DimSpec& d : s.dims)
    if (d.is_symbolic()) return false;
  size_t i = 0;
  for (int64_t w : want_rank_dims) {
    if (w >= 0 && s.dims[i].value != w) return false;
    ++i;
  }
  return true;
}

// A decode or prefill program's interface (models/scripts/export_causal_lm.py): input_ids
// i64[batch, tokens], cache_position i64[tokens], the KV cache as state, and either logits
// [batch, tokens, vocab] first among the outputs, or (--on-device-sampling) the sampler's
// next_tokens i64[batch] first, from sampling_params f32[batch, 3] and, for a prefill,
// last_token i64[1]. `tokens` is 1 for decode, the bucket for prefill.
struct ProgramInterface {
  const TensorSpec* ids = nullptr;
  const TensorSpec* position = nullptr;
  const TensorSpec* params = nullptr;  // sampling programs
  const TensorSpec* last = nullptr;    // sampling prefill programs
  const TensorSpec* out = nullptr;     // logits, or the sampled tokens
  bool sampling = false;
  int64_t batch = 0, tokens = 0, vocab = 0;
  std::optional<int64_t> cache_capacity;
};

bool is_float(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

// The interface of entry `e` of `model`, if it has one; `decode` asks for one token per call,
// otherwise more than one.
std::optional<ProgramInterface> interface_of(const Model& model, const EntryInfo& e, bool decode) {
  ProgramInterface d;
  d.ids = find_spec(e.inputs, "input_ids");
  d.position = find_spec(e.inputs, "cache_position");
  d.params = find_spec(e.inputs, "sampling_params");
  d.last = find_spec(e.inputs, "last_token");
  d.out = e.outputs.empty() ? nullptr : &e.outputs[0];
  d.sampling = d.params != nullptr;
  bool ok = d.ids && d.position && d.out && !model.states().empty() && d.ids->dtype == DType::i64 &&
            is_static(*d.ids, {-1, -1}, 2) && d.position->dtype == DType::i64 &&
            is_static(*d.position, {d.ids->dims[1].value}, 1);
  if (!ok) return std::nullopt;
  const int64_t batch = d.ids->dims[0].value, tokens = d.ids->dims[1].value;
  if (d.sampling) {
    ok = e.inputs.size() == (tokens == 1 ? 3u : 4u) && d.params->dtype == DType::f32 &&
         is_static(*d.params, {batch, 3}, 2) &&
         (tokens == 1 || (d.last && d.last->dtype == DType::i64 && is_static(*d.last, {1}, 1))) &&
         (d.out->dtype == DType::i64 || d.out->dtype == DType::i32) &&
         is_static(*d.out, {batch}, 1) && d.ids->valid_range.has_value();
    if (ok) d.vocab = d.ids->valid_range->hi;  // the embedding table's rows
  } else {
    ok =
        e.inputs.size() == 2 && is_static(*d.out, {batch, tokens, -1}, 3) && is_float(d.out->dtype);
    if (ok) d.vocab = d.out->dims[2].value;
  }
  if (!ok || (tokens == 1) != decode) return std::nullopt;
  d.batch = batch;
  d.tokens = tokens;
  // transformers' StaticCache layout [batch, kv heads, max_seq, head dim]: the positions the
  // cache holds. Other states (none in a causal LM export) do not bound generation.
  for (const TensorSpec& s : model.states())
    if (s.dims.size() == 4 && s.dims[0].value == d.batch)
      d.cache_capacity = std::min(d.cache_capacity.value_or(s.dims[2].value), s.dims[2].value);
  return d;
}

// The usage error for a model none of whose entries is the program generate needs.
CommandExit no_program(const Model& model, const std::string& path, bool decode) {
  std::string has;
  for (const EntryInfo& e : model.entries()) {
    has += model.entries().size() > 1 ? " entry " + e.name + ":" : "";
    for (const TensorSpec& s : e.inputs) has += " input " + s.name + " " + spec_text(s) + ";";
    for (const TensorSpec& s : e.outputs) has += " output " + s.name + " " + spec_text(s) + ";";
  }
  has += " " + std::to_string(model.states().size()) + " states";
  const std::string t = decode ? "1" : "tokens";
  return CommandExit{kExitUsage,
                     std::string("generate needs a ") + (decode ? "decode" : "prefill") +
                         " program: inputs input_ids i64[batch, " + t +
                         "] and cache_position i64[" + t + "], logits [batch, " + t +
                         ", vocab] as the first output (or, with on-device sampling, input "
                         "sampling_params f32[batch, 3]" +
                         (decode ? "" : " and last_token i64[1]") +
                         " and next_tokens i64[batch] first) and the KV cache as state, as "
                         "models/scripts/export_causal_lm.py writes; " +
                         path + " has" + has,
                     ""};
}

// A program generate runs: an entry of a model (the decode artifact's own, or another file's).
struct Program {
  std::string where;  // "entry prefill_16 of decode.nca", or a path
  std::string path;   // the artifact file
  Model model;
  std::string entry;
  ProgramInterface io;
  bool own_session = false;  // another artifact: its own session, whose cache decode then takes
};

// A decode program: an entry with the one-token interface, and the cache positions it attends
// over (export_causal_lm.py's `decode_<C>` reads the first C, any other decode entry all).
struct DecodeProgram {
  std::string entry;
  int64_t context = 0;
};

// C of an entry named `decode_<C>`, or nullopt.
std::optional<int64_t> bucket_context(const std::string& name) {
  constexpr std::string_view kPrefix = "decode_";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0)
    return std::nullopt;
  int64_t c = 0;
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(name.data() + kPrefix.size(), end, c);
  if (ec != std::errc() || ptr != end || c < 1) return std::nullopt;
  return c;
}

// The uniform draws of a Sampling, in [0, 1) with 24 bits (exact in fp32): splitmix64 (Steele,
// Lea and Flood's SplittableRandom; export_causal_lm.py's `Uniform` draws the same stream).
class UniformStream {
 public:
  explicit UniformStream(uint64_t seed) : state_(seed) {}
  float next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * 0x1.0p-24f;
  }

 private:
  uint64_t state_;
};

bool same_spec(const TensorSpec& a, const TensorSpec& b) {
  if (a.name != b.name || a.dtype != b.dtype || a.dims.size() != b.dims.size()) return false;
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (a.dims[i].value != b.dims[i].value) return false;
  return true;
}

// The prefill programs: the artifact's own prefill entries and those of every --prefill file,
// each checked against the decode program (the same batch, vocab and states, so the cache it
// fills is the one decode reads), smallest bucket first.
std::vector<Program> find_prefills(const std::string& artifact,
                                   const std::vector<std::string>& prefill_paths,
                                   const Model& model, const ProgramInterface& d) {
  std::vector<Program> out;
  auto add_entries = [&](const Model& m, const std::string& path, bool own) {
    size_t found = 0;
    for (const EntryInfo& e : m.entries()) {
      auto io = interface_of(m, e, /*decode=*/false);
      if (!io) continue;
      ++found;
      bool states_match = m.states().size() == model.states().size();
      for (size_t i = 0; states_match && i < m.states().size(); ++i)
        states_match = same_spec(m.states()[i], model.states()[i]);
      const std::string where = m.entries().size() > 1 ? "entry " + e.name + " of " + path : path;
      if (io->sampling != d.sampling)
        throw CommandExit{kExitUsage,
                          "prefill program " + where +
                              (io->sampling ? " ends in the sampler" : " returns logits") +
                              ", but the decode program " +
                              (d.sampling ? "ends in the sampler" : "returns logits") +
                              ": export both with or both without --on-device-sampling",
                          ""};
      if (io->batch != d.batch || io->vocab != d.vocab || !states_match)
        throw CommandExit{kExitUsage,
                          "prefill program " + where +
                              " is not the decode program's model: batch " +
                              std::to_string(io->batch) + ", vocab " + std::to_string(io->vocab) +
                              (states_match ? "" : ", other states") + " against batch " +
                              std::to_string(d.batch) + ", vocab " + std::to_string(d.vocab),
                          ""};
      out.push_back({where, path, m, e.name, *io, own});
    }
    return found;
  };
  add_entries(model, artifact, false);
  for (const std::string& path : prefill_paths) {
    Model m = load_model_or_exit(path);
    if (add_entries(m, path, true) == 0) throw no_program(m, path, /*decode=*/false);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Program& a, const Program& b) { return a.io.tokens < b.io.tokens; });
  return out;
}

// The greedy choice per row: the first index of the largest logit, as torch.argmax.
std::vector<int64_t> argmax_rows(const Tensor& logits) {
  const NpyArray f = widen_to_f32(npy_of(logits));
  const int64_t vocab = logits.shape().back();
  const int64_t rows = logits.shape().front();
  std::vector<int64_t> best(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto* l = reinterpret_cast<const float*>(f.data.data()) + r * vocab;
    for (int64_t i = 0; i < vocab; ++i) {
      if (std::isnan(l[i]))
        throw CommandExit{kExitError,
                          "logits row " + std::to_string(r) + " holds NaN at " + std::to_string(i),
                          ""};
      if (l[i] > l[best[r]]) best[r] = i;
    }
  }
  return best;
}

}  // namespace

bool GenerationStep::before_first_token() const {
  return std::string_view(kind) != "decode";
}

struct Generator::Impl {
  explicit Impl(Model m) : model(std::move(m)) {}
  Model model;
  std::string path;
  ProgramInterface d;
  std::vector<DecodeProgram> decodes;  // smallest context first; the last reads the whole cache
  std::vector<Program> prefills;

  // The decode program a step at `position` runs: the smallest bucket beyond it.
  const DecodeProgram& decode_at(int64_t position) const;

  // The smallest prefill bucket that holds a prompt of `p` tokens (null without prefill
  // programs), after checking that the prompt and `max_new_tokens` fit the cache.
  const Program* choose_prefill(int64_t p, int max_new_tokens) const;
  // Timing-only: the simulated statistics of one call of entry `entry` of the artifact at
  // `artifact_path` (device time from the device model's timing half; host ops not run).
  std::map<std::string, RunStats> simulated_calls(const std::string& artifact_path,
                                                  const std::vector<std::string>& entries) const;
  Generation summarise(Generation g, const Program* prefill) const;
};

const DecodeProgram& Generator::Impl::decode_at(int64_t position) const {
  for (const DecodeProgram& dp : decodes)
    if (dp.context > position) return dp;
  return decodes.back();  // unreachable: choose_prefill bounds every position
}

const Program* Generator::Impl::choose_prefill(int64_t p, int max_new_tokens) const {
  if (max_new_tokens < 1)
    throw CommandExit{
        kExitUsage, "new tokens: " + std::to_string(max_new_tokens) + ", expected at least 1", ""};
  const Program* prefill = nullptr;
  for (const Program& f : prefills)
    if (!prefill && f.io.tokens >= p) prefill = &f;
  if (!prefills.empty() && !prefill)
    throw CommandExit{
        kExitUsage,
        "a prompt of " + std::to_string(p) + " tokens is longer than the largest prefill bucket (" +
            std::to_string(prefills.back().io.tokens) + " tokens, " + prefills.back().where + ")",
        ""};
  if (prefill && d.cache_capacity && prefill->io.tokens > *d.cache_capacity)
    throw CommandExit{kExitUsage,
                      "the prefill bucket of " + std::to_string(prefill->io.tokens) +
                          " tokens is longer than the KV cache (" +
                          std::to_string(*d.cache_capacity) + " positions)",
                      ""};
  // Positions 0 .. p + n - 2 are written (the last new token is not fed back).
  if (d.cache_capacity && p + max_new_tokens - 1 > *d.cache_capacity)
    throw CommandExit{kExitUsage,
                      "a prompt of " + std::to_string(p) + " tokens and " +
                          std::to_string(max_new_tokens) + " new ones need " +
                          std::to_string(p + max_new_tokens - 1) +
                          " cache positions, but the KV cache holds " +
                          std::to_string(*d.cache_capacity) + " (export with a larger --max-seq)",
                      ""};
  // Without a decode program over the whole cache, the largest bucket bounds the positions.
  if (p + max_new_tokens - 1 > decodes.back().context)
    throw CommandExit{kExitUsage,
                      "a prompt of " + std::to_string(p) + " tokens and " +
                          std::to_string(max_new_tokens) + " new ones need decode steps up to " +
                          "position " + std::to_string(p + max_new_tokens - 2) +
                          ", beyond the largest decode bucket (" + decodes.back().entry + ", " +
                          std::to_string(decodes.back().context) + " positions)",
                      ""};
  return prefill;
}

std::map<std::string, RunStats> Generator::Impl::simulated_calls(
    const std::string& artifact_path, const std::vector<std::string>& entries) const {
  std::vector<Timeline> timelines;
  try {
    timelines = simulate_artifact_entries(artifact_path, entries);
  } catch (const std::exception& ex) {
    throw CommandExit{kExitError, ex.what(), ""};
  }
  std::map<std::string, RunStats> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Timeline& tl = timelines[i];
    RunStats& st = out[entries[i]];
    st.device_ns = tl.device_ns;
    st.latency_ns = tl.device_ns;
    plan::set_end_to_end(st, device::target(*device::parse_target(tl.target)), tl.traffic);
    st.instructions = tl.instructions;
    st.dma_bytes = tl.hbm_bytes();
    for (size_t k = 0; k < st.engine_busy_ns.size(); ++k)
      st.engine_busy_ns[k] = tl.engine_busy_ns[k];
    for (const TimelineStep& step : tl.steps) (step.device ? st.device_calls : st.host_ops)++;
  }
  return out;
}

Generator::Generator(const std::string& artifact, const std::vector<std::string>& prefill_paths)
    : impl_(std::make_unique<Impl>(load_model_or_exit(artifact))) {
  impl_->path = artifact;
  const Model& model = impl_->model;
  // The decode programs: the entries with the one-token interface, all alike.
  std::optional<ProgramInterface> first;
  std::string first_entry;
  std::map<int64_t, std::string> contexts;  // context -> entry
  for (const EntryInfo& e : model.entries()) {
    const std::optional<ProgramInterface> io = interface_of(model, e, /*decode=*/true);
    if (!io) continue;
    if (!first) {
      first = io;
      first_entry = e.name;
    } else if (!same_spec(*io->ids, *first->ids) || !same_spec(*io->position, *first->position) ||
               !same_spec(*io->out, *first->out) || io->sampling != first->sampling) {
      throw CommandExit{kExitUsage,
                        "decode entries " + first_entry + " and " + e.name + " of " + artifact +
                            " differ: input_ids " + spec_text(*first->ids) + " vs " +
                            spec_text(*io->ids) + ", first output " + spec_text(*first->out) +
                            " vs " + spec_text(*io->out),
                        ""};
    }
    const int64_t whole = io->cache_capacity.value_or(std::numeric_limits<int64_t>::max());
    const int64_t c = bucket_context(e.name).value_or(whole);
    if (c > whole)
      throw CommandExit{kExitUsage,
                        "decode entry " + e.name + " of " + artifact + " names a context of " +
                            std::to_string(c) + " positions, but the KV cache holds " +
                            std::to_string(whole),
                        ""};
    contexts.emplace(c, e.name);  // the first entry of a context wins
  }
  if (!first) throw no_program(model, artifact, /*decode=*/true);
  impl_->d = *first;
  for (const auto& [c, entry] : contexts) impl_->decodes.push_back({entry, c});

  impl_->prefills = find_prefills(artifact, prefill_paths, model, impl_->d);
}

Generator::~Generator() = default;

const Model& Generator::model() const {
  return impl_->model;
}
int64_t Generator::batch() const {
  return impl_->d.batch;
}
int64_t Generator::vocab() const {
  return impl_->d.vocab;
}

Generation Generator::run(const std::vector<std::vector<int64_t>>& prompt, int max_new_tokens,
                          int64_t eos, const Sampling& sampling,
                          neuronc::ProcessGroup* processes) const {
  const ProgramInterface& d = impl_->d;
  Generation g;
  if (sampling.top_k < 1 || !(sampling.temperature > 0) || !std::isfinite(sampling.temperature))
    throw CommandExit{kExitUsage,
                      "top-k " + std::to_string(sampling.top_k) + " and temperature " +
                          std::to_string(sampling.temperature) +
                          ": expected top-k >= 1 and a finite temperature > 0",
                      ""};
  if (!sampling.greedy() && !d.sampling)
    throw CommandExit{kExitUsage,
                      impl_->path +
                          " returns logits: sampling runs on the device, in programs that end "
                          "in the sampler (export with models/scripts/export_causal_lm.py "
                          "--on-device-sampling); this artifact generates greedily only",
                      ""};
  bool rows_ok =
      !prompt.empty() && static_cast<int64_t>(prompt.size()) == d.batch && !prompt[0].empty();
  for (const auto& row : prompt) rows_ok = rows_ok && row.size() == prompt[0].size();
  if (!rows_ok)
    throw CommandExit{kExitUsage,
                      "the prompt has " + std::to_string(prompt.size()) + " rows: expected " +
                          std::to_string(d.batch) +
                          " (the programs' batch), each of the same non-zero length",
                      ""};
  const int64_t p = static_cast<int64_t>(prompt[0].size());
  const Program* prefill = impl_->choose_prefill(p, max_new_tokens);
  if (impl_->model.info().timing_only)
    throw CommandExit{kExitUsage,
                      impl_->path +
                          " is timing-only (compiled from a weights-free export): it computes "
                          "no tokens; `neuronc bench --generate` gives its TTFT and TPOT",
                      ""};
  for (const auto& row : prompt)
    for (int64_t t : row)
      if (t < 0 || t >= d.vocab)
        throw CommandExit{kExitUsage,
                          "--input-ids holds token " + std::to_string(t) +
                              ", outside the vocab [0, " + std::to_string(d.vocab) + ")",
                          ""};

  SessionOptions so;
  so.processes = processes;
  Session session(impl_->model, so);
  if (!session.status().is_ok()) throw CommandExit{kExitError, session.status().message(), ""};
  std::vector<GenerationStep>& steps = g.steps;
  Tensor ids(DType::i64, {d.batch, 1}), where(DType::i64, {1});
  // The sampler's parameters per row and call: (top_k, temperature, a fresh uniform draw).
  UniformStream uniform(sampling.seed);
  Tensor params(DType::f32, {d.batch, 3});
  auto next_params = [&]() {
    auto* q = static_cast<float*>(params.mutable_data());
    for (int64_t b = 0; b < d.batch; ++b) {
      q[3 * b] = static_cast<float>(sampling.top_k);
      q[3 * b + 1] = static_cast<float>(sampling.temperature);
      q[3 * b + 2] = uniform.next();
    }
    return params.view();
  };
  // The sampler's tokens, checked: a token outside the vocab means the logits held NaN.
  auto sampled = [&](const Tensor& t, const std::string& call) {
    const std::vector<int64_t> out = widen_to_i64(npy_of(t));
    for (size_t b = 0; b < out.size(); ++b) {
      if (out[b] < 0 || out[b] >= d.vocab)
        throw CommandExit{kExitError,
                          call + ": the sampler chose token " + std::to_string(out[b]) +
                              " for row " + std::to_string(b) + ", outside the vocab [0, " +
                              std::to_string(d.vocab) + ") (the logits held NaN)",
                          ""};
    }
    return out;
  };
  // Feeds one token per row at `pos`; returns the next token per row.
  auto step = [&](const std::vector<int64_t>& tokens, int64_t pos, const char* kind) {
    std::memcpy(ids.mutable_data(), tokens.data(), tokens.size() * 8);
    std::memcpy(where.mutable_data(), &pos, 8);
    const std::string& entry = impl_->decode_at(pos).entry;
    std::vector<NamedInput> in = {{d.ids->name, ids.view()}, {d.position->name, where.view()}};
    if (d.sampling) in.push_back({d.params->name, next_params()});
    auto out = session.run(entry, in);
    if (!out.is_ok())
      throw CommandExit{kExitError,
                        "decode step at position " + std::to_string(pos) + " (" + entry +
                            "): " + out.status().message(),
                        ""};
    steps.push_back({pos, kind, entry, session.stats()});
    const Tensor& result = out->at(d.out->name);
    return d.sampling ? sampled(result, "decode step at position " + std::to_string(pos))
                      : argmax_rows(result);
  };

  std::vector<int64_t> next;
  if (prefill) {
    // The prompt padded to the bucket with token 0: the pad positions come after the prompt,
    // so the causal mask hides them from its tokens and from every decode step, which
    // overwrites them one by one. An entry of the same artifact fills the session's own cache;
    // another artifact's session hands its cache over (as if in one device's HBM, so moving it
    // costs no simulated time).
    std::optional<Session> other;
    if (prefill->own_session) other.emplace(prefill->model, so);
    Session& ps = other ? *other : session;
    if (!ps.status().is_ok()) throw CommandExit{kExitError, ps.status().message(), ""};
    const int64_t s = prefill->io.tokens;
    Tensor pids(DType::i64, {d.batch, s}), ppos(DType::i64, {s});
    auto* idp = static_cast<int64_t*>(pids.mutable_data());
    auto* posp = static_cast<int64_t*>(ppos.mutable_data());
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t t = 0; t < s; ++t)
        idp[b * s + t] = t < p ? prompt[static_cast<size_t>(b)][static_cast<size_t>(t)] : 0;
    for (int64_t t = 0; t < s; ++t) posp[t] = t;
    std::vector<NamedInput> in = {{prefill->io.ids->name, pids.view()},
                                  {prefill->io.position->name, ppos.view()}};
    // The sampler reads the hidden state of the last prompt token only.
    Tensor last_token(DType::i64, {1});
    *static_cast<int64_t*>(last_token.mutable_data()) = p - 1;
    if (d.sampling) {
      in.push_back({prefill->io.params->name, next_params()});
      in.push_back({prefill->io.last->name, last_token.view()});
    }
    auto out = ps.run(prefill->entry, in);
    if (!out.is_ok())
      throw CommandExit{kExitError, "prefill (" + prefill->where + "): " + out.status().message(),
                        ""};
    steps.push_back({0, "prefill", prefill->entry, ps.stats()});
    const Tensor& result = out->at(prefill->io.out->name);
    if (d.sampling) {
      next = sampled(result, "prefill (" + prefill->where + ")");
    } else {
      // The logits of each row's last prompt token.
      const NpyArray f = widen_to_f32(npy_of(result));
      Tensor last(DType::f32, {d.batch, d.vocab});
      for (int64_t b = 0; b < d.batch; ++b)
        std::memcpy(static_cast<float*>(last.mutable_data()) + b * d.vocab,
                    reinterpret_cast<const float*>(f.data.data()) + (b * s + p - 1) * d.vocab,
                    static_cast<size_t>(d.vocab) * sizeof(float));
      next = argmax_rows(last);
    }
    if (other)
      for (const TensorSpec& st : impl_->model.states()) {
        const Status set = session.set_state(st.name, other->state(st.name)->view());
        if (!set.is_ok()) throw CommandExit{kExitError, set.message(), ""};
      }
  } else {
    for (int64_t t = 0; t < p; ++t) {
      std::vector<int64_t> column;
      for (const auto& row : prompt) column.push_back(row[static_cast<size_t>(t)]);
      next = step(column, t, "prompt");
    }
  }
  std::vector<std::vector<int64_t>>& generated = g.tokens;
  generated.assign(static_cast<size_t>(d.batch), {});
  std::vector<bool> ended(static_cast<size_t>(d.batch), false);
  for (int i = 0; i < max_new_tokens; ++i) {
    for (size_t b = 0; b < generated.size(); ++b) {
      generated[b].push_back(next[b]);
      ended[b] = ended[b] || next[b] == eos;
    }
    const bool all_ended = std::all_of(ended.begin(), ended.end(), [](bool e) { return e; });
    if (i + 1 == max_new_tokens || all_ended) break;
    next = step(next, p + i, "decode");
  }

  return impl_->summarise(std::move(g), prefill);
}

Generation Generator::time(int64_t prompt_len, int max_new_tokens) const {
  if (prompt_len < 1)
    throw CommandExit{kExitUsage,
                      "prompt length " + std::to_string(prompt_len) + ": expected at least 1", ""};
  const Program* prefill = impl_->choose_prefill(prompt_len, max_new_tokens);
  // Simulated time depends on no data, and on the position only through the decode bucket the
  // step runs in: each program is timed once (the artifact read once) and that time stands for
  // each of its calls.
  std::vector<std::pair<int64_t, const char*>> calls;  // position, kind
  if (!prefill)
    for (int64_t t = 0; t < prompt_len; ++t) calls.push_back({t, "prompt"});
  for (int i = 0; i + 1 < max_new_tokens; ++i) calls.push_back({prompt_len + i, "decode"});
  std::vector<std::string> entries;
  auto want = [&](const std::string& e) {
    if (std::find(entries.begin(), entries.end(), e) == entries.end()) entries.push_back(e);
  };
  for (const auto& [position, kind] : calls) want(impl_->decode_at(position).entry);
  if (prefill && !prefill->own_session) want(prefill->entry);
  std::map<std::string, RunStats> timed = impl_->simulated_calls(impl_->path, entries);
  Generation g;
  if (prefill)
    g.steps.push_back({0, "prefill", prefill->entry,
                       prefill->own_session
                           ? impl_->simulated_calls(prefill->path, {prefill->entry})[prefill->entry]
                           : timed.at(prefill->entry)});
  for (const auto& [position, kind] : calls) {
    const std::string& entry = impl_->decode_at(position).entry;
    g.steps.push_back({position, kind, entry, timed.at(entry)});
  }
  return impl_->summarise(std::move(g), prefill);
}

std::vector<int64_t> Generator::decode_contexts() const {
  std::vector<int64_t> out;
  for (const DecodeProgram& dp : impl_->decodes) out.push_back(dp.context);
  return out;
}

bool Generator::samples_on_device() const {
  return impl_->d.sampling;
}

bool Generator::timing_only() const {
  return impl_->model.info().timing_only;
}

Generation Generator::Impl::summarise(Generation g, const Program* prefill) const {
  g.ttft_from = prefill ? "the prefill program, bucket " + std::to_string(prefill->io.tokens) +
                              " (" + prefill->where + ")"
                        : "the prompt through the decode program, one token per step";
  double decode_ns = 0, decode_e2e_ns = 0, decode_e2e_async_ns = 0;
  for (const GenerationStep& s : g.steps) {
    if (s.before_first_token()) {
      g.ttft_ns += s.stats.latency_ns;
      g.ttft_end_to_end_ns += s.stats.end_to_end_ns;
      g.ttft_end_to_end_async_ns += s.stats.end_to_end_async_ns;
      continue;
    }
    decode_ns += s.stats.latency_ns;
    decode_e2e_ns += s.stats.end_to_end_ns;
    decode_e2e_async_ns += s.stats.end_to_end_async_ns;
    g.decode_device_ns += s.stats.device_ns;
    ++g.decode_steps;
    for (size_t e = 0; e < g.decode_busy_ns.size(); ++e)
      g.decode_busy_ns[e] += s.stats.engine_busy_ns[e];
  }
  const double steps = static_cast<double>(std::max<size_t>(g.decode_steps, 1));
  g.tpot_ns = g.decode_steps ? decode_ns / steps : 0;
  g.tpot_end_to_end_ns = g.decode_steps ? decode_e2e_ns / steps : 0;
  g.tpot_end_to_end_async_ns = g.decode_steps ? decode_e2e_async_ns / steps : 0;
  return g;
}

}  // namespace neuronc::tools
