// Every memory rule of TRAINIUM.md §3 is enforced with a message that names the instruction,
// what was expected and what was found.
#include "device/verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/device/device_test_util.h"

namespace neuronc::device {
namespace {

using ::testing::HasSubstr;
using namespace neuronc::device::device_test;

std::string error_of(const Program& p, TargetKind k = TargetKind::trn1) {
  Status s = verify_program(target(k), p);
  return s.is_ok() ? "ok" : s.message();
}

TEST(Verifier, PartitionStartAlignment) {
  const MemRef a = sbuf(40, 48, 0, DType::f32, 8);
  const MemRef d = sbuf(0, 48, 64, DType::f32, 8);
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{d, a})),
              HasSubstr("partition start 40 is not allowed for 48 partitions: expected 0 or 64"));
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{d, a})),
              HasSubstr("core 0 vector[0] (tensor_copy)"));
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{sbuf(16, 16, 0, DType::f32, 8),
                                                         sbuf(0, 16, 64, DType::f32, 8)})),
              HasSubstr("expected 0, 32, 64 or 96"));
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{sbuf(64, 64, 0, DType::f32, 8),
                                                         sbuf(0, 64, 64, DType::f32, 8)})),
              "ok");
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{sbuf(32, 65, 0, DType::f32, 8),
                                                         sbuf(0, 65, 64, DType::f32, 8)})),
              HasSubstr("for 65 partitions: expected 0"));
  // DMA is not a compute instruction: any start is fine.
  EXPECT_EQ(error_of(single(Engine::sync,
                            DmaCopy{sbuf(3, 5, 0, DType::f32, 8), hbm(0, DType::f32, 5, 8, 8), 0})),
            "ok");
}

// The engines read and write the engine types only: an i64, f64, bool or c64 operand (plan
// types the compiler stores as i32, f32 and u8) is refused, naming the type.
TEST(Verifier, OperandsHaveEngineTypes) {
  for (DType t : {DType::i64, DType::f64, DType::boolean, DType::c64}) {
    EXPECT_THAT(
        error_of(single(Engine::vector,
                        TensorCopy{sbuf(0, 16, 0, t, 8), sbuf(0, 16, 64, DType::f32, 8)})),
        HasSubstr("dtype " + std::string(dtype_name(t)) + " is not one the engines read or write"));
  }
  EXPECT_EQ(error_of(single(Engine::vector, TensorCopy{sbuf(0, 16, 0, DType::u16, 8),
                                                       sbuf(0, 16, 64, DType::f32, 8)})),
            "ok");
}

// VectorE transposes 32 x 32 inside one group of 32 partitions (one reshape bank).
TEST(Verifier, VectorTransposeStaysInItsPartitionGroup) {
  EXPECT_EQ(error_of(single(Engine::vector, Transpose{sbuf(32, 32, 0, DType::f32, 20),
                                                      sbuf(32, 20, 0, DType::f32, 32)})),
            "ok");
  EXPECT_THAT(error_of(single(Engine::vector, Transpose{sbuf(0, 32, 0, DType::f32, 32),
                                                        sbuf(32, 32, 0, DType::f32, 32)})),
              HasSubstr("vector transpose moves partitions 32.. to 0..: both must lie in one "
                        "group of 32"));
  EXPECT_THAT(error_of(single(Engine::vector, Transpose{sbuf(0, 32, 0, DType::f32, 64),
                                                        sbuf(0, 64, 0, DType::f32, 32)})),
              HasSubstr("vector transpose input [64, 32] exceeds [32, 32]"));
}

TEST(Verifier, IndirectDmaOperands) {
  auto gather = [](MemRef dst, MemRef src, MemRef idx, uint32_t rows) {
    DmaCopy d{dst, src};
    d.row_index = idx;
    d.table_rows = rows;
    return d;
  };
  MemRef row = hbm(0, DType::f32, 1, 8, 0);
  row.partition_stride = 8;
  const MemRef dst = sbuf(0, 4, 0, DType::f32, 8);
  const MemRef idx = sbuf(0, 4, 64, DType::i32, 1);
  EXPECT_EQ(error_of(single(Engine::sync, gather(dst, row, idx, 16))), "ok");
  EXPECT_THAT(error_of(single(Engine::sync, gather(dst, row, idx, 0))),
              HasSubstr("the table has 0 rows"));
  EXPECT_THAT(error_of(single(Engine::sync, gather(dst, row, sbuf(0, 4, 64, DType::f32, 1), 16))),
              HasSubstr("row_index must be an i32/u32/i16/u16 sbuf tile, found f32 in sbuf"));
  EXPECT_THAT(error_of(single(Engine::sync, gather(dst, row, sbuf(0, 3, 64, DType::i32, 1), 16))),
              HasSubstr("3 index partitions for 4 destination rows"));
  EXPECT_THAT(
      error_of(single(Engine::sync, gather(dst, hbm(0, DType::f32, 2, 8, 8), idx, 16))),
      HasSubstr("src must be one hbm row (partition count 1), found hbm with 2 partitions"));
  EXPECT_THAT(error_of(single(Engine::sync, gather(sbuf(0, 4, 0, DType::f32, 4), row, idx, 16))),
              HasSubstr("table rows of 8 elements into rows of 4"));
  // The whole table must lie in the arena, not only the first row: 16 rows x 32 B = 512 B.
  EXPECT_THAT(error_of(single(Engine::sync, gather(dst, row, idx, 16), 480)),
              HasSubstr("hbm bytes [0, 512) are outside the arena of 480 bytes"));
}

