// Decompose: the rewritten graphs compute what the original operators compute (evaluated with
// the reference evaluator against an independent implementation of each padding mode), and
// the IR has the expected form.
#include "passes/decompose.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "pass_test_util.h"
#include "passes/host_eval.h"

namespace neuronc::passes {
namespace {

using testing::run_pass;

// Evaluates every node of `g` on `x` bound to its first user input; returns its first output.
HostTensor eval(const ir::Graph& g, const HostTensor& x) {
  std::map<const ir::Value*, HostTensor> vals;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) {
      vals[in.value] = x;
    } else {
      auto c = read_constant(*in.value);
      EXPECT_TRUE(c.has_value()) << in.value->name();
      if (c) vals[in.value] = *c;
    }
  }
  for (const auto& n : g.nodes()) {
    std::vector<const HostTensor*> args;
    for (const ir::Value* v : n->inputs()) args.push_back(v ? &vals.at(v) : nullptr);
    auto r = evaluate(*n, args);
    EXPECT_TRUE(r.has_value()) << "the reference evaluator does not cover " << n->describe();
    if (!r) return {};
    for (size_t i = 0; i < n->outputs().size(); ++i) vals[n->output(i)] = (*r)[i];
  }
  return vals.at(g.outputs()[0].value);
}

HostTensor iota(std::vector<int64_t> shape) {
  HostTensor t;
  t.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) t.data.push_back(static_cast<double>(i) * 1.5 - 7);
  return t;
}

// Independent reference: pads the last two dims of a [1, C, H, W] tensor. spec = (left, right,
// top, bottom), any sign.
HostTensor ref_pad(const HostTensor& x, std::array<int64_t, 4> p, const std::string& mode,
                   double value) {
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = H + p[2] + p[3], OW = W + p[0] + p[1];
  HostTensor o;
  o.shape = {1, C, OH, OW};
  auto src = [&](int64_t i, int64_t n) -> int64_t {  // -1: the constant
    if (i >= 0 && i < n) return i;
    if (mode == "constant") return -1;
    if (mode == "reflect") return i < 0 ? -i : 2 * (n - 1) - i;
    if (mode == "replicate") return i < 0 ? 0 : n - 1;
    return ((i % n) + n) % n;  // circular
  };
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < OH; ++h)
      for (int64_t w = 0; w < OW; ++w) {
        const int64_t sh = src(h - p[2], H), sw = src(w - p[0], W);
        o.data.push_back(sh < 0 || sw < 0 ? value : x.data[(c * H + sh) * W + sw]);
      }
  return o;
}

struct PadCase {
  std::string mode;
  std::array<int64_t, 4> pad;
};

TEST(Decompose, EveryPaddingModeMatchesAnIndependentReference) {
  const std::vector<PadCase> cases = {
      {"constant", {1, 2, 0, 1}}, {"constant", {-1, 0, 2, -2}}, {"reflect", {2, 1, 1, 2}},
      {"reflect", {0, 3, 3, 0}},  {"replicate", {1, 0, 0, 2}},  {"replicate", {3, 3, 3, 3}},
      {"circular", {1, 1, 1, 1}}, {"circular", {4, 0, 0, 3}},
  };
  const HostTensor x = iota({1, 2, 4, 5});
  for (const PadCase& c : cases) {
    const int64_t oh = 4 + c.pad[2] + c.pad[3], ow = 5 + c.pad[0] + c.pad[1];
    const std::string spec = "[" + std::to_string(c.pad[0]) + ", " + std::to_string(c.pad[1]) +
                             ", " + std::to_string(c.pad[2]) + ", " + std::to_string(c.pad[3]) +
                             "]";
    const std::string text =
        "graph {\n  input %x : f32[1, 2, 4, 5]\n  %y : f32[1, 2, " + std::to_string(oh) + ", " +
        std::to_string(ow) + "] = aten.pad.default(%x) {pad = " + spec + ", mode = \"" + c.mode +
        "\"" + (c.mode == "constant" ? ", value = 0.5" : "") + "}\n  output %y\n}\n";
    auto g = ir::parse(text);
    Decompose pass;
    ASSERT_TRUE(pass.run(*g)) << c.mode;
    ir::verify_or_throw(*g);
    for (const auto& n : g->nodes()) EXPECT_NE(n->op(), "aten.pad.default");
    const HostTensor got = eval(*g, x);
    const HostTensor want = ref_pad(x, c.pad, c.mode, 0.5);
    EXPECT_EQ(got.shape, want.shape) << c.mode << " " << spec;
    EXPECT_EQ(got.data, want.data) << c.mode << " " << spec;
  }
}

TEST(Decompose, CorePaddingSpellings) {
  const HostTensor x = iota({1, 2, 4, 5});
  for (const char* op : {"aten.reflection_pad2d.default", "aten.replication_pad2d.default"}) {
    auto g =
        ir::parse(std::string("graph {\n  input %x : f32[1, 2, 4, 5]\n  %y : f32[1, 2, 7, 8] = ") +
                  op + "(%x) {padding = [2, 1, 1, 2]}\n  output %y\n}\n");
    Decompose pass;
    ASSERT_TRUE(pass.run(*g));
    const bool reflect = std::string(op).find("reflection") != std::string::npos;
    EXPECT_EQ(eval(*g, x).data, ref_pad(x, {2, 1, 1, 2}, reflect ? "reflect" : "replicate", 0).data)
        << op;
  }
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 2, 4, 5]
  %y : f32[1, 2, 5, 8] = aten.constant_pad_nd.default(%x) {pad = [1, 2, 0, 1], value = -3}
  output %y
})");
  Decompose pass;
  ASSERT_TRUE(pass.run(*g));
  EXPECT_EQ(eval(*g, x).data, ref_pad(x, {1, 2, 0, 1}, "constant", -3).data);
}

