// LiftState: a buffer the program mutates becomes state with no payload, so nothing later can
// fold or bake the value it had when exported.
#include "passes/lift_state.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace neuronc::passes {
namespace {

constexpr const char* kCounter = R"(graph {
  input %x : f32[4]
  buffer %count : f32[4] "count"
  param %w : f32[4] "w"
  %next : f32[4] = aten.add.Tensor(%count, %w)
  %y : f32[4] = aten.mul.Tensor(%x, %next)
  output %y
  output %next buffer_mutation "count"
})";

const float kOnes[4] = {1, 1, 1, 1};

std::unique_ptr<ir::Graph> counter() {
  auto g = ir::parse(kCounter);
  for (const char* name : {"count", "w"})
    g->find_value(name)->set_payload(
        {reinterpret_cast<const std::byte*>(kOnes), sizeof kOnes, 0, {}, nullptr});
  return g;
}

TEST(LiftState, AMutatedBufferBecomesStateWithItsBytesAside) {
  auto g = counter();
  LiftState lift;
  ASSERT_TRUE(lift.run(*g));
  ir::verify_or_throw(*g);
  const ir::GraphInput& count = g->inputs()[1];
  EXPECT_EQ(count.role, ir::InputRole::state);
  EXPECT_EQ(count.value->payload(), nullptr);
  ASSERT_TRUE(count.initial.has_value());
  EXPECT_EQ(count.initial->nbytes, sizeof kOnes);
  // The parameter nothing writes keeps its payload.
  EXPECT_EQ(g->inputs()[2].role, ir::InputRole::parameter);
  EXPECT_NE(g->inputs()[2].value->payload(), nullptr);
  EXPECT_NE(ir::print(*g).find("state %count : f32[4] \"count\""), std::string::npos);
  EXPECT_FALSE(lift.run(*g));  // nothing left to lift
}

// The whole pipeline: count + w would fold to a constant if count were still a constant; as
// state it stays a node computed at run time, and the state input survives with its initial.
TEST(LiftState, ThePipelineNeverFoldsState) {
  auto g = counter();
  PassManager pm;
  build_pipeline(pm);
  pm.run(*g);
  ASSERT_NE(g->find_node("next"), nullptr) << ir::print(*g);
  bool found = false;
  for (const ir::GraphInput& in : g->inputs())
    if (in.target == "count") {
      found = true;
      EXPECT_EQ(in.role, ir::InputRole::state);
      EXPECT_TRUE(in.initial.has_value());
    }
  EXPECT_TRUE(found);
}

// A state input with a payload is refused by the verifier.
TEST(LiftState, VerifierRefusesStateWithAPayload) {
  auto g = counter();
  LiftState().run(*g);
  g->inputs()[1].value->set_payload(
      {reinterpret_cast<const std::byte*>(kOnes), sizeof kOnes, 0, {}, nullptr});
  EXPECT_THROW(ir::verify_or_throw(*g), ir::Error);
}

}  // namespace
}  // namespace neuronc::passes
