// Artifact writer (writer.h): constant layout into segments, CRCs, header + root + segments.
#include "artifact_format/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "artifact_format/crc32c.h"
#include "artifact_format/file_header.h"
#include "artifact_format/root_codec.h"
#include "artifact_format/segment_codec.h"
#include "artifact_format/verifier.h"
#include "kernels/zeroed_bytes.h"

namespace neuronc::artifact {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

constexpr uint64_t kPackedAlignment = 64;

// A segment's stored bytes: held (`bytes`), or made by `fill` where they are written.
struct Payload {
  std::span<const std::byte> bytes;
  const ConstantFill* fill = nullptr;
  uint64_t size() const { return fill ? fill->size : bytes.size(); }
};

// A worker's buffer for fills that need one (FileSink), grown to the largest fill it makes, in
// huge pages when large (kernels/zeroed_bytes.h).
struct Scratch {
  std::shared_ptr<std::byte> bytes;
  uint64_t size = 0;
  std::span<std::byte> at_least(uint64_t n) {
    if (n > size) bytes = kernels::zeroed_bytes(n), size = n;
    return {bytes.get(), n};
  }
};

// Where emit() puts the file's bytes, at absolute offsets. write_at, fill_at and release are
// called from several threads at once, for disjoint bytes.
class Sink {
 public:
  virtual ~Sink() = default;
  // Called once, first, with the file's total size.
  virtual void resize(uint64_t total) = 0;
  virtual void write_at(uint64_t offset, std::span<const std::byte> bytes) = 0;
  // Has `fill` make its bytes at `offset` (in `scratch` when the sink needs a buffer); returns
  // their CRC.
  virtual uint32_t fill_at(uint64_t offset, const ConstantFill& fill, Scratch& scratch) = 0;
  // Called when emit() is done with `fill`'s bytes.
  virtual void release(const ConstantFill&) {}
};

class MemorySink final : public Sink {
 public:
  explicit MemorySink(std::vector<std::byte>& out) : out_(out) {}
  void resize(uint64_t total) override { out_.resize(total); }
  void write_at(uint64_t offset, std::span<const std::byte> b) override {
    std::copy(b.begin(), b.end(), out_.begin() + static_cast<ptrdiff_t>(offset));
  }
  uint32_t fill_at(uint64_t offset, const ConstantFill& f, Scratch&) override {
    const std::span<std::byte> dst(out_.data() + offset, f.size);
    f.fill(dst);
    return crc32c(dst);
  }

