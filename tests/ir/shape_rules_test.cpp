// Shape rules per operator family, including broadcasting and symbolic dims.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/printer.h"

namespace neuronc::ir {
namespace {

// Builds a graph from the text form's declarations, appends `op` on the named inputs and
// returns the result types ("f32[2, 3]; i64[2]") or "error: <message>".
class ShapeTest : public ::testing::Test {
 protected:
  void decl(const std::string& text) { g_ = parse("graph {\n" + text + "\n}"); }
  std::string infer(const std::string& op, std::vector<std::string> operands,
                    std::vector<NamedAttr> attrs = {}) {
    std::vector<Value*> in;
    for (const std::string& o : operands) in.push_back(o == "_" ? nullptr : g_->find_value(o));
    try {
      Node* n = g_->append(op, in, std::move(attrs));
      std::string out;
      for (Value* v : n->outputs())
        out += (out.empty() ? "" : "; ") + g_->type_to_string(v->type());
      return out;
    } catch (const Error& e) {
      return std::string("error: ") + e.what();
    }
  }
  std::unique_ptr<Graph> g_;
};

TEST_F(ShapeTest, ElementwiseBroadcasting) {
  decl(
      "input %a : f32[4, 1, 3]\n input %b : f32[5, 1]\n input %c : f32[2, 3]\n"
      "input %i : i64[3]\n input %h : f16[3]\n input %s : f32[]");
  EXPECT_EQ(infer("aten.add.Tensor", {"a", "b"}), "f32[4, 5, 3]");
  EXPECT_EQ(infer("aten.mul.Tensor", {"a", "i"}), "f32[4, 1, 3]");
  EXPECT_EQ(infer("aten.add.Tensor", {"i", "h"}), "f16[3]");
  // A rank-0 tensor of the same category does not promote a lower-precision tensor.
  EXPECT_EQ(infer("aten.mul.Tensor", {"h", "s"}), "f16[3]");
  EXPECT_EQ(infer("aten.div.Tensor", {"i", "i"}), "f32[3]");
  EXPECT_EQ(infer("aten.add.Tensor", {"b", "c"}),
            "error: aten.add.Tensor: cannot broadcast [5, 1] with [2, 3]: dim 5 vs 2");
  EXPECT_EQ(infer("aten.mul.Scalar", {"i"}, {{"other", 0.5}}), "f32[3]");
  EXPECT_EQ(infer("aten.mul.Scalar", {"i"}, {{"other", int64_t{2}}}), "i64[3]");
  EXPECT_EQ(infer("aten.gt.Scalar", {"a"}, {{"other", 0.0}}), "bool[4, 1, 3]");
  EXPECT_EQ(infer("aten.sqrt.default", {"i"}), "f32[3]");
  EXPECT_EQ(infer("aten.gelu.default", {"a"}, {{"approximate", std::string("tanh")}}),
            "f32[4, 1, 3]");
}

TEST_F(ShapeTest, SymbolicBroadcasting) {
  decl(
      "sym s0 [1, 64]\n sym s1 [2, 8]\n input %x : f32[s0, 8]\n input %y : f32[1, 8]\n"
      "input %z : f32[s1, 8]\n input %k : f32[16, 8]\n input %big : f32[100, 8]");
  EXPECT_EQ(infer("aten.add.Tensor", {"x", "y"}), "f32[s0, 8]");
  EXPECT_EQ(infer("aten.add.Tensor", {"x", "x"}), "f32[s0, 8]");
  // A symbol against a constant inside its range is accepted as that constant.
  EXPECT_EQ(infer("aten.add.Tensor", {"x", "k"}), "f32[16, 8]");
  EXPECT_EQ(infer("aten.add.Tensor", {"x", "big"}),
            "error: aten.add.Tensor: cannot broadcast [s0, 8] with [100, 8]: dim s0 vs 100");
  EXPECT_EQ(infer("aten.add.Tensor", {"x", "z"}),
            "error: aten.add.Tensor: cannot broadcast [s0, 8] with [s1, 8]: dim s0 vs s1");
}

// Two symbols multiplied (batch × seq after a flatten) are one product symbol "b*s", whose
// range is the product of theirs; views between the two forms check element counts through it.
TEST_F(ShapeTest, ProductSymbolsFlattenAndUnflatten) {
  decl("sym b [1, 16]\n sym s [8, 128]\n input %x : f32[b, s, 4]\n input %y : f32[b*s, 4]");
  EXPECT_EQ(infer("aten.view.default", {"x"}, {{"size", std::vector<int64_t>{-1, 4}}}),
            "f32[b*s, 4]");
  const std::optional<SymbolId> p = g_->find_symbol("b*s");
  ASSERT_TRUE(p);
  EXPECT_EQ(g_->symbol(*p).min, 8);
  EXPECT_EQ(g_->symbol(*p).max, 2048);
  EXPECT_EQ(
      infer("aten.flatten.using_ints", {"x"}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{1}}}),
      "f32[b*s, 4]");
  const Dim b = Dim::sym(*g_->find_symbol("b")), s = Dim::sym(*g_->find_symbol("s"));
  EXPECT_EQ(infer("aten.view.default", {"y"}, {{"size", SymIntList{{b, s, Dim::constant(4)}}}}),
            "f32[b, s, 4]");
  EXPECT_EQ(infer("aten.view.default", {"y"}, {{"size", SymIntList{{b, Dim::constant(-1)}}}}),
            "f32[b, 4*s]");
  EXPECT_EQ(infer("aten.view.default", {"y"}, {{"size", SymIntList{{s, Dim::constant(4)}}}}),
            "error: aten.view.default: shape [s, 4] is invalid for input [b*s, 4]: element "
            "counts differ");
  // The printed form declares only free symbols; the parser remakes the product.
  EXPECT_EQ(print(*parse(print(*g_))), print(*g_));
}

