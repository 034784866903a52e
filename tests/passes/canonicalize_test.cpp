// Canonicalize: before/after IR.
#include "passes/canonicalize.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace neuronc::passes {
namespace {

using testing::run_pass;

TEST(Canonicalize, AliasesChecksAndSameTypeConversionsDisappear) {
  const std::string before = R"(graph {
  input %x : f32[2, 3]
  %a : f32[2, 3] = aten.alias.default(%x)
  %c : f32[2, 3] = aten.clone.default(%a)
  %d : f32[2, 3] = aten.dropout.default(%c) {p = 0.1, train = false}
  () = aten._assert_tensor_metadata.default(%d) {dtype = #f32}
  %t : f32[2, 3] = aten.to.dtype(%d) {dtype = #f32}
  %e : f32[2, 3] = aten.expand.default(%t) {size = [2, 3]}
  %r : f32[2, 3] = aten.relu.default(%e)
  output %r
}
)";
  const std::string after = R"(graph {
  input %x : f32[2, 3]
  %r : f32[2, 3] = aten.relu.default(%x)
  output %r
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

TEST(Canonicalize, ConversionsBecomeToCopy) {
  const std::string before = R"(graph {
  input %x : f32[2, 3]
  input %h : bf16[3]
  %a : bf16[2, 3] = aten.to.dtype_layout(%x) {dtype = #bf16, layout = #strided, device = device("cpu")}
  %b : bf16[2, 3] = aten.type_as.default(%x, %h)
  %c : bf16[2, 3] = aten.add.Tensor(%a, %b)
  output %c
}
)";
  const std::string after = R"(graph {
  input %x : f32[2, 3]
  input %h : bf16[3]
  %a : bf16[2, 3] = aten._to_copy.default(%x) {dtype = #bf16}
  %b : bf16[2, 3] = aten._to_copy.default(%x) {dtype = #bf16}
  %c : bf16[2, 3] = aten.add.Tensor(%a, %b)
  output %c
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

TEST(Canonicalize, ShapeOpsBecomeViewsAndPermutes) {
  const std::string before = R"(graph {
  sym s [1, 8]
  input %x : f32[s, 4, 6]
  %f : f32[s, 24] = aten.flatten.using_ints(%x) {start_dim = 1}
  %u : f32[s, 1, 24] = aten.unsqueeze.default(%f) {dim = 1}
  %r : f32[s, 24] = aten.reshape.default(%u) {shape = [-1, 24]}
  %t : f32[24, s] = aten.t.default(%r)
  %p : f32[s, 6, 4] = aten.transpose.int(%x) {dim0 = -1, dim1 = 1}
  %v : f32[s, 24] = aten.view.default(%p) {size = [-1, 24]}
  output %t
  output %v
}
)";
  const std::string after = R"(graph {
  sym s [1, 8]
  input %x : f32[s, 4, 6]
  %f : f32[s, 24] = aten.view.default(%x) {size = [s, 24]}
  %u : f32[s, 1, 24] = aten.view.default(%x) {size = [s, 1, 24]}
  %r : f32[s, 24] = aten.view.default(%x) {size = [s, 24]}
  %t : f32[24, s] = aten.permute.default(%r) {dims = [1, 0]}
  %p : f32[s, 6, 4] = aten.permute.default(%x) {dims = [0, 2, 1]}
  %v : f32[s, 24] = aten.view.default(%p) {size = [s, 24]}
  output %t
  output %v
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

// x.T and movedim are permutes; attention's size-1 key/value batch dims (Falcon's one key head
// for every query head) are expanded to the query's, a GQA head group is left as it is.
TEST(Canonicalize, NumpyTMovedimAndBroadcastAttention) {
  const std::string before = R"(graph {
  input %x : f32[2, 3, 4]
  input %q : f32[1, 4, 6, 8]
  input %k : f32[1, 1, 6, 8]
  input %g : f32[1, 2, 6, 8]
  %t : f32[4, 3, 2] = aten.numpy_T.default(%x)
  %m : f32[3, 4, 2] = aten.movedim.int(%x) {source = 0, destination = -1}
  %a : f32[1, 4, 6, 8] = aten.scaled_dot_product_attention.default(%q, %k, %k, _)
  %b : f32[1, 4, 6, 8] = aten.scaled_dot_product_attention.default(%q, %g, %g, _) {enable_gqa = true}
  output %t
  output %m
  output %a
  output %b
}
)";
  const std::string after = R"(graph {
  input %x : f32[2, 3, 4]
  input %q : f32[1, 4, 6, 8]
  input %k : f32[1, 1, 6, 8]
  input %g : f32[1, 2, 6, 8]
  %t : f32[4, 3, 2] = aten.permute.default(%x) {dims = [2, 1, 0]}
  %m : f32[3, 4, 2] = aten.permute.default(%x) {dims = [1, 2, 0]}
  %expand : f32[1, 4, 6, 8] = aten.expand.default(%k) {size = [1, 4, 6, 8]}
  %expand_1 : f32[1, 4, 6, 8] = aten.expand.default(%k) {size = [1, 4, 6, 8]}
  %a : f32[1, 4, 6, 8] = aten.scaled_dot_product_attention.default(%q, %expand, %expand_1, _)
  %b : f32[1, 4, 6, 8] = aten.scaled_dot_product_attention.default(%q, %g, %g, _) {enable_gqa = true}
  output %t
  output %m
  output %a
  output %b
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

// A permute that moves only size-1 dims is a view; a view of a view reads the first one's input.
TEST(Canonicalize, OrderKeepingPermutesAndViewChainsBecomeOneView) {
  const std::string before = R"(graph {
  input %x : f32[197, 768]
  %a : f32[197, 1, 768] = aten.view.default(%x) {size = [197, 1, 768]}
  %b : f32[1, 197, 768] = aten.transpose.int(%a) {dim0 = 0, dim1 = 1}
  %c : f32[768, 1, 197] = aten.permute.default(%a) {dims = [2, 1, 0]}
  output %b
  output %c
}
)";
  const std::string after = R"(graph {
  input %x : f32[197, 768]
  %a : f32[197, 1, 768] = aten.view.default(%x) {size = [197, 1, 768]}
  %b : f32[1, 197, 768] = aten.view.default(%x) {size = [1, 197, 768]}
  %c : f32[768, 1, 197] = aten.permute.default(%a) {dims = [2, 1, 0]}
  output %b
  output %c
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

// A view keeping the last dim moves into the linear producing its input when the view is the
// linear's only reader (ViT's attention output then has the residual add's shape); a linear
// with another reader, or a view splitting the last dim, stays. The first move's view of %x is
// left for dead-code elimination.
TEST(Canonicalize, RowRegroupingViewMovesIntoItsLinear) {
  const std::string before = R"(graph {
  input %x : f32[197, 768]
  param %w : f32[768, 768] "w"
  param %b : f32[768] "b"
  %l : f32[197, 768] = aten.linear.default(%x, %w, %b)
  %v : f32[197, 1, 768] = aten.view.default(%l) {size = [197, 1, 768]}
  %t : f32[1, 197, 768] = aten.transpose.int(%v) {dim0 = 0, dim1 = 1}
  %l2 : f32[197, 768] = aten.linear.default(%x, %w, _)
  %h : f32[197, 12, 64] = aten.view.default(%l2) {size = [197, 12, 64]}
  %l3 : f32[197, 768] = aten.linear.default(%x, %w, _)
  %k : f32[1, 197, 768] = aten.view.default(%l3) {size = [1, 197, 768]}
  output %t
  output %h
  output %k
  output %l3
}
)";
  const std::string after = R"(graph {
  input %x : f32[197, 768]
  param %w : f32[768, 768] "w"
  param %b : f32[768] "b"
  %view : f32[197, 1, 768] = aten.view.default(%x) {size = [197, 1, 768]}
  %view_2 : f32[1, 197, 768] = aten.view.default(%x) {size = [1, 197, 768]}
  %t : f32[1, 197, 768] = aten.linear.default(%view_2, %w, %b)
  %l2 : f32[197, 768] = aten.linear.default(%x, %w, _)
  %h : f32[197, 12, 64] = aten.view.default(%l2) {size = [197, 12, 64]}
  %l3 : f32[197, 768] = aten.linear.default(%x, %w, _)
  %k : f32[1, 197, 768] = aten.view.default(%l3) {size = [1, 197, 768]}
  output %t
  output %h
  output %k
  output %l3
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

