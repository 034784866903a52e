// The server's .npy codec: round trips of every dtype it carries, and a malformed-input corpus
// whose every entry is refused with a message naming what was wrong.
#include "examples/server/npy_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace neuronc::server {
namespace {

using ::testing::HasSubstr;

// A .npy file with `header` as its dict (padded as NumPy does) and `data` after it.
std::string npy(const std::string& header, const std::string& data, char major = 1) {
  std::string h = header;
  const size_t prefix = major == 1 ? 10 : 12;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += major;
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  if (major != 1) out += std::string(2, '\0');
  return out + h + data;
}

TEST(NpyCodec, RoundTripsEveryCarriedDType) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                  DType::i16, DType::i8, DType::u8, DType::boolean, DType::c64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor a(t, {2, 3});
    auto* p = static_cast<unsigned char*>(a.mutable_data());
    for (size_t k = 0; k < a.nbytes(); ++k) p[k] = static_cast<unsigned char>(k * 7 + 1);
    if (t == DType::boolean)
      for (size_t k = 0; k < a.nbytes(); ++k) p[k] &= 1;
    Result<std::string> bytes = encode_npy(a);
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
    EXPECT_EQ((bytes->size() - a.nbytes()) % 64, 0u) << "data must start 64-byte aligned";
    Result<Tensor> b = decode_npy(*bytes, "body");
    ASSERT_TRUE(b.is_ok()) << b.status().message();
    EXPECT_EQ(b->dtype(), t);
    EXPECT_EQ(b->shape(), (Shape{2, 3}));
    EXPECT_EQ(std::memcmp(a.data(), b->data(), a.nbytes()), 0);
  }
}

TEST(NpyCodec, ReadsNumPyHeadersScalarsAndVersion2) {
  const float v[3] = {1.5f, -2.0f, 0.25f};
  Result<Tensor> t = decode_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                                    std::string(reinterpret_cast<const char*>(v), sizeof v)),
                                "body");
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t->shape(), (Shape{3}));
  EXPECT_EQ(t->as<float>()[1], -2.0f);

  const int64_t s = -7;
  Result<Tensor> scalar = decode_npy(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                                         std::string(reinterpret_cast<const char*>(&s), 8), 2),
                                     "body");
  ASSERT_TRUE(scalar.is_ok()) << scalar.status().message();
  EXPECT_TRUE(scalar->shape().empty());
  EXPECT_EQ(scalar->as<int64_t>()[0], -7);
}

TEST(NpyCodec, RefusesMalformedFilesSayingWhy) {
  const std::string four(16, '\0');
  const struct {
    std::string bytes;
    std::string message;
  } corpus[] = {
      {"", "not a .npy file"},
      {"PK\x03\x04 zip, not npy", "not a .npy file"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", four, 4),
       ".npy version is 4, expected 1, 2 or 3"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "header length 255 exceeds the 1 bytes"},
      {npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", four),
       "dtype '>f4' is not supported"},
      {npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four),
       "Fortran order, expected C order"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four),
       "shape [2, 3] of f32 needs 24 data bytes, found 16"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, "
           "99999999999), }",
           four),
       "needs more than SIZE_MAX data bytes"},
      {npy("{'descr': '<f4', 'shape': (2, 2), }", four), "has no 'fortran_order' key"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'extra': 1}", four),
       "has the key 'extra'"},
      {npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}", four),
       "repeats the key 'descr'"},
      {npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 2)}", four),
       "expected True or False"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2)}", four),
       "expected a dimension"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", four),
       "does not fit in int64"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)} trailing", four),
       "has text after the dict"},
      {npy("{'descr: '<f4'}", four), "expected ':'"},
  };
  for (const auto& c : corpus) {
    Result<Tensor> t = decode_npy(c.bytes, "body");
    ASSERT_FALSE(t.is_ok()) << "accepted a file that should fail with: " << c.message;
    EXPECT_EQ(t.status().code(), StatusCode::invalid_argument);
    EXPECT_THAT(t.status().message(), HasSubstr(c.message));
    EXPECT_THAT(t.status().message(), ::testing::StartsWith("body: "));
  }
}

TEST(NpyCodec, EncodingRefusesTypesNpyCannotCarry) {
  Tensor t(DType::f8e4m3, {2});
  Result<std::string> bytes = encode_npy(t);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_THAT(bytes.status().message(), HasSubstr("dtype f8e4m3 has no .npy type"));
}

}  // namespace
}  // namespace neuronc::server
