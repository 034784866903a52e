// torch.vmap regions in the training IR (issue 16): a Mamba block exported by torch 2.14 with
// transformers, whose scan keeps six vmap regions as predispatch batching calls. The importer
// de-batches them; the program must match the outputs PyTorch wrote, in fp32 and bf16.
#include <gtest/gtest.h>
#include <neuronc/model.h>
#include <neuronc/session.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "compiler/compiler.h"
#include "tests/e2e/llm_test_util.h"
#include "tools/npy.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(NEURONC_SOURCE_DIR) / "tests" / "corpus" / "vmap";

std::vector<double> run(passes::AutoCastMode cast, const NpyArray& input) {
  compiler::CompileRequest req;
  req.model = (kDir / "mamba_train.pt2").string();
  req.target = "trn1";
  req.auto_cast = cast;
  compiler::CompileResult compiled = compiler::compile_model(req);
  auto model = neuronc::Model::load_from_memory(compiled.artifact);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  if (!model.is_ok()) return {};
  neuronc::Session session(*model);
  RunResult r = run_once(session, {{model->inputs()[0].name, as_input(model->inputs()[0], input)}});
  EXPECT_EQ(r.outputs.size(), 1u);
  return r.outputs.empty() ? std::vector<double>{} : testing::floats(r.outputs[0]);
}

TEST(Vmap, MambaScanInTheTrainingIrMatchesPyTorch) {
  const NpyArray input = read_npy((kDir / "input_0.npy").string());
  const std::vector<double> want = testing::floats(read_npy((kDir / "output_0.npy").string()));
  ASSERT_EQ(want.size(), 1u * 16 * 32);

  const std::vector<double> fp32 = run(passes::AutoCastMode::none, input);
  ASSERT_EQ(fp32.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(fp32[i] - want[i]) - 1e-3 * std::abs(want[i]));
  }
  EXPECT_LE(worst, 1e-4);

  const std::vector<double> bf16 = run(passes::AutoCastMode::matmul, input);
  ASSERT_EQ(bf16.size(), want.size());
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    dot += bf16[i] * want[i];
    na += bf16[i] * bf16[i];
    nb += want[i] * want[i];
  }
  EXPECT_GE(dot / std::sqrt(na * nb), 0.999);
}

}  // namespace
}  // namespace neuronc::tools
