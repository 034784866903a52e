// compiler::bind_symbolic_dims: which symbols need a value before codegen.
#include "compiler/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/printer.h"

namespace neuronc::compiler {
namespace {

using ::testing::HasSubstr;

// s0 sizes the input and comes from the sample input; u0 (an unbacked symbol that a range
// constraint names but no shape uses, as item() read only for an assert leaves) needs none.
TEST(BindSymbolicDims, OnlySymbolsSomeShapeUsesNeedAValue) {
  auto g = ir::parse(R"(graph {
  sym s0 [1, 64]
  sym u0 [0, 16]
  input %x : f32[s0, 4]
  %y : f32[s0, 4] = aten.relu.default(%x)
  output %y
})");
  const std::vector<frontend::SampleInput> samples = {{"x", ir::DType::f32, {3, 4}, {}}};
  const auto dims = bind_symbolic_dims(*g, samples, {});
  EXPECT_EQ(dims, (std::map<std::string, int64_t>{{"s0", 3}}));
  try {
    bind_symbolic_dims(*g, {}, {});
    FAIL() << "an unbound symbol that sizes an input was accepted";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("symbolic dim s0 in [1, 64] needs a value"));
  }
}

}  // namespace
}  // namespace neuronc::compiler
