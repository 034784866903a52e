// TorchScript (.pt) archives of the zoo through load_program. With libtorch the traced models
// load into verified graphs whose weights equal the .pt2's bit for bit, and the archives that call
// scaled_dot_product_attention (unknown to libtorch 1.13) get the "newer PyTorch" message.
// Without libtorch, a .pt file gets the message naming the build option.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "frontend/custom_kernels.h"
#include "frontend/load.h"
#include "frontend/torchscript_reader.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace neuronc::frontend {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

const std::string kModels = std::string(NEURONC_SOURCE_DIR) + "/models/";

std::string message_of(const std::string& path) {
  try {
    (void)load_program(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

nlohmann::json meta_of(const std::string& model) {
  std::ifstream in(kModels + model + "/meta.json");
  return nlohmann::json::parse(in);
}

// The tensor's elements in row-major order, read through the payload's strides and offset.
std::vector<std::byte> logical_bytes(const ir::Value& v) {
  const ir::ConstantPayload* p = v.payload();
  std::vector<std::byte> out;
  if (p == nullptr) return out;
  size_t esize = ir::dtype_size(v.dtype());
  std::vector<int64_t> sizes;
  for (const ir::Dim& d : v.shape()) sizes.push_back(d.value());
  std::vector<int64_t> strides = p->strides;
  if (strides.empty()) {
    strides.assign(sizes.size(), 1);
    for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  }
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  out.resize(static_cast<size_t>(numel) * esize);
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = p->storage_offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    EXPECT_LE(static_cast<size_t>(off + 1) * esize, p->nbytes) << v.name();
    std::memcpy(out.data() + static_cast<size_t>(n) * esize,
                p->data + static_cast<size_t>(off) * esize, esize);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Bytes of the values in a meta.json list (or scalar), as f32 or i64.
std::vector<std::byte> expected_bytes(ir::DType dtype, const nlohmann::json& values) {
  std::vector<nlohmann::json> flat;
  if (values.is_array()) {
    flat.assign(values.begin(), values.end());
  } else {
    flat.push_back(values);
  }
  std::vector<std::byte> out;
  for (const auto& v : flat) {
    std::byte b[8];
    if (dtype == ir::DType::f32) {
      float f = v.get<float>();
      std::memcpy(b, &f, 4);
      out.insert(out.end(), b, b + 4);
    } else {
      int64_t i = v.get<int64_t>();
      std::memcpy(b, &i, 8);
      out.insert(out.end(), b, b + 8);
    }
  }
  return out;
}

std::map<std::string, size_t> op_counts(const ir::Graph& g) {
  std::map<std::string, size_t> m;
  for (const auto& n : g.nodes()) ++m[n->op()];
  return m;
}

// Each build runs the tests of its own TorchScript path and no skipped test stands for the other
// (the ci preset requires libtorch: NEURONC_WITH_TORCH=ON).
#ifndef NEURONC_HAVE_TORCH
TEST(TorchScriptUnavailable, NamesTheBuildOption) {
  ASSERT_FALSE(torchscript_supported());
  std::string m = message_of(kModels + "mlp/model.pt");
  EXPECT_THAT(m, HasSubstr("mlp/model.pt: is a TorchScript archive"));
  EXPECT_THAT(m, HasSubstr("built without libtorch"));
  EXPECT_THAT(m, HasSubstr("-DNEURONC_WITH_TORCH=ON"));
  EXPECT_THAT(m, HasSubstr("libtorch-dev"));
  EXPECT_THAT(m, HasSubstr("torch.export.save"));
}
#else
class TorchScriptBuild : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(torchscript_supported()); }
};

TEST_F(TorchScriptBuild, CustomKernelsAreListedWithTheirCodeLines) {
  const std::string path = kModels + "custom_op/model.pt";
  ASSERT_TRUE(fs::exists(path)) << "the committed fixture " << path << " is missing";
  try {
    (void)load_program(path);
    FAIL() << "a program calling a custom kernel loaded";
  } catch (const CustomKernelError& e) {
    ASSERT_EQ(e.calls().size(), 1u) << e.what();
    EXPECT_EQ(e.calls()[0].op, "demo_kernels.fused_scale_gelu");
    EXPECT_THAT(e.calls()[0].location,
                HasSubstr("code/__torch__/zoo.py:12: `input = ops.demo_kernels.fused_scale_gelu("));
    EXPECT_THAT(e.what(), HasSubstr("custom_op/model.pt: calls 1 custom kernel"));
    EXPECT_THAT(e.what(), HasSubstr("neuronc has no Trainium implementation"));
    EXPECT_THAT(e.what(), Not(HasSubstr("newer PyTorch")));
  }
}

struct Expected {
  const char* model;
  size_t nodes;
  std::map<std::string, size_t> ops;  // op counts that must match exactly
};
void PrintTo(const Expected& e, std::ostream* os) {
  *os << e.model;
}

// Node counts are of the imported graph: scalar arithmetic, list construction and tensor ops on
// constants only (gpt2's causal mask, position ids) are evaluated at import and leave no node.
const Expected kLoadable[] = {
    {"mlp", 5, {{"aten.linear.default", 3}, {"aten.relu.default", 1}, {"aten.gelu.default", 1}}},
    {"cnn",
     11,
     {{"aten.convolution.default", 2},
      {"aten.batch_norm.default", 2},
      {"aten.max_pool2d.default", 1},
      {"aten.avg_pool2d.default", 1},
      {"aten.adaptive_avg_pool2d.default", 1},
      {"aten.flatten.using_ints", 1},
      {"aten.linear.default", 1}}},
    {"dynamic_batch", 6, {{"aten.reshape.default", 1}, {"aten.softmax.int", 1}}},
    {"buffers",
     8,
     {{"aten.add_.Scalar", 2}, {"aten.add_.Tensor", 1}, {"aten.batch_norm.default", 1}}},
    {"fallback", 5, {{"aten.fft_rfft.default", 1}, {"aten.abs.default", 1}}},
    {"gpt2",
     100,
     {{"aten.addmm.default", 8},
      {"aten.matmul.default", 4},
      {"aten.layer_norm.default", 5},
      {"aten.mul.Scalar", 8},
      {"aten.split.Tensor", 2},
      {"aten.view.default", 24}}},
};

class TorchScriptZoo : public TorchScriptBuild, public ::testing::WithParamInterface<Expected> {};

TEST_P(TorchScriptZoo, LoadsVerifiesAndMatchesThePt2Weights) {
  const Expected& e = GetParam();
  const std::string dir = kModels + e.model + "/";
  LoadedProgram p = load_program(dir + "model.pt");
  const ir::Graph& g = *p.graph;
  EXPECT_EQ(p.container, "torchscript");
  EXPECT_EQ(p.sha256.get().size(), 64u);
  EXPECT_EQ(ir::verify(g), std::vector<std::string>{});
  EXPECT_EQ(g.nodes().size(), e.nodes) << ir::print(g);
  std::map<std::string, size_t> ops = op_counts(g);
  for (const auto& [op, count] : e.ops) EXPECT_EQ(ops[op], count) << op;
  for (const auto& n : g.nodes()) EXPECT_NE(n->info(), nullptr) << n->describe();

  // Inputs and outputs as PyTorch recorded them (the traced example's static shapes).
  nlohmann::json meta = meta_of(e.model);
  std::vector<const ir::Value*> users;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) users.push_back(in.value);
  }
  ASSERT_EQ(users.size(), meta["inputs"].size());
  for (size_t i = 0; i < users.size(); ++i) {
    std::vector<int64_t> shape;
    for (const ir::Dim& d : users[i]->shape()) shape.push_back(d.value());
    EXPECT_EQ(shape, meta["inputs"][i]["shape"].get<std::vector<int64_t> >()) << users[i]->name();
  }
  ASSERT_EQ(g.outputs().size(), meta["outputs"].size());
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    std::vector<int64_t> shape;
    for (const ir::Dim& d : g.outputs()[i].value->shape()) shape.push_back(d.value());
    EXPECT_EQ(shape, meta["outputs"][i]["shape"].get<std::vector<int64_t> >());
  }

  // Every parameter and buffer equals the .pt2's tensor of the same FQN, bit for bit.
  LoadedProgram ref = load_program(dir + "model.pt2");
  std::map<std::string, const ir::Value*> by_fqn;
  for (const ir::GraphInput& in : ref.graph->inputs()) {
    if (in.role != ir::InputRole::user_input) by_fqn[in.target] = in.value;
  }
  std::map<std::string, nlohmann::json> mutated;
  for (const auto& b : meta["mutated_buffers"]) mutated[b["target"]] = b["after"];
  size_t compared = 0, parameters = 0;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) continue;
    ASSERT_NE(in.value->payload(), nullptr) << in.target;
    if (in.role == ir::InputRole::parameter) ++parameters;
    if (mutated.contains(in.target)) {
      // torch.jit.trace ran forward once before saving, so the archive holds the buffer's value
      // after one call, which meta.json records; the .pt2 holds the initial value.
      EXPECT_TRUE(logical_bytes(*in.value) == expected_bytes(in.value->dtype(), mutated[in.target]))
          << in.target;
      ++compared;
      continue;
    }
    auto it = by_fqn.find(in.target);
    if (it == by_fqn.end()) {
      EXPECT_NE(in.role, ir::InputRole::parameter) << in.target << " is not in the .pt2";
      continue;
    }
    EXPECT_EQ(in.value->type(), it->second->type()) << in.target;
    EXPECT_TRUE(logical_bytes(*in.value) == logical_bytes(*it->second)) << in.target;
    ++compared;
  }
  EXPECT_GT(parameters, 0u);
  EXPECT_GE(compared, parameters);
  std::cout << "[ weights  ] " << e.model << ": " << compared << " tensors bit-identical to "
            << "model.pt2 (" << parameters << " parameters)\n";
}

