// `neuronc verify --dataset DIR`: the error distribution and top-1/top-5 agreement over many
// input sets, under each auto-cast mode; a perturbed reference is a mismatch (exit code 3); a
// malformed dataset is an error naming the file. The dataset is built here from models/mlp: set
// "0" is the committed input_0/output_0 (PyTorch's own), the other sets are random inputs whose
// reference outputs come from the host-only compile (compiler.h `host_only`: every operator on
// the loader's host kernels, an implementation independent of codegen's), since CI has no
// PyTorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "tests/tools/fixture_artifacts.h"
#include "tools/eval_dataset.h"
#include "tools/npy.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

namespace fs = std::filesystem;
using testing::fixture_model;
using testing::neuronc;
using testing::Ran;
using testing::run_shell;
using testing::scratch_dir;

// Set names in natural order; sorted as bytes, "10" would come before "2" and "9".
const std::vector<std::string> kSetNames = {"0", "1", "2", "9", "10"};

NpyArray f32_array(std::vector<int64_t> shape, std::mt19937& rng) {
  NpyArray a;
  a.type = NpyType::f32;
  a.shape = std::move(shape);
  a.data.resize(a.numel() * 4);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (size_t i = 0; i < a.numel(); ++i) {
    const float x = u(rng);
    std::memcpy(a.data.data() + 4 * i, &x, 4);
  }
  return a;
}

// The mlp dataset (written once per process): kSetNames, set "0" PyTorch's.
fs::path mlp_dataset() {
  static const fs::path dir = [] {
    const fs::path d = scratch_dir() / "mlp_dataset";
    fs::remove_all(d);
    const fs::path model_dir = fs::path(fixture_model("mlp")).parent_path();
    compiler::CompileRequest req;
    req.model = fixture_model("mlp");
    req.host_only = true;
    const compiler::CompileResult ref = compiler::compile_model(req);
    auto m = neuronc::Model::load_from_memory(ref.artifact);
    EXPECT_TRUE(m.is_ok()) << m.status().message();
    neuronc::Session session(*m);
    std::mt19937 rng(20);
    for (const std::string& name : kSetNames) {
      fs::create_directories(d / name);
      if (name == "0") {
        fs::copy_file(model_dir / "input_0.npy", d / name / "input_0.npy");
        fs::copy_file(model_dir / "output_0.npy", d / name / "output_0.npy");
        continue;
      }
      const NpyArray x = f32_array({4, 16}, rng);
      write_npy((d / name / "input_0.npy").string(), x);
      const RunResult r = run_once(session, {{m->inputs()[0].name, x}});
      write_npy((d / name / "output_0.npy").string(), r.outputs[0]);
    }
    return d;
  }();
  return dir;
}

fs::path copy_dataset(const std::string& name) {
  const fs::path d = scratch_dir() / name;
  fs::remove_all(d);
  fs::copy(mlp_dataset(), d, fs::copy_options::recursive);
  return d;
}

std::string verify_dataset(const fs::path& dir, const std::string& extra = "") {
  return "verify " + fixture_model("mlp") + " --dataset " + dir.string() + " " + extra;
}

TEST(EvalDataset, SetsAreInNaturalOrder) {
  EXPECT_TRUE(natural_less("2", "10"));
  EXPECT_FALSE(natural_less("10", "2"));
  EXPECT_TRUE(natural_less("set2", "set10"));
  EXPECT_TRUE(natural_less("a", "b"));
  EXPECT_TRUE(natural_less("7", "07") != natural_less("07", "7"));  // a strict order
  EXPECT_FALSE(natural_less("5", "5"));
  std::vector<std::string> names;
  for (const ReferenceSet& s : list_dataset(mlp_dataset().string())) names.push_back(s.name);
  EXPECT_EQ(names, kSetNames);
}

NpyArray rows_of(const std::vector<std::vector<float>>& rows) {
  NpyArray a;
  a.shape = {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())};
  for (const auto& r : rows)
    for (float x : r) {
      const auto* b = reinterpret_cast<const std::byte*>(&x);
      a.data.insert(a.data.end(), b, b + 4);
    }
  return a;
}

