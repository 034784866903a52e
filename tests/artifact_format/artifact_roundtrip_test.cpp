// Round trip and determinism of the artifact writer/reader, on hand-built device programs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "artifact_format/crc32c.h"
#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "artifact_format/writer.h"
#include "tests/artifact_format/test_artifacts.h"

namespace neuronc::artifact {
namespace {

// Maps the artifact file at `path` into `*out`, expecting it to hold exactly `want`.
void map_expecting(const std::string& path, std::span<const std::byte> want, MappedFile* out) {
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  ASSERT_EQ(f->bytes().size(), want.size());
  EXPECT_TRUE(std::equal(f->bytes().begin(), f->bytes().end(), want.begin()));
  *out = std::move(*f);
}

TEST(Crc32c, KnownVectors) {
  // RFC 3720 B.4: 32 bytes of zeros -> 0x8a9136aa; "123456789" -> 0xe3069283.
  std::vector<std::byte> zeros(32);
  EXPECT_EQ(crc32c(zeros), 0x8a9136aau);
  const char* s = "123456789";
  EXPECT_EQ(crc32c(std::as_bytes(std::span(s, 9))), 0xe3069283u);
  // Incremental equals one shot.
  const auto all = std::as_bytes(std::span(s, 9));
  EXPECT_EQ(crc32c(all.subspan(4), crc32c(all.first(4))), 0xe3069283u);
}

// Long inputs (the hardware path's three interleaved chains, joined by shifts) give the CRC a
// bit-at-a-time reference gives, at lengths around its block and at any alignment, in one call
// or continued across calls.
TEST(Crc32c, LongInputsMatchABitwiseReference) {
  auto reference = [](std::span<const std::byte> d) {
    uint32_t c = 0xffffffffu;
    for (std::byte b : d) {
      c ^= static_cast<uint8_t>(b);
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
  };
  std::vector<std::byte> data(3 * 3 * 4096 + 101);
  uint32_t x = 0x12345678u;
  for (std::byte& b : data) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  const std::span<const std::byte> all(data);
  for (size_t offset : {size_t{0}, size_t{3}})
    for (size_t n : {size_t{3 * 4096 - 1}, size_t{3 * 4096}, size_t{3 * 4096 + 7},
                     size_t{6 * 4096 + 64}, data.size() - offset}) {
      SCOPED_TRACE("offset " + std::to_string(offset) + ", " + std::to_string(n) + " bytes");
      const auto d = all.subspan(offset, n);
      const uint32_t want = reference(d);
      EXPECT_EQ(crc32c(d), want);
      const size_t cut = n / 3 + 5;
      EXPECT_EQ(crc32c(d.subspan(cut), crc32c(d.first(cut))), want);
    }
}

TEST(ArtifactRoundTrip, ContentsSurviveWriteAndRead) {
  auto w = testing::two_partition_writer();
  auto bytes = w.write_memory();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  auto a = read_artifact(*bytes);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->contents, w.contents());  // the writer's view includes the segment table
  EXPECT_EQ(a->contents.programs[0].program, testing::relu_affine_program(0).program);
  EXPECT_EQ(a->header.format_major, kFormatMajor);
  // The constant is where the plan says, byte for byte.
  const auto wv = testing::bytes_of(testing::weight_values());
  const auto got = a->constant_bytes(0);
  ASSERT_EQ(got.size(), wv.size());
  EXPECT_EQ(0, std::memcmp(got.data(), wv.data(), wv.size()));
}

// An integer input's valid range (IndexBound) survives the round trip; absent stays absent.
TEST(ArtifactRoundTrip, IndexBoundSurvivesWriteAndRead) {
  auto w = testing::two_partition_writer();
  const uint32_t ids = w.add_input("ids", TensorDType::i64, {Dim::constant(4)});
  (void)ids;
  w.contents().signature.inputs.back().index_bound =
      IndexBound{0, 30522, "the rows of embedding table 'wte.weight' (node 'embedding')"};
  auto bytes = w.write_memory();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  auto a = read_artifact(*bytes);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->contents.signature, w.contents().signature);
  ASSERT_TRUE(a->contents.signature.inputs.back().index_bound.has_value());
  EXPECT_EQ(a->contents.signature.inputs.back().index_bound->hi, 30522);
  EXPECT_FALSE(a->contents.signature.inputs.front().index_bound.has_value());
}

TEST(ArtifactRoundTrip, SegmentsAreAlignedAndRawByDefault) {
  const auto bytes = testing::two_partition_artifact({.small_constant_bytes = 16});
  auto a = read_artifact(bytes);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_EQ(a->contents.segments.size(), 1u);
  EXPECT_EQ(a->header.segments_offset % 4096, 0u);
  EXPECT_EQ(a->contents.segments[0].compression, Compression::none);
  // Zero-copy: the constant's bytes lie inside the input buffer.
  const auto c = a->constant_bytes(0);
  EXPECT_GE(c.data(), bytes.data());
  EXPECT_LT(c.data(), bytes.data() + bytes.size());
  EXPECT_EQ((c.data() - bytes.data()) % 4096, 0);
}

TEST(ArtifactRoundTrip, CompressedSegmentsDecompress) {
  auto w = testing::two_partition_writer();
  std::vector<float> big(64 * 1024, 1.5f);  // compressible
  w.add_constant("big", TensorDType::f32, {Dim::constant(64 * 1024)}, testing::bytes_of(big));
  auto bytes = w.write_memory({.compress_constants = true});
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  EXPECT_LT(bytes->size(), 64u * 1024 * 4 / 4);
  auto a = read_artifact(*bytes);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  const auto& segs = a->contents.segments;
  bool any_zstd = false;
  for (const auto& s : segs) any_zstd |= s.compression == Compression::zstd;
  EXPECT_TRUE(any_zstd);
  const auto c = a->constant_bytes(1);
  ASSERT_EQ(c.size(), big.size() * 4);
  EXPECT_EQ(0, std::memcmp(c.data(), big.data(), c.size()));
}

TEST(ArtifactRoundTrip, OutputIsDeterministic) {
  EXPECT_EQ(testing::two_partition_artifact(), testing::two_partition_artifact());
  EXPECT_EQ(testing::two_partition_artifact({.compress_constants = true}),
            testing::two_partition_artifact({.compress_constants = true}));
}

TEST(ArtifactRoundTrip, WriteFileThenMap) {
  auto w = testing::two_partition_writer();
  const std::string path = ::testing::TempDir() + "/roundtrip.nca";
  ASSERT_TRUE(w.write_file(path).is_ok());
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  auto a = read_artifact(f->bytes());
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->contents.plan, w.contents().plan);
}

