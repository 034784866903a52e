// load_program end to end: the real ExecuTorch PT2 fixture, and every model of the zoo under
// models/ checked against the meta.json PyTorch wrote next to it (ops, signature, shapes,
// parameter counts, sample inputs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "frontend/container.h"
#include "frontend/load.h"
#include "frontend/mapped_file.h"
#include "frontend/sha256.h"
#include "frontend/tensor_view.h"

namespace neuronc::frontend {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

const std::string kSource = NEURONC_SOURCE_DIR;
std::string fixture_path() {
  return kSource + "/tests/corpus/frontend/executorch_linear.pt2";
}

int64_t static_numel(const ir::Shape& s) {
  int64_t n = 1;
  for (const auto& d : s) n *= d.is_constant() ? d.value() : 0;
  return n;
}

TEST(LoadProgram, ExecuTorchLinearFixture) {
  LoadedProgram p = load_program(fixture_path());
  EXPECT_EQ(p.container, "pt2_archive");
  EXPECT_EQ(p.torch_version, "2.9.0a0+fb");
  EXPECT_EQ(p.schema_major, 8);
  EXPECT_EQ(p.schema_minor, 12);
  EXPECT_EQ(p.sha256.get(), "17619460a5f1274fe80eccc5377b1bb1e2e35916c78b96d0e6cf2fc98c8e35df");
  const ir::Graph& g = *p.graph;
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op(), "aten.linear.default");
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.inputs()[0].role, ir::InputRole::parameter);
  EXPECT_EQ(g.inputs()[0].target, "linear.weight");
  EXPECT_EQ(g.type_to_string(g.inputs()[0].value->type()), "f32[3, 3]");
  EXPECT_EQ(g.inputs()[1].target, "linear.bias");
  EXPECT_EQ(g.inputs()[2].role, ir::InputRole::user_input);
  // Zero-copy: weight_0's payload starts at byte 64 of the mapped file, weight_1's at 192.
  const ir::ConstantPayload* w = g.inputs()[0].value->payload();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->data, p.file->data() + 64);
  EXPECT_EQ(w->nbytes, 36u);
  EXPECT_EQ(w->strides, (std::vector<int64_t>{3, 1}));
  const ir::ConstantPayload* b = g.inputs()[1].value->payload();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->data, p.file->data() + 192);
  EXPECT_EQ(b->nbytes, 12u);
  EXPECT_EQ(g.inputs()[2].value->payload(), nullptr);
  // The sample input: one f32[3] tensor for x.
  ASSERT_EQ(p.sample_inputs.size(), 1u);
  EXPECT_EQ(p.sample_inputs[0].name, "x");
  EXPECT_EQ(p.sample_inputs[0].dtype, ir::DType::f32);
  EXPECT_EQ(p.sample_inputs[0].shape, std::vector<int64_t>{3});
  EXPECT_EQ(p.sample_inputs[0].bytes.size(), 12u);
  EXPECT_GT(g.nodes()[0]->location().line, 0);
  EXPECT_THAT(g.nodes()[0]->location().stack_trace, HasSubstr("test_serialize.py\", line 694"));
  EXPECT_EQ(g.nodes()[0]->location().module_path, "linear");
}

TEST(LoadProgram, ContainerDetectionByContent) {
  auto f = MappedFile::open(fixture_path());
  EXPECT_EQ(detect_container(f->bytes()), ContainerKind::pt2_archive);
  std::string junk = "not a zip at all";
  EXPECT_EQ(detect_container(std::as_bytes(std::span<const char>(junk.data(), junk.size()))),
            ContainerKind::unknown);
}

TEST(LoadProgram, MissingFileAndNotZip) {
  try {
    load_program("/nonexistent/model.pt2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/model.pt2: cannot open"));
  }
  std::string txt = "hello world, definitely not a zip archive";
  auto f = MappedFile::from_bytes(std::as_bytes(std::span<const char>(txt.data(), txt.size())),
                                  "notes.pt2");
  try {
    load_program(f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("notes.pt2: not a PyTorch program: not a zip archive"));
  }
}