// Top-1: the first largest logit, as torch.argmax (NaN counts as largest); top-5: PyTorch's
// class among the row's 5 largest, ties to the lower index.
TEST(EvalDataset, TopKAgreementFollowsArgmax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const NpyArray want = rows_of({{0, 9, 1, 2, 3, 4, 5, 6},      // class 1
                                 {7, 1, 7, 0, 0, 0, 0, 0},      // tie: class 0
                                 {0, 0, 0, 0, 0, 0, 0, 1},      // class 7
                                 {0, 1, nan, 2, 0, 0, 0, 0}});  // NaN: class 2
  const NpyArray got = rows_of({{0, 9, 1, 2, 3, 4, 5, 6},       // agrees
                                {6, 1, 7, 0, 0, 0, 0, 0},       // class 2: top-1 no, top-5 yes
                                {5, 4, 3, 2, 1, 0, 0, 0},       // top-5 is 0..4: no
                                {0, 1, nan, 2, 0, 0, 0, 0}});   // agrees
  ASSERT_TRUE(is_classifier_shaped(got));
  TopKAgreement a;
  count_top_k_agreement(got, want, a);
  EXPECT_EQ(a.rows, 4u);
  EXPECT_EQ(a.classes, 8u);
  EXPECT_EQ(a.top1, 2u);
  EXPECT_EQ(a.top5, 3u);
  // Row 2 with its class 7 tied at the 5th largest value: the lower indices win the tie.
  TopKAgreement tie;
  count_top_k_agreement(rows_of({{5, 4, 3, 2, 1, 1, 1, 1}}), rows_of({{0, 0, 0, 0, 0, 0, 0, 1}}),
                        tie);
  EXPECT_EQ(tie.top5, 0u);
  TopKAgreement fifth;
  count_top_k_agreement(rows_of({{5, 4, 3, 2, 0, 0, 0, 1}}), rows_of({{0, 0, 0, 0, 0, 0, 0, 1}}),
                        fifth);
  EXPECT_EQ(fifth.top5, 1u);
  NpyArray ids = rows_of({{1, 2}});
  ids.type = NpyType::i32;
  EXPECT_FALSE(is_classifier_shaped(ids));
  EXPECT_FALSE(is_classifier_shaped(rows_of({{1}})));
}