// Writing over an artifact replaces it whole (exchanged, then the old one removed) and leaves no
// temporary; over a directory, the write fails and the directory stays.
TEST(ArtifactRoundTrip, WriteFileReplacesAFileButNotADirectory) {
  const std::string path = ::testing::TempDir() + "/replaced.nca";
  {
    std::ofstream old(path, std::ios::binary | std::ios::trunc);
    old << "an older, shorter file";
  }
  auto w = testing::two_partition_writer();
  ASSERT_TRUE(w.write_file(path).is_ok());
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  ASSERT_TRUE(read_artifact(f->bytes()).is_ok());
  EXPECT_EQ(f->bytes().size(), testing::two_partition_artifact().size());

  const std::string dir = ::testing::TempDir() + "/replaced_dir.nca";
  std::filesystem::create_directories(dir);
  const Status s = testing::two_partition_writer().write_file(dir);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("Is a directory"), std::string::npos) << s.message();
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_FALSE(std::ifstream(dir + ".tmp").good());
}

// A constant made by a fill at write time gives the same file as the same bytes held, in memory
// and streamed to a file, with small, large and compressed constants; the fill runs once per
// write and a throwing fill leaves no file behind.
TEST(ArtifactRoundTrip, FilledConstantsWriteTheBytesHeldOnesWould) {
  std::vector<float> big(300 * 1024), small(8);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 977) * 0.25f;
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<float>(i) - 3.5f;
  const auto big_bytes = testing::bytes_of(big), small_bytes = testing::bytes_of(small);
  int fills = 0;
  std::vector<float> kept(200 * 1024);  // a third, stored as it is (ConstantFill::as_is)
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = static_cast<float>(i % 613) - 7.0f;
  const auto kept_bytes = testing::bytes_of(kept);
  static size_t dropped;  // bytes handed to drop_as_is
  auto fill_of = [&fills](const std::vector<std::byte>& b, bool as_is = false) {
    return ConstantFill{b.size(),
                        [&fills, &b](std::span<std::byte> out) {
                          ++fills;
                          ASSERT_EQ(out.size(), b.size());
                          std::memcpy(out.data(), b.data(), b.size());
                        },
                        as_is ? std::span<const std::byte>(b) : std::span<const std::byte>(),
                        as_is ? +[](const std::byte*, size_t n) { dropped += n; } : nullptr};
  };
  auto writer = [&](bool filled) {
    auto w = testing::two_partition_writer();
    const std::vector<Dim> big_dims = {Dim::constant(static_cast<int64_t>(big.size()))};
    const std::vector<Dim> small_dims = {Dim::constant(static_cast<int64_t>(small.size()))};
    const std::vector<Dim> kept_dims = {Dim::constant(static_cast<int64_t>(kept.size()))};
    if (filled) {
      w.add_constant("big", TensorDType::f32, big_dims, fill_of(big_bytes));
      w.add_constant("small", TensorDType::f32, small_dims, fill_of(small_bytes));
      w.add_constant("kept", TensorDType::f32, kept_dims, fill_of(kept_bytes, true));
    } else {
      w.add_constant("big", TensorDType::f32, big_dims, std::span<const std::byte>(big_bytes),
                     kHostOnly);
      w.add_constant("small", TensorDType::f32, small_dims, std::span<const std::byte>(small_bytes),
                     kHostOnly);
      w.add_constant("kept", TensorDType::f32, kept_dims, std::span<const std::byte>(kept_bytes),
                     kHostOnly);
    }
    return w;
  };
  for (const bool compress : {false, true}) {
    SCOPED_TRACE(compress ? "compressed" : "raw");
    const WriteOptions o{.compress_constants = compress};
    auto held = writer(false).write_memory(o);
    ASSERT_TRUE(held.is_ok()) << held.status().message();
    fills = 0;
    dropped = 0;
    auto in_memory = writer(true).write_memory(o);
    ASSERT_TRUE(in_memory.is_ok()) << in_memory.status().message();
    EXPECT_EQ(fills, 3);
    EXPECT_EQ(dropped, 0u);  // memory is no file
    EXPECT_EQ(*in_memory, *held);
    const std::string path = ::testing::TempDir() + "/filled.nca";
    fills = 0;
    ASSERT_TRUE(writer(true).write_file(path, o).is_ok());
    // The kept constant goes to the file from its own bytes, whose pages are then dropped,
    // unless it is compressed (made into the writer's memory like the rest).
    EXPECT_EQ(fills, compress ? 3 : 2);
    EXPECT_EQ(dropped, compress ? 0u : kept_bytes.size());
    MappedFile f;
    ASSERT_NO_FATAL_FAILURE(map_expecting(path, *held, &f));
    auto a = read_artifact(f.bytes());
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    const auto got = a->constant_bytes(1);
    ASSERT_EQ(got.size(), big_bytes.size());
    EXPECT_EQ(0, std::memcmp(got.data(), big_bytes.data(), got.size()));
  }
  // A fill that fails: the error reaches the caller and neither the file nor its temporary is
  // left.
  auto w = testing::two_partition_writer();
  w.add_constant("bad", TensorDType::f32, {Dim::constant(300 * 1024)},
                 ConstantFill{300 * 1024 * 4,
                              [](std::span<std::byte>) {
                                throw std::runtime_error("constant 'bad': payload too short");
                              },
                              {}},
                 kHostOnly);
  const std::string path = ::testing::TempDir() + "/failed_fill.nca";
  std::remove(path.c_str());
  EXPECT_THROW((void)w.write_file(path), std::runtime_error);
  EXPECT_FALSE(std::ifstream(path).good());
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
}

