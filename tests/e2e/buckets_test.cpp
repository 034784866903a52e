// Shape buckets (issue 16): a program exported with dynamic dims compiles into one artifact that
// runs every shape in range, picking the smallest bucket and padding, against the outputs
// PyTorch wrote at three shapes of the dynamic BERT (batch [1, 16], seq [8, 128]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "neuronc/neuronc.h"
#include "tests/e2e/llm_test_util.h"
#include "tools/cli_output.h"
#include "tools/npy.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

namespace fs = std::filesystem;

const fs::path kBert = fs::path(NEURONC_SOURCE_DIR) / "models" / "bert_dynamic";

compiler::CompileResult compile(const std::string& file, passes::AutoCastMode cast,
                                std::map<std::string, std::vector<int64_t>> buckets = {}) {
  compiler::CompileRequest req;
  req.model = (kBert / file).string();
  req.target = "trn1";
  req.auto_cast = cast;
  req.buckets = std::move(buckets);
  return compiler::compile_model(req);
}

struct BucketCase {
  std::string file;
  passes::AutoCastMode cast;
};
void PrintTo(const BucketCase& c, std::ostream* os) {
  *os << c.file << " --auto-cast " << passes::auto_cast_name(c.cast);
}

class Buckets : public ::testing::TestWithParam<BucketCase> {};