TEST(Canonicalize, NormsAndSoftmax) {
  const std::string before = R"(graph {
  input %x : f32[2, 8]
  param %g : f32[8] "ln.weight"
  %ln, %mean, %rstd : f32[2, 1] = aten.native_layer_norm.default(%x, %g, %g) {normalized_shape = [8], eps = 1e-05}
  %s : f32[2, 8] = aten.softmax.int(%ln) {dim = -1}
  output %s
}
)";
  // %ln's type is given once per result in the text form.
  const std::string fixed = R"(graph {
  input %x : f32[2, 8]
  param %g : f32[8] "ln.weight"
  %ln : f32[2, 8], %mean : f32[2, 1], %rstd : f32[2, 1] = aten.native_layer_norm.default(%x, %g, %g) {normalized_shape = [8], eps = 1e-05}
  %s : f32[2, 8] = aten.softmax.int(%ln) {dim = -1}
  output %s
}
)";
  EXPECT_THROW(run_pass<Canonicalize>(before), ir::Error);
  const std::string after = R"(graph {
  input %x : f32[2, 8]
  param %g : f32[8] "ln.weight"
  %ln : f32[2, 8] = aten.layer_norm.default(%x, %g, %g) {normalized_shape = [8], eps = 1e-05}
  %s : f32[2, 8] = aten._softmax.default(%ln) {dim = -1, half_to_float = false}
  output %s
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(fixed), after);
}

