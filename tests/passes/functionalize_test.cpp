// Functionalize: before/after IR. The numerics of the same patterns are checked against what
// PyTorch wrote in the e2e tests of the `aliasing` and `bart` fixtures.
#include "passes/functionalize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "pass_test_util.h"

namespace neuronc::passes {
namespace {

using ::testing::HasSubstr;
using testing::run_pass;

TEST(Functionalize, InplaceBecomesFunctionalAndLaterReadsFollow) {
  const std::string before = R"(graph {
  input %x : f32[4]
  buffer %count : f32[4] "count"
  %add_ : f32[4] = aten.add_.Tensor(%count, %x)
  %relu_ : f32[4] = aten.relu_.default(%x)
  %y : f32[4] = aten.mul.Tensor(%count, %relu_)
  output %y
  output %add_ buffer_mutation "count"
}
)";
  // relu_ writes the user input x: its new value is recorded as a user_input_mutation.
  const std::string after = R"(graph {
  input %x : f32[4]
  buffer %count : f32[4] "count"
  %add_ : f32[4] = aten.add.Tensor(%count, %x)
  %relu_ : f32[4] = aten.relu.default(%x)
  %y : f32[4] = aten.mul.Tensor(%add_, %relu_)
  output %y
  output %add_ buffer_mutation "count"
  output %relu_ user_input_mutation "x"
}
)";
  EXPECT_EQ(run_pass<Functionalize>(before), after);
}

TEST(Functionalize, CopyIntoBufferBecomesCopy) {
  const std::string before = R"(graph {
  input %x : bf16[4]
  buffer %b : f32[2, 4] "state"
  %c : f32[2, 4] = aten.copy_.default(%b, %x)
  %y : f32[2, 4] = aten.add.Tensor(%b, %b)
  output %y
  output %c buffer_mutation "state"
}
)";
  const std::string after = R"(graph {
  input %x : bf16[4]
  buffer %b : f32[2, 4] "state"
  %c : f32[2, 4] = aten.copy.default(%b, %x)
  %y : f32[2, 4] = aten.add.Tensor(%c, %c)
  output %y
  output %c buffer_mutation "state"
}
)";
  EXPECT_EQ(run_pass<Functionalize>(before), after);
}

// BART's shift_tokens_right: every write lands in the base, and each read sees the writes
// before it.
TEST(Functionalize, WritesThroughSliceAndSelectReachTheBase) {
  const std::string before = R"(graph {
  input %ids : i64[2, 6]
  %z : i64[2, 6] = aten.new_zeros.default(%ids) {size = [2, 6]}
  %src : i64[2, 5] = aten.slice.Tensor(%ids) {dim = 1, start = 0, end = -1}
  %dst : i64[2, 5] = aten.slice.Tensor(%z) {dim = 1, start = 1, end = 9223372036854775807}
  %copy_ : i64[2, 5] = aten.copy_.default(%dst, %src)
  %col : i64[2] = aten.select.int(%z) {dim = 1, index = 0}
  %fill_ : i64[2] = aten.fill_.Scalar(%col) {value = 2}
  %eq : bool[2, 6] = aten.eq.Scalar(%z) {other = 5}
  %masked_fill_ : i64[2, 6] = aten.masked_fill_.Scalar(%z, %eq) {value = 1}
  output %masked_fill_
}
)";
  const std::string after = R"(graph {
  input %ids : i64[2, 6]
  %z : i64[2, 6] = aten.new_zeros.default(%ids) {size = [2, 6]}
  %src : i64[2, 5] = aten.slice.Tensor(%ids) {dim = 1, start = 0, end = -1}
  %dst : i64[2, 5] = aten.slice.Tensor(%z) {dim = 1, start = 1, end = 9223372036854775807}
  %copy_ : i64[2, 5] = aten.copy.default(%dst, %src)
  %slice_scatter : i64[2, 6] = aten.slice_scatter.default(%z, %copy_) {dim = 1, start = 1, end = 9223372036854775807}
  %col : i64[2] = aten.select.int(%slice_scatter) {dim = 1, index = 0}
  %fill_ : i64[2] = aten.fill.Scalar(%col) {value = 2}
  %unsqueeze : i64[2, 1] = aten.unsqueeze.default(%fill_) {dim = 1}
  %slice_scatter_1 : i64[2, 6] = aten.slice_scatter.default(%slice_scatter, %unsqueeze) {dim = 1, start = 0, end = 1}
  %eq : bool[2, 6] = aten.eq.Scalar(%slice_scatter_1) {other = 5}
  %masked_fill_ : i64[2, 6] = aten.masked_fill.Scalar(%slice_scatter_1, %eq) {value = 1}
  output %masked_fill_
}
)";
  EXPECT_EQ(run_pass<Functionalize>(before), after);
}