TEST_P(Buckets, OneArtifactRunsEveryReferenceShape) {
  const BucketCase& c = GetParam();
  compiler::CompileResult r = compile(c.file, c.cast);
  // Both dims may be padded (the attention mask hides padded keys); default buckets are the
  // powers of two in range: 5 batch sizes x 5 sequence lengths.
  ASSERT_EQ(r.buckets.size(), 2u);
  for (const compiler::BucketSymbol& b : r.buckets) EXPECT_TRUE(b.padded) << b.name << b.not_padded;
  EXPECT_EQ(r.buckets[0].values, (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(r.buckets[1].values, (std::vector<int64_t>{8, 16, 32, 64, 128}));
  auto model = neuronc::Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ(model->entries().size(), 25u);
  EXPECT_EQ(spec_text(model->inputs()[0]), "i64[s43, s53]");
  neuronc::Session session(*model);
  ASSERT_TRUE(session.status().is_ok()) << session.status().message();
  const struct {
    const char* dir;
    const char* entry;
    bool padded;
  } shapes[] = {{"", "main[s43=2,s53=16]", false},
                {"shape_1", "main[s43=1,s53=8]", false},
                {"shape_2", "main[s43=4,s53=64]", true},  // 3 x 40, padded
                {"", "main[s43=2,s53=16]", false}};       // back again: same session
  for (const auto& s : shapes) {
    SCOPED_TRACE(std::string("shape ") + s.dir);
    const fs::path dir = kBert / s.dir;
    RunResult out = run_once(session, testing::reference_inputs(*model, dir));
    EXPECT_EQ(out.stats.entry, s.entry);
    EXPECT_EQ(out.stats.padded, s.padded);
    for (size_t i = 0; i < out.outputs.size(); ++i) {
      const NpyArray want = read_npy((dir / ("output_" + std::to_string(i) + ".npy")).string());
      ASSERT_EQ(out.outputs[i].shape, want.shape) << out.names[i];
      const std::vector<double> got = testing::floats(out.outputs[i]), exp = testing::floats(want);
      double max_ref = 0, max_err = 0, dot = 0, ng = 0, ne = 0;
      for (size_t k = 0; k < exp.size(); ++k) {
        max_ref = std::max(max_ref, std::fabs(exp[k]));
        max_err = std::max(max_err, std::fabs(got[k] - exp[k]));
        dot += got[k] * exp[k], ng += got[k] * got[k], ne += exp[k] * exp[k];
      }
      if (c.cast == passes::AutoCastMode::none)
        EXPECT_LE(max_err, 1e-4 * max_ref) << out.names[i];
      else
        EXPECT_GE(dot / std::sqrt(ng * ne), 0.999) << out.names[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DynamicBert, Buckets,
                         ::testing::Values(BucketCase{"model.pt2", passes::AutoCastMode::none},
                                           BucketCase{"model.pt2", passes::AutoCastMode::matmul},
                                           BucketCase{"model_core.pt2", passes::AutoCastMode::none},
                                           BucketCase{"model_core.pt2",
                                                      passes::AutoCastMode::matmul}),
                         [](const ::testing::TestParamInfo<BucketCase>& i) {
                           return std::string(i.param.file == "model.pt2" ? "training" : "core") +
                                  "_" + passes::auto_cast_name(i.param.cast);
                         });

// Shapes across the range (between buckets, at their ends, at the range's ends), each run padded
// in the one bucketed artifact against the same shape compiled on its own (which the cases above
// and the e2e suite hold to PyTorch): the padding changes nothing.
TEST(BucketSweep, PaddedRunsEqualExactCompilesAcrossTheRange) {
  compiler::CompileResult r = compile("model.pt2", passes::AutoCastMode::none);
  auto model = neuronc::Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  neuronc::Session session(*model);
  const NpyArray ids0 = read_npy((kBert / "shape_2" / "input_0.npy").string());   // 3 x 40
  const NpyArray mask0 = read_npy((kBert / "shape_2" / "input_1.npy").string());  // row 2: 31 real
  for (int64_t batch : {1, 3, 5, 16}) {
    for (int64_t seq : {8, 9, 33, 100, 128}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + " seq " + std::to_string(seq));
      // Inputs cut or tiled from the 3 x 40 reference (ids and its padding mask, cyclically).
      auto make = [&](const NpyArray& src) {
        NpyArray a = src;
        a.shape = {batch, seq};
        a.data.assign(static_cast<size_t>(batch * seq) * 8, std::byte{0});
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t t = 0; t < seq; ++t)
            std::memcpy(a.data.data() + (b * seq + t) * 8,
                        src.data.data() + ((b % 3) * 40 + t % 40) * 8, 8);
        return a;
      };
      const std::vector<std::pair<std::string, NpyArray>> in = {{"input_ids", make(ids0)},
                                                                {"attention_mask", make(mask0)}};
      RunResult padded = run_once(session, in);
      compiler::CompileRequest req;
      req.model = (kBert / "model.pt2").string();
      req.target = "trn1";
      req.input_shapes = {{batch, seq}, {batch, seq}};
      compiler::CompileResult exact = compiler::compile_model(req);
      auto em = neuronc::Model::load_from_memory(exact.artifact);
      ASSERT_TRUE(em.is_ok()) << em.status().message();
      neuronc::Session es(*em);
      RunResult want = run_once(es, in);
      ASSERT_EQ(padded.outputs.size(), want.outputs.size());
      for (size_t i = 0; i < want.outputs.size(); ++i) {
        ASSERT_EQ(padded.outputs[i].shape, want.outputs[i].shape);
        const std::vector<double> got = testing::floats(padded.outputs[i]),
                                  exp = testing::floats(want.outputs[i]);
        double max_ref = 0, max_err = 0;
        for (size_t k = 0; k < exp.size(); ++k) {
          max_ref = std::max(max_ref, std::fabs(exp[k]));
          max_err = std::max(max_err, std::fabs(got[k] - exp[k]));
        }
        EXPECT_LE(max_err, 1e-5 * max_ref) << want.names[i];
      }
    }
  }
}

// Outside the buckets: a value past the export's range, and one past the largest bucket given.
TEST(BucketErrors, ShapesNoBucketFitsAreRefusedWithTheBuckets) {
  compiler::CompileResult r =
      compile("model.pt2", passes::AutoCastMode::none, {{"s43", {2, 4}}, {"s53", {16, 32}}});
  auto model = neuronc::Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ(model->entries().size(), 4u);
  neuronc::Session session(*model);
  auto in =
      testing::reference_inputs(*model, kBert / "shape_2");  // 3 x 40: 40 is past the largest, 32
  try {
    run_once(session, in);
    FAIL() << "a shape past every bucket ran";
  } catch (const CommandExit& e) {
    EXPECT_NE(e.message.find("no shape bucket fits the inputs: s43 = 3 (padded up to a bucket of "
                             "2, 4); s53 = 40 (padded up to a bucket of 16, 32)"),
              std::string::npos)
        << e.message;
  }
  auto one = testing::reference_inputs(*model, kBert / "shape_1");  // 1 x 8 fits main[s43=2,s53=16]
  RunResult ok = run_once(session, one);
  EXPECT_EQ(ok.stats.entry, "main[s43=2,s53=16]");
  EXPECT_EQ(ok.outputs[0].shape, (std::vector<int64_t>{1, 8, 64}));
  // A bucket value outside the export's range is refused at compile time.
  try {
    compile("model.pt2", passes::AutoCastMode::none, {{"s53", {4}}});
    FAIL() << "a bucket below the range compiled";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--buckets s53: 4 is outside the range [8, 128]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace neuronc::tools
