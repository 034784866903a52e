// Limits: sizes that overflow, zstd frames larger than declared, tensors larger than the target's
// HBM, plans over SBUF/PSUM. Each must be refused with a clear error *before* anything of the
// hostile size is allocated: a replaced global operator new records the largest single request
// made while a guard is active, and every test bounds it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <limits>
#include <new>

#include "artifact_format/crc32c.h"
#include "artifact_format/file_header.h"
#include "artifact_format/reader.h"
#include "artifact_format/writer.h"
#include "device/target.h"
#include "neuronc/neuronc.h"
#include "tests/artifact_format/test_artifacts.h"

// ---------------------------------------------------------------------------------------------
// Allocation watch: the largest operator-new request while a LargestAllocation is alive.

namespace {
std::atomic<bool> g_watching{false};
std::atomic<size_t> g_largest{0};

void note(size_t n) {
  if (!g_watching.load(std::memory_order_relaxed)) return;
  size_t cur = g_largest.load(std::memory_order_relaxed);
  while (n > cur && !g_largest.compare_exchange_weak(cur, n)) {
  }
}

void* allocate(size_t n) {
  note(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void* allocate_aligned(size_t n, std::align_val_t a) {
  note(n);
  const size_t al = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(al, (std::max<size_t>(n, 1) + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t n) {
  return allocate(n);
}
void* operator new[](size_t n) {
  return allocate(n);
}
void* operator new(size_t n, std::align_val_t a) {
  return allocate_aligned(n, a);
}
void* operator new[](size_t n, std::align_val_t a) {
  return allocate_aligned(n, a);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace neuronc {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
namespace art = ::neuronc::artifact;
namespace d = ::neuronc::device;

class LargestAllocation {
 public:
  LargestAllocation() {
    g_largest = 0;
    g_watching = true;
  }
  ~LargestAllocation() { g_watching = false; }
  size_t bytes() const { return g_largest.load(); }
};

// Nothing of a hostile size: the largest legitimate buffer in these tests is a copy of a
// ~40 KiB artifact.
constexpr size_t kSmall = size_t{1} << 20;

const std::vector<std::byte>& good() {
  static const auto* b = new std::vector<std::byte>(testing::two_partition_artifact());
  return *b;
}

struct Refusal {
  Status status;
  size_t largest_allocation = 0;
};

// Loads `bytes` through the public loader, watching allocations.
Refusal load(const std::vector<std::byte>& bytes, const LoadOptions& o = {}) {
  LargestAllocation watch;
  auto m = Model::load_from_memory(bytes, o);
  return {m.status(), watch.bytes()};
}

// Re-encodes the good artifact after `mutate`; `payloads` replaces the segments' stored bytes.
std::vector<std::byte> reencode(const std::function<void(art::ArtifactContents&)>& mutate,
                                std::vector<std::vector<std::byte>> payloads = {}) {
  auto a = art::read_artifact(good());
  EXPECT_TRUE(a.is_ok());
  art::ArtifactContents c = a->contents;
  std::vector<std::span<const std::byte>> spans;
  for (uint32_t i = 0; i < a->num_segments(); ++i)
    spans.push_back(i < payloads.size() ? std::span<const std::byte>(payloads[i]) : a->segment(i));
  mutate(c);
  return art::encode_artifact(c, spans);
}

std::vector<std::byte> patch_header(const std::function<void(art::FileHeader&)>& mutate) {
  std::vector<std::byte> b = good();
  auto h = art::decode_header(b);
  EXPECT_TRUE(h.is_ok());
  art::FileHeader fh = *h;
  mutate(fh);
  art::encode_header(fh, std::span<std::byte, art::kHeaderSize>(b.data(), art::kHeaderSize));
  return b;
}

TEST(Limits, GoodArtifactLoadsWithSmallAllocations) {
  const Refusal r = load(good());
  EXPECT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_LT(r.largest_allocation, kSmall);
}

// ---------------------------------------------------------------------------------------------
// Sizes that overflow.

TEST(Limits, HeaderRangesThatWrapAroundAreRefused) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (const auto& [name, mutate] :
       std::vector<std::pair<std::string, std::function<void(art::FileHeader&)>>>{
           {"root", [](auto& h) { h.root_offset = kMax - 7, h.root_size = 16; }},
           {"root size", [](auto& h) { h.root_size = kMax; }},
           {"segments", [](auto& h) { h.segments_offset = kMax - 4095, h.segments_size = 8192; }},
           {"segments size", [](auto& h) { h.segments_size = kMax; }},
       }) {
    const Refusal r = load(patch_header(mutate));
    EXPECT_EQ(r.status.code(), StatusCode::data_loss) << name;
    EXPECT_THAT(r.status.message(), AllOf(HasSubstr("past the end of the file"),
                                          HasSubstr(std::to_string(good().size()) + " bytes")))
        << name;
    EXPECT_LT(r.largest_allocation, kSmall) << name;
  }
}

TEST(Limits, ConstantAndBindingRangesThatWrapAroundAreRefused) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  Refusal r = load(reencode([](auto& c) { c.constants[0].offset = kMax - 3; }));
  EXPECT_THAT(r.status.message(), HasSubstr("are outside segment 0"));
  EXPECT_LT(r.largest_allocation, kSmall);
  r = load(reencode([](auto& c) { c.constants[0].hbm_offset = kMax - 3; }));
  EXPECT_THAT(r.status.message(), HasSubstr("outside the 2048-byte arena"));
  r = load(reencode(
      [](auto& c) { std::get<art::DeviceCall>(c.plan.steps[0]).inputs[0].hbm_offset = kMax; }));
  EXPECT_THAT(r.status.message(), HasSubstr("outside the program's 1024-byte hbm"));
  EXPECT_LT(r.largest_allocation, kSmall);
}

TEST(Limits, ValueWhoseByteSizeOverflowsIsRefused) {
  // x (a device-call input) becomes [2^40, 2^40, 2^40] f32: 2^122 bytes.
  const Refusal r = load(reencode([](auto& c) {
    c.plan.values[0].dims = {art::Dim::constant(int64_t{1} << 40),
                             art::Dim::constant(int64_t{1} << 40),
                             art::Dim::constant(int64_t{1} << 40)};
  }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(), HasSubstr("overflows"));
  EXPECT_LT(r.largest_allocation, kSmall);
}

TEST(Limits, SymbolicDimWhoseExtentOverflowsIsRefused) {
  // spectrum becomes [2^40 * s, 17] with s in [1, 2^40]: coeff * max overflows int64.
  const Refusal r = load(reencode([](auto& c) {
    c.signature.symbols.push_back({"s", 1, int64_t{1} << 40});
    const uint32_t spectrum = c.signature.outputs[1].value;
    c.plan.values[spectrum].dims[0] = art::Dim::sym(0, int64_t{1} << 40);
  }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(), AllOf(HasSubstr("'spectrum'"), HasSubstr("overflows")));
  EXPECT_LT(r.largest_allocation, kSmall);
}

// ---------------------------------------------------------------------------------------------
// zstd frames larger than declared.

std::vector<std::byte> zstd_frame(std::span<const std::byte> raw, bool with_content_size = true) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, with_content_size ? 1 : 0);
  std::vector<std::byte> out(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(cctx);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// The good artifact with its constant segment stored as `stored` (zstd), declaring `raw_size`.
std::vector<std::byte> with_zstd_segment(std::vector<std::byte> stored, uint64_t raw_size) {
  const uint32_t crc = art::crc32c(stored);
  const uint64_t n = stored.size();
  return reencode(
      [&](auto& c) {
        c.segments[0].compression = art::Compression::zstd;
        c.segments[0].raw_size = raw_size;
        c.segments[0].stored_size = n;
        c.segments[0].crc32c = crc;
      },
      {std::move(stored)});
}

std::vector<std::byte> constant_segment_bytes() {
  auto a = art::read_artifact(good());
  EXPECT_TRUE(a.is_ok());
  const auto s = a->segment(0);
  return {s.begin(), s.end()};
}

TEST(Limits, ZstdSegmentThatMatchesItsDeclarationLoads) {
  const auto raw = constant_segment_bytes();
  const Refusal r = load(with_zstd_segment(zstd_frame(raw), raw.size()));
  EXPECT_TRUE(r.status.is_ok()) << r.status.to_string();
}

TEST(Limits, ZstdFrameDeclaringMoreThanTheSegmentTableIsRefused) {
  auto raw = constant_segment_bytes();
  const uint64_t declared = raw.size();
  raw.resize(raw.size() * 64);  // the frame holds 64x what the table declares
  const Refusal r = load(with_zstd_segment(zstd_frame(raw), declared));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(),
              AllOf(HasSubstr("zstd frame declares " + std::to_string(raw.size()) + " bytes"),
                    HasSubstr("segment table says " + std::to_string(declared))));
  EXPECT_LT(r.largest_allocation, raw.size());  // neither size was allocated
}

TEST(Limits, ZstdFrameWithoutContentSizeIsRefused) {
  const auto raw = constant_segment_bytes();
  const Refusal r = load(with_zstd_segment(zstd_frame(raw, false), raw.size()));
  EXPECT_THAT(r.status.message(), HasSubstr("no content size"));
}

TEST(Limits, ZstdFramesHoldingMoreThanTheFirstDeclaresAreRefused) {
  // Two concatenated frames: the first declares exactly the table's raw size, the second adds
  // more. Decompression must stop at the declared size instead of writing past it.
  const auto raw = constant_segment_bytes();
  std::vector<std::byte> stored = zstd_frame(raw);
  const auto more = zstd_frame(raw);
  stored.insert(stored.end(), more.begin(), more.end());
  const Refusal r = load(with_zstd_segment(stored, raw.size()));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(), AllOf(HasSubstr("segment 0"), HasSubstr("zstd")));
}

TEST(Limits, ZstdRawSizeBeyondAnyPossibleExpansionIsRefusedBeforeAllocating) {
  // 2^39 raw bytes from a ~100-byte frame: more than zstd can expand (at most 128 KiB per
  // 4-byte block), refused before the 512 GiB buffer is allocated.
  const auto raw = constant_segment_bytes();
  const Refusal r = load(with_zstd_segment(zstd_frame(raw), uint64_t{1} << 39));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(), HasSubstr("more than zstd can expand"));
  EXPECT_LT(r.largest_allocation, kSmall);
}

// ---------------------------------------------------------------------------------------------
// Tensors larger than the target's HBM.

TEST(Limits, ArenaLargerThanTheTargetsHbmIsRefusedAtLoad) {
  const d::Target& trn1 = d::target(d::TargetKind::trn1);
  const uint64_t cap = trn1.hbm_bytes_per_core;  // the good artifact uses one core
  const Refusal r = load(reencode([&](auto& c) { c.memory_plan.hbm_arena_bytes = cap + 1; }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(), AllOf(HasSubstr("hbm arena of " + std::to_string(cap + 1)),
                                        HasSubstr("exceeds the " + std::to_string(cap))));
  EXPECT_LT(r.largest_allocation, kSmall);
}

TEST(Limits, ArenaOverTheCallersLimitIsRefusedAtLoad) {
  LoadOptions o;
  o.max_hbm_arena_bytes = 1024;
  const Refusal r = load(good(), o);
  EXPECT_EQ(r.status.code(), StatusCode::resource_exhausted);
  EXPECT_THAT(r.status.message(), HasSubstr("exceeds the limit of 1024"));
}

TEST(Limits, ConstantLargerThanTheTargetsHbmIsRefusedAtLoad) {
  // A 2^40-element f32 constant placed in HBM: refused by the size checks, never copied.
  const Refusal r = load(reencode([](auto& c) {
    const uint32_t w = c.constants[0].value;
    c.plan.values[w].dims = {art::Dim::constant(int64_t{1} << 20),
                             art::Dim::constant(int64_t{1} << 20)};
  }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_LT(r.largest_allocation, kSmall);
}

// y = relu(x), both [s, 1024] f32 with s in [1, 2^30]: at s = 2^24, y would be 64 GiB.
std::vector<std::byte> symbolic_host_artifact() {
  art::ArtifactWriter w;
  w.contents().producer = {"neuronc", "0.1.0-test"};
  w.contents().target = "trn1";
  const int32_t s = static_cast<int32_t>(w.add_symbol("s", 1, int64_t{1} << 30));
  const std::vector<art::Dim> dims = {art::Dim::sym(s), art::Dim::constant(1024)};
  const uint32_t x = w.add_input("x", art::TensorDType::f32, dims);
  const uint32_t y = w.add_value("y", art::TensorDType::f32, dims);
  w.add_host_op({"aten.relu.default", {art::Arg::tensor("self", static_cast<int32_t>(x))}, {y}});
  w.add_output("y", y);
  auto bytes = w.write_memory();
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().message();
  return bytes.is_ok() ? std::move(bytes).value() : std::vector<std::byte>();
}

TEST(Limits, RunWhoseIntermediateExceedsTheTargetsHbmIsRefusedBeforeAllocating) {
  auto m = Model::load_from_memory(symbolic_host_artifact());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  Session s(*m);
  ASSERT_TRUE(s.status().is_ok());
  std::vector<float> x(4 * 1024, -1.0f);
  {
    // The view claims 2^24 rows (64 GiB) over a 16 KiB buffer: the run must refuse the size
    // (of x itself, the first value that large) before it reads the input or allocates
    // anything (ASan would catch a read).
    LargestAllocation watch;
    auto out = s.run({{"x", TensorView(x.data(), DType::f32, {int64_t{1} << 24, 1024})}});
    EXPECT_EQ(out.status().code(), StatusCode::resource_exhausted);
    EXPECT_THAT(out.status().message(),
                AllOf(HasSubstr("value 'x' would need more than the 34359738368 bytes"),
                      HasSubstr("trn1's hbm")));
    EXPECT_LT(watch.bytes(), kSmall);
  }
  // The same session still runs a size that fits.
  auto ok = s.run({{"x", TensorView(x.data(), DType::f32, {4, 1024})}});
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->at("y").as<float>()[0], 0.0f);
}

TEST(Limits, ShapesWhoseElementCountOverflowsSaturate) {
  constexpr int64_t kBig = int64_t{1} << 40;
  const std::vector<int64_t> huge = {kBig, kBig, kBig};
  EXPECT_EQ(numel(huge), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(numel(std::vector<int64_t>{kBig, 0, kBig, kBig}), 0);
  EXPECT_EQ(numel(std::vector<int64_t>{3, -2}), -1);
  EXPECT_EQ(numel(std::vector<int64_t>{}), 1);
  EXPECT_EQ(nbytes_of(int64_t{1} << 62, DType::f32), std::numeric_limits<size_t>::max());
  EXPECT_EQ(nbytes_of(-1, DType::f32), std::numeric_limits<size_t>::max());
  EXPECT_EQ(TensorView(nullptr, DType::f32, huge).nbytes(), std::numeric_limits<size_t>::max());
  // A Tensor of that shape is refused, not allocated with a wrapped-around size.
  LargestAllocation watch;
  EXPECT_THROW(Tensor(DType::f32, huge), std::bad_alloc);
  EXPECT_LT(watch.bytes(), kSmall);
}

TEST(Limits, InputWhoseElementCountOverflowsInt64IsRefused) {
  art::ArtifactWriter w;
  w.contents().producer = {"neuronc", "0.1.0-test"};
  w.contents().target = "trn1";
  const int32_t s = static_cast<int32_t>(w.add_symbol("s", 1, int64_t{1} << 40));
  const int32_t t = static_cast<int32_t>(w.add_symbol("t", 1, int64_t{1} << 40));
  const std::vector<art::Dim> dims = {art::Dim::sym(s), art::Dim::sym(t), art::Dim::sym(t)};
  const uint32_t x = w.add_input("x", art::TensorDType::f32, dims);
  const uint32_t y = w.add_value("y", art::TensorDType::f32, dims);
  w.add_host_op({"aten.relu.default", {art::Arg::tensor("self", static_cast<int32_t>(x))}, {y}});
  w.add_output("y", y);
  auto bytes = w.write_memory();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  auto m = Model::load_from_memory(*bytes);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  Session session(*m);
  float one = 1.0f;
  LargestAllocation watch;
  // (2^40)^3 elements: the element count itself does not fit in int64 (UBSan would report the
  // multiplication); the run refuses the size before reading or allocating anything.
  constexpr int64_t kBig = int64_t{1} << 40;
  auto out = session.run({{"x", TensorView(&one, DType::f32, {kBig, kBig, kBig})}});
  EXPECT_EQ(out.status().code(), StatusCode::resource_exhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("value 'x' would need more than"));
  EXPECT_LT(watch.bytes(), kSmall);
}

// ---------------------------------------------------------------------------------------------
// Plans that exceed SBUF / PSUM.

d::Instruction& first(art::ArtifactContents& c, d::Engine e) {
  return c.programs[0].program.cores[0].stream(e)[0];
}

TEST(Limits, MemoryPlanPeaksOverTheTargetAreRefused) {
  const d::Target& trn1 = d::target(d::TargetKind::trn1);
  Refusal r = load(
      reencode([&](auto& c) { c.memory_plan.sbuf_peak_bytes = trn1.sbuf_partition_bytes + 1; }));
  EXPECT_THAT(r.status.message(), AllOf(HasSubstr("memory plan peaks sbuf " +
                                                  std::to_string(trn1.sbuf_partition_bytes + 1)),
                                        HasSubstr(std::to_string(trn1.sbuf_partition_bytes))));
  r = load(
      reencode([&](auto& c) { c.memory_plan.psum_peak_bytes = trn1.psum_partition_bytes + 1; }));
  EXPECT_THAT(r.status.message(),
              AllOf(HasSubstr("psum " + std::to_string(trn1.psum_partition_bytes + 1)),
                    HasSubstr(std::to_string(trn1.psum_partition_bytes))));
  r = load(reencode([](auto& c) { c.programs[0].psum_peak_bytes = 4096; }));
  EXPECT_THAT(r.status.message(), HasSubstr("peaks exceed the memory plan's"));
}

TEST(Limits, InstructionsReachingPastSbufOrPsumAreRefused) {
  const d::Target& trn1 = d::target(d::TargetKind::trn1);
  // The activation's output ends 64 bytes past the end of an SBUF partition.
  Refusal r = load(reencode([&](auto& c) {
    std::get<d::Activation>(first(c, d::Engine::scalar).op).dst.offset =
        trn1.sbuf_partition_bytes - 64;
  }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(),
              HasSubstr("outside the " + std::to_string(trn1.sbuf_partition_bytes) +
                        "-byte sbuf partition"));
  // ... or of a PSUM partition.
  r = load(reencode([&](auto& c) {
    std::get<d::Activation>(first(c, d::Engine::scalar).op).dst =
        d::psum(0, 4, trn1.psum_partition_bytes - 64, d::DType::f32, 32);
  }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_THAT(r.status.message(), HasSubstr("psum"));
  // An offset so large that offset + size wraps around.
  r = load(reencode([](auto& c) {
    std::get<d::Activation>(first(c, d::Engine::scalar).op).dst.offset =
        std::numeric_limits<uint64_t>::max() - 8;
  }));
  EXPECT_EQ(r.status.code(), StatusCode::data_loss);
  EXPECT_LT(r.largest_allocation, kSmall);
}

}  // namespace
}  // namespace neuronc
