// The TorchScript custom-kernel scan: calls into libraries other than PyTorch's, with their file
// and line; PyTorch's own operators, string literals and comments are not calls.
#include "frontend/custom_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace neuronc::frontend {
namespace {

using ::testing::HasSubstr;

TEST(CustomKernels, FindsLibraryCallsWithTheirLines) {
  const std::vector<CodeFile> code = {
      {"code/__torch__/net.py",
       "class Net(Module):\n"
       "  def forward(self, x: Tensor) -> Tensor:\n"
       "    a = ops.aten.relu(x)\n"
       "    b = ops.prim.NumToTensor(1)\n"
       "    c = ops.mylib.rope(a, 0.5)  # ops.other.kernel(x) in a comment\n"
       "    d = torch.add(c, \"ops.fake.call(\")\n"
       "    e = ops.mylib.rope(ops.vendor.fused_mlp(d), 1.)\n"
       "    return e\n"},
      {"code/__torch__/other.py", "    y = ops.aaa.first(x)\n    z = xops.no.call(y)\n"},
  };
  const auto calls = find_torchscript_custom_calls(code);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].op, "aaa.first");
  EXPECT_EQ(calls[0].location, "code/__torch__/other.py:1: `y = ops.aaa.first(x)`");
  EXPECT_EQ(calls[1].op, "mylib.rope");
  EXPECT_THAT(calls[1].location, HasSubstr("code/__torch__/net.py:5: `c = ops.mylib.rope(a, 0.5)"));
  EXPECT_EQ(calls[2].op, "mylib.rope");
  EXPECT_THAT(calls[2].location, HasSubstr("net.py:7:"));
  EXPECT_EQ(calls[3].op, "vendor.fused_mlp");
  EXPECT_THAT(calls[3].location, HasSubstr("net.py:7:"));
}

TEST(CustomKernels, PyTorchsOwnCodeHasNone) {
  const std::vector<CodeFile> code = {{"code/__torch__/m.py",
                                       "    return torch.linear(x, weight, bias)\n"
                                       "    y = ops.aten.add(x, ops.prims.sum(x))\n"}};
  EXPECT_TRUE(find_torchscript_custom_calls(code).empty());
}

TEST(CustomKernels, TheErrorNamesEveryCall) {
  const CustomKernelError e = custom_kernel_error(
      "m.pt", {{"mylib.rope", "code/a.py:3: `x`"}, {"vendor.mlp", "code/a.py:9: `y`"}});
  EXPECT_THAT(e.what(), HasSubstr("m.pt: calls 2 custom kernels"));
  EXPECT_THAT(e.what(), HasSubstr("mylib.rope at code/a.py:3"));
  EXPECT_THAT(e.what(), HasSubstr("vendor.mlp at code/a.py:9"));
  EXPECT_EQ(e.calls().size(), 2u);
}

}  // namespace
}  // namespace neuronc::frontend