// A source SHA-256 given late (set_source_sha256) is asked for once, after the constants are
// made, and gives the bytes of the same digest set beforehand, in memory and in a file; one that
// cannot be had fails the write and leaves no file.
TEST(ArtifactRoundTrip, ALateSourceDigestWritesTheBytesAnEarlyOneWould) {
  std::vector<float> big(300 * 1024);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 419) - 1.5f;
  const auto big_bytes = testing::bytes_of(big);
  std::vector<uint8_t> digest(32);
  for (size_t i = 0; i < digest.size(); ++i) digest[i] = static_cast<uint8_t>(0xa5 ^ (i * 37));
  bool filled = false;
  int asked = 0;
  auto writer = [&](bool late) {
    auto w = testing::two_partition_writer();
    w.add_constant("big", TensorDType::f32, {Dim::constant(static_cast<int64_t>(big.size()))},
                   ConstantFill{big_bytes.size(),
                                [&](std::span<std::byte> out) {
                                  filled = true;
                                  std::memcpy(out.data(), big_bytes.data(), out.size());
                                },
                                {}},
                   kHostOnly);
    if (late) {
      w.set_source_sha256([&] {
        EXPECT_TRUE(filled);  // asked for only once the constants are made
        ++asked;
        return digest;
      });
    } else {
      w.contents().source.sha256 = digest;
    }
    return w;
  };
  auto early = writer(false).write_memory();
  ASSERT_TRUE(early.is_ok()) << early.status().message();
  filled = false;
  auto late = writer(true).write_memory();
  ASSERT_TRUE(late.is_ok()) << late.status().message();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(*late, *early);
  const std::string path = ::testing::TempDir() + "/late_digest.nca";
  filled = false;
  auto w = writer(true);
  ASSERT_TRUE(w.write_file(path).is_ok());
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(w.contents().source.sha256, digest);
  MappedFile f;
  ASSERT_NO_FATAL_FAILURE(map_expecting(path, *early, &f));
  auto a = read_artifact(f.bytes());
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->contents.source.sha256, digest);

  auto failing = writer(false);
  failing.set_source_sha256(
      []() -> std::vector<uint8_t> { throw std::runtime_error("model.pt2: reading failed"); });
  const std::string failed = ::testing::TempDir() + "/late_digest_failed.nca";
  std::remove(failed.c_str());
  EXPECT_THROW((void)failing.write_file(failed), std::runtime_error);
  EXPECT_FALSE(std::ifstream(failed).good());
  EXPECT_FALSE(std::ifstream(failed + ".tmp").good());
}

