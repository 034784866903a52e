// Operator origins for the custom-kernel inventory: PyTorch's own sets, a library's operators,
// higher-order kernel calls and ATen's CUDA-only kernels.
#include "ir/op_origin.h"

#include <gtest/gtest.h>

namespace neuronc::ir {
namespace {

TEST(OpOrigin, PyTorchsOwnSetsPort) {
  EXPECT_EQ(op_origin("aten.add.Tensor"), OpOrigin::aten);
  EXPECT_EQ(op_origin("aten._scaled_dot_product_flash_attention_for_cpu.default"), OpOrigin::aten);
  EXPECT_EQ(op_origin("aten.batch_norm.default"), OpOrigin::aten);  // cudnn_enabled is an arg
  EXPECT_EQ(op_origin("prims.convert_element_type.default"), OpOrigin::prims);
  EXPECT_EQ(op_origin("neuronc.all_reduce"), OpOrigin::neuronc);
  for (const char* op : {"aten.add.Tensor", "prims.sum.default", "neuronc.all_gather"})
    EXPECT_FALSE(is_custom_kernel(op_origin(op))) << op;
}

TEST(OpOrigin, EverythingElseIsACustomKernel) {
  EXPECT_EQ(op_origin("demo_kernels.fused_scale_gelu.default"), OpOrigin::custom);
  EXPECT_EQ(op_origin("torchvision.nms.default"), OpOrigin::custom);
  EXPECT_EQ(op_origin("atenx.add.Tensor"), OpOrigin::custom);  // a prefix is not a namespace
  EXPECT_EQ(op_origin("higher_order.triton_kernel_wrapper_functional"), OpOrigin::higher_order);
  EXPECT_EQ(op_origin("higher_order.flex_attention"), OpOrigin::higher_order);
  for (const char* op :
       {"aten._scaled_dot_product_flash_attention.default",
        "aten._scaled_dot_product_efficient_attention.default",
        "aten._scaled_dot_product_cudnn_attention.default", "aten._flash_attention_forward.default",
        "aten.cudnn_convolution.default", "aten._cudnn_rnn.default",
        "aten.miopen_batch_norm.default", "aten._cslt_sparse_mm.default"}) {
    EXPECT_EQ(op_origin(op), OpOrigin::cuda_only) << op;
    EXPECT_TRUE(is_custom_kernel(op_origin(op))) << op;
  }
  EXPECT_STREQ(op_origin_name(OpOrigin::cuda_only), "cuda-only");
  EXPECT_STREQ(op_origin_name(OpOrigin::higher_order), "higher-order");
}

}  // namespace
}  // namespace neuronc::ir