TEST(Decompose, ConstantPadIsFullAndCatAndKeepsTheName) {
  const std::string after = run_pass<Decompose>(R"(graph {
  input %x : f32[2, 3]
  %p : f32[2, 5] = aten.constant_pad_nd.default(%x) {pad = [1, 1], value = 0}
  output %p
})");
  EXPECT_NE(after.find("aten.full.default() {size = [2, 1], fill_value = 0, dtype = #f32}"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("%p : f32[2, 5] = aten.cat.default("), std::string::npos) << after;
}

TEST(Decompose, ReflectWithASymbolicBatchDim) {
  auto g = ir::parse(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 2, 4, 5]
  %p : f32[s0, 2, 7, 8] = aten.pad.default(%x) {pad = [2, 1, 1, 2], mode = "reflect"}
  output %p
})");
  Decompose pass;
  ASSERT_TRUE(pass.run(*g));
  ir::verify_or_throw(*g);
  for (const auto& n : g->nodes()) EXPECT_NE(n->op(), "aten.pad.default");
  EXPECT_EQ(g->type_to_string(g->outputs()[0].value->type()), "f32[s0, 2, 7, 8]");
}

TEST(Decompose, WeightNormIsTheCoreFormulaAndFoldsToTheSameWeights) {
  // w = v * g / ||v||, the norm over dims 1 and 2 of each output channel.
  auto h = ir::parse(R"(graph {
  input %v : f32[3, 2, 2]
  const %g : f32[3, 1, 1] "g"
  %w : f32[3, 2, 2] = aten._weight_norm.default(%v, %g) {dim = 0}
  output %w
})");
  std::vector<float> gv = {2.0f, 0.5f, 3.0f};
  auto bytes = std::make_shared<std::vector<float>>(gv);
  h->find_value("g")->set_payload(
      {reinterpret_cast<const std::byte*>(bytes->data()), bytes->size() * 4, 0, {}, bytes});
  Decompose pass;
  ASSERT_TRUE(pass.run(*h));
  ir::verify_or_throw(*h);
  const HostTensor v = iota({3, 2, 2});
  const HostTensor got = eval(*h, v);
  for (int c = 0; c < 3; ++c) {
    double ss = 0;
    for (int i = 0; i < 4; ++i) ss += v.data[c * 4 + i] * v.data[c * 4 + i];
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(got.data[c * 4 + i], v.data[c * 4 + i] * gv[c] / std::sqrt(ss), 1e-5)
          << c << " " << i;
  }
}

TEST(Decompose, SliceScatterCopyEmptyAndOneDimIndex) {
  const HostTensor x = iota({2, 6});
  auto g = ir::parse(R"(graph {
  input %x : f32[2, 6]
  %e : f32[2, 6] = aten.empty.memory_format() {size = [2, 6], dtype = #f32}
  %s : f32[2, 3] = aten.slice.Tensor(%x) {dim = 1, start = 0, end = 3}
  %t : f32[2, 6] = aten.slice_scatter.default(%e, %s) {dim = 1, start = 2, end = 5}
  %c : f32[2, 6] = aten.copy.default(%t, %x)
  %i : i64[2] = aten.arange.start_step() {start = 4, end = -2, step = -3}
  %j : f32[2, 2] = aten.index.Tensor(%c, _, %i)
  %u : f32[2, 6] = aten.slice_scatter.default(%t, %c) {dim = 0}
  %o : f32[2, 6] = aten.add.Tensor(%u, %t)
  output %o
  output %j
})");
  Decompose pass;
  ASSERT_TRUE(pass.run(*g));
  ir::verify_or_throw(*g);
  for (const auto& n : g->nodes()) {
    EXPECT_NE(n->op(), "aten.empty.memory_format");
    EXPECT_NE(n->op(), "aten.slice_scatter.default");
    EXPECT_NE(n->op(), "aten.copy.default");
    EXPECT_NE(n->op(), "aten.index.Tensor");
  }
  // t = [0, 0, x[:, 0:3], 0]; c = copy -> x; u = c (full-width scatter); o = x + t;
  // j = c[:, [4, 1]].
  const HostTensor o = eval(*g, x);
  g->set_output_value(0, g->outputs()[1].value);
  const HostTensor j = eval(*g, x);
  EXPECT_EQ(j.data, (std::vector<double>{x.data[4], x.data[1], x.data[10], x.data[7]}));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 6; ++k) {
      const double t = (k >= 2 && k < 5) ? x.data[r * 6 + (k - 2)] : 0.0;
      EXPECT_EQ(o.data[r * 6 + k], x.data[r * 6 + k] + t) << r << " " << k;
    }
}

}  // namespace
}  // namespace neuronc::passes