// A constant stored as it is, whose bytes its file can give (ConstantFill::read_as_is), goes to
// a file from chunks read that way, and from its own bytes for a chunk whose read fails: the
// file, its CRCs and the dropped pages are as without the reader.
TEST(ArtifactRoundTrip, AnAsIsConstantIsWrittenFromReadsOfItsFile) {
  std::vector<float> kept((size_t{9} << 20) / 4 + 3);  // three 4 MiB chunks, the last partial
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = static_cast<float>(i % 8191) - 5.5f;
  const auto kept_bytes = testing::bytes_of(kept);
  static int reads, failed_reads;
  static size_t dropped;
  auto writer = [&](bool with_reader) {
    auto w = testing::two_partition_writer();
    ConstantFill f{
        kept_bytes.size(),
        [&](std::span<std::byte> out) { std::memcpy(out.data(), kept_bytes.data(), out.size()); },
        std::span<const std::byte>(kept_bytes), +[](const std::byte*, size_t n) { dropped += n; }};
    if (with_reader) {
      f.as_is_owner = &kept_bytes;
      // Reads as a file would, except the second chunk, which fails.
      f.read_as_is = +[](const void* owner, const std::byte* p, size_t n, std::byte* out) {
        const auto& whole = *static_cast<const std::vector<std::byte>*>(owner);
        if (++reads == 2) return ++failed_reads, false;
        EXPECT_GE(p, whole.data());
        EXPECT_LE(p + n, whole.data() + whole.size());
        std::memcpy(out, p, n);
        return true;
      };
    }
    w.add_constant("kept", TensorDType::f32, {Dim::constant(static_cast<int64_t>(kept.size()))},
                   std::move(f));
    return w;
  };
  const std::string plain = ::testing::TempDir() + "/as_is_plain.nca";
  const std::string read = ::testing::TempDir() + "/as_is_read.nca";
  ASSERT_TRUE(writer(false).write_file(plain).is_ok());
  reads = failed_reads = 0;
  dropped = 0;
  ASSERT_TRUE(writer(true).write_file(read).is_ok());
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(failed_reads, 1);
  EXPECT_EQ(dropped, kept_bytes.size());
  auto a = MappedFile::open(plain), b = MappedFile::open(read);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_EQ(a->bytes().size(), b->bytes().size());
  EXPECT_TRUE(std::equal(a->bytes().begin(), a->bytes().end(), b->bytes().begin()));
  auto art = read_artifact(b->bytes());
  ASSERT_TRUE(art.is_ok()) << art.status().message();
  const auto got = art->constant_bytes(1);
  ASSERT_EQ(got.size(), kept_bytes.size());
  EXPECT_EQ(0, std::memcmp(got.data(), kept_bytes.data(), got.size()));
}