// Symbolic slice bounds and arange ends (BERT's position_ids[:, :seq] and arange(seq)).
TEST_F(ShapeTest, SymbolicSliceBoundsAndArange) {
  decl("sym s [8, 128]\n sym t [1, 1024]\n input %pos : i64[1, 512]\n input %x : f32[s, 4]");
  const Dim s = Dim::sym(*g_->find_symbol("s")), t = Dim::sym(*g_->find_symbol("t"));
  EXPECT_EQ(
      infer("aten.slice.Tensor", {"pos"}, {{"dim", int64_t{1}}, {"start", int64_t{0}}, {"end", s}}),
      "i64[1, s]");
  EXPECT_EQ(infer("aten.slice.Tensor", {"x"}, {{"dim", int64_t{0}}, {"end", s}}), "f32[s, 4]");
  // t may exceed 512: the length would be min(t, 512), which is no dim.
  EXPECT_EQ(infer("aten.slice.Tensor", {"pos"}, {{"dim", int64_t{1}}, {"end", t}}),
            "error: aten.slice.Tensor: slicing dim 512 with start none and end t and step 1 is "
            "not supported (expected constant bounds, or [:e] with e at most the dim over e's "
            "range)");
  EXPECT_EQ(infer("aten.arange.default", {}, {{"end", s}}), "i64[s]");
  EXPECT_EQ(infer("aten.arange.start_step", {},
                  {{"start", int64_t{0}}, {"end", s}, {"step", int64_t{1}}}),
            "i64[s]");
  EXPECT_EQ(infer("aten.arange.start_step", {},
                  {{"start", int64_t{1}}, {"end", s}, {"step", int64_t{1}}}),
            "error: aten.arange.start_step: a symbolic end s is supported only from 0 with step 1");
}

TEST_F(ShapeTest, MatmulFamily) {
  decl(
      "sym b [1, 32]\n input %x : f32[b, 7, 16]\n input %w : f32[32, 16]\n input %bias : f32[32]\n"
      "input %m : f32[7, 16]\n input %n : f32[16, 5]\n input %bb : f32[b, 16, 4]\n"
      "input %v : f32[16]\n input %h : bf16[16, 5]");
  EXPECT_EQ(infer("aten.linear.default", {"x", "w", "bias"}), "f32[b, 7, 32]");
  EXPECT_EQ(infer("aten.linear.default", {"x", "w", "_"}), "f32[b, 7, 32]");
  EXPECT_EQ(infer("aten.linear.default", {"m", "n", "_"}),
            "error: aten.linear.default: in_features mismatch: 16 vs 5");
  EXPECT_EQ(infer("aten.mm.default", {"m", "n"}), "f32[7, 5]");
  EXPECT_EQ(infer("aten.mm.default", {"m", "h"}),
            "error: aten.mm.default: operand dtypes differ: f32 vs bf16");
  EXPECT_EQ(infer("aten.bmm.default", {"x", "bb"}), "f32[b, 7, 4]");
  EXPECT_EQ(infer("aten.matmul.default", {"x", "n"}), "f32[b, 7, 5]");
  EXPECT_EQ(infer("aten.matmul.default", {"m", "v"}), "f32[7]");
  EXPECT_EQ(infer("aten.matmul.default", {"v", "v"}), "f32[]");
  EXPECT_EQ(infer("aten.addmm.default", {"bias", "m", "w"}),
            "error: aten.addmm.default: contraction dim mismatch: 16 vs 32");
  decl("input %b : f32[5]\n input %m : f32[7, 16]\n input %n : f32[16, 5]");
  EXPECT_EQ(infer("aten.addmm.default", {"b", "m", "n"}), "f32[7, 5]");
}

