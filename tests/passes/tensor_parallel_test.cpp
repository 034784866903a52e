// Tensor parallelism: the program one core of N runs, on IR text, with the chunks of the weights
// each core keeps.
#include "passes/tensor_parallel.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "pass_test_util.h"
#include "passes/host_eval.h"

namespace neuronc::passes {
namespace {

using testing::set_f32;

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

struct Rewritten {
  std::unique_ptr<ir::Graph> g;
  std::string text;
  TensorParallelStats stats;
};

Rewritten rewrite(const std::string& ir, int ranks, int rank,
                  const std::vector<std::pair<const char*, size_t>>& weights) {
  Rewritten r;
  r.g = ir::parse(ir);
  for (const auto& [name, n] : weights) set_f32(*r.g, name, iota(n));
  TensorParallel pass({ranks, rank, nullptr}, &r.stats);
  EXPECT_TRUE(pass.run(*r.g));
  ir::verify_or_throw(*r.g);
  r.text = ir::print(*r.g, {.locations = false});
  return r;
}

std::vector<double> constant(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.find_value(name);
  EXPECT_NE(v, nullptr) << name;
  if (!v) return {};
  auto t = read_constant(*v);
  EXPECT_TRUE(t) << name;
  return t ? t->data : std::vector<double>{};
}

// An MLP: the first linear keeps its rows of the weight (column-parallel), the second its
// columns (row-parallel), their partial products meet in one all-reduce and the bias is added
// once after it. Core 1 of 2 keeps rows 4..7 of w1 and columns 4..7 of w2.
constexpr const char* kMlp = R"(graph {
  input %x : f32[3, 4]
  param %w1 : f32[8, 4] "fc1.weight"
  param %b1 : f32[8] "fc1.bias"
  param %w2 : f32[4, 8] "fc2.weight"
  param %b2 : f32[4] "fc2.bias"
  %h : f32[3, 8] = aten.linear.default(%x, %w1, %b1)
  %a : f32[3, 8] = aten.gelu.default(%h)
  %y : f32[3, 4] = aten.linear.default(%a, %w2, %b2)
  output %y
})";

