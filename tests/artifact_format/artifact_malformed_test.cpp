// Malformed artifacts: every verifier rule with a crafted artifact, truncation at every byte,
// single-bit flips everywhere, version compatibility. Each must be a clear error, never a
// crash. The crafted cases are also the seed corpus in tests/corpus/artifact (rewritten when
// NEURONC_WRITE_CORPUS=1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "artifact_format/crc32c.h"
#include "artifact_format/file_header.h"
#include "artifact_format/reader.h"
#include "artifact_format/verifier.h"
#include "artifact_format/writer.h"
#include "device/replicate.h"
#include "tests/artifact_format/test_artifacts.h"

namespace neuronc::artifact {
namespace {

using ::testing::HasSubstr;
namespace d = ::neuronc::device;

const std::vector<std::byte>& good() {
  static const auto* b = new std::vector<std::byte>(testing::two_partition_artifact());
  return *b;
}

void write_corpus(const std::string& name, const std::vector<std::byte>& bytes) {
  if (!std::getenv("NEURONC_WRITE_CORPUS")) return;
  const auto dir = std::filesystem::path(NEURONC_SOURCE_DIR) / "tests/corpus/artifact";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (name + ".nca"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// Re-encodes the good artifact after `mutate` changed its contents.
std::vector<std::byte> reencode(const std::function<void(ArtifactContents&)>& mutate,
                                bool keep_segment_table = false) {
  auto a = read_artifact(good());
  EXPECT_TRUE(a.is_ok());
  ArtifactContents c = a->contents;
  std::vector<std::span<const std::byte>> payloads;
  for (uint32_t i = 0; i < a->num_segments(); ++i) payloads.push_back(a->segment(i));
  mutate(c);
  return encode_artifact(c, payloads, keep_segment_table);
}

// Rewrites the header with `mutate` applied (fresh header CRC).
std::vector<std::byte> patch_header(const std::function<void(FileHeader&)>& mutate) {
  std::vector<std::byte> b = good();
  auto h = decode_header(b);
  EXPECT_TRUE(h.is_ok());
  FileHeader fh = *h;
  mutate(fh);
  encode_header(fh, std::span<std::byte, kHeaderSize>(b.data(), kHeaderSize));
  return b;
}

Status load(const std::vector<std::byte>& b, uint16_t reader_minor = kFormatMinor) {
  ReadOptions o;
  o.reader_format_minor = reader_minor;
  return read_artifact(b, o).status();
}

TEST(ArtifactMalformed, GoodArtifactLoads) {
  EXPECT_TRUE(load(good()).is_ok());
}

// ExecuTorch-style stress: grow the available bytes one at a time; every prefix fails with an
// error and only the whole file loads.
TEST(ArtifactMalformed, TruncationAtEveryByteIsAnError) {
  const auto& b = good();
  for (size_t n = 0; n < b.size(); ++n) {
    const Status s = read_artifact(std::span(b.data(), n)).status();
    ASSERT_FALSE(s.is_ok()) << "prefix of " << n << " bytes loaded";
    ASSERT_FALSE(s.message().empty());
  }
  EXPECT_TRUE(read_artifact(b).is_ok());
  EXPECT_THAT(load(std::vector<std::byte>(b.begin(), b.begin() + 10)).message(),
              HasSubstr("file is 10 bytes but the header needs 64"));
}

TEST(ArtifactMalformed, EverySingleBitFlipIsAnError) {
  std::vector<std::byte> b = good();
  for (size_t i = 0; i < b.size(); ++i) {
    const std::byte mask{static_cast<unsigned char>(1u << (i % 8))};
    b[i] ^= mask;
    const Status s = read_artifact(b).status();
    b[i] ^= mask;
    ASSERT_FALSE(s.is_ok()) << "flip of bit " << (i % 8) << " at byte " << i << " went unnoticed";
  }
}

TEST(ArtifactMalformed, ChecksumErrorsNameBothValues) {
  std::vector<std::byte> b = good();
  b[70] ^= std::byte{0x10};  // inside the root
  const Status s = load(b);
  EXPECT_EQ(s.code(), StatusCode::corrupt);
  EXPECT_THAT(s.message(), HasSubstr("root table checksum mismatch: stored 0x"));
  EXPECT_THAT(s.message(), HasSubstr("computed 0x"));
  write_corpus("root_crc", b);
  std::vector<std::byte> seg = good();
  seg[seg.size() - 1] ^= std::byte{1};
  EXPECT_THAT(load(seg).message(), HasSubstr("checksum mismatch"));
  write_corpus("segment_crc", seg);
}

TEST(ArtifactMalformed, NewerMinorIsRefusedNamingBothVersions) {
  const auto b = patch_header([](FileHeader& h) { h.format_minor = kFormatMinor + 1; });
  const Status s = load(b);
  EXPECT_EQ(s.code(), StatusCode::incompatible_version);
  EXPECT_THAT(s.message(), HasSubstr("artifact format 1." + std::to_string(kFormatMinor + 1)));
  EXPECT_THAT(s.message(), HasSubstr("this reader (1." + std::to_string(kFormatMinor) + ")"));
  write_corpus("newer_minor", b);
}

TEST(ArtifactMalformed, OtherMajorIsRefusedNamingBothVersions) {
  for (uint16_t major : {uint16_t{0}, uint16_t{2}}) {
    const auto b = patch_header([&](FileHeader& h) { h.format_major = major; });
    const Status s = load(b);
    EXPECT_EQ(s.code(), StatusCode::incompatible_version);
    // The file has no state, so it says 1.1 (writers stamp the lowest minor a file needs).
    EXPECT_THAT(s.message(), HasSubstr("artifact format " + std::to_string(major) + ".1"));
    EXPECT_THAT(s.message(), HasSubstr("(1." + std::to_string(kFormatMinor) + ")"));
    if (major == 2) write_corpus("major_2", b);
  }
}

TEST(ArtifactMalformed, OlderMinorLoadsInANewerReader) {
  // A reader at 1.(current + 3) must load this 1.current file.
  EXPECT_TRUE(load(good(), kFormatMinor + 3).is_ok());
}

TEST(ArtifactMalformed, BadMagicAndFlags) {
  std::vector<std::byte> b = good();
  b[1] = std::byte{'X'};
  EXPECT_THAT(load(b).message(), HasSubstr("bad magic"));
  write_corpus("bad_magic", b);
  EXPECT_THAT(load(patch_header([](FileHeader& h) { h.flags = 4; })).message(),
              HasSubstr("header flags 0x00000004"));
}

TEST(ArtifactMalformed, HeaderOffsetsOutOfBounds) {
  auto b = patch_header([](FileHeader& h) { h.root_size = 1 << 30; });
  EXPECT_EQ(load(b).code(), StatusCode::truncated);
  EXPECT_THAT(load(b).message(), HasSubstr("ends past the end of the file"));
  write_corpus("root_size", b);
  b = patch_header([](FileHeader& h) { h.segments_size += 4096; });
  EXPECT_THAT(load(b).message(), HasSubstr("segment region"));
  b = patch_header([](FileHeader& h) { h.root_offset = 3; });
  EXPECT_THAT(load(b).message(), HasSubstr("root offset 3 must be 8-aligned"));
  b = patch_header([](FileHeader& h) { h.segments_offset = 100; });
  EXPECT_THAT(load(b).message(), HasSubstr("inside the root table"));
}

// Rewrites the root with `patch` applied to its bytes and a fresh root CRC.
std::vector<std::byte> patch_root(const std::function<void(std::span<std::byte>)>& patch) {
  std::vector<std::byte> b = good();
  auto h = decode_header(b);
  FileHeader fh = *h;
  std::span<std::byte> root(b.data() + fh.root_offset, fh.root_size);
  patch(root);
  fh.root_crc32c = crc32c(root);
  encode_header(fh, std::span<std::byte, kHeaderSize>(b.data(), kHeaderSize));
  return b;
}

TEST(ArtifactMalformed, RootIdentifierAndFlatBufferBounds) {
  auto b = patch_root([](std::span<std::byte> r) { r[4] = std::byte{'X'}; });
  EXPECT_THAT(load(b).message(), HasSubstr("no file identifier 'NCA1'"));
  write_corpus("root_identifier", b);
  b = patch_root([](std::span<std::byte> r) {
    r[0] = std::byte{0xf0};
    r[1] = std::byte{0xff};
    r[2] = std::byte{0xff};
    r[3] = std::byte{0x7f};
  });
  EXPECT_THAT(load(b).message(), HasSubstr("fails FlatBuffers verification"));
  write_corpus("root_offset", b);
}

// Makes program 0 of the good artifact run on two cores (format 1.4) as `replicas` copies of its
// core 0, each `stride` bytes of HBM after the previous one.
void replicate(ArtifactContents& c, uint32_t replicas = 2, uint64_t stride = 4096) {
  c.format_minor = 4;
  c.num_cores = 2;
  c.programs[0].replicas = replicas;
  c.programs[0].replica_stride = stride;
  c.memory_plan.hbm_arena_bytes =
      std::max<uint64_t>(c.memory_plan.hbm_arena_bytes, uint64_t{replicas} * stride);
}

struct Rule {
  const char* name;
  std::function<void(ArtifactContents&)> mutate;
  const char* expect;
};
void PrintTo(const Rule& r, std::ostream* os) {
  *os << r.name;
}

class VerifierRule : public ::testing::TestWithParam<Rule> {};

TEST_P(VerifierRule, IsAClearError) {
  const Rule& r = GetParam();
  const auto b = reencode(r.mutate);
  const Status s = load(b);
  ASSERT_FALSE(s.is_ok()) << r.name;
  EXPECT_THAT(s.message(), HasSubstr(r.expect)) << r.name;
  write_corpus(std::string("rule_") + r.name, b);
}

// Gives the good artifact a state (format 1.2) shaped like constant 0, starting from it and
// left unchanged by a run; returns its plan value.
uint32_t add_state(ArtifactContents& c) {
  c.format_minor = 2;
  const Value k = c.plan.values[c.constants[0].value];
  const auto v = static_cast<uint32_t>(c.plan.values.size());
  c.plan.values.push_back(
      {"st", k.dtype, k.dims, ValueKind::state, static_cast<uint32_t>(c.signature.states.size())});
  c.signature.states.push_back({"model.cache", v, v, 0});
  return v;
}

// A value shaped like constant 0 that no step defines.
uint32_t add_loose_value(ArtifactContents& c, std::vector<Dim> dims = {}) {
  const Value k = c.plan.values[c.constants[0].value];
  c.plan.values.push_back({"loose", k.dtype, dims.empty() ? k.dims : dims});
  return static_cast<uint32_t>(c.plan.values.size() - 1);
}

// Splits the good artifact into two entries (format 1.2): "a" holds its input, both outputs and
// all five steps, "b" nothing yet.
void two_entries(ArtifactContents& c) {
  c.format_minor = 2;
  c.signature.entries = {{"a", 0, 5, {0}, {0, 1}, {}, std::nullopt},
                         {"b", 5, 0, {}, {}, {}, std::nullopt}};
}

// Makes the good artifact one shape bucket of group "main" (x[4, 32] as [s0, 32], s0 in
// [1, 8] bound to 4, padded with zeros).
void one_bucket(ArtifactContents& c) {
  c.format_minor = 2;
  c.signature.symbols = {{"s0", 1, 8}};
  ShapeBucket b;
  b.group = "main";
  b.symbols = {0};
  b.values = {4};
  b.padding = {BucketPadding::zeros};
  b.input_dims = {{Dim::sym(0), Dim::constant(32)}};
  b.output_dims = {{Dim::sym(0), Dim::constant(32)}, {Dim::sym(0), Dim::constant(17)}};
  c.signature.entries = {{"main[s0=4]", 0, 5, {0}, {0, 1}, {}, b}};
}

// Gives the good artifact, made one bucket, a symbol value (format 1.5) of symbol `symbol`;
// returns its plan value.
uint32_t add_symbol_value(ArtifactContents& c, uint32_t symbol = 0,
                          TensorDType dtype = TensorDType::f32, std::vector<Dim> dims = {}) {
  one_bucket(c);
  c.format_minor = 5;
  c.plan.values.push_back({"size_s0", dtype, std::move(dims), ValueKind::symbol, symbol});
  return static_cast<uint32_t>(c.plan.values.size() - 1);
}

TEST(ArtifactMalformed, ASymbolValueLoads) {
  EXPECT_TRUE(load(reencode([](auto& c) { add_symbol_value(c); })).is_ok());
  EXPECT_TRUE(load(reencode([](auto& c) {
                add_symbol_value(c, 0, TensorDType::i64, {Dim::constant(1)});
              })).is_ok());
  // A 1.4 reader refuses it: it would leave the value unwritten.
  const Status old = load(reencode([](auto& c) { add_symbol_value(c); }), 4);
  ASSERT_FALSE(old.is_ok());
  EXPECT_THAT(old.message(), HasSubstr("1.5 is newer than this reader (1.4)"));
}

TEST(ArtifactMalformed, ABucketLoads) {
  const auto b = reencode([](auto& c) { one_bucket(c); });
  EXPECT_TRUE(load(b).is_ok()) << load(b).message();
  write_corpus("valid_bucket", b);  // a fuzz seed that reaches the bucket checks
}

TEST(ArtifactMalformed, EntriesLoad) {
  const auto b = reencode([](auto& c) { two_entries(c); });
  EXPECT_TRUE(load(b).is_ok()) << load(b).message();
  EXPECT_EQ(load(b, 1).code(), StatusCode::incompatible_version);  // a 1.1 reader refuses it
}

// A constant the file does not hold (a weights-free compile): the artifact loads, says it is
// timing-only, and a 1.2 reader refuses it.
TEST(ArtifactMalformed, AnAbsentConstantMakesTheArtifactTimingOnly) {
  const auto b = reencode([](auto& c) {
    c.constants[0].segment = kAbsentSegment;
    c.constants[0].offset = 0;
    c.format_minor = 3;
  });
  ASSERT_TRUE(load(b).is_ok()) << load(b).message();
  auto a = read_artifact(b);
  ASSERT_TRUE(a.is_ok());
  EXPECT_TRUE(a->contents.timing_only());
  EXPECT_TRUE(a->constant_bytes(0).empty());
  EXPECT_EQ(load(b, 2).code(), StatusCode::incompatible_version);
}

TEST(ArtifactMalformed, AStateLoadsAndItsSessionStartsFromTheInitialConstant) {
  const auto b = reencode([](auto& c) { add_state(c); });
  EXPECT_TRUE(load(b).is_ok()) << load(b).message();
  EXPECT_EQ(load(b, 1).code(), StatusCode::incompatible_version);  // a 1.1 reader refuses it
}

d::Instruction& first(ArtifactContents& c, d::Engine e, int program = 0) {
  return c.programs[program].program.cores[0].stream(e)[0];
}

const Rule kRules[] = {
    {"symbol_value_before_1_5",
     [](auto& c) {
       add_symbol_value(c);
       c.format_minor = 4;
     },
     "is a symbol value but the artifact says format 1.4: expected 1.5 or newer"},
    {"symbol_value_unknown_symbol", [](auto& c) { add_symbol_value(c, 3); },
     "holds symbol 3 but there are 1 symbols"},
    {"symbol_value_not_one_element",
     [](auto& c) { add_symbol_value(c, 0, TensorDType::f32, {Dim::constant(2)}); },
     "holds symbol 's0': expected one element"},
    {"symbol_value_dtype", [](auto& c) { add_symbol_value(c, 0, TensorDType::u8); },
     "as u8: expected f32, f64, bf16, f16, i64 or i32"},
    {"symbol_value_unbound",
     [](auto& c) {
       // A symbol nothing in the run binds (no input dim, no bucket), read by the cumsum.
       c.format_minor = 5;
       c.signature.symbols = {{"s0", 1, 8}};
       c.plan.values.push_back({"size_s0", TensorDType::f32, {}, ValueKind::symbol, 0});
       std::get<HostOp>(c.plan.steps[1]).args[0].tensors = {
           static_cast<int32_t>(c.plan.values.size() - 1)};
     },
     "'size_s0'"},
    {"index_bound_float_input",
     [](auto& c) {
       c.signature.inputs[0].index_bound = IndexBound{0, 8, "rows"};
     },
     "has an index bound but its dtype is f32, expected an integer dtype"},
    {"index_bound_empty",
     [](auto& c) {
       c.plan.values[c.signature.inputs[0].value].dtype = TensorDType::i64;
       c.signature.inputs[0].index_bound = IndexBound{5, 5, "rows"};
     },
     "has an empty index bound [5, 5)"},
    {"index_bound_on_output",
     [](auto& c) {
       c.signature.outputs[0].index_bound = IndexBound{0, 8, "rows"};
     },
     "has an index bound, which only inputs may have"},
    {"constant_offset", [](auto& c) { c.constants[0].offset = 1 << 20; }, "are outside segment 0"},
    {"constant_size", [](auto& c) { c.constants[0].size = 12; }, "holds 12 bytes but"},
    {"constant_segment", [](auto& c) { c.constants[0].segment = 9; },
     "is in segment 9 but there are 1"},
    {"constant_hbm", [](auto& c) { c.constants[0].hbm_offset = 1900; },
     "outside the 2048-byte arena"},
    {"binding_hbm",
     [](auto& c) { std::get<DeviceCall>(c.plan.steps[0]).inputs[0].hbm_offset = 1000; },
     "outside the program's 1024-byte hbm"},
    {"program_index", [](auto& c) { std::get<DeviceCall>(c.plan.steps[0]).program = 7; },
     "calls program 7 but there are 2 programs"},
    {"host_value_index", [](auto& c) { std::get<HostOp>(c.plan.steps[1]).args[0].tensors[0] = 99; },
     "refers to value 99 but the plan has"},
    {"use_before_def", [](auto& c) { std::swap(c.plan.steps[0], c.plan.steps[1]); },
     "is used before it is defined"},
    {"defined_twice", [](auto& c) { std::get<HostOp>(c.plan.steps[1]).outputs[0] = 0; },
     "is defined twice"},
    {"output_never_computed",
     [](auto& c) {
       c.plan.values.push_back({"ghost", TensorDType::f32, {Dim::constant(1)}});
       c.signature.outputs.push_back({"ghost", static_cast<uint32_t>(c.plan.values.size() - 1)});
     },
     "is never computed by the plan"},
    {"partitions_over_limit",
     [](auto& c) {
       std::get<d::Activation>(first(c, d::Engine::scalar).op).dst.partition_count = 200;
     },
     "partition"},
    {"sbuf_offset_over_limit",
     [](auto& c) { std::get<d::Activation>(first(c, d::Engine::scalar).op).dst.offset = 1 << 30; },
     "sbuf partition"},
    {"semaphore_index", [](auto& c) { first(c, d::Engine::scalar).waits[0].semaphore = 9; },
     "semaphore 9"},
    {"engine_opcode",
     [](auto& c) {
       auto& core = c.programs[0].program.cores[0];
       core.stream(d::Engine::vector).push_back(core.stream(d::Engine::scalar)[0]);
     },
     "vector engine cannot execute activation"},
    {"unknown_activation",
     [](auto& c) {
       std::get<d::Activation>(first(c, d::Engine::scalar).op).function =
           static_cast<d::ActivationFunction>(99);
     },
     "activation function 99 is unknown"},
    {"dma_queue", [](auto& c) { std::get<d::DmaCopy>(first(c, d::Engine::sync).op).queue = 16; },
     "dma queue 16 is out of range"},
    {"unknown_dtype",
     [](auto& c) {
       std::get<d::DmaCopy>(first(c, d::Engine::sync).op).dst.dtype = static_cast<d::DType>(40);
     },
     "device dtype 40 is unknown"},
    {"hbm_memref",
     [](auto& c) { std::get<d::DmaCopy>(first(c, d::Engine::sync).op).src.offset = 4000; },
     "outside the arena of 1024 bytes"},
    {"indirect_dma_index_dtype",
     [](auto& c) {
       d::DmaCopy g{d::sbuf(0, 4, 0, d::DType::f32, 8), d::hbm(0, d::DType::f32, 1, 8, 0)};
       g.src.partition_stride = 8;
       g.row_index = d::sbuf(0, 4, 64, d::DType::f32, 1);
       g.table_rows = 4;
       first(c, d::Engine::sync).op = g;
     },
     "row_index must be an i32/u32/i16/u16 sbuf tile, found f32"},
    {"indirect_dma_table",
     [](auto& c) {
       d::DmaCopy g{d::sbuf(0, 4, 0, d::DType::f32, 8), d::hbm(0, d::DType::f32, 1, 8, 0)};
       g.src.partition_stride = 8;
       g.row_index = d::sbuf(0, 4, 64, d::DType::i32, 1);
       g.table_rows = 100;  // 100 rows x 32 B overrun the 1024-byte arena
       first(c, d::Engine::sync).op = g;
     },
     "outside the arena of 1024 bytes"},
    {"unknown_target", [](auto& c) { c.target = "trn9"; }, "target: "},
    {"cores", [](auto& c) { c.num_cores = 0; }, "artifact uses 0 cores"},
    {"sha256", [](auto& c) { c.source.sha256.resize(5); }, "sha256 has 5 bytes, expected 32"},
    {"symbol_range",
     [](auto& c) {
       c.signature.symbols.push_back({"s0", 5, 2});
     },
     "has range [5, 2]"},
    {"dim_symbol", [](auto& c) { c.plan.values[0].dims[0] = Dim::sym(3); }, "refers to symbol 3"},
    {"arena_over_target", [](auto& c) { c.memory_plan.hbm_arena_bytes = uint64_t{1} << 40; },
     "exceeds the"},
    {"sbuf_peak", [](auto& c) { c.memory_plan.sbuf_peak_bytes = 1 << 30; }, "memory plan peaks"},
    {"debug_id", [](auto& c) { first(c, d::Engine::scalar).debug_id = 50; },
     "debug id 50 but there are 2 debug nodes"},
    {"step_kind", [](auto& c) { std::get<HostOp>(c.plan.steps[1]).op.clear(); },
     "host op has no name"},
    {"segment_crc", [](auto& c) { c.segments[0].crc32c ^= 1; }, "checksum mismatch"},
    {"segment_raw_size", [](auto& c) { c.segments[0].raw_size += 8; }, "raw size"},
    {"zstd_raw_size", [](auto& c) { c.segments[0].compression = Compression::zstd; }, "zstd"},
    {"input_backref", [](auto& c) { c.plan.values[0].index = 3; },
     "claims to be signature input 3"},
    {"duplicate_output", [](auto& c) { c.signature.outputs.push_back(c.signature.outputs[0]); },
     "must be non-empty and unique"},
    {"state_in_a_1_1_file",
     [](auto& c) {
       add_state(c);
       c.format_minor = 1;
     },
     "has 1 states but says format 1.1: expected 1.2 or newer"},
    {"state_backref", [](auto& c) { c.plan.values[add_state(c)].index = 5; },
     "claims to be state 5"},
    {"state_update_shape",
     [](auto& c) {
       add_state(c);
       c.signature.states[0].update = add_loose_value(c, {Dim::constant(3)});
     },
     "its update value"},
    {"state_update_never_computed",
     [](auto& c) {
       add_state(c);
       c.signature.states[0].update = add_loose_value(c);
     },
     "its update is never computed by the plan"},
    {"state_initial_index",
     [](auto& c) {
       add_state(c);
       c.signature.states[0].initial = 99;
     },
     "starts from constant 99 but there are"},
    {"state_symbolic",
     [](auto& c) {
       c.signature.symbols.push_back({"s0", 1, 4});
       c.plan.values[add_state(c)].dims[0] = Dim::sym(0);
     },
     "has a symbolic or negative dim"},
    {"scatter_in_a_1_2_file",
     [](auto& c) {
       d::DmaCopy g{d::hbm(0, d::DType::f32, 1, 8, 0), d::sbuf(0, 4, 0, d::DType::f32, 8)};
       g.dst.partition_stride = 8;
       g.row_index = d::sbuf(0, 4, 64, d::DType::i32, 1);
       g.table_rows = 4;
       g.scatter = true;
       first(c, d::Engine::sync).op = g;
       c.format_minor = 2;
     },
     "has an indirect scatter dma_copy but says format 1.2: expected 1.3 or newer"},
    {"absent_constant_in_a_1_2_file",
     [](auto& c) {
       c.constants[0].segment = kAbsentSegment;
       c.constants[0].offset = 0;
       c.format_minor = 2;
     },
     "is absent (a timing-only artifact) but the file says format 1.2: expected 1.3 or newer"},
    {"absent_constant_with_offset",
     [](auto& c) {
       c.constants[0].segment = kAbsentSegment;
       c.constants[0].offset = 64;
       c.format_minor = 3;
     },
     "is absent but has segment offset 64"},
    {"absent_constant_size",
     [](auto& c) {
       c.constants[0].segment = kAbsentSegment;
       c.constants[0].offset = 0;
       c.constants[0].size += 4;
       c.format_minor = 3;
     },
     "holds"},
    {"entries_in_a_1_1_file",
     [](auto& c) {
       two_entries(c);
       c.format_minor = 1;
     },
     "has 2 entries but says format 1.1: expected 1.2 or newer"},
    {"entry_reads_another_entrys_value",
     [](auto& c) {
       two_entries(c);
       c.signature.entries[0].num_steps = 2;
       c.signature.entries[0].outputs.clear();
       c.signature.entries[1] = {"b", 2, 3, {}, {0, 1}, {}, std::nullopt};
     },
     "is used before it is defined"},
    {"bucket_value_outside_the_range",
     [](auto& c) {
       one_bucket(c);
       c.signature.entries[0].bucket->values = {9};
     },
     "binds 's0' to 9, outside its range [1, 8]"},
    {"bucket_symbol_unknown",
     [](auto& c) {
       one_bucket(c);
       c.signature.entries[0].bucket->symbols = {3};
     },
     "names symbol 3 but there are 1"},
    {"bucket_padding_missing",
     [](auto& c) {
       one_bucket(c);
       c.signature.entries[0].bucket->padding.clear();
     },
     "has 1 symbols, 1 values and 0 paddings"},
    {"bucket_declared_dim_disagrees",
     [](auto& c) {
       one_bucket(c);
       c.signature.entries[0].bucket->input_dims[0][0] = Dim::sym(0, 2);
     },
     "input 'x' dim 0 is 8 at the bucket's values but its value's dim is 4"},
    {"bucket_declares_too_few_outputs",
     [](auto& c) {
       one_bucket(c);
       c.signature.entries[0].bucket->output_dims.pop_back();
     },
     "declares 1 output shapes but the entry has 2 outputs"},
    {"bucket_groups_disagree",
     [](auto& c) {
       one_bucket(c);
       c.signature.entries[0].num_steps = 2;
       c.signature.entries[0].outputs.clear();
       auto b = *c.signature.entries[0].bucket;
       b.padding = {BucketPadding::edge};
       c.signature.entries[0].bucket->output_dims.clear();
       b.input_dims.clear();
       c.signature.entries.push_back({"main[s0=8]", 2, 3, {}, {0, 1}, {}, b});
     },
     "differs from the group's first bucket"},
    {"entry_input_twice",
     [](auto& c) {
       two_entries(c);
       c.signature.entries[1].inputs = {0};
     },
     "lists signature input 0, which entry 0 lists too"},
    {"entry_output_unowned",
     [](auto& c) {
       two_entries(c);
       c.signature.entries[0].outputs = {0};
     },
     "signature output 1 belongs to no entry"},
    {"entry_steps_gap",
     [](auto& c) {
       two_entries(c);
       c.signature.entries[1].first_step = 4;
     },
     "starts at plan step 4: expected 5"},
    {"entry_steps_past_plan",
     [](auto& c) {
       two_entries(c);
       c.signature.entries[0].num_steps = 7;
     },
     "ends at plan step 7 but there are 5"},
    {"entry_name_twice",
     [](auto& c) {
       two_entries(c);
       c.signature.entries[1].name = "a";
     },
     "names must be non-empty and unique"},
    {"entry_state_updates",
     [](auto& c) {
       add_state(c);
       two_entries(c);
     },
     "lists 0 state updates: expected one per state (1)"},
    {"state_name_empty",
     [](auto& c) {
       add_state(c);
       c.signature.states[0].name.clear();
     },
     "names must be non-empty and unique"},
    {"replicated_says_1_3",
     [](auto& c) {
       replicate(c);
       c.format_minor = 3;
     },
     "is replicated over 2 cores but the file says format 1.3: expected 1.4 or newer"},
    {"replicated_past_the_cores", [](auto& c) { replicate(c, 4); },
     "is replicated over 4 cores: expected 2 to the artifact's 2"},
    {"replicated_once", [](auto& c) { replicate(c, 1); },
     "program is replicated over 1 cores: expected 0 (not replicated) or 2 or more"},
    {"replica_stride_unaligned", [](auto& c) { replicate(c, 2, 1000); },
     "core stride 1000 bytes: expected a non-zero multiple of 64"},
    {"replica_stride_too_small", [](auto& c) { replicate(c, 2, 512); },
     "are outside the arena of 512 bytes"},
    {"replica_signals_another_core",
     [](auto& c) {
       replicate(c);
       c.programs[0].program.cores[0].stream(d::Engine::sync)[0].signals[0].core = 1;
     },
     "signals core 1: a replicated program's core 0 may signal only itself"},
};

INSTANTIATE_TEST_SUITE_P(All, VerifierRule, ::testing::ValuesIn(kRules),
                         [](const auto& info) { return std::string(info.param.name); });

// A tensor-parallel program is stored as its core 0 and read as every copy of it, exactly what
// device::replicate_cores makes; as read, it writes the same bytes again, and a 1.3 reader
// refuses it (it would run core 0 alone).
TEST(ArtifactReplicated, IsStoredAsCoreZeroAndReadAsEveryCopy) {
  auto a = read_artifact(good());
  ASSERT_TRUE(a.is_ok());
  std::vector<std::span<const std::byte>> payloads;
  for (uint32_t i = 0; i < a->num_segments(); ++i) payloads.push_back(a->segment(i));
  ArtifactContents c = a->contents;
  const d::Program one = c.programs[0].program;
  replicate(c);
  const std::vector<std::byte> b = encode_artifact(c, payloads);
  write_corpus("valid_replicated", b);

  auto r = read_artifact(b);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->header.format_minor, 4);
  const DeviceProgram& p = r->contents.programs[0];
  EXPECT_EQ(p.replicas, 2u);
  EXPECT_EQ(p.replica_stride, 4096u);
  const d::Result<d::Program> copies = d::replicate_cores(one, 2, 4096);
  ASSERT_TRUE(copies.is_ok()) << copies.status().message();
  EXPECT_EQ(p.program, copies.value());
  EXPECT_EQ(p.hbm_size(), 8192u);
  std::vector<std::span<const std::byte>> read_payloads;
  for (uint32_t i = 0; i < r->num_segments(); ++i) read_payloads.push_back(r->segment(i));
  EXPECT_EQ(encode_artifact(r->contents, read_payloads), b);

  // The same program stored as both cores (no replication) is larger by core 1's instructions.
  ArtifactContents whole = r->contents;
  whole.programs[0].replicas = 0;
  whole.programs[0].replica_stride = 0;
  whole.format_minor = 3;
  EXPECT_GT(encode_artifact(whole, read_payloads).size(), b.size());

  // Unverified, the program is core 0 alone, as the file holds it.
  auto u = read_artifact(b, {.verify = false});
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->contents.programs[0].program.cores.size(), 1u);
  EXPECT_EQ(u->contents.programs[0].program.hbm_size, 4096u);
  EXPECT_TRUE(verify_contents(u->contents).is_ok());

  // Verified but kept compact (for what only times it), it is core 0 alone; expand_replicas then
  // makes exactly the copies a default read gives.
  auto k = read_artifact(b, {.expand_replicas = false});
  ASSERT_TRUE(k.is_ok()) << k.status().message();
  EXPECT_TRUE(k->contents.programs[0].holds_core0_alone());
  EXPECT_EQ(k->contents.programs[0].program.cores, one.cores);
  EXPECT_FALSE(r->contents.programs[0].holds_core0_alone());
  ArtifactContents expanded = k->contents;
  expand_replicas(expanded);
  EXPECT_EQ(expanded.programs, r->contents.programs);
  // Verification still runs: core 0 past its stride is refused, compact or not.
  ArtifactContents past = c;
  past.programs[0].replica_stride = 512;
  past.programs[0].program.hbm_size = 512;
  auto refused = read_artifact(encode_artifact(past, payloads), {.expand_replicas = false});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("hbm bytes [512, 1024) are outside the arena of 512 bytes"));