 private:
  std::vector<std::byte>& out_;
};

// Makes the fills (segment index, file position) with `threads` workers taking them in order,
// and records each segment's CRC. The bytes, and the error reported (the first fill's in
// segment order that throws), are the same for any thread count.
void make_fills(std::span<const Payload> payloads,
                const std::vector<std::pair<size_t, uint64_t>>& fills, ArtifactContents& c,
                Sink& sink, int threads) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> errors(fills.size());
  auto work = [&] {
    Scratch scratch;
    for (size_t k; !failed && (k = next.fetch_add(1)) < fills.size();) {
      const auto [i, pos] = fills[k];
      try {
        const uint32_t crc = sink.fill_at(pos, *payloads[i].fill, scratch);
        if (i < c.segments.size()) c.segments[i].crc32c = crc;
        sink.release(*payloads[i].fill);
      } catch (...) {
        errors[k] = std::current_exception();
        failed = true;
      }
    }
  };
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t helpers =
      std::min(fills.size(), static_cast<size_t>(threads)) - (fills.empty() ? 0 : 1);
  std::vector<std::thread> pool;
  try {
    for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started and this one make every fill.
  }
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Header + root + zero padding + segments, at their offsets in `sink`; `c`'s segment table
// gets their offsets and sizes (unless `keep_segment_table`) and CRCs. The root is encoded once,
// before the segments: a segment made by a fill gets its CRC as it is made, patched into the
// root at the end (root_codec stores every segment field, so each CRC has its place), and so is
// a source SHA-256 still being computed (`late_sha256`, over the 32 bytes `c` holds).
void emit(ArtifactContents& c, std::span<const Payload> payloads, bool keep_segment_table,
          Sink& sink, int threads = 1,
          const std::function<std::vector<uint8_t>()>& late_sha256 = {}) {
  uint64_t off = 0;
  for (size_t i = 0; i < payloads.size() && i < c.segments.size(); ++i) {
    off = align_up(off, kSegmentAlignment);
    if (!keep_segment_table) {
      c.segments[i].offset = off;
      c.segments[i].stored_size = payloads[i].size();
    }
    off += payloads[i].size();
  }
  std::vector<std::byte> root = encode_root(c);
  FileHeader h;
  h.format_major = c.format_major;
  h.format_minor = c.format_minor;
  h.root_offset = kHeaderSize;
  h.root_size = root.size();
  h.segments_offset = payloads.empty() ? kHeaderSize + root.size()
                                       : align_up(kHeaderSize + root.size(), kSegmentAlignment);
  h.segments_size = off;
  sink.resize(h.segments_offset + h.segments_size);
  static const std::vector<std::byte> kZeros(kSegmentAlignment);
  uint64_t pos = kHeaderSize + root.size();
  auto pad_to = [&](uint64_t target) {
    while (pos < target) {
      const uint64_t n = std::min<uint64_t>(target - pos, kZeros.size());
      sink.write_at(pos, std::span<const std::byte>(kZeros.data(), n));
      pos += n;
    }
  };
  uint64_t seg = 0;
  std::vector<std::pair<size_t, uint64_t>> fills;  // segment, position
  for (size_t i = 0; i < payloads.size(); ++i) {
    const Payload& p = payloads[i];
    seg = align_up(seg, kSegmentAlignment);
    pad_to(h.segments_offset + seg);
    if (p.fill)
      fills.emplace_back(i, pos);
    else
      sink.write_at(pos, p.bytes);
    pos += p.size();
    seg += p.size();
  }
  make_fills(payloads, fills, c, sink, threads);
  if (!fills.empty()) patch_segment_crcs(root, c.segments);
  if (late_sha256) {
    c.source.sha256 = late_sha256();
    patch_source_sha256(root, c.source.sha256);
  }
  h.root_crc32c = crc32c(root);
  std::array<std::byte, kHeaderSize> hb{};
  encode_header(h, hb);
  sink.write_at(0, hb);
  sink.write_at(kHeaderSize, root);
}

std::vector<Payload> held(std::span<const std::span<const std::byte>> payloads) {
  std::vector<Payload> out;
  for (std::span<const std::byte> p : payloads) out.push_back({p, nullptr});
  return out;
}

}  // namespace

std::vector<std::byte> encode_artifact(const ArtifactContents& contents,
                                       std::span<const std::span<const std::byte>> payloads,
                                       bool keep_segment_table) {
  std::vector<std::byte> out;
  MemorySink sink(out);
  ArtifactContents c = contents;
  emit(c, held(payloads), keep_segment_table, sink);
  return out;
}

struct ArtifactWriter::Impl {
  ArtifactContents contents;
  // Bytes of constant i: borrowed or owned; none for an absent one.
  std::vector<std::span<const std::byte>> constant_bytes;
  std::vector<uint64_t> absent_size;  // per constant: its size when absent, else 0
  std::vector<std::unique_ptr<std::vector<std::byte>>> owned;
  // Per constant: the fill that makes its bytes at write time, or none (bytes held).
  std::vector<ConstantFill> fills;
  std::function<std::vector<uint8_t>()> late_sha256;  // set_source_sha256

  // Segment payloads after layout; `storage` keeps packed/compressed buffers alive.
  std::vector<Payload> payloads;
  std::vector<std::vector<std::byte>> storage;

  // Makes constant i's bytes now (a fill the layout needs the bytes of: to compare, pack or
  // compress them).
  void materialize(size_t i) {
    if (!fills[i].fill) return;
    auto bytes = std::make_unique<std::vector<std::byte>>(fills[i].size);
    fills[i].fill(*bytes);
    constant_bytes[i] = *bytes;
    owned.push_back(std::move(bytes));
    fills[i] = {};
  }
  Status layout(const WriteOptions& o);
};