TEST_F(ShapeTest, ConvolutionAndPooling) {
  decl(
      "sym n [1, 8]\n input %x : f32[n, 3, 32, 32]\n input %w : f32[16, 3, 3, 3]\n"
      "input %dw : f32[16, 1, 3, 3]\n input %y : f32[1, 16, 32, 32]\n input %b : f32[16]\n"
      "input %x1 : f32[2, 4, 50]\n input %w1 : f32[8, 4, 5]");
  EXPECT_EQ(
      infer("aten.conv2d.default", {"x", "w", "b"},
            {{"stride", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1, 1}}}),
      "f32[n, 16, 16, 16]");
  EXPECT_EQ(infer("aten.conv2d.default", {"y", "dw", "_"},
                  {{"padding", std::vector<int64_t>{2, 2}},
                   {"dilation", std::vector<int64_t>{2, 2}},
                   {"groups", int64_t{16}}}),
            "f32[1, 16, 32, 32]");
  EXPECT_EQ(infer("aten.conv2d.default", {"y", "w", "_"}),
            "error: aten.conv2d.default: input has 16 channels, weight expects 3 x 1 groups");
  EXPECT_EQ(infer("aten.conv2d.padding", {"x", "w", "_"}, {{"padding", std::string("same")}}),
            "f32[n, 16, 32, 32]");
  EXPECT_EQ(infer("aten.conv1d.default", {"x1", "w1", "_"}, {{"stride", std::vector<int64_t>{2}}}),
            "f32[2, 8, 23]");
  EXPECT_EQ(infer("aten.convolution.default", {"x", "w", "b"},
                  {{"stride", std::vector<int64_t>{1, 1}},
                   {"padding", std::vector<int64_t>{0, 0}},
                   {"dilation", std::vector<int64_t>{1, 1}},
                   {"transposed", false},
                   {"output_padding", std::vector<int64_t>{0, 0}},
                   {"groups", int64_t{1}}}),
            "f32[n, 16, 30, 30]");
  EXPECT_EQ(infer("aten.max_pool2d.default", {"y"},
                  {{"kernel_size", std::vector<int64_t>{3, 3}},
                   {"stride", std::vector<int64_t>{2, 2}},
                   {"padding", std::vector<int64_t>{1, 1}}}),
            "f32[1, 16, 16, 16]");
  EXPECT_EQ(infer("aten.max_pool2d_with_indices.default", {"y"},
                  {{"kernel_size", std::vector<int64_t>{2, 2}}}),
            "f32[1, 16, 16, 16]; i64[1, 16, 16, 16]");
  EXPECT_EQ(infer("aten.avg_pool2d.default", {"y"},
                  {{"kernel_size", std::vector<int64_t>{3, 3}},
                   {"stride", std::vector<int64_t>{2, 2}},
                   {"ceil_mode", true}}),
            "f32[1, 16, 16, 16]");
  EXPECT_EQ(infer("aten.adaptive_avg_pool2d.default", {"x"},
                  {{"output_size", std::vector<int64_t>{1, 1}}}),
            "f32[n, 3, 1, 1]");
}

