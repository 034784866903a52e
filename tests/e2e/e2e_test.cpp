// Compile -> artifact -> loader -> device model -> compare with PyTorch, per fixture, target
// and auto-cast mode. Tolerances (issue 7): with --auto-cast none, max abs error <= 1e-4 x max
// |reference| per output; with --auto-cast matmul, cosine similarity >= 0.999.
#include <gtest/gtest.h>
#include <neuronc/model.h>
#include <neuronc/session.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compiler/compiler.h"
#include "tools/cli_output.h"
#include "tools/npy.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

namespace fs = std::filesystem;

fs::path fixture_dir(const std::string& name) {
  return fs::path(NEURONC_SOURCE_DIR) / "models" / name;
}

std::vector<double> values(const NpyArray& a) {
  std::vector<double> v(a.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    const std::byte* p = a.data.data() + i * npy_type_size(a.type);
    switch (a.type) {
      case NpyType::f32: {
        float x;
        std::memcpy(&x, p, 4);
        v[i] = x;
        break;
      }
      case NpyType::f64: {
        double x;
        std::memcpy(&x, p, 8);
        v[i] = x;
        break;
      }
      case NpyType::i64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        v[i] = static_cast<double>(x);
        break;
      }
      case NpyType::i32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        v[i] = x;
        break;
      }
      case NpyType::bf16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        v[i] = std::bit_cast<float>(uint32_t{x} << 16);
        break;
      }
      case NpyType::boolean:
      case NpyType::u8:
        v[i] = static_cast<double>(static_cast<uint8_t>(*p));
        break;
      default:
        ADD_FAILURE() << "unexpected output dtype " << npy_type_name(a.type);
    }
  }
  return v;
}

// Repeats the rows (dim 0) of `a` cyclically to `rows` rows.
NpyArray tile_rows(const NpyArray& a, int64_t rows) {
  NpyArray out = a;
  const size_t row_bytes = a.data.size() / static_cast<size_t>(a.shape[0]);
  out.shape[0] = rows;
  out.data.resize(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(out.data.data() + r * row_bytes, a.data.data() + (r % a.shape[0]) * row_bytes,
                row_bytes);
  }
  return out;
}

struct Case {
  std::string fixture;
  std::string target;
  passes::AutoCastMode cast;
  int64_t batch = 0;  // dynamic_batch: the bound to compile and run at (0: the sample's)
  std::string file = "model.pt2";  // or model_core.pt2 (the core-ATen export)
  int opt_level = 2;
  std::string shape = "";  // a dynamic fixture's reference at another shape (shape_<k>), else ""
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.fixture << " " << c.target << " auto-cast " << passes::auto_cast_name(c.cast);
  if (c.batch) *os << " batch " << c.batch;
  if (c.file != "model.pt2") *os << " " << c.file;
  if (c.opt_level != 2) *os << " -O" << c.opt_level;
  if (!c.shape.empty()) *os << " " << c.shape;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s =
      info.param.fixture + "_" + info.param.target + "_" + passes::auto_cast_name(info.param.cast);
  if (info.param.batch) s += "_batch" + std::to_string(info.param.batch);
  if (info.param.file == "model_core.pt2") s += "_core";
  if (info.param.opt_level != 2) s += "_O" + std::to_string(info.param.opt_level);
  if (!info.param.shape.empty()) s += "_" + info.param.shape;
  return s;
}

class EndToEnd : public ::testing::TestWithParam<Case> {};

void flatten(const nlohmann::json& j, std::vector<double>& out);
// Fails unless `got` matches `exp` to the fixture's tolerance (issue 7, above).
// A 16-bit float output (`sixteen_bit`) is held to the bf16 criterion, as under auto-cast.
void expect_close(const Case& c, const std::string& name, const std::vector<double>& got,
                  const std::vector<double>& exp, bool sixteen_bit);