TEST(Verifier, IndirectScatterOperands) {
  auto scatter = [](MemRef dst, MemRef src, MemRef idx, uint32_t rows) {
    DmaCopy d{dst, src};
    d.row_index = idx;
    d.table_rows = rows;
    d.scatter = true;
    return d;
  };
  MemRef row = hbm(0, DType::f32, 1, 8, 0);
  row.partition_stride = 8;
  const MemRef src = sbuf(0, 4, 0, DType::f32, 8);
  const MemRef idx = sbuf(0, 4, 64, DType::i32, 1);
  EXPECT_EQ(error_of(single(Engine::sync, scatter(row, src, idx, 16))), "ok");
  EXPECT_THAT(error_of(single(Engine::sync, scatter(row, src, sbuf(0, 2, 64, DType::i32, 1), 16))),
              HasSubstr("2 index partitions for 4 source rows"));
  EXPECT_THAT(
      error_of(single(Engine::sync, scatter(hbm(0, DType::f32, 2, 8, 8), src, idx, 16))),
      HasSubstr("dst must be one hbm row (partition count 1), found hbm with 2 partitions"));
  EXPECT_THAT(error_of(single(Engine::sync, scatter(src, row, idx, 16))),
              HasSubstr("dst must be one hbm row (partition count 1), found sbuf"));
  EXPECT_THAT(error_of(single(Engine::sync, scatter(row, sbuf(0, 4, 0, DType::f32, 4), idx, 16))),
              HasSubstr("table rows of 8 elements from rows of 4"));
  // The whole destination table must lie in the arena: 16 rows x 32 B = 512 B.
  EXPECT_THAT(error_of(single(Engine::sync, scatter(row, src, idx, 16), 480)),
              HasSubstr("hbm bytes [0, 512) are outside the arena of 480 bytes"));
}

TEST(Verifier, AccessPatternLimits) {
  MemRef a = sbuf(0, 1, 0, DType::f32, 2);
  a.levels[0] = {40000, 2};
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{sbuf(0, 1, 0, DType::f32, 2), a})),
              HasSubstr("stride 40000 is outside the int16 range"));
  MemRef b = sbuf(0, 1, 0, DType::f32, 1);
  b.num_levels = 5;
  EXPECT_THAT(error_of(single(Engine::vector, Memset{b, 0})),
              HasSubstr("5 access-pattern levels, expected 1 to 4"));
  EXPECT_THAT(error_of(single(Engine::vector, Memset{psum(0, 1, 0, DType::bf16, 4097), 0})),
              HasSubstr("4097 elements per partition exceed the 4096-element limit"));
  MemRef big = sbuf(0, 1, 0, DType::bf16, 1);
  big.num_levels = 2;
  big.levels[0] = {1024, 65};
  big.levels[1] = {1, 1024};
  EXPECT_THAT(error_of(single(Engine::vector, Memset{big, 0})),
              HasSubstr("66560 elements per partition exceed the 65536-element limit"));
}

TEST(Verifier, OutOfBounds) {
  EXPECT_THAT(error_of(single(Engine::vector, Memset{sbuf(0, 1, 196600, DType::f32, 4), 0})),
              HasSubstr("bytes [196600, 196616) are outside the 196608-byte sbuf partition"));
  EXPECT_THAT(error_of(single(Engine::vector, Memset{sbuf(120, 16, 0, DType::f32, 4), 0})),
              HasSubstr("partitions [120, 136) exceed the 128 partitions"));
  EXPECT_THAT(error_of(single(
                  Engine::sync,
                  DmaCopy{sbuf(0, 4, 0, DType::f32, 8), hbm(1000, DType::f32, 4, 8, 8), 0}, 1024)),
              HasSubstr("hbm bytes [1000, 1128) are outside the arena of 1024 bytes"));
  MemRef neg = sbuf(0, 1, 4, DType::f32, 4);
  neg.levels[0] = {-2, 4};
  EXPECT_THAT(error_of(single(Engine::vector, Memset{neg, 0})), HasSubstr("bytes [-20, 8)"));
}