// The file is hashed from the moment it is opened, beside the parse: a parse that fails reports
// its own error (not the stopped hash's), and a file that parses gets the digest of its bytes.
TEST(LoadProgram, ParseErrorOfAFileBeingHashedIsTheParseError) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("neuronc_hash_parse_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "garbage.pt2").string();
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(size_t{1} << 20, 'x');  // 24 MiB: several of the hash's reads
    for (int i = 0; i < 24; ++i) out << block;
  }
  try {
    load_program(path);
    FAIL() << "a file of 'x' loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("garbage.pt2: not a PyTorch program: not a zip archive"));
    EXPECT_THAT(e.what(), Not(HasSubstr("hashing")));
  }
  std::filesystem::remove_all(dir);

  LoadedProgram p = load_program(fixture_path());
  EXPECT_EQ(p.sha256.get(), file_sha256(*MappedFile::open(fixture_path())));
}

// --- the zoo ---------------------------------------------------------------------------------

struct ZooCase {
  std::string dir;   // models/<name> or models/<name>/torch2.6
  std::string file;  // model.pt2, model_core.pt2
};
// Printed by name in test listings (gtest prints raw bytes otherwise).
void PrintTo(const ZooCase& c, std::ostream* os) {
  const std::string root = std::string(NEURONC_SOURCE_DIR) + "/";
  *os << (c.dir.rfind(root, 0) == 0 ? c.dir.substr(root.size()) : c.dir) << "/" << c.file;
}

std::vector<ZooCase> zoo_cases() {
  std::vector<ZooCase> out;
  fs::path models = kSource + "/models";
  if (!fs::exists(models)) return out;
  std::vector<fs::path> metas;
  for (const auto& e : fs::recursive_directory_iterator(models)) {
    if (e.path().filename() == "meta.json" &&
        e.path().string().find("/full/") == std::string::npos) {
      metas.push_back(e.path());
    }
  }
  std::sort(metas.begin(), metas.end());
  for (const auto& m : metas) {
    std::ifstream in(m);
    nlohmann::json j = nlohmann::json::parse(in);
    if (!j.contains("container")) continue;
    for (auto it = j["container"].begin(); it != j["container"].end(); ++it) {
      out.push_back({m.parent_path().string(), it.key()});
    }
  }
  return out;
}

bool dropped_target(const std::string& t) {
  return t == "torch.ops.aten.sym_size.int" || t == "torch.ops.aten.sym_numel.default" ||
         t == "torch.ops.aten.sym_stride.int" || t == "torch.ops.aten.sym_storage_offset.default" ||
         t.starts_with("torch.ops.higher_order.") || t.starts_with("_operator.") ||
         t.starts_with("torch.sym_") || t.starts_with("torch._sym_") || t.starts_with("math.") ||
         t == "torch.ops.aten._assert_scalar.default" ||
         t == "torch.ops.aten.sym_constrain_range_for_size.default";
}

std::string dtype_of_npy_name(const std::string& n) {
  static const std::map<std::string, std::string> m = {{"float32", "f32"}, {"int64", "i64"},
                                                       {"float16", "f16"}, {"bfloat16", "bf16"},
                                                       {"bool", "bool"},   {"int32", "i32"}};
  auto it = m.find(n);
  return it == m.end() ? n : it->second;
}

class Zoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(Zoo, LoadsAndMatchesMeta) {
  const ZooCase& c = GetParam();
  std::ifstream in(c.dir + "/meta.json");
  nlohmann::json meta = nlohmann::json::parse(in);
  std::string path = c.dir + "/" + c.file;
  LoadedProgram p = load_program(path);
  const ir::Graph& g = *p.graph;
  const auto& ser = meta["serialized"][c.file];
  EXPECT_EQ(p.torch_version, ser["torch_version"].get<std::string>());
  std::string sv = ser["schema_version"].get<std::string>();
  EXPECT_EQ(std::to_string(p.schema_major) + "." + std::to_string(p.schema_minor), sv);
  EXPECT_EQ(p.container,
            meta["container"][c.file] == "legacy-zip" ? "legacy_export_zip" : "pt2_archive");

