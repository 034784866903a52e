// .npy reading and writing, on files NumPy wrote (the model zoo) and malformed bytes.
#include "tools/npy.h"

#include <gtest/gtest.h>
#include <neuronc/model.h>

#include <cmath>
#include <cstring>

#include "tools/runner.h"

namespace neuronc::tools {
namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(Npy, ReadsWhatNumPyWrote) {
  NpyArray a = read_npy(std::string(NEURONC_SOURCE_DIR) + "/models/mlp/input_0.npy");
  EXPECT_EQ(a.type, NpyType::f32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(a.data.size(), 4u * 16u * 4u);
  // Round trip: our encoding parses back to the same array.
  std::vector<std::byte> enc = encode_npy(a);
  EXPECT_EQ(enc.size() % 64, a.data.size() % 64);
  NpyArray b = parse_npy(enc, "roundtrip");
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
}

TEST(Npy, ScalarsAndVectorsRoundTrip) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 0, 3}}) {
    NpyArray a;
    a.type = NpyType::i64;
    a.shape = shape;
    a.data.resize(a.numel() * 8, std::byte{7});
    NpyArray b = parse_npy(encode_npy(a), "x");
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

std::string header(const std::string& dict) {
  std::string h = dict;
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(h.size());
  out += '\x00';
  return out + h;
}

// np.save of a transposed array writes fortran_order True: the column-major data is read back
// in C order.
TEST(Npy, FortranOrderArraysAreReadInCOrder) {
  // C order [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
  std::string data;
  for (int32_t v : {0, 3, 1, 4, 2, 5}) data.append(reinterpret_cast<const char*>(&v), 4);
  const NpyArray a = parse_npy(
      as_bytes(header("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }") + data), "x");
  ASSERT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  std::vector<int32_t> got(6);
  std::memcpy(got.data(), a.data.data(), 24);
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, MalformedFilesSayWhatIsWrong) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const Case cases[] = {
      {"hello", "x: not a .npy file"},
      {header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }") + std::string(4, '\0'),
       "x: shape (2,) of float32 needs 8 data bytes, file has 4"},
      {header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }") + std::string(4, '\0'),
       "x: dtype '>f4' is not supported"},
      {header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }") + std::string(4, '\0'),
       "x: fortran_order is 'Maybe', expected True or False"},
      {header("{'descr': '<f4', 'shape': (1,), }"), "x: header has no 'fortran_order' entry"},
      {header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }"),
       "x: dimension in (99999999999999999,) is too large"},
      {std::string("\x93NUMPY\x09\x00", 8) + "xx", "x: .npy format version 9 is not supported"},
      {std::string("\x93NUMPY\x01\x00\xff\x00", 10) + "{}",
       "x: header length 255 exceeds the 2 bytes"},
  };
  for (const Case& c : cases) {
    try {
      parse_npy(as_bytes(c.bytes), "x");
      ADD_FAILURE() << "no error for " << c.message;
    } catch (const NpyError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace neuronc::tools

namespace neuronc::tools {
namespace {

// numpy cannot write bfloat16: a float32 .npy given for a bf16 input is rounded to nearest
// even (ties to even, NaN kept), and `run --output-dtype f32` widens bf16 back exactly.
TEST(Npy, Float32ForABf16InputRoundsToNearestEven) {
  NpyArray a;
  a.type = NpyType::f32;
  a.shape = {4};
  const float in[4] = {1.0f, 1.00390625f /* tie: to even, 1.0 */, 1.01171875f /* tie: up */,
                       std::nanf("")};
  a.data.resize(sizeof in);
  std::memcpy(a.data.data(), in, sizeof in);
  const neuronc::TensorSpec spec{"x", neuronc::DType::bf16, {}};
  const NpyArray b = as_input(spec, a);
  ASSERT_EQ(b.type, NpyType::bf16);
  ASSERT_EQ(b.data.size(), 8u);
  uint16_t h[4];
  std::memcpy(h, b.data.data(), 8);
  EXPECT_EQ(h[0], 0x3F80);
  EXPECT_EQ(h[1], 0x3F80);
  EXPECT_EQ(h[2], 0x3F82);
  EXPECT_EQ(h[3] & 0x7F80, 0x7F80);
  EXPECT_NE(h[3] & 0x007F, 0);  // still a NaN
  const NpyArray w = widen_to_f32(b);
  ASSERT_EQ(w.type, NpyType::f32);
  float back[4];
  std::memcpy(back, w.data.data(), 16);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[2], 1.015625f);
  EXPECT_TRUE(std::isnan(back[3]));
  // Any other pairing is left for the session to accept or refuse.
  const neuronc::TensorSpec f32{"x", neuronc::DType::f32, {}};
  EXPECT_EQ(as_input(f32, a).type, NpyType::f32);
}

}  // namespace
}  // namespace neuronc::tools
