// Programs that read a dynamic dim's size as a value (issue 53): `x * x.size(0)`, numel,
// stride, a masked mean, view(size(0), -1), arange(size(1)), a softmax scaled by the size, sizes
// reaching a reduction's divisor. Each is compiled once, in both of torch.export's IRs, into the
// bucketed artifact `compile` writes by default, and run at every size PyTorch wrote a reference
// for (models/size_reads_*: n = 6, 3, 5, 13, 27, none a bucket), matching PyTorch: the padded
// runs compute with the real size, never the bucket's.
#include <gtest/gtest.h>

#include <cmath>
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

const fs::path kModels = fs::path(NEURONC_SOURCE_DIR) / "models";

// The reference directories of a fixture: its own (the example) and shape_<k>/.
std::vector<fs::path> reference_dirs(const fs::path& dir) {
  std::vector<fs::path> out{dir};
  for (int k = 1; fs::exists(dir / ("shape_" + std::to_string(k))); ++k)
    out.push_back(dir / ("shape_" + std::to_string(k)));
  return out;
}

// Within 1e-4 of the largest reference magnitude (f32 against PyTorch's f32).
void expect_matches(const RunResult& out, const fs::path& dir) {
  for (size_t i = 0; i < out.outputs.size(); ++i) {
    const fs::path f = dir / ("output_" + std::to_string(i) + ".npy");
    if (!fs::exists(f)) break;
    const NpyArray want = read_npy(f.string());
    ASSERT_EQ(out.outputs[i].shape, want.shape) << out.names[i];
    const std::vector<double> got = testing::floats(out.outputs[i]), exp = testing::floats(want);
    double max_ref = 0, max_err = 0;
    for (size_t k = 0; k < exp.size(); ++k) {
      max_ref = std::max(max_ref, std::fabs(exp[k]));
      max_err = std::max(max_err, std::fabs(got[k] - exp[k]));
    }
    EXPECT_LE(max_err, 1e-4 * std::max(max_ref, 1.0)) << out.names[i] << " at " << dir;
  }
}

struct SizeRead {
  std::string fixture;
  bool padded;  // the dim runs padded up to its buckets (else exact-size buckets)
};
void PrintTo(const SizeRead& c, std::ostream* os) {
  *os << c.fixture;
}

class SizeReads : public ::testing::TestWithParam<std::tuple<SizeRead, std::string>> {};

TEST_P(SizeReads, OneArtifactRunsEveryReferenceSize) {
  const auto& [c, file] = GetParam();
  const fs::path dir = kModels / ("size_reads_" + c.fixture);
  compiler::CompileRequest req;
  req.model = (dir / file).string();
  req.target = "trn1";
  compiler::CompileResult r = compiler::compile_model(req);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_EQ(r.buckets[0].padded, c.padded) << r.buckets[0].not_padded;
  auto model = neuronc::Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  neuronc::Session session(*model);
  ASSERT_TRUE(session.status().is_ok()) << session.status().message();
  for (const fs::path& ref : reference_dirs(dir)) {
    SCOPED_TRACE(ref.string());
    const RunResult out = run_once(session, testing::reference_inputs(*model, ref));
    // No reference size is a bucket: a padded dim runs padded.
    EXPECT_EQ(out.stats.padded, c.padded) << out.stats.entry;
    expect_matches(out, ref);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Patterns, SizeReads,
    ::testing::Combine(::testing::Values(SizeRead{"sym_size", true}, SizeRead{"sym_numel", true},
                                         SizeRead{"sym_stride", true},
                                         SizeRead{"masked_mean", true}, SizeRead{"view_size", true},
                                         SizeRead{"arange_positions", true},
                                         // 1 / sqrt(size): a symbolic float, computed from it.
                                         SizeRead{"softmax_scaled", true},
                                         // sum / size, a mean (padded: a sum over the zero
                                         // padding divided by the run's count); a variance and
                                         // sum((x - mean)^2) / (size - 1), whose padded rows
                                         // would not be zero: exact buckets.
                                         SizeRead{"reduction_divisor", false},
                                         // x.reshape(-1)[x.size(1):]: the flatten interleaves
                                         // the padding: exact buckets.
                                         SizeRead{"sym_storage_offset", false}),
                       ::testing::Values(std::string("model.pt2"), std::string("model_core.pt2"))),
    [](const auto& i) {
      return std::get<0>(i.param).fixture + "_" +
             (std::get<1>(i.param) == "model.pt2" ? "training" : "core");
    });

// Every size of the range, padded in the one artifact, against the same size compiled on its
// own: a symbol value holds the size the run binds, whatever the bucket.
TEST(SizeReadSweep, EverySizeOfTheRangeEqualsItsExactCompile) {
  const fs::path dir = kModels / "size_reads_sym_numel";
  compiler::CompileRequest req;
  req.model = (dir / "model.pt2").string();
  req.target = "trn1";
  compiler::CompileResult r = compiler::compile_model(req);
  auto model = neuronc::Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  neuronc::Session session(*model);
  const NpyArray big = read_npy((dir / "shape_4" / "input_0.npy").string());  // [27, 4]
  for (int64_t n = 2; n <= 27; ++n) {
    SCOPED_TRACE("n " + std::to_string(n));
    NpyArray x = big;
    x.shape[0] = n;
    x.data.resize(static_cast<size_t>(n * 4 * 4));
    const std::vector<std::pair<std::string, NpyArray>> in = {{model->inputs()[0].name, x}};
    const RunResult got = run_once(session, in);
    compiler::CompileRequest one = req;
    one.input_shapes = {{n, 4}};
    auto em = neuronc::Model::load_from_memory(compiler::compile_model(one).artifact);
    ASSERT_TRUE(em.is_ok()) << em.status().message();
    neuronc::Session es(*em);
    const RunResult want = run_once(es, in);
    ASSERT_EQ(got.outputs[0].shape, want.outputs[0].shape);
    EXPECT_EQ(testing::floats(got.outputs[0]), testing::floats(want.outputs[0]));
    // And the value itself: x * numel.
    const std::vector<double> xs = testing::floats(x), ys = testing::floats(got.outputs[0]);
    for (size_t k = 0; k < xs.size(); ++k)
      ASSERT_FLOAT_EQ(static_cast<float>(ys[k]), static_cast<float>(xs[k] * 4.0 * n)) << k;
  }
}

}  // namespace
}  // namespace neuronc::tools
