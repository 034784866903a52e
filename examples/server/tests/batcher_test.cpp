// The batching decision on hand-built signatures, and the row concatenation and split that a
// concatenated batch relies on. (The Batcher's workers are exercised end to end by the load
// test, server.load_*, against single runs of a local Session.)
#include "examples/server/batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

namespace neuronc::server {
namespace {

using ::testing::HasSubstr;

DimSpec fixed(int64_t v) {
  DimSpec d;
  d.value = v;
  return d;
}
DimSpec sym(const char* s, int64_t lo, int64_t hi) {
  DimSpec d;
  d.symbol = s;
  d.min = lo;
  d.max = hi;
  return d;
}

// x: f32[b, 4] -> y: f32[b, 10], b in [1, 64], compiled into buckets b = 1, 2, 4, ..., 16.
Signature bucketed(EntryInfo::Padding padding = EntryInfo::Padding::zeros) {
  Signature s;
  s.inputs = {{"x", DType::f32, {sym("b", 1, 64), fixed(4)}}};
  s.outputs = {{"y", DType::f32, {sym("b", 1, 64), fixed(10)}}};
  for (int64_t v = 1; v <= 16; v *= 2) {
    EntryInfo e;
    e.name = "main[b=" + std::to_string(v) + "]";
    e.bucket_group = "main";
    e.bucket = {{"b", v, padding}};
    s.entries.push_back(e);
  }
  return s;
}

TEST(PlanBatching, ConcatenatesAlongAPaddedSymbolicBatchDim) {
  const BatchPlan p = plan_batching(bucketed(), 8, true);
  EXPECT_EQ(p.mode, BatchMode::concat);
  EXPECT_EQ(p.symbol, "b");
  EXPECT_EQ(p.max_rows, 8);
  EXPECT_THAT(p.reason, HasSubstr("up to 8 rows per run"));
  // The largest bucket bounds a run, whatever --max-batch says.
  EXPECT_EQ(plan_batching(bucketed(), 100, true).max_rows, 16);
}

TEST(PlanBatching, FallsBackToSequentialSayingWhy) {
  Signature fixed_batch;
  fixed_batch.inputs = {{"x", DType::f32, {fixed(4), fixed(16)}}};
  fixed_batch.outputs = {{"y", DType::f32, {fixed(4), fixed(8)}}};
  fixed_batch.entries.emplace_back();
  fixed_batch.entries[0].name = "main";

  Signature other_output = bucketed();
  other_output.outputs.push_back({"total", DType::f32, {fixed(1)}});

  Signature symbol_twice = bucketed();
  symbol_twice.inputs[0].dims[1] = sym("b", 1, 64);

  Signature stateful = bucketed();
  stateful.states = {{"cache", DType::f32, {fixed(8)}}};

  Signature second_input = bucketed();
  second_input.inputs.push_back({"mask", DType::boolean, {sym("s", 1, 64), fixed(4)}});

  const struct {
    const char* what;
    Signature sig;
    int max_batch;
    bool allow;
    const char* reason;
  } cases[] = {
      {"fixed batch", fixed_batch, 8, true, "input 'x' has a fixed batch dim: f32[4, 16]"},
      {"output without the batch dim", other_output, 8, true,
       "output 'total' dim 0 is not the batch symbol b: f32[1]"},
      {"batch symbol elsewhere", symbol_twice, 8, true,
       "the batch symbol b also sizes input 'x' dim 1"},
      {"state", stateful, 8, true, "keeps state 'cache' between runs"},
      {"another symbol at dim 0", second_input, 8, true,
       "input 'mask' dim 0 is not the batch symbol b"},
      {"unpadded buckets", bucketed(EntryInfo::Padding::none), 8, true,
       "the shape buckets do not pad b"},
      {"max batch 1", bucketed(), 1, true, "--max-batch is 1"},
      {"forced", bucketed(), 8, false, "--batching sequential"},
  };
  for (const auto& c : cases) {
    const BatchPlan p = plan_batching(c.sig, c.max_batch, c.allow);
    EXPECT_EQ(p.mode, BatchMode::sequential) << c.what;
    EXPECT_THAT(p.reason, HasSubstr(c.reason)) << c.what;
    EXPECT_THAT(p.reason, HasSubstr("back to back")) << c.what;
  }
}

TEST(BatchRows, ConcatenateThenSplitGivesThePartsBack) {
  std::vector<Tensor> parts;
  int next = 0;
  for (int64_t rows : {1, 3, 2}) {
    Tensor t(DType::i32, {rows, 5});
    auto* p = static_cast<int32_t*>(t.mutable_data());
    for (int64_t k = 0; k < t.numel(); ++k) p[k] = next++;
    parts.push_back(std::move(t));
  }
  const Tensor joined = concat_rows({&parts[0], &parts[1], &parts[2]});
  ASSERT_EQ(joined.shape(), (Shape{6, 5}));
  std::vector<int32_t> want(30);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(std::memcmp(joined.data(), want.data(), 30 * 4), 0);
  int64_t begin = 0;
  for (const Tensor& part : parts) {
    const Tensor back = slice_rows(joined, begin, part.shape()[0]);
    begin += part.shape()[0];
    ASSERT_EQ(back.shape(), part.shape());
    EXPECT_EQ(std::memcmp(back.data(), part.data(), part.nbytes()), 0);
  }
}

}  // namespace
}  // namespace neuronc::server
