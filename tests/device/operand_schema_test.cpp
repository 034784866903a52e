// device::for_each_operand, the ISA's one operand schema, and what is derived from it.
#include <gtest/gtest.h>

#include <variant>

#include "device/isa.h"

namespace neuronc::device {
namespace {

MemRef at(uint64_t offset) {
  return sbuf(0, 4, offset, DType::f32, 8);
}

// Every opcode of the Operation variant is covered by the schema: visiting a default-built
// instance of each compiles (the static_assert in for_each_operand) and visits only MemRefs the
// instruction holds.
template <size_t I = 0>
void visit_every_opcode(int& visited) {
  if constexpr (I < std::variant_size_v<Operation>) {
    Operation op{std::in_place_index<I>};
    for_each_operand(op, [&](MemRef&, Access) { ++visited; });
    visit_every_opcode<I + 1>(visited);
  }
}

TEST(OperandSchema, CoversEveryOpcode) {
  int visited = 0;
  visit_every_opcode(visited);
  EXPECT_GT(visited, 2 * static_cast<int>(std::variant_size_v<Operation>) - 4);
}

std::vector<MemRef> listed(const MemRefs& m) {
  return {m.begin(), m.end()};
}

TEST(OperandSchema, AccumulatingAndPredicatedDestinationsAreReadToo) {
  MatMul mm{at(0), at(64), at(128)};
  mm.accumulate = true;
  Operands o = operands(mm);
  ASSERT_EQ(o.reads.size(), 3u);
  EXPECT_EQ(o.reads[2], mm.dst);
  EXPECT_EQ(listed(o.writes), std::vector<MemRef>{mm.dst});
  mm.accumulate = false;
  EXPECT_EQ(operands(mm).reads.size(), 2u);

  CopyPredicated cp;
  cp.dst = at(0), cp.src = at(64), cp.predicate = at(128);
  o = operands(cp);
  EXPECT_EQ(listed(o.reads), (std::vector<MemRef>{cp.src, cp.predicate, cp.dst}));
}

TEST(OperandSchema, BypassedScalarOperandIsHeldButNotRead) {
  TensorScalar ts;
  ts.dst = at(0), ts.src = at(64), ts.operand0 = at(128), ts.operand1 = at(192);
  ts.op1 = AluOp::bypass;
  EXPECT_EQ(listed(operands(ts).reads),
            (std::vector<MemRef>{ts.src, std::get<MemRef>(ts.operand0)}));
  // ... but a relocation still moves it.
  Operation op = ts;
  for_each_operand(op, [](MemRef& m, Access) { m.offset += 1000; });
  EXPECT_EQ(std::get<MemRef>(std::get<TensorScalar>(op).operand1).offset, 1192u);
  ts.op1 = AluOp::add;
  EXPECT_EQ(operands(ts).reads.size(), 3u);
}

TEST(OperandSchema, IndirectDmaReadsItsTableFootprintAndIndices) {
  DmaCopy d(at(0), hbm(4096, DType::f32, 4, 8, 8));
  d.row_index = at(512);
  d.table_rows = 100;
  const Operands o = operands(d);
  ASSERT_EQ(o.reads.size(), 2u);
  EXPECT_EQ(o.reads[0], indirect_table_footprint(d));
  EXPECT_EQ(o.reads[1], *d.row_index);
  // Relocation visits the table itself, the indices and the destination.
  Operation op = d;
  int n = 0;
  for_each_operand(op, [&](MemRef&, Access) { ++n; });
  EXPECT_EQ(n, 3);
}

TEST(OperandSchema, IndirectScatterWritesItsTableFootprint) {
  DmaCopy d(hbm(4096, DType::f32, 1, 8, 8), at(0));
  d.row_index = at(512);
  d.table_rows = 100;
  d.scatter = true;
  const Operands o = operands(d);
  ASSERT_EQ(o.writes.size(), 1u);
  EXPECT_EQ(o.writes[0], indirect_table_footprint(d));
  EXPECT_EQ(o.writes[0].levels[0].count, 100u);  // every row the index may name
  EXPECT_EQ(o.writes[0].levels[0].stride, 8);
  ASSERT_EQ(o.reads.size(), 2u);
  EXPECT_EQ(o.reads[0], d.src);
  EXPECT_EQ(o.reads[1], *d.row_index);
}

}  // namespace
}  // namespace neuronc::device