Status ArtifactWriter::Impl::layout(const WriteOptions& o) {
  payloads.clear();
  storage.clear();
  contents.segments.clear();
  auto& entries = contents.signature.entries;
  if (!entries.empty())
    entries.back().num_steps =
        static_cast<uint32_t>(contents.plan.steps.size()) - entries.back().first_step;
  // With entries (programs compiled one after another over the same weights), a constant whose
  // bytes an earlier one already holds shares its storage.
  std::vector<size_t> same_as(contents.constants.size(), SIZE_MAX);
  if (!entries.empty()) {
    for (size_t i = 0; i < contents.constants.size(); ++i) materialize(i);
    std::map<std::pair<size_t, uint32_t>, std::vector<size_t>> seen;
    for (size_t i = 0; i < contents.constants.size(); ++i) {
      if (contents.constants[i].absent()) continue;
      const std::span<const std::byte> b = constant_bytes[i];
      auto& candidates = seen[{b.size(), crc32c(b)}];
      for (size_t j : candidates)
        if (std::equal(b.begin(), b.end(), constant_bytes[j].begin())) {
          same_as[i] = j;
          break;
        }
      if (same_as[i] == SIZE_MAX) candidates.push_back(i);
    }
  }
  // Indices: packed small constants first (one segment), then one segment per large constant.
  std::vector<std::byte> packed;
  std::vector<size_t> large;
  for (size_t i = 0; i < contents.constants.size(); ++i) {
    Constant& k = contents.constants[i];
    if (k.absent()) {
      k.size = absent_size[i];
      k.offset = 0;
      continue;
    }
    k.size = fills[i].fill ? fills[i].size : constant_bytes[i].size();
    if (same_as[i] != SIZE_MAX) continue;  // placed below
    if (k.size < o.small_constant_bytes || o.compress_constants) materialize(i);
    if (k.size < o.small_constant_bytes) {
      k.segment = 0;
      k.offset = align_up(packed.size(), kPackedAlignment);
      packed.resize(k.offset);
      packed.insert(packed.end(), constant_bytes[i].begin(), constant_bytes[i].end());
    } else {
      large.push_back(i);
    }
  }
  storage.reserve(2 * (large.size() + 1));  // spans into storage must not move
  auto add_filled_segment = [&](std::string name, const ConstantFill& fill) {
    SegmentInfo s;
    s.name = std::move(name);
    s.raw_size = fill.size;
    s.stored_size = fill.size;  // its CRC is taken as it is written
    contents.segments.push_back(std::move(s));
    payloads.push_back({{}, &fill});
  };
  auto add_segment = [&](std::string name, std::span<const std::byte> raw) {
    SegmentInfo s;
    s.name = std::move(name);
    s.raw_size = raw.size();
    std::span<const std::byte> stored = raw;
    if (o.compress_constants && !raw.empty()) {
      std::vector<std::byte> z = zstd_compress(raw, o.zstd_level);
      if (!z.empty() && z.size() < raw.size()) {
        storage.push_back(std::move(z));
        stored = storage.back();
        s.compression = Compression::zstd;
      }
    }
    s.stored_size = stored.size();
    s.crc32c = crc32c(stored);
    contents.segments.push_back(std::move(s));
    payloads.push_back({stored, nullptr});
  };
  const auto shared = static_cast<size_t>(
      std::count_if(same_as.begin(), same_as.end(), [](size_t j) { return j != SIZE_MAX; }));
  const auto absent =
      static_cast<size_t>(std::count_if(contents.constants.begin(), contents.constants.end(),
                                        [](const Constant& k) { return k.absent(); }));
  const bool has_packed = contents.constants.size() > large.size() + shared + absent;
  if (has_packed) {
    storage.push_back(std::move(packed));
    const std::vector<std::byte>& p = storage.back();
    add_segment("constants.packed", p);
  }
  for (size_t i : large) {
    Constant& k = contents.constants[i];
    k.segment = static_cast<uint32_t>(contents.segments.size());
    k.offset = 0;
    if (fills[i].fill)
      add_filled_segment("constant:" + k.name, fills[i]);
    else
      add_segment("constant:" + k.name, constant_bytes[i]);
  }
  for (size_t i = 0; i < contents.constants.size(); ++i) {
    if (same_as[i] == SIZE_MAX) continue;
    contents.constants[i].segment = contents.constants[same_as[i]].segment;
    contents.constants[i].offset = contents.constants[same_as[i]].offset;
  }
  if (contents.memory_plan.hbm_arena_bytes == 0)
    for (const DeviceProgram& p : contents.programs)
      contents.memory_plan.hbm_arena_bytes =
          std::max(contents.memory_plan.hbm_arena_bytes, p.hbm_size());
  for (const DeviceProgram& p : contents.programs) {
    contents.memory_plan.sbuf_peak_bytes =
        std::max(contents.memory_plan.sbuf_peak_bytes, p.sbuf_peak_bytes);
    contents.memory_plan.psum_peak_bytes =
        std::max(contents.memory_plan.psum_peak_bytes, p.psum_peak_bytes);
  }
  contents.format_major = kFormatMajor;
  contents.format_minor = format_minor_needed(contents);
  // The writer holds the same bar as the loader: never write what the verifier would refuse.
  return verify_contents(contents).with_context("artifact writer");
}

