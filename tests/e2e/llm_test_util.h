// What the end-to-end tests share: float and token arrays read back, a greedy pick from logits,
// generation with an artifact's prefill_16 and decode entries, and artifacts written to a
// scratch directory of the test process.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "neuronc/neuronc.h"
#include "tests/testing/scratch_dir.h"
#include "tools/npy.h"

namespace neuronc::testing {

inline std::vector<double> floats(const tools::NpyArray& a) {
  EXPECT_EQ(a.type, tools::NpyType::f32);
  std::vector<double> v(a.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    float x;
    std::memcpy(&x, a.data.data() + i * 4, 4);
    v[i] = x;
  }
  return v;
}

// The reference inputs PyTorch wrote in `dir` (input_<i>.npy), named as `m`'s inputs.
inline std::vector<std::pair<std::string, tools::NpyArray>> reference_inputs(
    const neuronc::Model& m, const std::filesystem::path& dir) {
  std::vector<std::pair<std::string, tools::NpyArray>> in;
  for (size_t i = 0; i < m.inputs().size(); ++i)
    in.emplace_back(m.inputs()[i].name,
                    tools::read_npy((dir / ("input_" + std::to_string(i) + ".npy")).string()));
  return in;
}

inline std::vector<int64_t> int64s(const tools::NpyArray& a) {
  EXPECT_EQ(a.type, tools::NpyType::i64);
  std::vector<int64_t> v(a.numel());
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(int64_t));
  return v;
}

// The first largest logit of token `t` (torch.argmax) in logits [1, tokens, vocab].
inline int64_t argmax_at(const Tensor& logits, int64_t t) {
  const int64_t vocab = logits.shape().back();
  const float* l = static_cast<const float*>(logits.data()) + t * vocab;
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (l[i] > l[best]) best = i;
  return best;
}

// `count` greedy tokens: the prompt padded to the 16-token prefill entry fills the session's
// KV cache in one call, then the decode entry takes one token at a time. Exact because the pad
// positions follow the prompt: the causal mask hides them, and the decode steps overwrite them.
inline std::vector<int64_t> prefill_and_decode(const Model& model, Session& session,
                                               const std::vector<int64_t>& prompt, size_t count) {
  const auto p = static_cast<int64_t>(prompt.size());
  EXPECT_LE(p, 16);
  Tensor ids(DType::i64, {1, 16}), pos(DType::i64, {16});
  for (int64_t t = 0; t < 16; ++t) {
    static_cast<int64_t*>(ids.mutable_data())[t] = t < p ? prompt[static_cast<size_t>(t)] : 0;
    static_cast<int64_t*>(pos.mutable_data())[t] = t;
  }
  auto filled =
      session.run("prefill_16", {{"input_ids", ids.view()}, {"cache_position", pos.view()}});
  EXPECT_TRUE(filled.is_ok()) << filled.status().message();
  if (!filled.is_ok()) return {};
  std::vector<int64_t> got = {argmax_at(filled->at(model.entries()[0].outputs[0].name), p - 1)};
  Tensor one(DType::i64, {1, 1}), at(DType::i64, {1});
  while (got.size() < count) {
    *static_cast<int64_t*>(one.mutable_data()) = got.back();
    *static_cast<int64_t*>(at.mutable_data()) = p + static_cast<int64_t>(got.size()) - 1;
    auto out = session.run("decode", {{"input_ids", one.view()}, {"cache_position", at.view()}});
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    if (!out.is_ok()) return got;
    got.push_back(argmax_at(out->at(model.entries()[1].outputs[0].name), 0));
  }
  return got;
}

// Compiles `model` (a program or an export directory) for `target` over `tp` cores into
// `dir`/`name`; its path.
inline std::string compile_to_file(const std::filesystem::path& model, const std::string& target,
                                   int tp, const std::filesystem::path& dir,
                                   const std::string& name,
                                   compiler::CompileResult* result = nullptr) {
  compiler::CompileRequest req;
  req.model = model.string();
  req.target = target;
  req.tp = tp;
  compiler::CompileResult r = compiler::compile_model(req);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(r.artifact.data()),
             static_cast<std::streamsize>(r.artifact.size()));
  if (result) *result = std::move(r);
  return path;
}

}  // namespace neuronc::testing
