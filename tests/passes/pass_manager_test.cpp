// The pass manager: order, --print-after, verification between passes.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/printer.h"
#include "passes/pipeline.h"

namespace neuronc::passes {
namespace {

// A deliberately broken pass: gives a result the wrong type.
class BreakTypes : public Pass {
 public:
  std::string_view name() const override { return "break-types"; }
  bool run(ir::Graph& g) override {
    const auto& n = g.nodes().front();
    n->output()->set_type({ir::DType::bf16, n->output()->shape()});
    return true;
  }
};

TEST(PassManager, PrintsAfterChosenPassesAndRecords) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.clone.default(%x)
  %b : f32[4] = aten.relu.default(%a)
  %c : f32[4] = aten.relu.default(%a)
  %d : f32[4] = aten.add.Tensor(%b, %c)
  output %d
})");
  std::ostringstream os;
  std::vector<std::pair<size_t, size_t>> progress;  // after_pass's (done, total)
  PassManager pm(
      {.print_after = {"canonicalize"},
       .print_stream = &os,
       .verify_each = true,
       .after_pass = [&](size_t done, size_t total) { progress.emplace_back(done, total); }});
  build_pipeline(pm);
  pm.run(*g);
  ASSERT_EQ(progress.size(), 12u);
  for (size_t i = 0; i < progress.size(); ++i)
    EXPECT_EQ(progress[i], std::make_pair(i + 1, size_t{12}));
  EXPECT_EQ(pm.names(),
            (std::vector<std::string>{"functionalize", "lift-state", "canonicalize", "decompose",
                                      "expand-composites", "fold", "fold-batch-norm", "dce", "cse",
                                      "fuse-rms-norm", "fuse-sibling-linears", "dce"}));
  EXPECT_NE(os.str().find("// ----- IR after canonicalize -----"), std::string::npos);
  EXPECT_EQ(os.str().find("IR after cse"), std::string::npos);
  EXPECT_EQ(g->nodes().size(), 2u);  // relu + add after CSE
  ASSERT_EQ(pm.records().size(), 12u);
  EXPECT_FALSE(pm.records()[0].changed);  // nothing is written in place
  EXPECT_FALSE(pm.records()[1].changed);  // so no buffer is state
  EXPECT_TRUE(pm.records()[2].changed);
}

TEST(PassManager, VerificationNamesTheBrokenPass) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.relu.default(%x)
  output %a
})");
  PassManagerOptions opts;
  opts.verify_each = true;
  PassManager pm(opts);
  pm.add(std::make_unique<BreakTypes>());
  try {
    pm.run(*g);
    FAIL() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("after pass 'break-types': node 'a' (aten.relu.default): "
                                         "result 0 'a' has type bf16[4], expected f32[4]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace neuronc::passes
