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
#include <sstream>

#include "frontend/load.h"
#include "frontend/torchscript_reader.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace neuronc::frontend {
namespace {

using ::testing::HasSubstr;
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

std::map<std::string, size_t> op_counts(const ir::Graph& g) {
  std::map<std::string, size_t> m;
  for (const auto& n : g.nodes()) ++m[n->op()];
  return m;
}

class TorchScriptBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torchscript_supported()) GTEST_SKIP() << "built without libtorch";
  }
};

TEST(TorchScriptUnavailable, NamesTheBuildOption) {
  if (torchscript_supported()) GTEST_SKIP() << "built with libtorch";
  std::string m = message_of(kModels + "mlp/model.pt");
  EXPECT_THAT(m, HasSubstr("mlp/model.pt: is a TorchScript archive"));
  EXPECT_THAT(m, HasSubstr("built without libtorch"));
  EXPECT_THAT(m, HasSubstr("-DNEURONC_WITH_TORCH=ON"));
  EXPECT_THAT(m, HasSubstr("libtorch-dev"));
  EXPECT_THAT(m, HasSubstr("torch.export.save"));
}

struct Expected {
  const char* model;
  size_t nodes;
  std::map<std::string, size_t> ops;  // a few op counts that must match exactly
};

// Node counts are of the imported graph: scalar arithmetic, list construction and tensor ops on
// constants only (gpt2's causal mask) are evaluated at import and leave no node.
const Expected kLoadable[] = {
    {"mlp", 5, {{"aten.linear.default", 3}, {"aten.relu.default", 1}, {"aten.gelu.default", 1}}},
    {"cnn", 0, {}},
    {"dynamic_batch", 0, {}},
    {"buffers", 0, {}},
    {"fallback", 0, {}},
    {"gpt2", 0, {}},
};

TEST_F(TorchScriptBuild, DumpForDevelopment) {
  for (const Expected& e : kLoadable) {
    LoadedProgram p = load_program(kModels + e.model + "/model.pt");
    std::cout << "=== " << e.model << " nodes " << p.graph->nodes().size() << "\n";
    for (auto& [op, c] : op_counts(*p.graph)) std::cout << "  " << op << " " << c << "\n";
    std::cout << ir::print(*p.graph, {}) << "\n";
  }
}

}  // namespace
}  // namespace neuronc::frontend
