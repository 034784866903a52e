// artifact.fbs mirrors device/isa.h's enumerations value for value (isa_codec casts between
// them): every value has the same name on both sides, and neither side has more values.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "artifact_format/artifact_generated.h"
#include "artifact_format/dtype_codec.h"
#include "device/isa.h"

namespace neuronc::artifact {
namespace {

namespace d = ::neuronc::device;

// "TensorTensorScan" and "tensor_tensor_scan" compare equal.
std::string canonical(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

template <typename Fb, typename Dev, typename FbName, typename DevName>
void expect_mirror(const char* what, Fb fb_max, FbName fb_name, DevName dev_name, int first = 0,
                   int dev_offset = 0) {
  for (int i = first; i <= static_cast<int>(fb_max); ++i) {
    const std::string f = fb_name(static_cast<Fb>(i));
    const std::string dv(dev_name(static_cast<Dev>(i - dev_offset)));
    EXPECT_EQ(canonical(f), canonical(dv)) << what << " value " << i;
  }
  // The device enum has no value past the FlatBuffers one.
  EXPECT_EQ(std::string(dev_name(static_cast<Dev>(static_cast<int>(fb_max) - dev_offset + 1))), "?")
      << what << ": device/isa.h has more values than artifact.fbs";
}

TEST(EnumMirror, DeviceEnumerationsMatchTheSchema) {
  expect_mirror<fb::MemoryKind, d::MemoryKind>("MemoryKind", fb::MemoryKind::MAX,
                                               fb::EnumNameMemoryKind, d::memory_name);
  expect_mirror<fb::Engine, d::Engine>("Engine", fb::Engine::MAX, fb::EnumNameEngine,
                                       d::engine_name);
  expect_mirror<fb::AluOp, d::AluOp>("AluOp", fb::AluOp::MAX, fb::EnumNameAluOp, d::alu_op_name);
  expect_mirror<fb::ActivationFunction, d::ActivationFunction>(
      "ActivationFunction", fb::ActivationFunction::MAX, fb::EnumNameActivationFunction,
      d::activation_name);
  expect_mirror<fb::CollectiveKind, d::CollectiveKind>(
      "CollectiveKind", fb::CollectiveKind::MAX, fb::EnumNameCollectiveKind, d::collective_name);
  // DeviceDType keeps the ISA's own order; dtype_codec.h maps it to the one DType vocabulary.
  int engine_types = 0;
  for (int i = 0; i < kNumDTypes; ++i) engine_types += is_engine_dtype(static_cast<DType>(i));
  EXPECT_EQ(static_cast<int>(fb::DeviceDType::MAX) + 1, engine_types);
  for (int i = 0; i <= static_cast<int>(fb::DeviceDType::MAX); ++i) {
    const auto t = from_fb_device_dtype(static_cast<fb::DeviceDType>(i));
    ASSERT_TRUE(t.has_value()) << "DeviceDType value " << i;
    EXPECT_TRUE(is_engine_dtype(*t)) << "DeviceDType value " << i;
    EXPECT_EQ(canonical(fb::EnumNameDeviceDType(static_cast<fb::DeviceDType>(i))),
              canonical(dtype_name(*t)))
        << "DeviceDType value " << i;
    EXPECT_EQ(to_fb_device_dtype(*t), static_cast<fb::DeviceDType>(i));
  }
  // The Operation union's members are the opcodes in order, after NONE.
  expect_mirror<fb::Operation, d::Opcode>("Operation", fb::Operation::MAX, fb::EnumNameOperation,
                                          d::opcode_name, /*first=*/1, /*dev_offset=*/1);
}

}  // namespace
}  // namespace neuronc::artifact