// A view taken before a write is read after it: it sees the write (the chain is replayed on
// the new content), and a clone made before the write keeps the old values.
TEST(Functionalize, EarlierViewsSeeTheWriteAndClonesDoNot) {
  const std::string before = R"(graph {
  input %x : f32[2, 3]
  %h : f32[2, 3] = aten.relu.default(%x)
  %keep : f32[2, 3] = aten.clone.default(%h)
  %row : f32[3] = aten.select.int(%h) {dim = 0, index = -1}
  %t : f32[3, 2] = aten.transpose.int(%h) {dim0 = 0, dim1 = 1}
  %c0 : f32[2] = aten.select.int(%t) {dim = 0, index = 0}
  %mul_ : f32[2] = aten.mul_.Scalar(%c0) {other = 2.0}
  %y : f32[3] = aten.neg.default(%row)
  output %y
  output %keep
}
)";
  const std::string after = R"(graph {
  input %x : f32[2, 3]
  %h : f32[2, 3] = aten.relu.default(%x)
  %keep : f32[2, 3] = aten.clone.default(%h)
  %row : f32[3] = aten.select.int(%h) {dim = 0, index = -1}
  %t : f32[3, 2] = aten.transpose.int(%h) {dim0 = 0, dim1 = 1}
  %c0 : f32[2] = aten.select.int(%t) {dim = 0, index = 0}
  %mul_ : f32[2] = aten.mul.Scalar(%c0) {other = 2.0}
  %unsqueeze : f32[1, 2] = aten.unsqueeze.default(%mul_) {dim = 0}
  %slice_scatter : f32[3, 2] = aten.slice_scatter.default(%t, %unsqueeze) {dim = 0, start = 0, end = 1}
  %permute : f32[2, 3] = aten.permute.default(%slice_scatter) {dims = [1, 0]}
  %select : f32[3] = aten.select.int(%permute) {dim = 0, index = -1}
  %y : f32[3] = aten.neg.default(%select)
  output %y
  output %keep
}
)";
  EXPECT_EQ(run_pass<Functionalize>(before), after);
}

// A write through view -> split result: the split's offset and the view's inverse reshape.
TEST(Functionalize, WriteThroughSplitAndViewScattersAtTheOffset) {
  const std::string before = R"(graph {
  input %x : f32[2, 6]
  %h : f32[2, 6] = aten.neg.default(%x)
  %v : f32[12] = aten.view.default(%h) {size = [12]}
  %p0 : f32[5], %p1 : f32[7] = aten.split_with_sizes.default(%v) {split_sizes = [5, 7]}
  %zero_ : f32[7] = aten.zero_.default(%p1)
  output %h
}
)";
  const std::string after = R"(graph {
  input %x : f32[2, 6]
  %h : f32[2, 6] = aten.neg.default(%x)
  %v : f32[12] = aten.view.default(%h) {size = [12]}
  %p0 : f32[5], %p1 : f32[7] = aten.split_with_sizes.default(%v) {split_sizes = [5, 7]}
  %zero_ : f32[7] = aten.fill.Scalar(%p1) {value = 0}
  %slice_scatter : f32[12] = aten.slice_scatter.default(%v, %zero_) {dim = 0, start = 5, end = 12}
  %view : f32[2, 6] = aten.view.default(%slice_scatter) {size = [2, 6]}
  output %view
}
)";
  EXPECT_EQ(run_pass<Functionalize>(before), after);
}