TEST_F(ShapeTest, ReductionsNormsSoftmaxAttention) {
  decl(
      "sym s [1, 512]\n input %x : f32[2, s, 64]\n input %g : f32[64]\n input %q : f32[2, 8, s, "
      "32]\n"
      "input %k : f32[2, 2, s, 32]\n input %i : i32[4]\n input %c : f32[2, 6, 5, 5]\n input %cw : "
      "f32[6]");
  EXPECT_EQ(infer("aten.mean.dim", {"x"}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}}),
            "f32[2, s, 1]");
  EXPECT_EQ(infer("aten.sum.dim_IntList", {"x"}, {{"dim", std::vector<int64_t>{0, 2}}}), "f32[s]");
  EXPECT_EQ(infer("aten.sum.dim_IntList", {"i"}, {{"dim", NoneAttr{}}}), "i64[]");
  EXPECT_EQ(infer("aten.amax.default", {"x"}, {{"dim", std::vector<int64_t>{3}}}),
            "error: aten.amax.default: dim 3 is out of range for rank 3: expected [-3, 2]");
  EXPECT_EQ(infer("aten.max.dim", {"x"}, {{"dim", int64_t{1}}}), "f32[2, 64]; i64[2, 64]");
  EXPECT_EQ(infer("aten._softmax.default", {"x"}, {{"dim", int64_t{-1}}, {"half_to_float", false}}),
            "f32[2, s, 64]");
  EXPECT_EQ(infer("aten.layer_norm.default", {"x", "g", "g"},
                  {{"normalized_shape", std::vector<int64_t>{64}}}),
            "f32[2, s, 64]");
  EXPECT_EQ(infer("aten.native_layer_norm.default", {"x", "g", "g"},
                  {{"normalized_shape", std::vector<int64_t>{64}}, {"eps", 1e-5}}),
            "f32[2, s, 64]; f32[2, s, 1]; f32[2, s, 1]");
  EXPECT_EQ(
      infer("aten.layer_norm.default", {"x", "_", "_"},
            {{"normalized_shape", std::vector<int64_t>{32}}}),
      "error: aten.layer_norm.default: normalized_shape [32] does not match the trailing dims "
      "of [2, s, 64]");
  EXPECT_EQ(
      infer("aten.rms_norm.default", {"x", "g"}, {{"normalized_shape", std::vector<int64_t>{64}}}),
      "f32[2, s, 64]");
  EXPECT_EQ(infer("aten.group_norm.default", {"c", "cw", "cw"}, {{"num_groups", int64_t{4}}}),
            "error: aten.group_norm.default: channels 6 are not divisible by num_groups 4");
  EXPECT_EQ(infer("aten.scaled_dot_product_attention.default", {"q", "k", "k", "_"},
                  {{"enable_gqa", true}}),
            "f32[2, 8, s, 32]");
  EXPECT_EQ(infer("aten.scaled_dot_product_attention.default", {"q", "k", "k", "_"}),
            "error: aten.scaled_dot_product_attention.default: query has 8 heads and key 2: differ "
            "without enable_gqa");
  EXPECT_EQ(infer("aten._native_batch_norm_legit_no_training.default",
                  {"c", "cw", "cw", "cw", "cw"}, {{"momentum", 0.1}, {"eps", 1e-5}}),
            "f32[2, 6, 5, 5]; f32[0]; f32[0]");
}

TEST_F(ShapeTest, DataMovementWithSymbols) {
  decl("sym s [2, 128]\n input %x : f32[s, 12, 64]\n input %y : f32[s, 4]\n input %z : f32[3, 4]");
  EXPECT_EQ(
      infer("aten.view.default", {"x"}, {{"size", SymIntList{{Dim::sym(0), Dim::constant(768)}}}}),
      "f32[s, 768]");
  EXPECT_EQ(infer("aten.view.default", {"x"}, {{"size", std::vector<int64_t>{-1, 64}}}),
            "f32[12*s, 64]");
  EXPECT_EQ(infer("aten.reshape.default", {"x"}, {{"shape", std::vector<int64_t>{5, -1}}}),
            "error: aten.reshape.default: cannot infer -1 in [5, -1] for input [s, 12, 64]");
  EXPECT_EQ(
      infer("aten.view.default", {"z"}, {{"size", std::vector<int64_t>{5, 3}}}),
      "error: aten.view.default: shape [5, 3] is invalid for input [3, 4]: element counts differ");
  EXPECT_EQ(
      infer("aten.flatten.using_ints", {"x"}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{1}}}),
      "f32[12*s, 64]");
  EXPECT_EQ(infer("aten.permute.default", {"x"}, {{"dims", std::vector<int64_t>{2, 0, 1}}}),
            "f32[64, s, 12]");
  EXPECT_EQ(infer("aten.permute.default", {"x"}, {{"dims", std::vector<int64_t>{0, 0, 1}}}),
            "error: aten.permute.default: dim 0 repeats");
  EXPECT_EQ(infer("aten.transpose.int", {"x"}, {{"dim0", int64_t{-1}}, {"dim1", int64_t{-2}}}),
            "f32[s, 64, 12]");
  EXPECT_EQ(infer("aten.t.default", {"z"}), "f32[4, 3]");
  EXPECT_EQ(infer("aten.unsqueeze.default", {"y"}, {{"dim", int64_t{-1}}}), "f32[s, 4, 1]");
  EXPECT_EQ(infer("aten.expand.default", {"z"}, {{"size", std::vector<int64_t>{2, -1, 4}}}),
            "f32[2, 3, 4]");
  EXPECT_EQ(
      infer("aten.slice.Tensor", {"x"},
            {{"dim", int64_t{2}}, {"start", int64_t{32}}, {"end", int64_t{9223372036854775807}}}),
      "f32[s, 12, 32]");
  EXPECT_EQ(
      infer("aten.slice.Tensor", {"x"},
            {{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{9223372036854775807}}}),
      "f32[s, 12, 64]");
  EXPECT_EQ(infer("aten.select.int", {"x"}, {{"dim", int64_t{1}}, {"index", int64_t{-1}}}),
            "f32[s, 64]");
  EXPECT_EQ(infer("aten.cat.default", {"y", "y"}, {{"dim", int64_t{1}}}), "f32[s, 8]");
  EXPECT_EQ(infer("aten.cat.default", {"y", "y"}, {{"dim", int64_t{0}}}), "f32[2*s, 4]");
  EXPECT_EQ(infer("aten.cat.default", {"y", "z"}, {{"dim", int64_t{1}}}),
            "error: aten.cat.default: tensor 1 has shape [3, 4], expected [s, 4] outside dim 1");
  EXPECT_EQ(infer("aten.split.Tensor", {"z"}, {{"split_size", int64_t{3}}, {"dim", int64_t{1}}}),
            "f32[3, 3]; f32[3, 1]");
  EXPECT_EQ(infer("aten.chunk.default", {"x"}, {{"chunks", int64_t{2}}, {"dim", int64_t{-1}}}),
            "f32[s, 12, 32]; f32[s, 12, 32]");
  EXPECT_EQ(infer("aten.to.dtype", {"z"}, {{"dtype", DType::bf16}}), "bf16[3, 4]");
  EXPECT_EQ(infer("aten.pad.default", {"z"}, {{"pad", std::vector<int64_t>{1, 2}}}), "f32[3, 7]");
}

