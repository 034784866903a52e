// JSON tensors: exact float values out and back, f16/bf16 rounding, and every element and
// structure error named.
#include "examples/server/tensor_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace neuronc::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(TensorJson, FloatsRoundTripBitForBit) {
  // Values whose shortest decimal differs between float and double: 0.1f is 0.100000001490116...
  const float values[] = {0.1f,   -1e-38f, 3.4028235e38f, 1.17549435e-38f,
                          1e-45f, -0.0f,   123456.789f,   std::numeric_limits<float>::infinity()};
  Tensor t(DType::f32, {static_cast<int64_t>(std::size(values))});
  std::memcpy(t.mutable_data(), values, sizeof values);
  Result<json> j = tensor_to_json(t);
  ASSERT_TRUE(j.is_ok());
  // Through text, as a client sees it.
  Result<Tensor> back = tensor_from_json(json::parse(j->dump()), "output 'y'", DType::f32);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(std::memcmp(back->data(), values, sizeof values), 0);
  EXPECT_EQ((*j)["data"][7], "inf");
}

TEST(TensorJson, HalfTypesRoundToNearestEven) {
  // 1 + 2^-11 is halfway between two f16 values: ties to the even one, 1.0.
  EXPECT_EQ(f32_to_f16_bits(1.0f + 0x1.0p-11f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * 0x1.0p-11f), 0x3c02);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(0x1.0p-24f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(0x1.0p-25f), 0x0000);  // halfway to it: ties to even
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1.0p-8f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * 0x1.0p-8f), 0x3f82);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16_bits(f), h) << "f16 0x" << std::hex << h << " does not round-trip";
  }
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7e00)));
  EXPECT_EQ(bf16_bits_to_f32(0x3fc0), 1.5f);
}

TEST(TensorJson, DecodesEveryJsonDType) {
  Result<Tensor> i8 =
      tensor_from_json(json::parse(R"({"dtype": "i8", "shape": [3], "data": [-128, 0, 127]})"),
                       "input 'a'", DType::i8);
  ASSERT_TRUE(i8.is_ok()) << i8.status().message();
  EXPECT_EQ(i8->as<int8_t>()[0], -128);
  Result<Tensor> b =
      tensor_from_json(json::parse(R"({"shape": [2, 2], "data": [true, false, 1, 0]})"),
                       "input 'm'", DType::boolean);
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_EQ(b->as<uint8_t>()[2], 1);
  Result<Tensor> big = tensor_from_json(
      json::parse(R"({"shape": [2], "data": [9223372036854775807, -9223372036854775808]})"),
      "input 'ids'", DType::i64);
  ASSERT_TRUE(big.is_ok()) << big.status().message();
  EXPECT_EQ(big->as<int64_t>()[0], INT64_MAX);
  EXPECT_EQ(big->as<int64_t>()[1], INT64_MIN);
  Result<Tensor> h = tensor_from_json(json::parse(R"({"shape": [2], "data": [1.5, "-inf"]})"),
                                      "input 'h'", DType::f16);
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(h->as<uint16_t>()[0], 0x3e00);
  EXPECT_EQ(h->as<uint16_t>()[1], 0xfc00);
  Result<Tensor> scalar =
      tensor_from_json(json::parse(R"({"shape": [], "data": [2.0]})"), "input 's'", DType::i32);
  ASSERT_TRUE(scalar.is_ok()) << scalar.status().message();
  EXPECT_EQ(scalar->as<int32_t>()[0], 2);
}

TEST(TensorJson, RefusesMalformedTensorsSayingWhy) {
  const struct {
    const char* text;
    DType dtype;
    const char* message;
  } corpus[] = {
      {R"([1, 2])", DType::f32,
       "input 'x': expected an object {\"dtype\", \"shape\", \"data\"}, found array"},
      {R"({"shape": [1], "data": [1], "dims": 3})", DType::f32, "unknown key 'dims'"},
      {R"({"dtype": "f16", "shape": [1], "data": [1]})", DType::f32, "dtype is f16, expected f32"},
      {R"({"dtype": 3, "shape": [1], "data": [1]})", DType::f32, "dtype is 3, expected a string"},
      {R"({"data": [1]})", DType::f32, "expected \"shape\""},
      {R"({"shape": [2, -1], "data": [1]})", DType::f32, "has the dimension -1"},
      {R"({"shape": [2, 1.5], "data": [1]})", DType::f32, "has the dimension 1.5"},
      {R"({"shape": [2]})", DType::f32, "expected \"data\""},
      {R"({"shape": [2, 2], "data": [1, 2, 3]})", DType::f32,
       "data has 3 values, expected 4 (shape [2, 2])"},
      {R"({"shape": [4611686018427387904, 4], "data": []})", DType::f32,
       "data has 0 values, expected more"},
      {R"({"shape": [2], "data": [1, "one"]})", DType::f32,
       "data[1] is \"one\", expected a number"},
      {R"({"shape": [2], "data": [1, [2]]})", DType::f32, "data[1] is [2], expected a number"},
      {R"({"shape": [2], "data": [1, 2.5]})", DType::i64,
       "data[1] is 2.5, expected an integer in i64"},
      {R"({"shape": [1], "data": [256]})", DType::u8,
       "data[0] is 256, expected an integer in u8 [0, 255]"},
      {R"({"shape": [1], "data": [-1]})", DType::u8, "data[0] is -1, expected an integer in u8"},
      {R"({"shape": [1], "data": [2]})", DType::boolean,
       "data[0] is 2, expected an integer in bool [0, 1]"},
      {R"({"shape": [1], "data": [1e300]})", DType::i64, "data[0] is 1e+300, expected an integer"},
      {R"({"shape": [1], "data": [18446744073709551615]})", DType::i64,
       "expected an integer in i64"},
      {R"({"shape": [1], "data": [true]})", DType::i32,
       "data[0] is true, expected an integer in i32"},
      {R"({"shape": [1], "data": [1]})", DType::c64, "dtype c64 cannot be sent as JSON"},
  };
  for (const auto& c : corpus) {
    Result<Tensor> t = tensor_from_json(json::parse(c.text), "input 'x'", c.dtype);
    ASSERT_FALSE(t.is_ok()) << c.text << " was accepted; expected: " << c.message;
    EXPECT_THAT(t.status().message(), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(t.status().message(), ::testing::StartsWith("input 'x'")) << c.text;
  }
}

}  // namespace
}  // namespace neuronc::server