  // Ops: every serialized node is in the IR except symbolic-int ops, checks and HOP wrappers
  // (whose subgraph nodes are inlined instead).
  size_t expected = 0;
  bool has_hop = false;
  for (auto it = meta["ops"][c.file].begin(); it != meta["ops"][c.file].end(); ++it) {
    if (it.key().starts_with("torch.ops.higher_order.")) has_hop = true;
    if (!dropped_target(it.key())) expected += it.value().get<size_t>();
  }
  // Python numbers passed where a Tensor is expected become scalar_tensor nodes of their own
  // (frontend: wrapped numbers), one per such argument.
  size_t wrapped = 0;
  for (const auto& n : g.nodes())
    if (n->op() == "aten.scalar_tensor.default" && n->name().ends_with("_scalar")) ++wrapped;
  // Symbolic arithmetic a dim cannot hold (s - 1, 1 / sqrt(s)) becomes nodes over the symbol
  // inputs (frontend: symbolic_op), one per operation: those whose operands all derive from
  // symbol inputs.
  std::set<const ir::Value*> symbolic;
  for (const ir::GraphInput& in : g.inputs())
    if (in.role == ir::InputRole::symbol) symbolic.insert(in.value);
  for (const auto& n : g.nodes()) {
    bool all = !n->inputs().empty();
    for (const ir::Value* v : n->inputs()) all &= v && symbolic.count(v);
    if (all) {
      symbolic.insert(n->output());
      ++wrapped;
    }
  }
  if (has_hop) {
    EXPECT_GE(g.nodes().size(), expected + wrapped);
  } else {
    EXPECT_EQ(g.nodes().size(), expected + wrapped);
  }
  if (c.dir.ends_with("vision_extras") && c.file == "model_core.pt2") {
    EXPECT_EQ(wrapped, 4u);  // sub.Tensor(8, abs) and friends of the reflect padding
  }
  std::map<std::string, size_t> actual;
  for (const auto& n : g.nodes()) ++actual["torch.ops." + n->op()];
  for (auto it = meta["ops"][c.file].begin(); it != meta["ops"][c.file].end(); ++it) {
    if (dropped_target(it.key()) || it.key().ends_with(".Tensor")) continue;  // .Tensor may
    EXPECT_GE(actual[it.key()], it.value().get<size_t>()) << it.key();        // become .Scalar
  }

  // Signature: roles and targets in order.
  const auto& sig = meta["signature"][c.file];
  size_t k = 0;
  for (const auto& s : sig["inputs"]) {
    std::string kind = s["kind"];
    if (kind == "TOKEN" || kind == "CONSTANT_INPUT") continue;
    ASSERT_LT(k, g.inputs().size());
    const ir::GraphInput& in = g.inputs()[k++];
    EXPECT_EQ(in.value->name(), s["name"].get<std::string>());
    if (!s["target"].is_null()) {
      EXPECT_EQ(in.target, s["target"].get<std::string>());
    }
    if (kind == "PARAMETER") {
      EXPECT_EQ(in.role, ir::InputRole::parameter);
    }
    if (kind == "BUFFER") {
      EXPECT_EQ(in.role, ir::InputRole::buffer);
    }
    if (kind == "USER_INPUT") {
      EXPECT_EQ(in.role, ir::InputRole::user_input);
    }
    if (in.role != ir::InputRole::user_input) {
      EXPECT_NE(in.value->payload(), nullptr) << in.target;
    }
  }
  // Then the symbol inputs the frontend adds for symbolic arithmetic (s - 1, 1 / sqrt(s)): one
  // per symbol, naming it, with no payload (the loader binds the run's size).
  for (; k < g.inputs().size(); ++k) {
    const ir::GraphInput& in = g.inputs()[k];
    EXPECT_EQ(in.role, ir::InputRole::symbol) << in.value->name();
    EXPECT_TRUE(g.find_symbol(in.target).has_value()) << in.target;
    EXPECT_EQ(in.value->payload(), nullptr) << in.value->name();
  }
  size_t user_outputs = 0;
  for (const auto& o : g.outputs()) user_outputs += o.role == ir::OutputRole::user_output;
  EXPECT_EQ(user_outputs, meta["outputs"].size());