ArtifactWriter::ArtifactWriter() : impl_(std::make_unique<Impl>()) {}
ArtifactWriter::~ArtifactWriter() = default;
ArtifactWriter::ArtifactWriter(ArtifactWriter&&) noexcept = default;
ArtifactWriter& ArtifactWriter::operator=(ArtifactWriter&&) noexcept = default;

ArtifactContents& ArtifactWriter::contents() {
  return impl_->contents;
}
const ArtifactContents& ArtifactWriter::contents() const {
  return impl_->contents;
}

uint32_t ArtifactWriter::add_symbol(std::string name, int64_t min, int64_t max) {
  impl_->contents.signature.symbols.push_back({std::move(name), min, max});
  return static_cast<uint32_t>(impl_->contents.signature.symbols.size() - 1);
}

uint32_t ArtifactWriter::add_value(std::string name, TensorDType dtype, std::vector<Dim> dims) {
  impl_->contents.plan.values.push_back(
      {std::move(name), dtype, std::move(dims), ValueKind::intermediate, 0});
  return static_cast<uint32_t>(impl_->contents.plan.values.size() - 1);
}

uint32_t ArtifactWriter::add_input(std::string name, TensorDType dtype, std::vector<Dim> dims) {
  auto& c = impl_->contents;
  const uint32_t v = add_value(name, dtype, std::move(dims));
  c.plan.values[v].kind = ValueKind::input;
  c.plan.values[v].index = static_cast<uint32_t>(c.signature.inputs.size());
  if (!c.signature.entries.empty())
    c.signature.entries.back().inputs.push_back(c.plan.values[v].index);
  c.signature.inputs.push_back({std::move(name), v});
  return v;
}

uint32_t ArtifactWriter::add_symbol_value(std::string name, TensorDType dtype, uint32_t symbol) {
  auto& c = impl_->contents;
  const uint32_t v = add_value(std::move(name), dtype, {});
  c.plan.values[v].kind = ValueKind::symbol;
  c.plan.values[v].index = symbol;
  return v;
}

void ArtifactWriter::add_output(std::string name, uint32_t value) {
  auto& sig = impl_->contents.signature;
  if (!sig.entries.empty())
    sig.entries.back().outputs.push_back(static_cast<uint32_t>(sig.outputs.size()));
  sig.outputs.push_back({std::move(name), value});
}

void ArtifactWriter::begin_entry(std::string name) {
  auto& c = impl_->contents;
  auto& entries = c.signature.entries;
  const auto steps = static_cast<uint32_t>(c.plan.steps.size());
  if (!entries.empty()) entries.back().num_steps = steps - entries.back().first_step;
  EntrySpec e;
  e.name = std::move(name);
  e.first_step = steps;
  for (const StateSpec& s : c.signature.states) e.state_updates.push_back(s.value);
  entries.push_back(std::move(e));
}

void ArtifactWriter::set_entry_bucket(ShapeBucket bucket) {
  impl_->contents.signature.entries.back().bucket = std::move(bucket);
}

std::optional<uint32_t> ArtifactWriter::find_state(const std::string& name) const {
  for (const StateSpec& s : impl_->contents.signature.states)
    if (s.name == name) return s.value;
  return std::nullopt;
}

