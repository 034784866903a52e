// Target parameter sets and name parsing.
#include "device/target.h"

#include <gtest/gtest.h>

#include "device/isa.h"

namespace neuronc::device {
namespace {

TEST(Target, ParsesNamesAndListsValidOnes) {
  EXPECT_EQ(parse_target("trn1").value(), TargetKind::trn1);
  EXPECT_EQ(parse_target("inf2").value(), TargetKind::trn1);
  EXPECT_EQ(parse_target("trn2").value(), TargetKind::trn2);
  EXPECT_EQ(parse_target("trn3").value(), TargetKind::trn3);
  auto bad = parse_target("trn9");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "unknown target 'trn9': expected one of trn1, trn2, trn3 (inf2 is an alias of trn1)");
  EXPECT_EQ(target_name(TargetKind::trn2), "trn2");
}

TEST(Target, PeaksFollowClockTimesDatapath) {
  // §2.1 derived: 91.75 / 78.64 TFLOPS.
  EXPECT_NEAR(target(TargetKind::trn1).tensor_peak_flops_per_ns(), 91750.4, 0.1);
  EXPECT_NEAR(target(TargetKind::trn2).tensor_peak_flops_per_ns(), 78643.2, 0.1);
  EXPECT_NEAR(target(TargetKind::trn3).tensor_peak_flops_per_ns(), 78643.2, 0.1);
}

TEST(Target, MemoryGeometry) {
  EXPECT_EQ(target(TargetKind::trn1).sbuf_partition_bytes * 128u, 24u << 20);
  EXPECT_EQ(target(TargetKind::trn2).sbuf_partition_bytes * 128u, 28u << 20);
  EXPECT_EQ(target(TargetKind::trn3).sbuf_partition_bytes * 128u, 32u << 20);
  for (auto k : {TargetKind::trn1, TargetKind::trn2, TargetKind::trn3}) {
    const Target& t = target(k);
    EXPECT_EQ(t.psum_partition_bytes, t.psum_bank_bytes * t.psum_banks);
    EXPECT_NEAR(t.hbm_gbps_per_core * t.cores_per_chip, t.hbm_gbps_per_chip, 1e-9);
    EXPECT_LE(t.dma_engines_per_core, kMaxDmaEnginesPerCore);
  }
}

}  // namespace
}  // namespace neuronc::device

namespace neuronc::device {
namespace {

TEST(Isa, OpcodeIsTheVariantIndexAndEveryOpcodeHasAName) {
  Instruction i;
  i.op = TensorTensorScan{};
  EXPECT_EQ(i.opcode(), Opcode::tensor_tensor_scan);
  EXPECT_EQ(opcode_name(Opcode::tensor_tensor_scan), "tensor_tensor_scan");
  for (size_t k = 0; k < std::variant_size_v<Operation>; ++k)
    EXPECT_NE(opcode_name(static_cast<Opcode>(k)), "?") << k;
  EXPECT_EQ(opcode_name(static_cast<Opcode>(std::variant_size_v<Operation>)), "?");
}

}  // namespace
}  // namespace neuronc::device