  // Parameter count; tied parameters (GPT-2's lm_head and wte) share one storage and count once,
  // as in model.parameters().
  int64_t params = 0;
  std::set<const std::byte*> seen;
  for (const auto& in : g.inputs()) {
    if (in.role == ir::InputRole::parameter && seen.insert(in.value->payload()->data).second) {
      params += static_numel(in.value->shape());
    }
  }
  EXPECT_EQ(params, meta["parameters"].get<int64_t>());

  // User inputs: dtype and exported shape (symbols by name).
  std::vector<const ir::Value*> users;
  for (const auto& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) users.push_back(in.value);
  }
  ASSERT_EQ(users.size(), meta["inputs"].size());
  for (size_t i = 0; i < users.size(); ++i) {
    const auto& mi = meta["inputs"][i];
    EXPECT_EQ(std::string(ir::dtype_name(users[i]->dtype())),
              dtype_of_npy_name(mi["dtype"].get<std::string>()));
    std::string want = "[";
    for (size_t d = 0; d < mi["exported_shape"].size(); ++d) {
      const auto& v = mi["exported_shape"][d];
      want += (d ? ", " : "") +
              (v.is_string() ? v.get<std::string>() : std::to_string(v.get<int64_t>()));
    }
    want += "]";
    EXPECT_EQ(g.shape_to_string(users[i]->shape()), want);
  }
  for (auto it = meta["range_constraints"].begin(); it != meta["range_constraints"].end(); ++it) {
    auto id = g.find_symbol(it.key());
    ASSERT_TRUE(id.has_value()) << it.key();
    EXPECT_EQ(g.symbol(*id).min, it.value()[0].get<int64_t>());
    EXPECT_EQ(g.symbol(*id).max, it.value()[1].get<int64_t>());
  }
  // Sample inputs are present for every zoo export and feed the user inputs.
  ASSERT_EQ(p.sample_inputs.size(), users.size());
  for (size_t i = 0; i < users.size(); ++i) {
    EXPECT_EQ(p.sample_inputs[i].name, users[i]->name());
    EXPECT_EQ(p.sample_inputs[i].dtype, users[i]->dtype());
  }
}

std::string case_name(const ::testing::TestParamInfo<ZooCase>& info) {
  std::string rel = info.param.dir.substr(kSource.size() + 8) + "_" + info.param.file;
  for (char& ch : rel) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return rel;
}