uint32_t ArtifactWriter::add_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                                      std::span<const std::byte> bytes, uint64_t hbm_offset) {
  auto& c = impl_->contents;
  const uint32_t v = add_value(name, dtype, std::move(dims));
  c.plan.values[v].kind = ValueKind::constant;
  c.plan.values[v].index = static_cast<uint32_t>(c.constants.size());
  Constant k;
  k.name = std::move(name);
  k.value = v;
  k.size = bytes.size();
  k.hbm_offset = hbm_offset;
  c.constants.push_back(std::move(k));
  impl_->constant_bytes.push_back(bytes);
  impl_->absent_size.push_back(0);
  impl_->fills.emplace_back();
  return v;
}

uint32_t ArtifactWriter::add_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                                      ConstantFill fill, uint64_t hbm_offset) {
  const uint64_t size = fill.size;
  const uint32_t v = add_constant(std::move(name), dtype, std::move(dims),
                                  std::span<const std::byte>(), hbm_offset);
  impl_->contents.constants.back().size = size;
  impl_->fills.back() = std::move(fill);
  return v;
}

uint32_t ArtifactWriter::add_absent_constant(std::string name, TensorDType dtype,
                                             std::vector<Dim> dims, uint64_t hbm_offset) {
  uint64_t bytes = dtype_size(dtype);
  for (const Dim& d : dims) bytes *= static_cast<uint64_t>(d.value);
  const uint32_t v = add_constant(std::move(name), dtype, std::move(dims),
                                  std::span<const std::byte>(), hbm_offset);
  impl_->contents.constants.back().segment = kAbsentSegment;
  impl_->absent_size.back() = bytes;
  return v;
}

uint32_t ArtifactWriter::add_constant(std::string name, TensorDType dtype, std::vector<Dim> dims,
                                      std::vector<std::byte> owned_bytes, uint64_t hbm_offset) {
  impl_->owned.push_back(std::make_unique<std::vector<std::byte>>(std::move(owned_bytes)));
  return add_constant(std::move(name), dtype, std::move(dims),
                      std::span<const std::byte>(*impl_->owned.back()), hbm_offset);
}

uint32_t ArtifactWriter::add_state(std::string name, TensorDType dtype, std::vector<Dim> dims,
                                   std::string initial_name,
                                   std::optional<std::vector<std::byte>> initial) {
  const uint32_t k = initial
                         ? add_constant(std::move(initial_name), dtype, dims, std::move(*initial))
                         : add_absent_constant(std::move(initial_name), dtype, dims);
  auto& c = impl_->contents;
  const uint32_t v = add_value(name, dtype, std::move(dims));
  c.plan.values[v].kind = ValueKind::state;
  c.plan.values[v].index = static_cast<uint32_t>(c.signature.states.size());
  c.signature.states.push_back({std::move(name), v, v, c.plan.values[k].index});
  for (EntrySpec& e : c.signature.entries) e.state_updates.push_back(v);
  return v;
}

void ArtifactWriter::set_state_update(uint32_t state_value, uint32_t update) {
  auto& c = impl_->contents;
  const uint32_t i = c.plan.values.at(state_value).index;
  if (c.signature.entries.empty())
    c.signature.states.at(i).update = update;
  else
    c.signature.entries.back().state_updates.at(i) = update;
}

uint32_t ArtifactWriter::add_program(DeviceProgram program) {
  impl_->contents.programs.push_back(std::move(program));
  return static_cast<uint32_t>(impl_->contents.programs.size() - 1);
}

void ArtifactWriter::add_device_call(DeviceCall call) {
  impl_->contents.plan.steps.emplace_back(std::move(call));
}

void ArtifactWriter::add_host_op(HostOp op) {
  impl_->contents.plan.steps.emplace_back(std::move(op));
}

uint32_t ArtifactWriter::add_debug_node(DebugNode node) {
  impl_->contents.debug_nodes.push_back(std::move(node));
  return static_cast<uint32_t>(impl_->contents.debug_nodes.size() - 1);
}

void ArtifactWriter::set_source_sha256(std::function<std::vector<uint8_t>()> digest) {
  // Its place in the root, until it is known.
  impl_->contents.source.sha256.assign(kSourceSha256Bytes, 0);
  impl_->late_sha256 = std::move(digest);
}

