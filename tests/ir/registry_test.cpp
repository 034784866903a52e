// The operator registry: schema parsing and coverage of the ops exported models use.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace neuronc::ir {
namespace {

TEST(Schema, ParsesPyTorchSchemaStrings) {
  OpInfo a = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(a.name, "aten.add.Tensor");
  ASSERT_EQ(a.args.size(), 3u);
  EXPECT_EQ(a.args[2].name, "alpha");
  EXPECT_TRUE(a.args[2].kwarg_only);
  EXPECT_EQ(std::get<int64_t>(*a.args[2].default_value), 1);
  EXPECT_EQ(a.num_outputs, 1);

  OpInfo m = parse_schema(
      "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
      "padding=0, "
      "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)");
  EXPECT_EQ(m.name, "aten.max_pool2d_with_indices.default");
  EXPECT_EQ(m.args[1].type, ArgType::ints);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*m.args[2].default_value), std::vector<int64_t>{});
  EXPECT_EQ(std::get<bool>(*m.args[5].default_value), false);
  EXPECT_EQ(m.num_outputs, 2);

  OpInfo s = parse_schema(
      "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  EXPECT_EQ(s.num_outputs, -1);
  OpInfo i = parse_schema("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor");
  EXPECT_EQ(i.args[1].type, ArgType::opt_tensor_list);
  OpInfo r = parse_schema("relu_(Tensor(a!) self) -> Tensor(a!)");
  EXPECT_TRUE(r.inplace);
  EXPECT_FALSE(parse_schema("__and__.Tensor(Tensor self, Tensor other) -> Tensor").inplace);
  EXPECT_FALSE(parse_schema("view(Tensor(a) self, SymInt[] size) -> Tensor(a)").inplace);
  OpInfo g = parse_schema("gelu(Tensor self, *, str approximate='none') -> Tensor");
  EXPECT_EQ(std::get<std::string>(*g.args[1].default_value), "none");
  OpInfo l = parse_schema(
      "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
      "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor");
  EXPECT_TRUE(l.args[2].optional);
  EXPECT_DOUBLE_EQ(std::get<double>(*l.args[4].default_value), 1e-5);
  OpInfo z = parse_schema("_assert_tensor_metadata(Tensor a, SymInt[]? size=None) -> ()");
  EXPECT_EQ(z.num_outputs, 0);
  EXPECT_TRUE(z.args[1].optional);

  EXPECT_THROW(parse_schema("foo(Tensor x"), Error);
  EXPECT_THROW(parse_schema("foo(Quaternion q) -> Tensor"), Error);
}