// Every weight the reader maps is bit-identical to the tensor PyTorch held: the SHA-256 of its
// contiguous bytes equals the one export.py recorded from the module's state dict.
TEST_P(Zoo, WeightsMatchPyTorchChecksums) {
  const ZooCase& c = GetParam();
  std::ifstream in(c.dir + "/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  ASSERT_TRUE(meta.contains("weights")) << c.dir << "/meta.json has no weight checksums";
  const nlohmann::json& weights = meta["weights"];
  LoadedProgram p = load_program(c.dir + "/" + c.file);
  size_t checked = 0, dropped = 0;
  for (const ir::GraphInput& gi : p.graph->inputs()) {
    if (gi.role != ir::InputRole::parameter && gi.role != ir::InputRole::buffer) continue;
    if (!weights.contains(gi.target)) continue;  // e.g. buffers that are not in the state dict
    const ir::Value& v = *gi.value;
    const ir::ConstantPayload* pl = v.payload();
    ASSERT_NE(pl, nullptr) << gi.target;
    std::vector<int64_t> shape;
    for (const ir::Dim& d : v.shape()) shape.push_back(d.value());
    EXPECT_EQ(shape, weights[gi.target]["shape"].get<std::vector<int64_t>>()) << gi.target;
    // Gather the elements in row-major order (payloads may be views of a shared storage).
    const size_t es = ir::dtype_size(v.dtype());
    std::vector<int64_t> strides = pl->strides.empty() ? contiguous_strides(shape) : pl->strides;
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    auto digest = [&] {
      std::vector<std::byte> bytes(static_cast<size_t>(numel) * es);
      for (int64_t i = 0; i < numel; ++i) {
        int64_t rem = i, off = pl->storage_offset;
        for (size_t k = shape.size(); k-- > 0;) {
          off += (rem % shape[k]) * strides[k];
          rem /= shape[k];
        }
        if (static_cast<size_t>(off + 1) * es > pl->nbytes) return std::string("out of range");
        std::memcpy(bytes.data() + static_cast<size_t>(i) * es,
                    pl->data + static_cast<size_t>(off) * es, es);
      }
      return sha256_hex(bytes);
    };
    const std::string want = weights[gi.target]["sha256"].get<std::string>();
    EXPECT_EQ(digest(), want) << gi.target;
    // A mapped weight's pages, dropped once a pass has read it, read back the same bytes.
    if (pl->drop_pages) {
      pl->drop_pages(pl->data, pl->nbytes);
      EXPECT_EQ(digest(), want) << gi.target << " after its pages were dropped";
      ++dropped;
    }
    ++checked;
  }
  // A program without weights (models/size_reads_*) has none to check.
  if (!weights.empty()) {
    EXPECT_GT(checked, 0u) << "no weight of " << c.dir << "/" << c.file << " was checked";
  }
  // The .pt2 reader maps the archive: its weights can leave memory once read.
  if (c.file.ends_with(".pt2")) {
    EXPECT_EQ(dropped, checked) << c.dir << "/" << c.file;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Zoo, ::testing::ValuesIn(zoo_cases()), case_name);

// The fixtures are committed: missing ones fail here rather than leave the suite above empty.
TEST(ZooFixtures, AreAllPresent) {
  EXPECT_GE(zoo_cases().size(), 40u);
}

TEST(LoadProgram, TorchScriptWithoutLibtorchNamesTheOption) {
  std::string path = kSource + "/models/mlp/model.pt";
  ASSERT_TRUE(fs::exists(path)) << "the committed fixture " << path << " is missing";
  auto f = MappedFile::open(path);
  EXPECT_EQ(detect_container(f->bytes()), ContainerKind::torchscript);
#ifndef NEURONC_HAVE_TORCH
  try {
    load_program(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("-DNEURONC_WITH_TORCH=ON"));
    EXPECT_THAT(e.what(), HasSubstr("libtorch-dev"));
  }
#endif
}

// A weights-free export (export_causal_lm.py --meta of a 600k-token vocabulary: 1.2 GB of
// declared fp32 weights, none saved) loads at once with every weight absent: nothing is
// allocated for the bytes and no pass can compute from made-up zeros (the artifact it compiles
// to is timing-only). The KV cache buffers were saved empty as well.
TEST(LoadProgram, AFullSizeWeightsFreeExportLoadsWithItsWeightsAbsent) {
  const std::string path = kSource + "/tests/corpus/frontend/weights_free_llama.pt2";
  const LoadedProgram p = load_program(path);
  size_t absent = 0, weights = 0;
  uint64_t declared = 0;
  for (const ir::GraphInput& in : p.graph->inputs()) {
    if (in.role == ir::InputRole::user_input) continue;
    ++weights;
    const ir::ConstantPayload* pl = in.value->payload();
    ASSERT_NE(pl, nullptr) << in.target;
    if (!pl->absent) continue;
    ++absent;
    EXPECT_EQ(pl->data, nullptr);
    uint64_t n = ir::dtype_size(in.value->dtype());
    for (const ir::Dim& d : in.value->shape()) n *= static_cast<uint64_t>(d.value());
    declared += n;
  }
  EXPECT_GT(weights, 0u);
  EXPECT_EQ(absent, weights);
  EXPECT_GT(declared, uint64_t{1200000000});
}

}  // namespace
}  // namespace neuronc::frontend