Result<std::vector<std::byte>> ArtifactWriter::write_memory(const WriteOptions& options) {
  NEURONC_ARTIFACT_RETURN_IF_ERROR(impl_->layout(options));
  std::vector<std::byte> out;
  MemorySink sink(out);
  emit(impl_->contents, impl_->payloads, false, sink, options.threads, impl_->late_sha256);
  return out;
}

namespace {

// Writes at offsets of an open file; a fill goes through its worker's scratch buffer, unless
// its bytes exist as they are (ConstantFill::as_is). Thread-safe: positional writes, the first
// error kept under a lock.
class FileSink final : public Sink {
 public:
  explicit FileSink(int fd) : fd_(fd) {}
  void resize(uint64_t) override {}
  void write_at(uint64_t offset, std::span<const std::byte> b) override {
    // One writer at a time: the kernel serialises writes to one file anyway (the inode lock),
    // and a thread waiting here sleeps where one waiting there spins (4 % of a BERT-large
    // compile's CPU time went to that spinning).
    std::lock_guard<std::mutex> write_lock(write_mu_);
    while (!b.empty()) {
      const ssize_t n = ::pwrite(fd_, b.data(), b.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_.empty()) error_ = n < 0 ? std::strerror(errno) : "no space written";
        return;
      }
      b = b.subspan(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
  }
  uint32_t fill_at(uint64_t offset, const ConstantFill& f, Scratch& scratch) override {
    if (f.as_is.size() == f.size && f.read_as_is) {
      // Read from the file chunk by chunk into the scratch buffer, then written and CRC'd from it.
      constexpr size_t kChunk = size_t{4} << 20;
      uint32_t crc = 0;
      for (size_t off = 0; off < f.size; off += kChunk) {
        const size_t n = std::min<size_t>(kChunk, f.size - off);
        std::span<const std::byte> chunk = f.as_is.subspan(off, n);
        const std::span<std::byte> buffer = scratch.at_least(kChunk).first(n);
        if (f.read_as_is(f.as_is_owner, chunk.data(), n, buffer.data())) chunk = buffer;
        crc = crc32c(chunk, crc);
        write_at(offset + off, chunk);
      }
      return crc;
    }
    if (f.as_is.size() == f.size) {
      write_at(offset, f.as_is);
      return crc32c(f.as_is);  // then release() drops its pages
    }
    const std::span<std::byte> made = scratch.at_least(f.size);
    f.fill(made);
    write_at(offset, made);
    return crc32c(made);
  }
  void release(const ConstantFill& f) override {
    if (f.drop_as_is && f.as_is.size() == f.size) f.drop_as_is(f.as_is.data(), f.as_is.size());
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  int fd_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::string error_;
};

}  // namespace

bool replace_file(const std::string& from, const std::string& to) {
#ifdef RENAME_EXCHANGE
  struct stat st;  // only a regular file is exchanged (a rename refuses a directory, say)
  if (::lstat(to.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    ::unlink(from.c_str());  // the old file now
    return true;
  }
#endif
  return std::rename(from.c_str(), to.c_str()) == 0;
}

Status ArtifactWriter::write_file(const std::string& path, const WriteOptions& options) {
  NEURONC_ARTIFACT_RETURN_IF_ERROR(impl_->layout(options));
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status(StatusCode::io_error, "cannot create '" + tmp + "': " + std::strerror(errno));
  // The temporary goes away unless it was renamed to `path`, also when a fill throws.
  struct Temporary {
    int fd;
    const std::string& name;
    bool keep = false;
    ~Temporary() {
      if (fd >= 0) ::close(fd);
      if (!keep) ::unlink(name.c_str());
    }
  } temporary{fd, tmp};
  FileSink sink(fd);
  emit(impl_->contents, impl_->payloads, false, sink, options.threads, impl_->late_sha256);
  std::string error = sink.error();
  const int closed = ::close(fd);
  temporary.fd = -1;
  if (error.empty() && closed != 0) error = std::strerror(errno);
  if (!error.empty()) return Status(StatusCode::io_error, "cannot write '" + tmp + "': " + error);
  if (!replace_file(tmp, path))
    return Status(StatusCode::io_error,
                  "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  temporary.keep = true;
  return Status::ok();
}

}  // namespace neuronc::artifact