TEST(Verifier, PsumBanksAndMatmulShapes) {
  const MemRef st = sbuf(0, 128, 0, DType::bf16, 128);
  const MemRef mv = sbuf(0, 128, 256, DType::bf16, 512);
  EXPECT_EQ(error_of(single(Engine::tensor, MatMul{psum(0, 128, 0, DType::f32, 512), st, mv})),
            "ok");
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{psum(0, 128, 1024, DType::f32, 512), st, mv})),
              HasSubstr("crosses a psum bank: bank offset 1024 + 2048 bytes exceeds 2048"));
  // v4 may span banks.
  EXPECT_EQ(error_of(single(Engine::tensor, MatMul{psum(0, 128, 1024, DType::f32, 512), st, mv}),
                     TargetKind::trn3),
            "ok");
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{psum(0, 128, 0, DType::f32, 512), st,
                                                     sbuf(0, 64, 256, DType::bf16, 512)})),
              HasSubstr("stationary has 128 partitions, moving has 64"));
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{psum(0, 128, 0, DType::f32, 600), st,
                                                     sbuf(0, 128, 256, DType::bf16, 600)})),
              HasSubstr("moving free size 600 exceeds 512"));
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{psum(0, 128, 0, DType::bf16, 512), st, mv})),
              HasSubstr("dst dtype bf16 is not allowed: expected f32"));
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{psum(0, 128, 0, DType::f32, 512), st,
                                                     sbuf(0, 128, 256, DType::f32, 512)})),
              HasSubstr("one fp32/tf32 operand needs both"));
}

TEST(Verifier, WhichEngineTouchesWhichMemory) {
  const MemRef s = sbuf(0, 4, 0, DType::f32, 4);
  const MemRef p = psum(0, 4, 0, DType::f32, 4);
  EXPECT_THAT(error_of(single(Engine::gpsimd, TensorCopy{s, p})),
              HasSubstr("gpsimd engine cannot access psum: expected sbuf"));
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{s, s, s})),
              HasSubstr("tensor engine writes only psum, found sbuf"));
  EXPECT_THAT(error_of(single(Engine::tensor, MatMul{p, p, s})),
              HasSubstr("tensor engine reads only sbuf, found psum"));
  EXPECT_THAT(error_of(single(Engine::sync, DmaCopy{hbm(0, DType::f32, 4, 4, 4), p, 0})),
              HasSubstr("dma cannot read psum: expected hbm or sbuf"));
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{s, hbm(0, DType::f32, 4, 4, 4)})),
              HasSubstr("vector engine cannot access hbm"));
  EXPECT_THAT(error_of(single(Engine::vector, TensorTensor{s, p, p, AluOp::add})),
              HasSubstr("both in psum"));
  EXPECT_THAT(error_of(single(Engine::scalar, TensorTensor{s, s, s, AluOp::add})),
              HasSubstr("scalar engine cannot execute tensor_tensor"));
  EXPECT_EQ(error_of(single(Engine::scalar, TensorCopy{s, p})), "ok");
}

TEST(Verifier, SemaphoresAndShapes) {
  Program p = single(Engine::vector, Memset{sbuf(0, 1, 0, DType::f32, 1), 0});
  p.cores[0].stream(Engine::vector)[0].waits.push_back({9, 1});
  EXPECT_THAT(error_of(p), HasSubstr("wait on semaphore 9 but the program has 8"));
  EXPECT_THAT(error_of(single(Engine::vector, TensorCopy{sbuf(0, 2, 0, DType::f32, 4),
                                                         sbuf(0, 2, 64, DType::f32, 5)})),
              HasSubstr("src has 5 elements per partition but dst has 4"));
  TensorScalar ts;
  ts.dst = ts.src = sbuf(0, 1, 0, DType::f32, 4);
  ts.op0 = AluOp::max;
  EXPECT_THAT(error_of(single(Engine::scalar, ts), TargetKind::trn2),
              HasSubstr("trn2 scalar engine tensor_scalar accepts"));
  EXPECT_EQ(error_of(single(Engine::vector, ts), TargetKind::trn2), "ok");
}

}  // namespace
}  // namespace neuronc::device