INSTANTIATE_TEST_SUITE_P(Zoo, TorchScriptZoo, ::testing::ValuesIn(kLoadable),
                         [](const auto& info) { return std::string(info.param.model); });

// libtorch 1.13 compiles the archive's code while loading, and SDPA did not exist yet.
TEST_F(TorchScriptBuild, ScaledDotProductAttentionArchivesSayNewerPyTorch) {
  for (const char* model : {"transformer_encoder", "bert", "llama", "vit"}) {
    std::string m = message_of(kModels + model + "/model.pt");
    EXPECT_THAT(m, HasSubstr(std::string(model) + "/model.pt: was written by a newer PyTorch"));
    EXPECT_THAT(m, HasSubstr("aten::scaled_dot_product_attention"));
    EXPECT_THAT(m, HasSubstr("torch.export.save(ep, 'model.pt2')"));
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

// Without traced_inputs.pkl (torch.jit.script, or a trace before 2.0) the input shapes are unknown.
TEST_F(TorchScriptBuild, MissingTracedInputsIsReported) {
  std::ifstream in(kModels + "mlp/model.pt", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "model/traced_inputs.pkl", to = "model/traced_inputz.pkl";
  size_t renamed = 0;
  for (size_t pos = bytes.find(from); pos != std::string::npos; pos = bytes.find(from, pos)) {
    bytes.replace(pos, from.size(), to);
    ++renamed;
  }
  ASSERT_EQ(renamed, 2u);  // local header and central directory
  auto file = MappedFile::from_bytes(
      {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "renamed.pt");
  std::string m;
  try {
    (void)load_program(file);
  } catch (const Error& e) {
    m = e.what();
  }
  EXPECT_THAT(m, HasSubstr("renamed.pt: has no traced_inputs.pkl"));
  EXPECT_THAT(m, HasSubstr("torch.export.save"));
}

#endif  // NEURONC_HAVE_TORCH

}  // namespace
}  // namespace neuronc::frontend