TEST(Canonicalize, ArithmeticAliasesBecomeTheirOps) {
  const std::string before = R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.multiply.Tensor(%x, %x)
  %b : f32[4] = aten.subtract.Tensor(%a, %x)
  %c : f32[4] = aten.true_divide.Scalar(%b) {other = 2.0}
  output %c
}
)";
  const std::string after = R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.mul.Tensor(%x, %x)
  %b : f32[4] = aten.sub.Tensor(%a, %x)
  %c : f32[4] = aten.div.Scalar(%b) {other = 2.0}
  output %c
}
)";
  EXPECT_EQ(run_pass<Canonicalize>(before), after);
}

// swapaxes/swapdims are transposes; reshape_as/view_as/expand_as take only the other tensor's
// shape.
TEST(Canonicalize, ShapeAliasesBecomeTheirOps) {
  const std::string before = R"(graph {
  input %x : f32[2, 3, 4]
  input %y : f32[6, 4]
  input %z : f32[1, 3, 1]
  %a : f32[4, 3, 2] = aten.swapaxes.default(%x) {axis0 = 0, axis1 = -1}
  %b : f32[2, 4, 3] = aten.swapdims.default(%x) {dim0 = 1, dim1 = 2}
  %c : f32[6, 4] = aten.reshape_as.default(%x, %y)
  %d : f32[6, 4] = aten.view_as.default(%x, %y)
  %e : f32[2, 3, 4] = aten.expand_as.default(%z, %x)
  output %a
  output %b
  output %c
  output %d
  output %e
}
)";
  const std::string out = run_pass<Canonicalize>(before);
  EXPECT_NE(out.find("%a : f32[4, 3, 2] = aten.permute.default(%x) {dims = [2, 1, 0]}"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%b : f32[2, 4, 3] = aten.permute.default(%x) {dims = [0, 2, 1]}"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%c : f32[6, 4] = aten.view.default(%x) {size = [6, 4]}"), std::string::npos)
      << out;
  EXPECT_NE(out.find("%d : f32[6, 4] = aten.view.default(%x) {size = [6, 4]}"), std::string::npos)
      << out;
  EXPECT_NE(out.find("aten.expand.default(%z) {size = [2, 3, 4]}"), std::string::npos) << out;
  for (const char* gone : {"swapaxes", "swapdims", "reshape_as", "view_as", "expand_as"})
    EXPECT_EQ(out.find(gone), std::string::npos) << gone << "\n" << out;
}

TEST(Canonicalize, CanonicalGraphIsUnchanged) {
  const std::string text = R"(graph {
  input %x : f32[2, 8]
  %v : f32[16] = aten.view.default(%x) {size = [16]}
  %c : bf16[16] = aten._to_copy.default(%v) {dtype = #bf16}
  output %c
}
)";
  bool changed = true;
  EXPECT_EQ(run_pass<Canonicalize>(text, &changed), text);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace neuronc::passes