// Fills made by several threads at once (WriteOptions::threads) give the bytes one thread
// gives, in memory and in a file; of two failing fills, the error is the first's in segment
// order whatever the thread count.
TEST(ArtifactRoundTrip, FillsOnSeveralThreadsWriteTheSameBytes) {
  std::vector<std::vector<std::byte>> parts;
  for (int k = 0; k < 12; ++k) {
    std::vector<float> v(static_cast<size_t>(9000 + 3000 * k));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * (k + 7)) % 1009) - k;
    parts.push_back(testing::bytes_of(v));
  }
  std::atomic<int> fills{0};
  auto writer = [&](int bad_from) {
    auto w = testing::two_partition_writer();
    for (size_t k = 0; k < parts.size(); ++k) {
      const std::vector<std::byte>& b = parts[k];
      const bool bad = bad_from >= 0 && static_cast<int>(k) >= bad_from && k % 2 == 1;
      w.add_constant("c" + std::to_string(k), TensorDType::f32,
                     {Dim::constant(static_cast<int64_t>(b.size() / 4))},
                     ConstantFill{b.size(),
                                  [&fills, &b, bad, k](std::span<std::byte> out) {
                                    if (bad) throw std::runtime_error("fill " + std::to_string(k));
                                    ++fills;
                                    std::memcpy(out.data(), b.data(), b.size());
                                  },
                                  {}},
                     kHostOnly);
    }
    return w;
  };
  auto one = writer(-1).write_memory(WriteOptions{.threads = 1});
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  for (const int threads : {2, 3, 0}) {
    SCOPED_TRACE(threads);
    fills = 0;
    auto many = writer(-1).write_memory(WriteOptions{.threads = threads});
    ASSERT_TRUE(many.is_ok()) << many.status().message();
    EXPECT_EQ(fills, 12);
    EXPECT_EQ(*many, *one);
    const std::string path = ::testing::TempDir() + "/threads.nca";
    ASSERT_TRUE(writer(-1).write_file(path, WriteOptions{.threads = threads}).is_ok());
    MappedFile f;
    ASSERT_NO_FATAL_FAILURE(map_expecting(path, *one, &f));
    try {
      (void)writer(4).write_file(path + ".bad", WriteOptions{.threads = threads});
      ADD_FAILURE() << "a failing fill wrote a file";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "fill 5");
    }
    EXPECT_FALSE(std::ifstream(path + ".bad").good());
  }
}