TEST_F(ShapeTest, CreationAndIndexing) {
  decl(
      "input %emb : f32[100, 16]\n input %ids : i64[2, 7]\n input %x : f32[4, 5, 6]\n input %i : "
      "i64[3]\n"
      "input %m : bool[4, 5, 6]");
  EXPECT_EQ(infer("aten.embedding.default", {"emb", "ids"}), "f32[2, 7, 16]");
  EXPECT_EQ(infer("aten.embedding.default", {"emb", "emb"}),
            "error: aten.embedding.default: indices must be integers, found f32");
  EXPECT_EQ(infer("aten.arange.start", {}, {{"start", int64_t{0}}, {"end", int64_t{10}}}),
            "i64[10]");
  EXPECT_EQ(infer("aten.arange.start_step", {}, {{"start", 0.0}, {"end", 1.0}, {"step", 0.25}}),
            "f32[4]");
  EXPECT_EQ(
      infer("aten.full.default", {}, {{"size", std::vector<int64_t>{2, 2}}, {"fill_value", 1.5}}),
      "f32[2, 2]");
  EXPECT_EQ(
      infer("aten.zeros.default", {}, {{"size", std::vector<int64_t>{3}}, {"dtype", DType::i32}}),
      "i32[3]");
  EXPECT_EQ(infer("aten.index.Tensor", {"x", "_", "i"}), "f32[4, 3, 6]");
  EXPECT_EQ(infer("aten.index.Tensor", {"x", "i", "_", "i"}), "f32[3, 5]");
  EXPECT_EQ(infer("aten.gather.default", {"x", "x"}, {{"dim", int64_t{0}}}), "f32[4, 5, 6]");
  EXPECT_EQ(infer("aten.where.self", {"m", "x", "x"}), "f32[4, 5, 6]");
  EXPECT_EQ(infer("aten.masked_fill.Scalar", {"x", "m"}, {{"value", -1e9}}), "f32[4, 5, 6]");
  EXPECT_EQ(infer("aten.cumsum.default", {"i"}, {{"dim", int64_t{0}}}), "i64[3]");
  EXPECT_EQ(infer("aten.diff.default", {"x", "_", "_"}), "f32[4, 5, 5]");
  EXPECT_EQ(infer("aten.roll.default", {"x"},
                  {{"shifts", std::vector<int64_t>{1}}, {"dims", std::vector<int64_t>{9}}}),
            "error: aten.roll.default: dim 9 is out of range for rank 3: expected [-3, 2]");
}

TEST_F(ShapeTest, UnknownArgumentIsRejected) {
  decl("input %x : f32[2]");
  EXPECT_EQ(infer("aten.relu.default", {"x"}, {{"alpha", int64_t{1}}}),
            "error: aten.relu.default: unknown argument 'alpha'");
  EXPECT_EQ(infer("aten.add.Tensor", {"x"}),
            "error: aten.add.Tensor: expected 2 tensor operands, found 1");
}

}  // namespace
}  // namespace neuronc::ir