TEST(TensorParallel, MlpIsColumnThenRowParallelWithOneAllReduce) {
  Rewritten r = rewrite(kMlp, 2, 1, {{"w1", 32}, {"b1", 8}, {"w2", 32}, {"b2", 4}});
  EXPECT_EQ(r.stats.column_parallel, 1);
  EXPECT_EQ(r.stats.row_parallel, 1);
  EXPECT_EQ(r.stats.all_reduces, 1);
  EXPECT_EQ(r.stats.all_gathers, 0);
  EXPECT_NE(r.text.find("%h : f32[3, 4] = aten.linear.default(%x, %w1.tp, %b1.tp)"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("= neuronc.all_reduce.default("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%y : f32[3, 4] = aten.add.Tensor(%all_reduce, %b2)"), std::string::npos)
      << r.text;
  // Rows 4..7 of w1 [8, 4] (elements 16..31), its bias 4..7; columns 4..7 of w2 [4, 8].
  const std::vector<float> w1 = iota(32);
  EXPECT_EQ(constant(*r.g, "w1.tp"), std::vector<double>(w1.begin() + 16, w1.end()));
  EXPECT_EQ(constant(*r.g, "b1.tp"), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(constant(*r.g, "w2.tp"),
            (std::vector<double>{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31}));
  EXPECT_EQ(constant(*r.g, "b2"), (std::vector<double>{0, 1, 2, 3}));
}

// A softmax over the split axis needs every element of its rows: the chunks are gathered first,
// so an unknown pattern costs communication, not correctness.
TEST(TensorParallel, AnOpOverTheSplitAxisSeesTheGatheredTensor) {
  Rewritten r = rewrite(R"(graph {
  input %x : f32[3, 4]
  param %w : f32[8, 4] "fc.weight"
  %h : f32[3, 8] = aten.linear.default(%x, %w, _)
  %s : f32[3, 8] = aten._softmax.default(%h) {dim = 1, half_to_float = false}
  output %s
})",
                        2, 0, {{"w", 32}});
  EXPECT_EQ(r.stats.all_gathers, 1);
  EXPECT_NE(r.text.find("%all_gather : f32[2, 3, 4] = neuronc.all_gather.default(%h) {ranks = 2}"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%s : f32[3, 8] = aten._softmax.default(%reshape)"), std::string::npos)
      << r.text;
}

// Heads: [B, S, H*d] split over its last axis reshapes to [B, S, H, d] split over heads when N
// divides H, and attention over split heads stays split; the result is gathered for the output.
TEST(TensorParallel, HeadsFollowTheReshapeAndAttentionStaysSplit) {
  Rewritten r = rewrite(R"(graph {
  input %x : f32[1, 3, 8]
  param %wq : f32[8, 8] "q.weight"
  %q : f32[1, 3, 8] = aten.linear.default(%x, %wq, _)
  %v : f32[1, 3, 4, 2] = aten.view.default(%q) {size = [1, 3, 4, 2]}
  %t : f32[1, 4, 3, 2] = aten.transpose.int(%v) {dim0 = 1, dim1 = 2}
  %o : f32[1, 4, 3, 2] = aten.scaled_dot_product_attention.default(%t, %t, %t, _)
  output %o
})",
                        2, 0, {{"wq", 64}});
  EXPECT_NE(r.text.find("%v : f32[1, 3, 2, 2] = aten.view.default(%q) {size = [1, 3, 2, 2]}"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%o : f32[1, 2, 3, 2] = aten.scaled_dot_product_attention.default"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.stats.all_gathers, 1) << r.text;  // the output only
  // 4 heads over 8 cores: each pair of cores shares a head (4 chunks), and the output gathers
  // one core of each pair.
  Rewritten eight = rewrite(R"(graph {
  input %x : f32[1, 3, 8]
  param %wq : f32[16, 8] "q.weight"
  %q : f32[1, 3, 16] = aten.linear.default(%x, %wq, _)
  %v : f32[1, 3, 4, 4] = aten.view.default(%q) {size = [1, 3, 4, 4]}
  output %v
})",
                            8, 3, {{"wq", 128}});
  EXPECT_NE(eight.text.find("%v : f32[1, 3, 1, 4] = aten.view.default(%q) {size = [1, 3, 1, 4]}"),
            std::string::npos)
      << eight.text;
  EXPECT_NE(
      eight.text.find("aten.slice.Tensor(%all_gather) {dim = 0, start = 0, end = 8, step = 2}"),
      std::string::npos)
      << eight.text;
  // Core 3 of 8 keeps head 1: rows 4..7 of the [16, 8] weight.
  const std::vector<float> wq = iota(128);
  EXPECT_EQ(constant(*eight.g, "wq.tp"), std::vector<double>(wq.begin() + 32, wq.begin() + 64));
}

// A fused projection carved by slices (Phi-3's qkv_proj) becomes one column-parallel linear per
// part over that part's rows: splitting the fused rows N ways would mix the parts.
TEST(TensorParallel, AFusedProjectionSplitsPartByPart) {
  Rewritten r = rewrite(R"(graph {
  input %x : f32[2, 2]
  param %w : f32[6, 2] "qkv.weight"
  %qkv : f32[2, 6] = aten.linear.default(%x, %w, _)
  %q : f32[2, 4] = aten.slice.Tensor(%qkv) {dim = 1, start = 0, end = 4}
  %k : f32[2, 2] = aten.slice.Tensor(%qkv) {dim = 1, start = 4, end = 9223372036854775807}
  %s : f32[2, 6] = aten.cat.default(%q, %k) {dim = 1}
  output %s
})",
                        2, 1, {{"w", 12}});
  EXPECT_EQ(r.stats.column_parallel, 2) << r.text;
  // Core 1: rows 2..3 of the q part (elements 4..7) and row 5 of the k part (10..11).
  EXPECT_EQ(constant(*r.g, "w.rows0.tp"), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(constant(*r.g, "w.rows4.tp"), (std::vector<double>{10, 11}));
}

// A KV cache written with index_copy from a column-parallel projection keeps its heads' chunk on
// each core; the mutation output stays split (the Session keeps each core's chunk).
constexpr const char* kCache = R"(graph {
  state %cache : f32[1, 4, 8, 2] "cache"
  input %x : f32[1, 1, 8]
  input %pos : i64[1]
  param %wk : f32[8, 8] "k.weight"
  %k : f32[1, 1, 8] = aten.linear.default(%x, %wk, _)
  %v : f32[1, 1, 4, 2] = aten.view.default(%k) {size = [1, 1, 4, 2]}
  %t : f32[1, 4, 1, 2] = aten.transpose.int(%v) {dim0 = 1, dim1 = 2}
  %c : f32[1, 4, 8, 2] = aten.index_copy.default(%cache, %pos, %t) {dim = 2}
  %s : f32[1, 4, 8] = aten.sum.dim_IntList(%c) {dim = [3]}
  output %s
  output %c buffer_mutation "cache"
})";

TEST(TensorParallel, TheKvCacheKeepsItsHeadsChunkOnEachCore) {
  Rewritten r = rewrite(kCache, 2, 0, {{"wk", 64}});
  ASSERT_EQ(r.stats.split_states.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.split_states.at("cache"), 1);
  EXPECT_NE(r.text.find("state %cache : f32[1, 2, 8, 2] \"cache\""), std::string::npos) << r.text;
  EXPECT_EQ(r.stats.all_gathers, 1) << r.text;  // the user output %s, not the cache
}

// A cache whose update arrives whole (a projection that cannot split) is kept whole on every
// core rather than cut: the rewrite restarts with the state whole.
TEST(TensorParallel, AStateUpdatedWholeStaysWhole) {
  Rewritten r = rewrite(R"(graph {
  state %cache : f32[4, 2] "cache"
  input %x : f32[4, 2]
  %c : f32[4, 2] = aten.add.Tensor(%cache, %x)
  output %c buffer_mutation "cache"
})",
                        2, 0, {});
  EXPECT_TRUE(r.stats.split_states.empty());
  EXPECT_NE(r.text.find("state %cache : f32[4, 2] \"cache\""), std::string::npos) << r.text;
}

TEST(TensorParallel, NeedsStaticShapesAndAValidRank) {
  auto g = ir::parse(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 4]
  param %w : f32[8, 4] "fc.weight"
  %h : f32[s0, 8] = aten.linear.default(%x, %w, _)
  output %h
})");
  set_f32(*g, "w", iota(32));
  TensorParallel pass({2, 0, nullptr});
  try {
    pass.run(*g);
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("static shapes"), std::string::npos) << e.what();
  }
  auto g2 = ir::parse(kMlp);
  TensorParallel bad({2, 2, nullptr});
  EXPECT_THROW(bad.run(*g2), ir::Error);
  TensorParallel one({1, 0, nullptr});
  EXPECT_FALSE(one.run(*g2));  // one core: nothing to split
}

}  // namespace
}  // namespace neuronc::passes
