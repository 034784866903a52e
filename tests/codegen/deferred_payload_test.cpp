// A weight with a deferred row scale (ir::ConstantPayload::row_scale, a folded batch norm's) or
// a deferred concatenation (ir::ConstantPayload::parts, a fused sibling stack's) is stored
// exactly as the weight computed ahead of time would be: in every layout codegen gives it (a
// convolution's, a matmul weight's transposed and column-blocked ones), through a deferred bf16
// cast, from strided storage, and whether its bytes are made at once or by a deferred fill.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "device/target.h"
#include "harness.h"
#include "ir/printer.h"
#include "kernels/numerics.h"

namespace neuronc::codegen {
namespace {

struct Weight {
  std::vector<float> storage;
  std::vector<int64_t> strides;  // empty: row-major
  std::vector<double> scale;     // per `pitch` stored elements (none: no scale)
  int64_t pitch = 1;
  size_t split = 1;         // > 1: the storage given as that many parts
  bool mid_element = true;  // the parts cut inside elements (else between them)
};

// The graph `text` with `w` as weight %w: its storage with the scale deferred, or scaled now.
std::unique_ptr<ir::Graph> with_weight(const std::string& text, const Weight& w, bool deferred,
                                       bool cast) {
  auto g = ir::parse(text);
  auto bytes = std::make_shared<std::vector<float>>(w.storage);
  if (!deferred && !w.scale.empty())
    for (size_t e = 0; e < bytes->size(); ++e)
      (*bytes)[e] = static_cast<float>(static_cast<double>((*bytes)[e]) *
                                       w.scale[e / static_cast<size_t>(w.pitch)]);
  ir::ConstantPayload p{reinterpret_cast<const std::byte*>(bytes->data()), bytes->size() * 4, 0,
                        w.strides, bytes};
  if (deferred && w.split > 1) {
    auto parts = std::make_shared<std::vector<ir::ConstantPayload::Part>>();
    const size_t size = p.nbytes;
    for (size_t k = 0, at = 0; k < w.split; ++k) {
      const size_t cut = size * (k + 1) / w.split / 4 * 4 + (w.mid_element ? 3 : 0);
      const size_t end = k + 1 == w.split ? size : cut;
      parts->push_back({p.data + at, std::min(end, size) - at, bytes, nullptr});
      at = std::min(end, size);
    }
    p.data = nullptr;
    p.parts = parts;
    p.owner = parts;
  }
  if (deferred && !w.scale.empty()) {
    p.row_scale = std::make_shared<const std::vector<double>>(w.scale);
    p.row_scale_pitch = w.pitch;
  }
  if (cast) p.stored_dtype = ir::DType::f32;
  g->find_value("w")->set_payload(std::move(p));
  return g;
}

// The stored bytes of every constant binding, by name.
std::map<std::string, std::vector<std::byte>> stored(const CompiledPartition& part) {
  std::map<std::string, std::vector<std::byte>> out;
  for (const ConstantBinding& cb : part.constants) {
    if (!cb.fill) {
      out[cb.name] = cb.data;
      continue;
    }
    int64_t n = 1;
    for (int64_t d : cb.shape) n *= d;
    std::vector<std::byte> b(static_cast<size_t>(n) * device::dtype_size(cb.dtype));
    cb.fill(b);
    out[cb.name] = std::move(b);
  }
  return out;
}

void expect_same_bytes(const std::string& text, const Weight& w, bool cast,
                       CodegenOptions opts = {}) {
  const device::Target& t = device::target(device::TargetKind::trn1);
  for (bool defer : {false, true}) {
    opts.defer_constant_bytes = defer;
    const auto lazy = stored(testing::compile_whole(*with_weight(text, w, true, cast), t, opts));
    const auto now = stored(testing::compile_whole(*with_weight(text, w, false, cast), t, opts));
    ASSERT_EQ(lazy.size(), now.size());
    ASSERT_TRUE(lazy.count("w"));
    EXPECT_EQ(lazy, now) << text << (cast ? " (bf16)" : "") << (defer ? " (deferred fill)" : "");
    // The scale is not a no-op here: the unscaled weight stores other bytes.
    if (w.split > 1 || w.scale.empty()) continue;
    Weight unit = w;
    unit.scale.assign(w.scale.size(), 1.0);
    const auto plain =
        stored(testing::compile_whole(*with_weight(text, unit, true, cast), t, opts));
    EXPECT_NE(plain.at("w"), lazy.at("w"));
  }
}

Weight random_weight(size_t n, size_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_real_distribution<double> s(0.2, 3.0);
  Weight w;
  w.storage.resize(n);
  for (float& x : w.storage) x = u(rng);
  w.scale.resize(rows);
  for (double& x : w.scale) x = s(rng);
  w.pitch = static_cast<int64_t>(n / rows);
  return w;
}

// x[40, 256] through a linear of weight %w[n, 256], in dtype `dt`.
std::string linear(const std::string& dt, const std::string& n) {
  return "graph {\n  input %x : " + dt + "[40, 256]\n  param %w : " + dt + "[" + n +
         ", 256] \"fc.weight\"\n  %y : " + dt + "[40, " + n +
         "] = aten.linear.default(%x, %w)\n  output %y\n}";
}

TEST(DeferredScale, ConvolutionWeightIsStoredAsTheScaledWeight) {
  for (const char* dt : {"f32", "bf16"}) {
    const std::string text =
        std::string(R"(graph {
  input %x : )") +
        dt + R"([1, 8, 6, 6]
  param %w : )" +
        dt + R"([16, 8, 3, 3] "conv.weight"
  %y : )" +
        dt +
        R"([1, 16, 4, 4] = aten.conv2d.default(%x, %w) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], groups = 1}
  output %y
})";
    expect_same_bytes(text, random_weight(16 * 8 * 9, 16, 1), std::string(dt) == "bf16");
  }
}