TEST_P(EndToEnd, MatchesPyTorch) {
  const Case& c = GetParam();
  const fs::path dir = fixture_dir(c.fixture) / c.shape;
  compiler::CompileRequest req;
  req.model = (fixture_dir(c.fixture) / c.file).string();
  // The symbolic dims follow the reference's inputs (the sample's, or another shape's).
  for (int i = 0; fs::exists(dir / ("input_" + std::to_string(i) + ".npy")); ++i)
    req.input_shapes.push_back(
        read_npy((dir / ("input_" + std::to_string(i) + ".npy")).string()).shape);
  req.target = c.target;
  req.auto_cast = c.cast;
  req.opt_level = c.opt_level;
  if (c.batch) {
    std::ifstream in(fixture_dir(c.fixture) / "meta.json");
    const nlohmann::json meta = nlohmann::json::parse(in);
    ASSERT_EQ(meta["range_constraints"].size(), 1u);
    // Not `*items().begin()`: that binds to a proxy that dies at the end of the statement
    // (ASan: stack-use-after-scope).
    const auto first = meta["range_constraints"].begin();
    const std::string sym = first.key();
    const nlohmann::json& range = first.value();
    EXPECT_TRUE(c.batch == range[0].get<int64_t>() || c.batch == range[1].get<int64_t>());
    req.dims[sym] = c.batch;
  }
  compiler::CompileResult compiled = compiler::compile_model(req);
  auto model = neuronc::Model::load_from_memory(compiled.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();

  std::vector<std::pair<std::string, NpyArray>> inputs;
  for (size_t i = 0; i < model->inputs().size(); ++i) {
    NpyArray a = read_npy((dir / ("input_" + std::to_string(i) + ".npy")).string());
    if (c.batch) a = tile_rows(a, c.batch);
    inputs.emplace_back(model->inputs()[i].name, as_input(model->inputs()[i], std::move(a)));
  }
  neuronc::Session session(*model);
  ASSERT_TRUE(session.status().is_ok()) << session.status().message();
  RunResult r = run_once(session, inputs);
  EXPECT_GT(r.stats.device_ns, 0);

  size_t compared = 0;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const fs::path ref = dir / ("output_" + std::to_string(i) + ".npy");
    if (!fs::exists(ref)) break;
    NpyArray want = read_npy(ref.string());
    if (c.batch) want = tile_rows(want, c.batch);
    ASSERT_EQ(r.outputs[i].shape, want.shape) << r.names[i];
    expect_close(c, r.names[i], values(r.outputs[i]), values(want),
                 r.outputs[i].type == NpyType::bf16 || r.outputs[i].type == NpyType::f16);
    ++compared;
  }
  EXPECT_GT(compared, 0u) << "no reference outputs in " << dir;

  // Buffers the call writes (both IRs: the training IR writes them in place, core ATen returns
  // them): each is Session state named after the buffer, holding what eager PyTorch left in it,
  // and not an output.
  std::ifstream in(fixture_dir(c.fixture) / "meta.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  if (!meta.contains("mutated_buffers") || c.batch || !c.shape.empty()) return;
  for (const nlohmann::json& b : meta["mutated_buffers"]) {
    const std::string target = b["target"].get<std::string>();
    EXPECT_EQ(std::find(r.names.begin(), r.names.end(), target), r.names.end()) << target;
    const neuronc::Tensor* state = session.state(target);
    ASSERT_NE(state, nullptr) << "buffer " << target << " is not session state";
    std::vector<double> want;
    flatten(b["after"], want);
    const NpyArray got = npy_of(*state);
    expect_close(c, target, values(got), want, got.type == NpyType::bf16);
  }
}

void flatten(const nlohmann::json& j, std::vector<double>& out) {
  if (!j.is_array()) {
    out.push_back(j.get<double>());
    return;
  }
  for (const nlohmann::json& e : j) flatten(e, out);
}

void expect_close(const Case& c, const std::string& name, const std::vector<double>& got,
                  const std::vector<double>& exp, bool sixteen_bit) {
  ASSERT_EQ(got.size(), exp.size()) << name;
  {
    double max_ref = 0, max_err = 0, dot = 0, ng = 0, ne = 0;
    for (size_t k = 0; k < exp.size(); ++k) {
      max_ref = std::max(max_ref, std::fabs(exp[k]));
      max_err = std::max(max_err, std::fabs(got[k] - exp[k]));
      dot += got[k] * exp[k];
      ng += got[k] * got[k];
      ne += exp[k] * exp[k];
    }
    if (c.cast == passes::AutoCastMode::none && !sixteen_bit) {
      EXPECT_LE(max_err, 1e-4 * max_ref) << c.fixture << " output " << name << ": max abs error "
                                         << max_err << ", max |reference| " << max_ref;
    } else {
      const double cosine = ng > 0 && ne > 0 ? dot / std::sqrt(ng * ne) : (ng == ne ? 1.0 : 0.0);
      EXPECT_GE(cosine, 0.999) << c.fixture << " output " << name;
    }
  }
}

// A token id outside the vocabulary stops the run before it starts, naming the input, the
// element, the value and the table (PyTorch raises there too); it never yields silent zeros or
// a wrapped row. 2^32 + 3 is the case that mattered: narrowed to 32 bits for the device it
// would have been row 3. The attention mask, narrowed to 32 bits, may not leave them.
TEST(EndToEndErrors, TokenIdOutsideTheVocabularyIsReported) {
  const fs::path dir = fixture_dir("bert");
  compiler::CompileRequest req;
  req.model = (dir / "model.pt2").string();
  req.target = "trn1";
  compiler::CompileResult compiled = compiler::compile_model(req);
  auto model = neuronc::Model::load_from_memory(compiled.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  ASSERT_TRUE(model->inputs()[0].valid_range.has_value());
  EXPECT_EQ(model->inputs()[0].valid_range->lo, 0);
  EXPECT_EQ(model->inputs()[0].valid_range->hi, 128);
  std::vector<std::pair<std::string, NpyArray>> inputs;
  for (size_t i = 0; i < model->inputs().size(); ++i)
    inputs.emplace_back(model->inputs()[i].name,
                        read_npy((dir / ("input_" + std::to_string(i) + ".npy")).string()));
  ASSERT_EQ(inputs[0].second.type, NpyType::i64);
  neuronc::Session session(*model);
  ASSERT_TRUE(session.status().is_ok()) << session.status().message();
  const auto good = inputs;
  const struct {
    size_t input;
    int64_t element;
    int64_t value;
    const char* expect;
  } cases[] = {
      {0, 3, 500,
       "input 'input_ids': element [0, 3] is 500, outside [0, 128), the rows of embedding table "
       "'bert.embeddings.word_embeddings.weight' (node 'embedding')"},
      {0, 12, -5, "input 'input_ids': element [1, 2] is -5, outside [0, 128)"},
      {0, 1, (int64_t{1} << 32) + 3, "input 'input_ids': element [0, 1] is 4294967299"},
      {1, 4, int64_t{1} << 31,
       "input 'attention_mask': element [0, 4] is 2147483648, outside [-2147483648, 2147483648), "
       "the 32-bit integers the NeuronCore computes this input in"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expect);
    inputs = good;
    std::memcpy(inputs[c.input].second.data.data() + c.element * 8, &c.value, 8);
    try {
      run_once(session, inputs);
      FAIL() << "an input outside its valid range ran";
    } catch (const CommandExit& e) {
      EXPECT_NE(e.message.find(c.expect), std::string::npos) << e.message;
    }
  }
  EXPECT_NO_THROW(run_once(session, good));  // the session is still usable
}

// -O0 fuses nothing: more kernels, so more instructions, than -O1 on a model with fusible
// chains; each level's artifact differs (it records the level).
TEST(EndToEndOptLevels, ZeroFusesNothing) {
  std::vector<std::vector<std::byte>> artifacts;
  std::vector<uint64_t> instructions;
  for (int o : {0, 1}) {
    compiler::CompileRequest req;
    req.model = (fixture_dir("bert") / "model.pt2").string();
    req.target = "trn1";
    req.opt_level = o;
    compiler::CompileResult r = compiler::compile_model(req);
    uint64_t n = 0;
    for (const compiler::PartitionReport& p : r.partitions) n += p.instructions;
    instructions.push_back(n);
    artifacts.push_back(std::move(r.artifact));
  }
  EXPECT_GT(instructions[0], instructions[1]);
  EXPECT_NE(artifacts[0], artifacts[1]);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* f : {"mlp", "transformer_encoder", "bert", "gpt2", "llama", "vit",
                        "dynamic_batch", "fallback", "buffers", "cnn", "vision_extras", "aliasing",
                        "bart", "bert_dynamic", "mlp_bf16", "ops_coverage"}) {
    for (const char* t : {"trn1", "trn2", "trn3"}) {
      for (passes::AutoCastMode m : {passes::AutoCastMode::none, passes::AutoCastMode::matmul}) {
        out.push_back({f, t, m, 0});
      }
    }
  }
  // The dynamic-batch model at the bounds of its batch range.
  for (int64_t b : {int64_t{1}, int64_t{64}})
    out.push_back({"dynamic_batch", "trn1", passes::AutoCastMode::none, b});
  // Core ATen spells padding as index/clamp/slice_scatter and weight norm as arithmetic.
  // A dynamic BERT (batch [1, 16], seq [8, 128]) at its other reference shapes, both IRs.
  for (const char* shape : {"shape_1", "shape_2"})
    for (const char* file : {"model.pt2", "model_core.pt2"})
      for (passes::AutoCastMode m : {passes::AutoCastMode::none, passes::AutoCastMode::matmul})
        out.push_back({"bert_dynamic", "trn1", m, 0, file, 2, shape});
  // Core ATen spells writes through views as slice_scatter and where (training IR: copy_,
  // fill_, masked_fill_ of views, functionalized by neuronc).
  for (const char* f :
       {"cnn", "vision_extras", "aliasing", "bart", "buffers", "bert_dynamic", "ops_coverage"})
    for (passes::AutoCastMode m : {passes::AutoCastMode::none, passes::AutoCastMode::matmul})
      out.push_back({f, "trn1", m, 0, "model_core.pt2"});
  // Every optimisation level verifies (-O2 above).
  for (const char* f :
       {"mlp", "transformer_encoder", "bert", "gpt2", "llama", "vit", "dynamic_batch", "fallback",
        "buffers", "cnn", "vision_extras", "aliasing", "bart"})
    for (int o : {0, 1, 3})
      out.push_back({f, "trn1", passes::AutoCastMode::matmul, 0, "model.pt2", o});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EndToEnd, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace neuronc::tools