  EXPECT_THAT(load(b, 3).message(), HasSubstr("artifact format 1.4 is newer than this reader"));
}

// A program that holds every copy must hold exactly the copies: the writer stores core 0 alone,
// so any other core would be lost.
TEST(ArtifactReplicated, EveryCoreHeldIsCoreZerosCopy) {
  auto a = read_artifact(good());
  ASSERT_TRUE(a.is_ok());
  ArtifactContents c = a->contents;
  const d::Program one = c.programs[0].program;
  replicate(c);
  c.programs[0].program = d::replicate_cores(one, 2, 4096).value();
  EXPECT_TRUE(verify_contents(c).is_ok()) << verify_contents(c).message();

  ArtifactContents moved = c;
  moved.programs[0].program.cores[1].stream(d::Engine::sync)[0] =
      c.programs[0].program.cores[0].stream(d::Engine::sync)[0];  // core 0's hbm, unmoved
  EXPECT_THAT(verify_contents(moved).message(),
              HasSubstr("core 1 is not core 0 with its hbm operands moved by 1 replica strides "
                        "of 4096 bytes"));

  ArtifactContents three = c;
  three.programs[0].program.cores.push_back(three.programs[0].program.cores[1]);
  EXPECT_THAT(verify_contents(three).message(),
              HasSubstr("is replicated over 2 cores but holds 3: expected core 0 alone or every "
                        "copy"));

  ArtifactContents wide = c;
  wide.programs[0].program.hbm_size = 4096;
  EXPECT_THAT(verify_contents(wide).message(),
              HasSubstr("holds every copy but its hbm size 4096 is not 2 replicas of 4096 bytes"));
}

TEST(ArtifactMalformed, SegmentOutsideRegion) {
  const auto b = reencode([](auto& c) { c.segments[0].offset = 1 << 20; }, true);
  EXPECT_THAT(load(b).message(), HasSubstr("ends past the segment region"));
  write_corpus("segment_offset", b);
  const auto u = reencode([](auto& c) { c.segments[0].offset = 100; }, true);
  EXPECT_THAT(load(u).message(), HasSubstr("is not a multiple of 4096"));
}

TEST(ArtifactMalformed, CorpusFilesAreAllErrors) {
  const auto dir = std::filesystem::path(NEURONC_SOURCE_DIR) / "tests/corpus/artifact";
  ASSERT_TRUE(std::filesystem::exists(dir)) << "the committed corpus " << dir << " is missing";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".nca") continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(f)), {});
    std::vector<std::byte> b(raw.size());
    std::memcpy(b.data(), raw.data(), raw.size());
    const bool valid = e.path().filename().string().rfind("valid_", 0) == 0;
    EXPECT_EQ(read_artifact(b).is_ok(), valid) << e.path();
    ++n;
  }
  EXPECT_GT(n, 0);
}

// The fuzzer's valid seed is today's artifact: a format change that leaves it stale fails here
// (rewrite it with build-ci/tests/artifact_format/write_artifact_corpus_seed).
TEST(ArtifactMalformed, CommittedValidSeedIsCurrent) {
  const auto path =
      std::filesystem::path(NEURONC_SOURCE_DIR) / "tests/corpus/artifact/valid_two_partition.nca";
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << "the committed seed " << path << " is missing";
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), {});
  ASSERT_EQ(raw.size(), good().size())
      << path << " is stale: rewrite it with write_artifact_corpus_seed";
  EXPECT_EQ(std::memcmp(raw.data(), good().data(), raw.size()), 0)
      << path << " is stale: rewrite it with write_artifact_corpus_seed";
}

}  // namespace
}  // namespace neuronc::artifact
