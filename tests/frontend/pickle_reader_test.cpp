// Pickle interpreter: the real sample-input pickle, the opcodes PyTorch writes, and malformed or
// hostile streams (unknown opcodes, disallowed GLOBALs, underflow, bad persistent ids).
#include "frontend/pickle_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/error.h"
#include "frontend/mapped_file.h"
#include "frontend/torch_save.h"
#include "frontend/zip_reader.h"
#include "tests/frontend/zip_builder.h"

namespace neuronc::frontend {
namespace {

using testing::as_span;
using ::testing::HasSubstr;

// A byte string from a literal, embedded NULs included.
template <size_t N>
std::string B(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string error_of(const std::string& p) {
  try {
    read_pickle(as_span(p), "data.pkl");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ((_rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', 3), 0, (3,), (1,), False,
// OrderedDict()),), {}) — the bytes of the fixture's sample-input pickle.
std::string sample_pickle() {
  auto f = MappedFile::open(std::string(NEURONC_SOURCE_DIR) +
                            "/tests/corpus/frontend/executorch_linear.pt2");
  ZipArchive outer = ZipArchive::open(f->bytes(), "x");
  ZipArchive inner =
      ZipArchive::open(outer.data(*outer.find("linear_3/data/sample_inputs/model.pt")), "y");
  auto d = inner.data(*inner.find("archive/data.pkl"));
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

TEST(PickleReader, RealSampleInputPickle) {
  std::string p = sample_pickle();
  ASSERT_EQ(p.size(), 159u);
  PickleDocument doc = read_pickle(as_span(p), "data.pkl");
  const PyObject& root = doc.root();
  ASSERT_EQ(root.kind, PyKind::tuple);
  ASSERT_EQ(root.items.size(), 2u);
  const PyObject& args = doc.at(root.items[0]);
  ASSERT_EQ(args.kind, PyKind::tuple);
  ASSERT_EQ(args.items.size(), 1u);
  const PyObject& t = doc.at(args.items[0]);
  ASSERT_EQ(t.kind, PyKind::tensor);
  const TensorRecord& r = doc.tensors()[t.ref];
  EXPECT_EQ(r.storage_key, "0");
  EXPECT_EQ(r.storage_class, "FloatStorage");
  EXPECT_EQ(r.location, "cpu");
  EXPECT_EQ(r.storage_numel, 3);
  EXPECT_EQ(r.dtype, ir::DType::f32);
  EXPECT_EQ(r.sizes, std::vector<int64_t>{3});
  EXPECT_EQ(r.strides, std::vector<int64_t>{1});
  EXPECT_EQ(doc.at(root.items[1]).kind, PyKind::dict);
}

TEST(PickleReader, ScalarsAndContainers) {
  // PROTO 2, MARK, BININT1 7, BININT2 300, BININT -5, LONG1 2 bytes 0xff7f, NEWTRUE, NONE,
  // BINFLOAT 1.5, SHORT_BINUNICODE 'ab', LIST of (EMPTY_LIST, BININT1 1, APPEND), TUPLE, STOP.
  std::string p = B("\x80\x02(K\x07M\x2c\x01J\xfb\xff\xff\xff\x8a\x02\xff\x7f\x88N") +
                  B("G\x3f\xf8\x00\x00\x00\x00\x00\x00") +
                  B("\x8c\x02"
                    "ab") +
                  B("]K\x01"
                    "a"
                    "t.");
  PickleDocument doc = read_pickle(as_span(p), "x");
  const PyObject& t = doc.root();
  ASSERT_EQ(t.kind, PyKind::tuple);
  ASSERT_EQ(t.items.size(), 9u);
  EXPECT_EQ(doc.at(t.items[0]).i, 7);
  EXPECT_EQ(doc.at(t.items[1]).i, 300);
  EXPECT_EQ(doc.at(t.items[2]).i, -5);
  EXPECT_EQ(doc.at(t.items[3]).i, 0x7fff);
  EXPECT_TRUE(doc.at(t.items[4]).b);
  EXPECT_EQ(doc.at(t.items[5]).kind, PyKind::none);
  EXPECT_EQ(doc.at(t.items[6]).f, 1.5);
  EXPECT_EQ(doc.at(t.items[7]).str, "ab");
  EXPECT_EQ(doc.at(t.items[8]).items.size(), 1u);
}

TEST(PickleReader, SelfReferenceDoesNotLeakOrRecurse) {
  // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP: a list containing itself.
  std::string p =
      B("\x80\x02]q\x00h\x00"
        "a.");
  PickleDocument doc = read_pickle(as_span(p), "x");
  EXPECT_EQ(doc.root().items[0], doc.root_id());
}

TEST(PickleReaderErrors, DisallowedGlobal) {
  std::string p =
      "\x80\x02"
      "cos\nsystem\n"
      "q\x00.";
  EXPECT_THAT(error_of(p), HasSubstr("data.pkl@0x2: GLOBAL 'os system' is not allowed"));
  EXPECT_THAT(error_of("\x80\x02"
                       "ctorch._tensor\n_rebuild_from_type_v2\n."),
              HasSubstr("GLOBAL 'torch._tensor _rebuild_from_type_v2' is not allowed"));
}

TEST(PickleReaderErrors, UnknownOpcode) {
  EXPECT_THAT(error_of(B("\x80\x02\xff.")),
              HasSubstr("data.pkl@0x2: unknown or unsupported opcode 0xff"));
  EXPECT_THAT(error_of("\x80\x02I1\n."), HasSubstr("opcode 0x49"));  // text INT (protocol 0)
}

TEST(PickleReaderErrors, StackAndMark) {
  EXPECT_THAT(error_of("\x80\x02t."), HasSubstr("TUPLE: no MARK on the stack"));
  EXPECT_THAT(error_of("\x80\x02"
                       "a."),
              HasSubstr("APPEND: stack underflow"));
  EXPECT_THAT(error_of("\x80\x02(K\x01"
                       "0"
                       "0."),
              HasSubstr("POP: stack underflow"));
  EXPECT_THAT(error_of("\x80\x02."), HasSubstr("STOP with an empty stack"));
  EXPECT_THAT(error_of("\x80\x02N"), HasSubstr("pickle ends without STOP"));
}

TEST(PickleReaderErrors, LengthsBeyondData) {
  EXPECT_THAT(error_of(B("\x80\x02X\xff\xff\xff\x7f"
                         "ab.")),
              HasSubstr("string of 2147483647 bytes but only 3 remain"));
  EXPECT_THAT(error_of(B("\x80\x02"
                         "h\x05.")),
              HasSubstr("GET of memo index 5 never stored"));
  EXPECT_THAT(error_of(B("\x80\x02\x8a\x09")), HasSubstr("does not fit in int64"));
}

TEST(PickleReaderErrors, BadPersistentIdAndReduce) {
  // BINPERSID on a 2-tuple.
  EXPECT_THAT(error_of(B("\x80\x02X\x01\x00\x00\x00sK\x01\x86Q.")),
              HasSubstr("persistent id must be a 5-tuple"));
  // REDUCE on an int.
  EXPECT_THAT(error_of("\x80\x02K\x01)R."), HasSubstr("REDUCE on a int"));
  // REDUCE of a storage class (may only be referenced).
  EXPECT_THAT(error_of("\x80\x02"
                       "ctorch\nFloatStorage\n)R."),
              HasSubstr("REDUCE of 'torch.FloatStorage' is not allowed"));
  // BUILD on a list.
  EXPECT_THAT(error_of("\x80\x02]}b."), HasSubstr("BUILD on list"));
}

TEST(PickleReaderErrors, RebuildTensorArguments) {
  // _rebuild_tensor_v2 with a non-storage first argument.
  std::string q =
      B("\x80\x02"
        "ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x00)))\x89}tR.");
  EXPECT_THAT(error_of(q), HasSubstr("_rebuild_tensor_v2 storage: expected storage, found int"));
}

TEST(PickleReader, EveryTruncationIsAnError) {
  std::string p = sample_pickle();
  for (size_t n = 0; n < p.size(); ++n) {
    EXPECT_THROW(read_pickle(as_span(p).subspan(0, n), "x"), Error) << n;
  }
}

TEST(TorchSave, StorageSizeMismatch) {
  // A torch.save zip whose storage record is shorter than numel * element size.
  std::string p = sample_pickle();
  std::string z =
      testing::build_zip({{"archive/data.pkl", p}, {"archive/data/0", std::string(8, '\0')}});
  TorchSaveArchive a = TorchSaveArchive::open(as_span(z), "s.pt");
  const PyObject& args = a.pickle().at(a.pickle().root().items[0]);
  try {
    a.tensor(args.items[0], "sample input 0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("s.pt: sample input 0: storage '0' (FloatStorage) declares 3 "
                                    "elements = 12 bytes but the record has 8"));
  }
  std::string z2 = testing::build_zip({{"archive/data.pkl", p}});
  TorchSaveArchive a2 = TorchSaveArchive::open(as_span(z2), "s.pt");
  EXPECT_THROW(a2.tensor(a2.pickle().at(a2.pickle().root().items[0]).items[0], "x"), Error);
}

}  // namespace
}  // namespace neuronc::frontend