TEST(Registry, CoversOpsRealExportedModelsUse) {
  const char* required[] = {
      "aten.linear.default",
      "aten.addmm.default",
      "aten.mm.default",
      "aten.bmm.default",
      "aten.matmul.default",
      "aten.conv1d.default",
      "aten.conv2d.default",
      "aten.convolution.default",
      "aten.batch_norm.default",
      "aten._native_batch_norm_legit_no_training.default",
      "aten.layer_norm.default",
      "aten.native_layer_norm.default",
      "aten.group_norm.default",
      "aten.rms_norm.default",
      "aten.embedding.default",
      "aten.scaled_dot_product_attention.default",
      "aten.softmax.int",
      "aten._softmax.default",
      "aten.log_softmax.int",
      "aten._log_softmax.default",
      "aten.relu.default",
      "aten.relu_.default",
      "aten.gelu.default",
      "aten.silu.default",
      "aten.silu_.default",
      "aten.sigmoid.default",
      "aten.tanh.default",
      "aten.hardswish.default",
      "aten.hardsigmoid.default",
      "aten.add.Tensor",
      "aten.add.Scalar",
      "aten.add_.Tensor",
      "aten.sub.Tensor",
      "aten.sub.Scalar",
      "aten.mul.Tensor",
      "aten.mul.Scalar",
      "aten.mul_.Tensor",
      "aten.div.Tensor",
      "aten.div.Scalar",
      "aten.pow.Tensor_Scalar",
      "aten.rsqrt.default",
      "aten.sqrt.default",
      "aten.exp.default",
      "aten.log.default",
      "aten.neg.default",
      "aten.abs.default",
      "aten.mean.dim",
      "aten.sum.dim_IntList",
      "aten.amax.default",
      "aten.max_pool2d.default",
      "aten.max_pool2d_with_indices.default",
      "aten.avg_pool2d.default",
      "aten.adaptive_avg_pool2d.default",
      "aten.view.default",
      "aten.reshape.default",
      "aten.flatten.using_ints",
      "aten.permute.default",
      "aten.transpose.int",
      "aten.t.default",
      "aten.unsqueeze.default",
      "aten.squeeze.dim",
      "aten.expand.default",
      "aten.slice.Tensor",
      "aten.select.int",
      "aten.cat.default",
      "aten.split.Tensor",
      "aten.chunk.default",
      "aten.contiguous.default",
      "aten.clone.default",
      "aten.alias.default",
      "aten.to.dtype",
      "aten.to.dtype_layout",
      "aten.to.device",
      "aten.type_as.default",
      "aten.dropout.default",
      "aten.arange.default",
      "aten.arange.start",
      "aten.full.default",
      "aten.ones.default",
      "aten.zeros.default",
      "aten.new_ones.default",
      "aten.new_zeros.default",
      "aten.where.self",
      "aten.masked_fill.Scalar",
      "aten.eq.Tensor",
      "aten.ne.Scalar",
      "aten.lt.Tensor",
      "aten.le.Scalar",
      "aten.gt.Tensor",
      "aten.ge.Scalar",
      "aten.logical_and.default",
      "aten.logical_or.default",
      "aten.logical_not.default",
      "aten.cumsum.default",
      "aten.diff.default",
      "aten.index.Tensor",
      "aten.gather.default",
      "aten.pad.default",
      "aten.roll.default",
      "aten._assert_tensor_metadata.default",
      "aten.lift_fresh_copy.default",
      "aten.fill_.Scalar",
      "aten._to_copy.default",
      "aten._unsafe_view.default",
  };
  const OpRegistry& r = OpRegistry::global();
  for (const char* name : required) {
    const OpInfo* info = r.find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_TRUE(static_cast<bool>(info->shape_fn)) << name;
  }
  EXPECT_EQ(r.find("aten.bincount.default"), nullptr);
  EXPECT_GE(r.all().size(), 150u);
  // Deterministic order.
  std::vector<const OpInfo*> all = r.all();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name, all[i]->name);
}

TEST(Registry, CategoriesAndPlacement) {
  const OpRegistry& r = OpRegistry::global();
  EXPECT_EQ(r.find("aten.conv2d.default")->category, OpCategory::conv);
  EXPECT_EQ(r.find("aten._softmax.default")->category, OpCategory::softmax);
  EXPECT_EQ(r.find("aten.scaled_dot_product_attention.default")->category, OpCategory::attention);
  EXPECT_EQ(r.find("aten.eq.Tensor")->category, OpCategory::comparison);
  EXPECT_EQ(r.find("aten.embedding.default")->category, OpCategory::indexing);
  EXPECT_EQ(r.find("aten.arange.start")->category, OpCategory::creation);
  EXPECT_EQ(r.find("aten.view.default")->category, OpCategory::data_movement);
  EXPECT_EQ(r.find("aten.mean.dim")->category, OpCategory::reduction);
  EXPECT_EQ(r.find("aten.layer_norm.default")->category, OpCategory::norm);
  EXPECT_EQ(r.find("aten.linear.default")->placement, Placement::device);
  EXPECT_EQ(r.find("aten.diff.default")->placement, Placement::host);
}

}  // namespace
}  // namespace neuronc::ir