TEST(DeferredScale, MatmulWeightIsStoredAsTheScaledWeightInEveryLayout) {
  for (const char* dt : {"f32", "bf16"}) {
    // A small weight stored transposed; a wide one column-blocked (on trn1).
    for (const char* n : {"96", "3000"}) {
      const std::string text = linear(dt, n);
      const size_t rows = std::stoul(n);
      expect_same_bytes(text, random_weight(rows * 256, rows, 2), std::string(dt) == "bf16");
    }
  }
}

// Strided storage (the weight is the transpose of what is stored): read element by element,
// each scaled by its stored row's scale.
TEST(DeferredScale, StridedStorageIsScaledByItsStoredRows) {
  const std::string text = R"(graph {
  input %x : f32[4, 24]
  param %w : f32[32, 24] "fc.weight"
  %y : f32[4, 32] = aten.linear.default(%x, %w)
  output %y
})";
  Weight w = random_weight(32 * 24, 24, 3);  // stored [24, 32]: 24 rows of 32
  w.strides = {1, 32};
  expect_same_bytes(text, w, false);
  expect_same_bytes(text, w, false, CodegenOptions{.transpose_matmul_weights = false});
}

// A stack of sibling weights as parts (alone, and under a deferred scale), in each layout.
TEST(DeferredConcatenation, PartsAreStoredAsTheWholeWeight) {
  for (const char* dt : {"f32", "bf16"}) {
    for (const char* n : {"96", "3000"}) {
      const std::string text = linear(dt, n);
      const size_t rows = std::stoul(n);
      Weight w = random_weight(rows * 256, rows, 4);
      w.split = 3;
      w.scale.clear();
      expect_same_bytes(text, w, std::string(dt) == "bf16");
      w = random_weight(rows * 256, rows, 5);
      w.split = 4;
      expect_same_bytes(text, w, std::string(dt) == "bf16");
      w.scale.clear();
      w.mid_element = false;  // as sibling fusion cuts: narrowed run by run, not assembled
      expect_same_bytes(text, w, std::string(dt) == "bf16");
    }
  }
  // Strided storage across parts: read element by element.
  Weight w = random_weight(32 * 24, 24, 6);
  w.strides = {1, 32};
  w.split = 5;
  expect_same_bytes(R"(graph {
  input %x : f32[4, 24]
  param %w : f32[32, 24] "fc.weight"
  %y : f32[4, 32] = aten.linear.default(%x, %w)
  output %y
})",
                    w, false, CodegenOptions{.transpose_matmul_weights = false});
}

// The transposed and column-blocked bf16 layouts hold each element where the layout says, for
// sizes that fill the transpose's 8 x 8 tiles and sizes that leave edges, made in one band of
// rows or several (256 KiB of bf16 each: 512 rows of 256, 1310 of 100), whose ends fall inside
// the column blocks.
TEST(DeferredCast, TransposedBf16WeightsHoldEveryElementWhereTheLayoutSays) {
  const device::Target& t = device::target(device::TargetKind::trn1);
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{13, 250}, {96, 256}, {3000, 256}, {1027, 36}, {2500, 100}}) {
    const std::string n = std::to_string(rows), k = std::to_string(cols);
    const std::string text = "graph {\n  input %x : bf16[40, " + k + "]\n  param %w : bf16[" + n +
                             ", " + k + "] \"fc.weight\"\n  %y : bf16[40, " + n +
                             "] = aten.linear.default(%x, %w)\n  output %y\n}";
    Weight w = random_weight(static_cast<size_t>(rows * cols), static_cast<size_t>(rows), 9);
    w.scale.clear();
    const CompiledPartition part = testing::compile_whole(*with_weight(text, w, true, true), t);
    const auto bytes = stored(part);
    const ConstantBinding* cb = nullptr;
    for (const ConstantBinding& c : part.constants)
      if (c.name == "w") cb = &c;
    ASSERT_NE(cb, nullptr);
    ASSERT_TRUE(cb->transposed || cb->column_block > 0) << n << " x " << k;
    const int64_t block = cb->column_block > 0 ? cb->column_block : rows;
    const std::vector<std::byte>& got = bytes.at("w");
    ASSERT_EQ(got.size(), static_cast<size_t>(rows * cols * 2));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t b0 = r / block * block, width = std::min(block, rows - b0);
        const int64_t at = b0 * cols + c * width + (r - b0);
        uint16_t v;
        std::memcpy(&v, got.data() + at * 2, 2);
        ASSERT_EQ(v, kernels::f32_to_bf16_nearest(w.storage[static_cast<size_t>(r * cols + c)]))
            << n << " x " << k << " element " << r << ", " << c;
      }
  }
}

}  // namespace
}  // namespace neuronc::codegen