TEST(VerifyDataset, ReportsTheDistributionUnderEachAutoCastMode) {
  const Ran r = neuronc(verify_dataset(mlp_dataset(), "--auto-cast none,matmul --json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sets"], kSetNames.size());
  EXPECT_EQ(j["set_names"].get<std::vector<std::string>>(), kSetNames);
  EXPECT_TRUE(j["pass"].get<bool>());
  ASSERT_EQ(j["modes"].size(), 2u);
  EXPECT_EQ(j["modes"][0]["auto_cast"], "none");
  EXPECT_EQ(j["modes"][1]["auto_cast"], "matmul");
  double max_rel[2];
  for (int k = 0; k < 2; ++k) {
    const auto& out = j["modes"][k]["outputs"];
    ASSERT_EQ(out.size(), 1u);
    const auto& o = out[0];
    EXPECT_EQ(o["shape"], nlohmann::json::array({4, 8}));
    EXPECT_EQ(o["sets_failed"], 0);
    EXPECT_TRUE(o["first_failed_set"].is_null());
    const auto& rel = o["max_rel_error"];
    max_rel[k] = rel["max"].get<double>();
    EXPECT_GE(rel["max"].get<double>(), rel["p99"].get<double>());
    EXPECT_GE(rel["max"].get<double>(), rel["mean"].get<double>());
    EXPECT_GT(rel["mean"].get<double>(), 0);  // the device model is not the reference
    EXPECT_LE(o["cosine"]["min"].get<double>(), o["cosine"]["mean"].get<double>());
    EXPECT_GT(o["cosine"]["min"].get<double>(), 0.999);
    // [4, 8] logits: classifier-shaped, 4 rows per set, 8 classes (> 5: top-5 is reported).
    EXPECT_EQ(o["agreement"]["rows"], 4 * kSetNames.size());
    EXPECT_EQ(o["agreement"]["classes"], 8);
    EXPECT_DOUBLE_EQ(o["agreement"]["top5"].get<double>(), 1.0);
  }
  EXPECT_DOUBLE_EQ(j["modes"][0]["outputs"][0]["agreement"]["top1"].get<double>(), 1.0);
  EXPECT_TRUE(j["modes"][0]["outputs"][0]["tolerance"]["min_cosine"].is_null());
  EXPECT_DOUBLE_EQ(j["modes"][1]["outputs"][0]["tolerance"]["min_cosine"].get<double>(), 0.999);
  EXPECT_GT(max_rel[1], max_rel[0]);  // bf16 operands change the result more than fp32

  // Set "0" alone is plain verify's reference: its max relative error is within the dataset's.
  const Ran one = neuronc("verify " + fixture_model("mlp") + " --json");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_LE(nlohmann::json::parse(one.out)["outputs"][0]["max_rel_error"].get<double>(),
            max_rel[0]);

  const Ran text = neuronc(verify_dataset(mlp_dataset(), "--auto-cast none"));
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("5 sets (0 .. 10)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0/5"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("100.0%"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("match: every output of every set"), std::string::npos) << text.out;
}

// Row 0 of set "2"'s reference gets its largest and smallest logits swapped: that set fails,
// the others do not, and one row of 20 no longer agrees on the class.
TEST(VerifyDataset, APerturbedReferenceIsAMismatch) {
  const fs::path d = copy_dataset("mlp_dataset_perturbed");
  const std::string f = (d / "2" / "output_0.npy").string();
  NpyArray a = read_npy(f);
  float* row = reinterpret_cast<float*>(a.data.data());
  std::swap(*std::max_element(row, row + 8), *std::min_element(row, row + 8));
  write_npy(f, a);
  const Ran r = neuronc(verify_dataset(d, "--auto-cast none,matmul --json"));
  EXPECT_EQ(r.code, 3) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["pass"].get<bool>());
  for (const auto& mode : j["modes"]) {
    const auto& o = mode["outputs"][0];
    EXPECT_FALSE(mode["pass"].get<bool>());
    EXPECT_EQ(o["sets_failed"], 1);
    EXPECT_EQ(o["first_failed_set"], "2");
    EXPECT_GT(o["max_rel_error"]["max"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(o["agreement"]["top1"].get<double>(), 19.0 / 20.0);
    EXPECT_LT(o["cosine"]["min"].get<double>(), 0.999);
  }
  const Ran text = neuronc(verify_dataset(d));
  EXPECT_EQ(text.code, 3);
  EXPECT_NE(text.out.find("MISMATCH"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("first failing set 2"), std::string::npos) << text.out;
}

// `compare --dataset` measures quality with the same code: its row's figures are verify
// --dataset's for the same target and mode, and a perturbed set shows as outside the tolerance
// (a finding in the row, not an exit code).
TEST(VerifyDataset, CompareMeasuresTheSameQualityOverTheDataset) {
  const std::string compare = "compare " + fixture_model("mlp") +
                              " --targets trn1 --auto-cast none --iterations 1 --json --dataset ";
  const Ran v = neuronc(verify_dataset(mlp_dataset(), "--auto-cast none --json"));
  const Ran c = neuronc(compare + mlp_dataset().string());
  ASSERT_EQ(v.code, 0) << v.out;
  ASSERT_EQ(c.code, 0) << c.out;
  const auto vo = nlohmann::json::parse(v.out)["modes"][0]["outputs"];
  const auto cj = nlohmann::json::parse(c.out);
  EXPECT_EQ(cj["quality_reference"]["kind"], "dataset");
  EXPECT_EQ(cj["quality_reference"]["sets"], kSetNames.size());
  const auto q = cj["rows"][0]["quality"];
  EXPECT_EQ(q["sets"], kSetNames.size());
  EXPECT_TRUE(q["pass"].get<bool>());
  EXPECT_EQ(q["outputs"], vo);
  EXPECT_EQ(q["max_rel_error"], vo[0]["max_rel_error"]["max"]);
  EXPECT_EQ(q["min_cosine"], vo[0]["cosine"]["min"]);
  EXPECT_EQ(q["top1_agreement"], vo[0]["agreement"]["top1"]);

  const fs::path d = copy_dataset("mlp_dataset_perturbed_for_compare");
  const std::string f = (d / "1" / "output_0.npy").string();
  NpyArray a = read_npy(f);
  float* row = reinterpret_cast<float*>(a.data.data());
  std::swap(*std::max_element(row, row + 8), *std::min_element(row, row + 8));
  write_npy(f, a);
  const Ran p = neuronc(compare + d.string());
  ASSERT_EQ(p.code, 0) << p.out;
  const auto pq = nlohmann::json::parse(p.out)["rows"][0]["quality"];
  EXPECT_FALSE(pq["pass"].get<bool>());
  EXPECT_DOUBLE_EQ(pq["top1_agreement"].get<double>(), 19.0 / 20.0);
  EXPECT_EQ(pq["outputs"][0]["first_failed_set"], "1");
}

// Runs verify --dataset on `dir` and returns stderr + stdout; expects exit code 1.
std::string malformed(const fs::path& dir) {
  const Ran r = run_shell(std::string(NEURONC_BINARY_DIR) + "/tools/neuronc " + verify_dataset(dir),
                          /*with_stderr=*/true);
  EXPECT_EQ(r.code, 1) << r.out;
  return r.out;
}

TEST(VerifyDataset, MalformedDatasetsNameTheFile) {
  const fs::path empty = scratch_dir() / "empty_dataset";
  fs::create_directories(empty);
  EXPECT_NE(malformed(empty).find("has no subdirectories"), std::string::npos);
  EXPECT_NE(malformed(scratch_dir() / "no_such_dataset").find("does not exist"), std::string::npos);

  fs::path d = copy_dataset("mlp_dataset_no_output");
  fs::remove(d / "9" / "output_0.npy");
  EXPECT_NE(malformed(d).find((d / "9" / "output_0.npy").string() + " is missing"),
            std::string::npos);

  d = copy_dataset("mlp_dataset_bad_shape");
  std::mt19937 rng(1);
  write_npy((d / "10" / "input_0.npy").string(), f32_array({2, 16}, rng));
  std::string err = malformed(d);
  EXPECT_NE(err.find((d / "10" / "input_0.npy").string() +
                     ": shape [2, 16] does not fit the model's input 'x', f32[4, 16]"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("dim 0 is 2, expected 4"), std::string::npos) << err;

  d = copy_dataset("mlp_dataset_bad_output");
  write_npy((d / "1" / "output_0.npy").string(), f32_array({4, 9}, rng));
  err = malformed(d);
  EXPECT_NE(err.find((d / "1" / "output_0.npy").string() + ": shape [4, 9] does not fit"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("dim 1 is 9, expected 8"), std::string::npos) << err;

  d = copy_dataset("mlp_dataset_extra_input");
  for (const std::string& name : kSetNames)
    fs::copy_file(d / name / "input_0.npy", d / name / "input_1.npy");
  err = malformed(d);
  EXPECT_NE(err.find((d / "0" / "input_1.npy").string() + ": the model takes 1 input (x)"),
            std::string::npos)
      << err;

  d = copy_dataset("mlp_dataset_uneven");
  fs::copy_file(d / "2" / "input_0.npy", d / "2" / "input_1.npy");
  err = malformed(d);
  EXPECT_NE(err.find((d / "2" / "input_1.npy").string() + " is one input too many"),
            std::string::npos)
      << err;
}

TEST(VerifyDataset, AnAutoCastListNeedsADataset) {
  EXPECT_EQ(neuronc("verify " + fixture_model("mlp") + " --auto-cast none,matmul").code, 2);
  EXPECT_EQ(neuronc("verify " + fixture_model("mlp") + " --auto-cast fp8").code, 2);
  EXPECT_EQ(neuronc(verify_dataset(mlp_dataset(), "--auto-cast none,none")).code, 2);
  EXPECT_EQ(neuronc(verify_dataset(mlp_dataset(), "--reference " + mlp_dataset().string())).code,
            2);
}

}  // namespace
}  // namespace neuronc::tools