// The training IR writes buffers in place and records no BUFFER_MUTATION output: the pass adds
// one with the buffer's final content, as run_decompositions() does.
TEST(Functionalize, BufferWrittenThroughASliceGetsItsMutationOutput) {
  const std::string before = R"(graph {
  input %k : f32[2, 8]
  buffer %cache : f32[4, 8] "layers.0.k_cache"
  %s : f32[2, 8] = aten.slice.Tensor(%cache) {dim = 0, start = 1, end = 3}
  %copy_ : f32[2, 8] = aten.copy_.default(%s, %k)
  %y : f32[4, 8] = aten.mul.Scalar(%cache) {other = 1.0}
  output %y
}
)";
  const std::string after = R"(graph {
  input %k : f32[2, 8]
  buffer %cache : f32[4, 8] "layers.0.k_cache"
  %s : f32[2, 8] = aten.slice.Tensor(%cache) {dim = 0, start = 1, end = 3}
  %copy_ : f32[2, 8] = aten.copy.default(%s, %k)
  %slice_scatter : f32[4, 8] = aten.slice_scatter.default(%cache, %copy_) {dim = 0, start = 1, end = 3}
  %y : f32[4, 8] = aten.mul.Scalar(%slice_scatter) {other = 1.0}
  output %y
  output %slice_scatter buffer_mutation "layers.0.k_cache"
}
)";
  EXPECT_EQ(run_pass<Functionalize>(before), after);
}

TEST(Functionalize, FunctionalGraphIsUnchanged) {
  const std::string text = R"(graph {
  input %x : f32[2, 8]
  %s : f32[2, 4] = aten.slice.Tensor(%x) {dim = 1, start = 0, end = 4}
  %c : f32[2, 4] = aten.neg.default(%s)
  %v : f32[8] = aten.view.default(%c) {size = [8]}
  output %v
}
)";
  bool changed = true;
  EXPECT_EQ(run_pass<Functionalize>(text, &changed), text);
  EXPECT_FALSE(changed);
}

// A write through a view whose effect on the base is not known is refused, never dropped.
TEST(Functionalize, WriteThroughExpandIsRefused) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 4]
  %h : f32[1, 4] = aten.neg.default(%x)
  %e : f32[3, 4] = aten.expand.default(%h) {size = [3, 4]}
  %fill_ : f32[3, 4] = aten.fill_.Scalar(%e) {value = 1.0}
  output %h
}
)");
  try {
    Functionalize().run(*g);
    FAIL() << "a write through expand was accepted";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("writes in place through node 'e' (aten.expand.default)"));
    EXPECT_THAT(e.what(), HasSubstr("expected a write through slice, select"));
  }
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

// Found by the PyTorch-written difftest corpus (cases 30 and 35): `x.narrow(d, s, n).copy_(y)`
// on a clone lost the write, and the graph silently returned the unwritten clone.
TEST(Functionalize, WritesThroughNarrowReachTheBase) {
  const std::string before = R"(graph {
  input %x : f32[2, 5]
  %c : f32[2, 5] = aten.clone.default(%x)
  %n : f32[2, 2] = aten.narrow.default(%c) {dim = 1, start = -3, length = 2}
  %z : f32[2, 2] = aten.zeros.default() {size = [2, 2]}
  %w : f32[2, 2] = aten.copy_.default(%n, %z)
  output %c
}
)";
  const std::string after = run_pass<Functionalize>(before);
  EXPECT_THAT(after, HasSubstr("aten.slice_scatter.default(%c, %w) {dim = 1, start = 2, end = 4, "
                               "step = 1}"));
  EXPECT_THAT(after, HasSubstr("output %slice_scatter"));  // the clone, written
}

TEST(Functionalize, AWriteIntoAnUnknownOperatorsResultIsRefused) {
  const std::string before = R"(graph {
  input %x : f32[4]
  %m : f32[4] = mylib.mystery_view.default(%x)
  %w : f32[4] = aten.fill_.Scalar(%m) {value = 0.0}
  output %x
}
)";
  try {
    run_pass<Functionalize>(before);
    FAIL() << "expected a refusal";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("an operator neuronc does not know"));
    EXPECT_THAT(e.what(), HasSubstr("mystery_view"));
  }
}

}  // namespace
}  // namespace neuronc::passes