TEST(ArtifactRoundTrip, EveryOpcodeRoundTrips) {
  namespace d = ::neuronc::device;
  // One instruction of each opcode (not a runnable program; only the codec is under test).
  DeviceProgram dp;
  dp.name = "all_ops";
  dp.program.cores.resize(1);
  dp.program.num_semaphores = 4;
  dp.program.hbm_size = 4096;
  auto s = [](uint64_t off) { return d::sbuf(0, 32, off, d::DType::f32, 8); };
  auto& v = dp.program.cores[0].stream(d::Engine::vector);
  auto& g = dp.program.cores[0].stream(d::Engine::gpsimd);
  auto& t = dp.program.cores[0].stream(d::Engine::tensor);
  auto& sc = dp.program.cores[0].stream(d::Engine::scalar);
  t.push_back(testing::inst(d::MatMul{d::psum(0, 8, 0, d::DType::f32, 8), s(0), s(64), true}));
  t.push_back(testing::inst(
      d::Transpose{d::psum(0, 8, 64, d::DType::f32, 32), d::sbuf(0, 32, 0, d::DType::f32, 8)}));
  d::Activation act{s(0),  s(32), d::ActivationFunction::gelu_tanh,
                    s(96), 0.5f,  d::sbuf(0, 32, 128, d::DType::f32, 1)};
  act.scale = d::sbuf(0, 32, 132, d::DType::f32, 1);
  sc.push_back(testing::inst(act, {{1, 2}}, {{2, 3, d::kThisCore}}, 7));
  v.push_back(testing::inst(d::TensorTensor{s(0), s(32), s(64), d::AluOp::abs_max}));
  v.push_back(testing::inst(d::TensorScalar{s(0), s(32), d::AluOp::add, 2.0f, true, d::AluOp::max,
                                            d::sbuf(0, 32, 200, d::DType::f32, 1), false}));
  v.push_back(testing::inst(
      d::TensorReduce{d::sbuf(0, 32, 0, d::DType::f32, 1), s(32), d::ReduceOp::max, 1, true}));
  v.push_back(testing::inst(d::TensorCopy{d::sbuf(0, 32, 0, d::DType::bf16, 8), s(32)}));
  v.push_back(testing::inst(d::Memset{s(0), -3.25}));
  g.push_back(testing::inst(d::Iota{d::sbuf(0, 32, 0, d::DType::i32, 8), 5, 2, {1, 0, 0, 0}}));
  g.push_back(
      testing::inst(d::AffineSelect{s(0), s(32), -4, 1, {1, 0, 0, 0}, d::CompareOp::lt, -1.0f}));
  v.push_back(testing::inst(
      d::TensorTensorScan{s(0), s(32), s(64), 0.5f, d::AluOp::max, d::AluOp::subtract}));
  v.push_back(testing::inst(d::CopyPredicated{s(0), s(32), s(64), true}));
  v.push_back(testing::inst(d::Select{s(0), s(32), s(64), 4.0f}));
  g.push_back(testing::inst(d::LocalGather{d::sbuf(0, 32, 0, d::DType::f32, 4),
                                           d::sbuf(0, 32, 64, d::DType::f32, 4),
                                           d::sbuf(0, 32, 128, d::DType::u16, 4), 1, 4}));
  dp.program.cores[0]
      .stream(d::Engine::sync)
      .push_back(testing::inst(d::DmaCopy{d::hbm(0, d::DType::f32, 4, 8, 8), s(0), 15}));
  d::DmaCopy gather{s(0), d::hbm(0, d::DType::f32, 1, 8, 0), 3};
  gather.src.partition_stride = 8;
  gather.row_index = d::sbuf(0, 32, 256, d::DType::i32, 1);
  gather.table_rows = 4;
  dp.program.cores[0].stream(d::Engine::sync).push_back(testing::inst(gather));
  d::DmaCopy scatter{d::hbm(0, d::DType::bf16, 1, 8, 0), s(0), 2};
  scatter.dst.partition_stride = 8;
  scatter.row_index = d::sbuf(0, 32, 256, d::DType::i32, 1);
  scatter.table_rows = 4;
  scatter.scatter = true;
  dp.program.cores[0].stream(d::Engine::sync).push_back(testing::inst(scatter));
  dp.program.cores[0]
      .stream(d::Engine::sync)
      .push_back(testing::inst(d::Collective{d::CollectiveKind::all_gather, d::ReduceOp::sum,
                                             d::hbm(0, d::DType::f32, 1, 8, 8),
                                             d::hbm(64, d::DType::f32, 1, 8, 8)}));
  dp.program.cores[0].stream(d::Engine::sync).push_back(testing::inst(d::Nop{}, {{3, 1}}, {}));
  ArtifactContents c;
  c.programs.push_back(dp);
  c.debug_nodes.resize(8);
  const auto bytes = encode_artifact(c, {});
  auto a = read_artifact(bytes, {.verify = false});
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_EQ(a->contents.programs.size(), 1u);
  EXPECT_EQ(a->contents.programs[0], dp);
  // Writers stamp the lowest minor a file needs: the scatter needs 1.3, the rest 1.1.
  EXPECT_EQ(format_minor_needed(c), 3);
  auto& sync = c.programs[0].program.cores[0].stream(d::Engine::sync);
  std::erase_if(sync, [](const d::Instruction& in) {
    const auto* x = std::get_if<d::DmaCopy>(&in.op);
    return x && x->scatter;
  });
  EXPECT_EQ(format_minor_needed(c), 1);
}

}  // namespace
}  // namespace neuronc::artifact
