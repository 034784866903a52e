// Zip reader: the real fixture's layout, synthetic archives in both writers' styles, and every
// malformation the reader must report instead of crashing.
#include "frontend/zip_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/error.h"
#include "frontend/mapped_file.h"
#include "tests/frontend/zip_builder.h"

namespace neuronc::frontend {
namespace {

using testing::as_span;
using testing::build_zip;
using ::testing::HasSubstr;
using testing::ZipFileSpec;
using testing::ZipOptions;

std::string fixture_path() {
  return std::string(NEURONC_SOURCE_DIR) + "/tests/corpus/frontend/executorch_linear.pt2";
}

std::string error_of(const std::string& bytes, const std::string& name = "t.zip") {
  try {
    ZipArchive::open(as_span(bytes), name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ZipReader, RealPt2FixtureLayout) {
  auto f = MappedFile::open(fixture_path());
  ZipArchive z = ZipArchive::open(f->bytes(), "linear.pt2");
  ASSERT_EQ(z.entries().size(), 11u);
  const ZipEntry* w0 = z.find("linear_3/data/weights/weight_0");
  ASSERT_NE(w0, nullptr);
  EXPECT_EQ(w0->local_header_offset, 0u);
  EXPECT_EQ(w0->data_offset, 64u);
  EXPECT_EQ(w0->size, 36u);
  EXPECT_EQ(w0->flags, 0x0808);
  for (const ZipEntry& e : z.entries()) {
    EXPECT_EQ(e.method, 0) << e.name;
    EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
    z.verify_crc(e);
  }
  EXPECT_EQ(z.text(*z.find("linear_3/archive_format")), "pt2");
  EXPECT_EQ(z.find("linear_3/models/model.json")->data_offset, 1152u);
  EXPECT_EQ(z.find("linear_3/data/sample_inputs/model.pt")->data_offset, 4544u);
}

TEST(ZipReader, NestedZipOpensInPlace) {
  auto f = MappedFile::open(fixture_path());
  ZipArchive outer = ZipArchive::open(f->bytes(), "linear.pt2");
  const ZipEntry* e = outer.find("linear_3/data/sample_inputs/model.pt");
  ZipArchive inner = ZipArchive::open(outer.data(*e), "linear.pt2!" + e->name);
  ASSERT_NE(inner.find("archive/data.pkl"), nullptr);
  const ZipEntry* d0 = inner.find("archive/data/0");
  ASSERT_NE(d0, nullptr);
  EXPECT_EQ(d0->size, 12u);
  EXPECT_EQ(d0->data_offset % 64, 0u);  // aligned relative to the nested zip
  EXPECT_EQ(inner.data(*d0).data(), outer.data(*e).data() + d0->data_offset);  // no copy
}

TEST(ZipReader, PythonZipfileStyle) {
  std::string z = build_zip({{"serialized_exported_program.json", "{}"}, {"version", "2"}},
                            ZipOptions{false, false, false});
  ZipArchive a = ZipArchive::open(as_span(z), "t.zip");
  ASSERT_EQ(a.entries().size(), 2u);
  EXPECT_EQ(a.text(*a.find("version")), "2");
}

TEST(ZipReader, EmptyEntryAndEmptyArchive) {
  std::string z = build_zip({{"r/empty", ""}});
  ZipArchive a = ZipArchive::open(as_span(z), "t.zip");
  EXPECT_EQ(a.data(*a.find("r/empty")).size(), 0u);
  std::string none = build_zip({});
  EXPECT_EQ(ZipArchive::open(as_span(none), "t.zip").entries().size(), 0u);
}

TEST(ZipReaderErrors, TooSmallAndNotZip) {
  EXPECT_THAT(error_of("PK"), HasSubstr("t.zip: not a zip archive: 2 bytes is too small"));
  EXPECT_THAT(error_of(std::string(100, 'x')),
              HasSubstr("no end-of-central-directory record (PK\\x05\\x06) in the last 100 bytes"));
}

TEST(ZipReaderErrors, TruncatedCentralDirectory) {
  auto f = MappedFile::open(fixture_path());
  std::string bytes(reinterpret_cast<const char*>(f->data()), f->size());
  // Keep the end records but cut the file before them: move them to a shorter file.
  std::string tail = bytes.substr(7620);  // ZIP64 EOCD, locator, EOCD
  std::string cut = bytes.substr(0, 7000 - tail.size());
  // Point the ZIP64 locator at the moved ZIP64 record.
  std::string moved = tail;
  testing::set32(moved, 56 + 8, static_cast<uint32_t>(cut.size()));
  std::string truncated = cut + moved;
  EXPECT_THAT(error_of(truncated, "model.pt2"),
              HasSubstr("model.pt2: central directory at 6776+844 exceeds file size 7000"));
}

TEST(ZipReaderErrors, BadCentralSignature) {
  std::string z = build_zip({{"r/a", "x"}}, ZipOptions{true, false, true});
  size_t cd = z.find(std::string("PK\x01\x02", 4));
  z[cd + 2] = 9;
  EXPECT_THAT(error_of(z), HasSubstr("central directory entry 0 at offset"));
  EXPECT_THAT(error_of(z), HasSubstr("expected 0x02014b50"));
}

TEST(ZipReaderErrors, BadLocalSignature) {
  std::string z = build_zip({{"r/a", "x"}});
  z[0] = 'Q';
  EXPECT_THAT(error_of(z), HasSubstr("entry 'r/a': local header at offset 0 has bad signature"));
}

TEST(ZipReaderErrors, LocalNameDiffers) {
  std::string z = build_zip({{"r/y", "x", "r/x"}});
  EXPECT_THAT(error_of(z),
              HasSubstr("entry 0: local header name 'r/x' differs from central 'r/y'"));
}

TEST(ZipReaderErrors, HugeDeclaredSize) {
  std::string z = build_zip({{"r/m.json", "{}"}}, ZipOptions{true, false, true});
  size_t cd = z.find(std::string("PK\x01\x02", 4));
  testing::set32(z, cd + 20, 0x7fffffff);
  testing::set32(z, cd + 24, 0x7fffffff);
  EXPECT_THAT(error_of(z), HasSubstr("entry 'r/m.json': declared 2147483647 bytes at offset 64"));
}

TEST(ZipReaderErrors, PathTraversalAndOddNames) {
  EXPECT_THAT(error_of(build_zip({{"../../etc/passwd", "x"}})),
              HasSubstr("entry '../../etc/passwd': '..' path segment is not allowed"));
  EXPECT_THAT(error_of(build_zip({{"/etc/passwd", "x"}})), HasSubstr("absolute path"));
  EXPECT_THAT(error_of(build_zip({{"r\\a", "x"}})), HasSubstr("backslash"));
  EXPECT_THAT(error_of(build_zip({{"C:/x", "x"}})), HasSubstr("drive prefix"));
  EXPECT_THAT(error_of(build_zip({{std::string("r/a\0b", 5), "x"}})), HasSubstr("NUL byte"));
  EXPECT_EQ(zip_name_problem("r/a..b/c"), "");
}

TEST(ZipReaderErrors, DuplicateEntry) {
  EXPECT_THAT(error_of(build_zip({{"r/a", "x"}, {"r/a", "y"}})),
              HasSubstr("duplicate entry 'r/a'"));
}

TEST(ZipReaderErrors, DeflateIsListedButRefusedOnRead) {
  std::string z = build_zip({{"r/w", "abc", "", 8}});
  ZipArchive a = ZipArchive::open(as_span(z), "t.zip");
  try {
    a.data(*a.find("r/w"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("entry 'r/w' is compressed (method 8, deflate)"));
    EXPECT_THAT(e.what(), HasSubstr("zip -0"));
  }
  EXPECT_THAT(error_of(build_zip({{"r/w", "abc", "", 12}})),
              HasSubstr("compression method 12 is not supported"));
}

TEST(ZipReaderErrors, EntryCountBeyondDirectory) {
  std::string z = build_zip({{"r/a", "x"}}, ZipOptions{true, false, true});
  size_t eocd = z.size() - 22;
  z[eocd + 8] = static_cast<char>(0xff);
  z[eocd + 10] = static_cast<char>(0xff);
  z[eocd + 9] = 0x7f;
  z[eocd + 11] = 0x7f;
  EXPECT_THAT(error_of(z), HasSubstr("end record declares 32767 entries"));
}

TEST(ZipReaderErrors, CrcMismatch) {
  std::string z = build_zip({{"r/a", "hello"}});
  size_t p = z.find("hello");
  z[p] = 'j';
  ZipArchive a = ZipArchive::open(as_span(z), "t.zip");
  EXPECT_THROW(a.verify_crc(*a.find("r/a")), Error);
}

// Every prefix of a real archive is rejected with an error, never a crash.
TEST(ZipReaderErrors, EveryTruncationIsAnError) {
  auto f = MappedFile::open(fixture_path());
  for (size_t n = 0; n < f->size(); n += 7) {
    EXPECT_THROW(ZipArchive::open(f->bytes().subspan(0, n), "t"), Error) << n;
  }
}

TEST(Crc32, KnownValue) {
  EXPECT_EQ(testing::crc_of("123456789"), 0xCBF43926u);
}

}  // namespace
}  // namespace neuronc::frontend
