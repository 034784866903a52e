// Greedy generation with the programs models/scripts/export_causal_lm.py writes (decode
// programs per context-length bucket, prefill programs per prompt bucket, the KV cache as
// Session state): the loop of `neuronc generate` and `neuronc bench --generate`.
#pragma once

#include <neuronc/model.h>
#include <neuronc/session.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace neuronc::tools {

// One simulated call: the prefill program over the padded prompt, or a decode step that feeds
// a prompt token (its logits choose the next token only at the last one) or a new token.
struct GenerationStep {
  int64_t position = 0;
  const char* kind = "decode";  // "prefill", "prompt" or "decode"
  std::string entry;            // the artifact entry (or --prefill file) that ran
  neuronc::RunStats stats;
  bool before_first_token() const;
};

// How each new token is chosen. top_k 1 is greedy (the first largest logit, as torch.argmax);
// a larger top_k samples among that many largest logits at `temperature`, with one uniform draw
// per row and call from a splitmix64 stream seeded with `seed`. Sampling runs in the programs
// (export_causal_lm.py --on-device-sampling), so it takes programs that end in the sampler.
struct Sampling {
  int64_t top_k = 1;
  double temperature = 1.0;
  uint64_t seed = 0;
  bool greedy() const { return top_k == 1; }
};

struct Generation {
  std::vector<std::vector<int64_t>> tokens;  // [batch][new tokens]
  std::vector<GenerationStep> steps;
  // TTFT: the prefill call, or without one every prompt step (the prompt through the decode
  // program, one token per step). TPOT: the mean decode step after the first token.
  std::string ttft_from;
  double ttft_ns = 0, tpot_ns = 0;  // simulated latency (device + host ops)
  // End to end (RunStats::end_to_end_ns): each call's per-execution time added, issued
  // synchronously (each step waits for the one before) and asynchronously.
  double ttft_end_to_end_ns = 0, tpot_end_to_end_ns = 0;
  double ttft_end_to_end_async_ns = 0, tpot_end_to_end_async_ns = 0;
  size_t decode_steps = 0;
  double decode_device_ns = 0;
  std::array<double, 5> decode_busy_ns{};  // per engine, kEngineNames order
};

class Generator {
 public:
  // The decode programs of `artifact` (its entries with the one-token interface: `decode_<C>`
  // attends over the cache's first C positions, a context-length bucket, any other one over the
  // whole cache) and the prefill programs: its own prefill entries and those of
  // `prefill_paths`, each checked against them. A step at position t runs in the smallest
  // bucket C > t. Throws CommandExit (usage) naming what is missing or does not match.
  Generator(const std::string& artifact, const std::vector<std::string>& prefill_paths);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  const neuronc::Model& model() const;
  int64_t batch() const;
  int64_t vocab() const;
  // Generates `max_new_tokens` tokens per row of `prompt` ([batch][length]) on a fresh
  // session, chosen as `sampling` says, stopping early once every row has produced `eos` (when
  // >= 0). Throws CommandExit: usage for a prompt outside the vocab, longer than the largest
  // bucket or than the cache, or sampling asked of programs without the sampler; error for a
  // failing run.
  // With `processes`, the sessions split the cores over them (each process calls run() alike).
  Generation run(const std::vector<std::vector<int64_t>>& prompt, int max_new_tokens,
                 int64_t eos = -1, const Sampling& sampling = {},
                 neuronc::ProcessGroup* processes = nullptr) const;
  // The programs end in the sampler (on-device sampling): they return the next tokens.
  bool samples_on_device() const;
  // The simulated timing of a generation of `max_new_tokens` after a `prompt_len`-token prompt,
  // without running it (no tokens: Generation::tokens is empty). Device time does not depend
  // on the data, so this is what run() would report for any prompt of that length; host ops
  // are not run, so their time is not in it. The one way to time a timing-only artifact.
  Generation time(int64_t prompt_len, int max_new_tokens) const;
  // The decode programs' context lengths, smallest first (one, the cache's, without buckets).
  std::vector<int64_t> decode_contexts() const;
  // Compiled from a weights-free export (ModelInfo::timing_only): only time() works.
  bool timing_only() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neuronc::tools
