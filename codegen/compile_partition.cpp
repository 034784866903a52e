// The partition driver: static-shape check, value analysis (which nodes are views of their
// input and which compute), compile-time constants, HBM planning with liveness-based reuse,
// parallel kernel lowering, then emission (emitter.h; its candidate programs in parallel).
//
// HBM arena: [partition inputs][partition outputs][constants][scratch]. Each region is
// 64-byte aligned. Scratch buffers (intermediates between kernels) are packed greedily by size:
// a buffer may share bytes with any buffer whose lifetime (first kernel writing it .. last
// kernel reading it or a view of it) does not intersect; the emitter orders the reuse.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <unordered_set>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "codegen/hbm_plan.h"
#include "codegen/kernel_formation.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "codegen/view_lowering.h"
#include "device/numerics.h"
#include "kernels/numerics.h"

namespace neuronc::codegen {

using device::DType;

int64_t PartitionContext::row_interleave(const ir::Value* v) const {
  auto it = constant_buffers.find(info(v).buffer);
  return it == constant_buffers.end() ? 0 : it->second.row_interleave;
}

int64_t PartitionContext::column_block(const ir::Value* v) const {
  auto it = constant_buffers.find(info(v).buffer);
  return it == constant_buffers.end() ? 0 : it->second.column_block;
}

int64_t column_blocked_to_logical(int64_t j, int64_t N, int64_t K, int64_t w) {
  const int64_t b = j / (K * w), within = j - b * K * w;
  const int64_t width = std::min(w, N - b * w);
  const int64_t k = within / width, n = b * w + within % width;
  return n * K + k;
}

const ValueInfo& PartitionContext::info(const ir::Value* v) const {
  auto it = values.find(v);
  if (it == values.end()) throw Error("internal: value '" + v->name() + "' has no HBM view");
  return it->second;
}

int64_t stored_to_logical(int64_t k, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& perm, int64_t row_interleave) {
  const size_t r = shape.size();
  if (row_interleave > 0) {
    const int64_t rows = perm.empty() ? shape[0] : shape[static_cast<size_t>(perm[0])];
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    const int64_t row_elems = total / rows, chunks = rows / row_interleave;
    const int64_t s = k / row_elems;
    k = ((s % chunks) * row_interleave + s / chunks) * row_elems + k % row_elems;
  }
  if (perm.empty()) return k;
  std::vector<int64_t> idx(r);
  for (size_t i = r; i-- > 0;) {
    const int64_t n = shape[perm[i]];
    idx[perm[i]] = k % n;
    k /= n;
  }
  int64_t off = 0;
  for (size_t d = 0; d < r; ++d) off = off * shape[d] + idx[d];
  return off;
}

[[noreturn]] void fail(const ir::Node& n, const std::string& message) {
  throw Error(n.describe() + ": " + message);
}

std::vector<int64_t> static_shape(const ir::Value* v) {
  std::vector<int64_t> s;
  for (const ir::Dim& d : v->shape()) s.push_back(d.value());
  return s;
}

double scalar_attr(const ir::Node& n, const char* name, double dflt) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return dflt;
  if (const auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  if (const auto* f = std::get_if<double>(a)) return *f;
  if (const auto* b = std::get_if<bool>(a)) return *b ? 1.0 : 0.0;
  return dflt;
}

DType device_dtype(ir::DType t) {
  switch (t) {
    case ir::DType::f64:
    case ir::DType::f32:
      return DType::f32;
    case ir::DType::f16:
      return DType::f16;
    case ir::DType::bf16:
      return DType::bf16;
    case ir::DType::f8e4m3fn:
      return DType::f8e4m3;
    case ir::DType::f8e5m2:
      return DType::f8e5m2;
    case ir::DType::i64:
    case ir::DType::i32:
      return DType::i32;
    case ir::DType::i16:
      return DType::i16;
    case ir::DType::i8:
      return DType::i8;
    case ir::DType::u8:
    case ir::DType::boolean:
      return DType::u8;
    case ir::DType::c64:
      break;
  }
  throw Error("dtype " + std::string(ir::dtype_name(t)) + " has no device equivalent");
}

namespace {

// Element count of a static shape; a count that does not fit in int64 is refused (a symbolic
// dim bound to a huge value must not wrap around into a small buffer).
int64_t numel(const std::vector<int64_t>& s) {
  auto text = [&] {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
  };
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw Error(
          "shape " + text() + " has " +
          (d < 0 ? std::string("a negative dim") : std::string("more elements than fit in int64")));
  return n;
}

// Bytes of `n` elements of `dt`, refusing a size that does not fit in 64 bits.
uint64_t checked_bytes(int64_t n, DType dt, const std::string& what) {
  uint64_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n), uint64_t{device::dtype_size(dt)}, &bytes))
    throw Error(what + " needs more than 2^64 bytes");
  return bytes;
}

// Reads the elements of a constant's payload (row-major over the value's shape) as double, the
// shape and strides taken once, not per element. A deferred scale's elements (its payload's
// row_scale) are read scaled, and a deferred cast's (its stored_dtype) as the value's: rounded
// as the cast rounds them.
class PayloadReader {
 public:
  explicit PayloadReader(const ir::Value* v)
      : PayloadReader(v->name(), *v->payload(), static_shape(v), v->dtype()) {}
  PayloadReader(const std::string& name, const ir::ConstantPayload& p, std::vector<int64_t> shape,
                ir::DType dtype)
      : name_(name),
        p_(p),
        shape_(std::move(shape)),
        es_(ir::dtype_size(p.element_dtype(dtype))),
        type_(ir::element_type(p.element_dtype(dtype))),
        value_type_(ir::element_type(dtype)) {
    if (ir::is_complex(dtype)) throw Error("constant '" + name + "' is complex");
    if (type_ != value_type_ && !(type_ == DType::f32 && device::dtype_is_float(value_type_)))
      throw Error("constant '" + name + "': a deferred cast from " +
                  std::string(ir::dtype_name(p.element_dtype(dtype))) + " to " +
                  std::string(ir::dtype_name(dtype)) + ", expected one from f32 to a float");
    if (const std::string why = p.deferral_problem(dtype); !why.empty())
      throw Error("constant '" + name + "': " + why);
    // A payload with explicit strides (a tensor-parallel slice, say) is read through them.
    contiguous_ = p_.row_major(shape_);
  }
  double operator()(int64_t i) const {
    const int64_t off = offset(i);
    const std::byte* at = p_.data + off * static_cast<int64_t>(es_);
    std::byte part_element[8];
    if (p_.parts) {  // a deferred concatenation's element, from its part
      if (!p_.copy_stored(static_cast<size_t>(off) * es_, es_, part_element))
        throw Error("constant '" + name_ + "': its parts do not hold element " +
                    std::to_string(off));
      at = part_element;
    }
    double x = kernels::load_double(at, type_);
    if (p_.row_scale) x = static_cast<float>(x * p_.scale_at(off));  // as the fold rounds it
    if (type_ == value_type_) return x;
    std::byte narrow[8];
    kernels::store_f32(narrow, value_type_, static_cast<float>(x));
    return kernels::load_double(narrow, value_type_);
  }
  // The dtype of the elements contiguous_data() points at (the value's unless a cast is
  // deferred).
  DType stored_type() const { return type_; }
  // The bytes of the first element when the payload is contiguous and holds every element, so
  // element i is i elements on from it, and they are read as they are stored there (no deferred
  // scale or concatenation); null otherwise.
  const std::byte* contiguous_data() const {
    if (!contiguous_ || p_.row_scale || p_.parts) return nullptr;
    const int64_t n = numel(shape_);
    if (n == 0) return nullptr;
    (void)offset(n - 1);  // the bounds check
    return p_.data + p_.storage_offset * static_cast<int64_t>(es_);
  }

 private:
  // The storage index (in elements from the payload's data) of element i, bounds-checked.
  int64_t offset(int64_t i) const {
    int64_t off = p_.storage_offset;
    if (contiguous_) {
      off += i;
    } else {
      for (int64_t d = static_cast<int64_t>(shape_.size()) - 1; d >= 0; --d) {
        off += (i % shape_[d]) * p_.strides[d];
        i /= shape_[d];
      }
    }
    if (static_cast<size_t>(off + 1) * es_ > p_.nbytes)
      throw Error("constant '" + name_ + "' payload holds " + std::to_string(p_.nbytes) +
                  " bytes but element offset " + std::to_string(off) + " needs more");
    return off;
  }
  const std::string& name_;
  const ir::ConstantPayload& p_;
  std::vector<int64_t> shape_;
  size_t es_;
  ::neuronc::DType type_, value_type_;
  bool contiguous_ = false;
};

// Element `i` (row-major over the value's shape) of a payload as double.
double payload_element(const ir::Value* v, int64_t i) {
  return PayloadReader(v)(i);
}

void store_element(std::byte* dst, DType t, double x) {
  if (t == DType::bf16) {  // the common weight dtype, inline (device::store_f32's RNE)
    const uint16_t b = kernels::f32_to_bf16_nearest(static_cast<float>(x));
    std::memcpy(dst, &b, 2);
    return;
  }
  if (device::dtype_is_float(t)) {
    device::store_f32(dst, t, static_cast<float>(x));
  } else {
    int64_t i = static_cast<int64_t>(std::trunc(x));
    device::store_int(dst, t, i);
  }
}

// What a constant's bytes are made from: a weight's payload (`values` empty) or values codegen
// computed, and the layout they are stored in (ConstantBinding's fields of the same names).
struct ConstantSource {
  std::string name;
  ir::DType dtype = ir::DType::f32;  // the value's (the payload's)
  std::vector<int64_t> shape;
  ir::ConstantPayload payload;  // its `owner` keeps the bytes alive
  // When set, these instead of the payload (codegen's own, alive while it runs: such a
  // constant's bytes are made at once, never by a deferred fill).
  const std::vector<double>* values = nullptr;
  bool transposed = false;
  std::vector<int64_t> perm;
  int64_t row_interleave = 0;
  int64_t column_block = 0;

  uint64_t size() const { return static_cast<uint64_t>(numel(shape)) * device::dtype_size(dt()); }
  DType dt() const { return device_dtype(dtype); }
  // Whether the device stores the elements in their logical row-major order.
  bool plain_layout() const {
    return !transposed && column_block == 0 && perm.empty() && row_interleave == 0;
  }
  // Whether the device stores the 2-D transpose, whole or by column blocks of `block()` rows.
  bool blocked_transpose() const {
    return shape.size() == 2 &&
           (column_block > 0 || (transposed && perm.empty() && row_interleave == 0));
  }
  int64_t block() const { return column_block > 0 ? column_block : shape[0]; }
  // Whether the device keeps the payload's own element bytes (no conversion).
  bool same_bytes() const {
    return !payload.deferred() && ir::dtype_size(dtype) == device::dtype_size(dt()) &&
           dtype != ir::DType::f64 && dtype != ir::DType::i64;
  }
};

ConstantSource constant_source(const ir::Value* v, const std::vector<double>* values,
                               bool transposed, const std::vector<int64_t>& perm,
                               int64_t row_interleave, int64_t column_block) {
  ConstantSource s{v->name(),  v->dtype(), static_shape(v), {},          {},
                   transposed, perm,       row_interleave,  column_block};
  if (values)
    s.values = values;
  else
    s.payload = *v->payload();
  return s;
}

// The payload's bytes when they are the stored bytes as they are (the device keeps the dtype,
// and the layout is the payload's own row-major order), else empty. Throws when the payload is
// shorter than the shape needs.
std::span<const std::byte> as_is(const ConstantSource& s) {
  const int64_t n = numel(s.shape);
  const size_t es = device::dtype_size(s.dt());
  if (s.values || n == 0 || !s.payload.row_major(s.shape) || !s.plain_layout() || !s.same_bytes())
    return {};
  const ir::ConstantPayload& p = s.payload;
  const size_t need = static_cast<size_t>(p.storage_offset + n) * es;
  if (need > p.nbytes)
    throw Error("constant '" + s.name + "' payload holds " + std::to_string(p.nbytes) +
                " bytes, expected " + std::to_string(need));
  return {p.data + p.storage_offset * es, static_cast<size_t>(n) * es};
}

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols: the transpose of a
// row-major matrix of 2-byte elements (strides in elements), in 8 x 8 tiles of three rounds of
// SSE2 unpacks, 32 rows by 64 columns at a time so the rows written fill whole cache lines. The
// tiles go down the 32 rows before across: each 8 columns' lines are finished by four tiles in a
// row, rather than 64 lines on as many pages being filled a quarter at a time (1.4-3x faster on
// BERT-large's shapes, the destination in L3).
void transpose_u16(const std::byte* src, int64_t src_stride, std::byte* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols) {
  auto one = [&](int64_t r, int64_t c) {
    std::memcpy(dst + (c * dst_stride + r) * 2, src + (r * src_stride + c) * 2, 2);
  };
  constexpr int64_t kRows = 32, kCols = 64;
  for (int64_t rb = 0; rb < rows; rb += kRows) {
    const int64_t re = std::min(rows, rb + kRows);
    for (int64_t cb = 0; cb < cols; cb += kCols) {
      const int64_t ce = std::min(cols, cb + kCols);
      int64_t rfull = rb, cfull = cb;  // the tiles' rows and columns end here
#if defined(__SSE2__)
      rfull = rb + (re - rb) / 8 * 8;
      cfull = cb + (ce - cb) / 8 * 8;
      for (int64_t c0 = cb; c0 < cfull; c0 += 8) {
        for (int64_t r0 = rb; r0 < rfull; r0 += 8) {
          __m128i a[8], b[8], c[8];
          for (int i = 0; i < 8; ++i)
            a[i] = _mm_loadu_si128(
                reinterpret_cast<const __m128i*>(src + ((r0 + i) * src_stride + c0) * 2));
          for (int i = 0; i < 8; i += 2) {
            b[i] = _mm_unpacklo_epi16(a[i], a[i + 1]);
            b[i + 1] = _mm_unpackhi_epi16(a[i], a[i + 1]);
          }
          for (int i = 0; i < 8; i += 4) {
            c[i] = _mm_unpacklo_epi32(b[i], b[i + 2]);
            c[i + 1] = _mm_unpackhi_epi32(b[i], b[i + 2]);
            c[i + 2] = _mm_unpacklo_epi32(b[i + 1], b[i + 3]);
            c[i + 3] = _mm_unpackhi_epi32(b[i + 1], b[i + 3]);
          }
          for (int j = 0; j < 4; ++j) {  // columns 2j and 2j + 1
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + ((c0 + 2 * j) * dst_stride + r0) * 2),
                             _mm_unpacklo_epi64(c[j], c[j + 4]));
            _mm_storeu_si128(
                reinterpret_cast<__m128i*>(dst + ((c0 + 2 * j + 1) * dst_stride + r0) * 2),
                _mm_unpackhi_epi64(c[j], c[j + 4]));
          }
        }
      }
#endif
      for (int64_t c = cfull; c < ce; ++c)
        for (int64_t r = rb; r < rfull; ++r) one(r, c);
      for (int64_t r = rfull; r < re; ++r)
        for (int64_t c = cb; c < ce; ++c) one(r, c);
    }
  }
}

// Rows [r0, r1) of a row-major [rows, cols] matrix of 2-byte elements (`src` holding row r0)
// into `out`, which holds its transpose whole (block = rows) or by column blocks: the rows of
// block [b0, b0 + width) stored transposed as [cols, width] at element b0 * cols.
void transpose_rows_into_blocks(const std::byte* src, int64_t r0, int64_t r1, int64_t rows,
                                int64_t cols, int64_t block, std::byte* out) {
  for (int64_t r = r0; r < r1;) {
    const int64_t b0 = r / block * block, width = std::min(block, rows - b0);
    const int64_t end = std::min(r1, b0 + width);
    transpose_u16(src + (r - r0) * cols * 2, cols, out + (b0 * cols + (r - b0)) * 2, width, end - r,
                  cols);
    r = end;
  }
}

// Stored f32 elements of a weight, and how to read them from its file (the payload's or the
// part's ir::ConstantPayload::read_bytes, with its owner).
struct F32Run {
  std::span<const std::byte> bytes;  // a multiple of 4
  const void* owner = nullptr;
  ir::ConstantPayload::ReadBytes read = nullptr;
};

// Calls `f(const float* x, size_t count)` over the elements of `run`, in order. A run of a file
// is read from it in chunks into a buffer each thread reuses: one pass over a large weight reads
// it that way 3-4x faster than through the mapping here (a shadow-paged VM: each new mapped page
// costs an exit; docs/DESIGN.md), and the mapping's pages never enter the process.
// Bytes the file read cannot give are read from the mapping, which holds the same bytes.
template <typename F>
void for_each_f32_chunk(const F32Run& run, F&& f) {
  constexpr size_t kChunk = size_t{1} << 20, kMinRead = size_t{16} << 10;  // bytes
  if (run.read == nullptr || run.bytes.size() < kMinRead) {
    f(reinterpret_cast<const float*>(run.bytes.data()), run.bytes.size() / 4);
    return;
  }
  thread_local std::vector<float> chunk(kChunk / 4);
  for (size_t off = 0; off < run.bytes.size(); off += kChunk) {
    const size_t k = std::min(kChunk, run.bytes.size() - off);
    const std::byte* at = run.bytes.data() + off;
    const float* x = reinterpret_cast<const float*>(at);
    if (run.read(run.owner, at, k, reinterpret_cast<std::byte*>(chunk.data()))) x = chunk.data();
    f(x, k / 4);
  }
}

// Writes the constant's bytes in the device dtype into `out` (exactly s.size() bytes):
// `transposed` stores the 2-D transpose, a non-empty `perm` the tensor permuted by it (stored
// dim i = logical dim perm[i]).
void lay_out_constant(const ConstantSource& s, std::span<std::byte> out) {
  const std::vector<int64_t>& shape = s.shape;
  const int64_t n = numel(shape);
  const DType dt = s.dt();
  const size_t es = device::dtype_size(dt);
  if (out.size() != static_cast<size_t>(n) * es)
    throw Error("constant '" + s.name + "': " + std::to_string(out.size()) +
                " bytes to fill, expected " + std::to_string(static_cast<size_t>(n) * es));
  const bool from_values = s.values != nullptr || n == 0;
  if (const std::span<const std::byte> raw = as_is(s); !raw.empty()) {
    std::memcpy(out.data(), raw.data(), out.size());
    return;
  }
  if (!from_values && s.payload.stored_dtype && !s.payload.row_scale) {
    // A deferred cast of contiguous f32 (--auto-cast's weights), or of a concatenation of such
    // runs (fused siblings' weights, cut between elements): narrowed whole, vectorised and
    // rounded as the cast rounds (store_f32_n), run by run: straight into `out` when it is
    // stored as it is, else into a buffer each thread reuses and then laid out as the narrow
    // tensor it now is.
    std::vector<F32Run> runs;  // n elements in all
    const ir::ConstantPayload& p = s.payload;
    const PayloadReader reader(s.name, p, shape, s.dtype);
    const bool whole_parts = p.parts && p.row_major(shape) && p.storage_offset == 0 &&
                             p.nbytes == static_cast<size_t>(n) * 4;
    if (reader.stored_type() == DType::f32) {
      if (const std::byte* f = reader.contiguous_data()) {
        runs.push_back({{f, static_cast<size_t>(n) * 4}, p.owner.get(), p.read_bytes});
      } else if (whole_parts) {
        for (const ir::ConstantPayload::Part& part : *p.parts) {
          if (part.nbytes % 4 != 0 || (!part.data && part.nbytes > 0)) {
            runs.clear();  // cut inside an element: assembled below
            break;
          }
          runs.push_back({{part.data, part.nbytes}, part.owner.get(), part.read_bytes});
        }
      }
    }
    // A 2-byte weight transposed whole or by column blocks (the usual --auto-cast matmul
    // weight): narrowed a band of rows at a time into a buffer that stays in cache, and each
    // band transposed into `out` from there, rather than narrowed whole and then transposed
    // from memory. The bytes are the same: each element is rounded alone, and a band is
    // transposed as its rows of the whole would be.
    if (!runs.empty() && es == 2 && s.blocked_transpose()) {
      const int64_t rows = shape[0], cols = shape[1];
      constexpr int64_t kBandBytes = int64_t{256} << 10;  // with its rows' f32 chunk, in L2
      const int64_t band_rows = std::max<int64_t>(8, kBandBytes / (cols * 2));
      const size_t band_elems = static_cast<size_t>(band_rows * cols);
      thread_local std::vector<std::byte> band;
      if (band.size() < band_elems * 2) band.resize(band_elems * 2);
      int64_t r0 = 0;     // the band's first row
      size_t filled = 0;  // elements in the band
      auto flush = [&] {  // rows [r0, r0 + filled / cols)
        const int64_t r1 = r0 + static_cast<int64_t>(filled) / cols;
        transpose_rows_into_blocks(band.data(), r0, r1, rows, cols, s.block(), out.data());
        r0 = r1;
        filled = 0;
      };
      for (const F32Run& run : runs)
        for_each_f32_chunk(run, [&](const float* x, size_t k) {
          while (k > 0) {
            const size_t take = std::min(k, band_elems - filled);
            kernels::store_f32_n(band.data() + filled * 2, dt, x, take);
            filled += take;
            x += take;
            k -= take;
            if (filled == band_elems) flush();
          }
        });
      flush();
      return;
    }
    if (!runs.empty()) {
      thread_local std::vector<std::byte> narrow;
      std::byte* to = out.data();
      if (!s.plain_layout()) {
        if (narrow.size() < out.size()) narrow.resize(out.size());
        to = narrow.data();
      }
      for (const F32Run& run : runs)
        for_each_f32_chunk(run, [&](const float* x, size_t k) {
          kernels::store_f32_n(to, dt, x, k);
          to += k * es;
        });
      if (s.plain_layout()) return;
      ConstantSource plain = s;
      plain.payload = ir::ConstantPayload{narrow.data(), out.size(), 0, {}, nullptr};
      lay_out_constant(plain, out);
      return;
    }
  }
  if (!from_values && s.payload.parts) {
    // A deferred concatenation (fused sibling weights): its storage assembled in a buffer each
    // thread reuses, then laid out as any other payload (with its deferred scale and cast).
    thread_local std::vector<std::byte> whole;
    const ir::ConstantPayload& p = s.payload;
    if (const std::string why = p.deferral_problem(s.dtype); !why.empty())
      throw Error("constant '" + s.name + "': " + why);
    if (whole.size() < p.nbytes) whole.resize(p.nbytes);
    p.copy_stored(0, p.nbytes, whole.data());  // the parts add up to nbytes
    ConstantSource assembled = s;
    assembled.payload.parts.reset();
    assembled.payload.data = whole.data();
    assembled.payload.owner = nullptr;
    assembled.payload.drop_pages = nullptr;
    assembled.payload.read_bytes = nullptr;
    lay_out_constant(assembled, out);
    return;
  }
  if (!from_values && s.payload.row_scale) {
    // A deferred row scale (a folded batch norm): the scaled f32 elements made here, into a
    // buffer each thread reuses, then laid out as the plain f32 payload they now are (with the
    // deferred cast, if any, kept).
    thread_local std::vector<float> scaled;
    if (scaled.size() < static_cast<size_t>(n)) scaled.resize(static_cast<size_t>(n));
    const ir::ConstantPayload& p = s.payload;
    if (const std::string why = p.deferral_problem(s.dtype); !why.empty())
      throw Error("constant '" + s.name + "': " + why);
    ir::ConstantPayload uncast = p, unscaled = p;  // read as the f32 elements they are
    uncast.stored_dtype.reset();
    unscaled.stored_dtype.reset();
    unscaled.row_scale.reset();
    if (p.row_major(shape)) {
      const PayloadReader raw(s.name, unscaled, shape, ir::DType::f32);
      const F32Run src{
          {raw.contiguous_data(), static_cast<size_t>(n) * 4}, p.owner.get(), p.read_bytes};
      // Row by row: one scale per run of elements, rounded as the fold rounds (in double).
      int64_t i = 0;
      for_each_f32_chunk(src, [&](const float* x, size_t k) {
        for (const int64_t end = i + static_cast<int64_t>(k); i < end;) {
          const int64_t e = p.storage_offset + i;
          const int64_t run = std::min(end - i, p.row_scale_pitch - e % p.row_scale_pitch);
          kernels::scale_f32_n(scaled.data() + i, x, static_cast<size_t>(run), p.scale_at(e));
          x += run;
          i += run;
        }
      });
    } else {
      const PayloadReader read(s.name, uncast, shape, ir::DType::f32);
      for (int64_t i = 0; i < n; ++i) scaled[i] = static_cast<float>(read(i));
    }
    ConstantSource plain = s;
    plain.payload = ir::ConstantPayload{reinterpret_cast<const std::byte*>(scaled.data()),
                                        static_cast<size_t>(n) * 4,
                                        0,
                                        {},
                                        nullptr};
    if (s.dtype != ir::DType::f32) plain.payload.stored_dtype = ir::DType::f32;
    lay_out_constant(plain, out);
    return;
  }
  // Stored element j gets logical element i: put(j, i) for every element of the layout.
  auto lay_out = [&](auto put) {
    // The transpose [K, N] of [N, K] in column blocks of `w` columns (w = N: the plain
    // transpose), as column_blocked_to_logical maps it, in 16 x 16 tiles written row by row:
    // few enough cache lines that power-of-two row strides do not evict each other (a 4096-wide
    // bf16 transpose: 0.5 ns per element against 6.6 with 32 x 32 tiles read row by row).
    auto blocked_transpose = [&](int64_t rows, int64_t cols, int64_t w) {
      constexpr int64_t kTile = 16;
      for (int64_t b0 = 0; b0 < rows; b0 += w) {
        const int64_t width = std::min(w, rows - b0), base = b0 * cols;
        for (int64_t k0 = 0; k0 < cols; k0 += kTile)
          for (int64_t c0 = 0; c0 < width; c0 += kTile)
            for (int64_t k = k0, k1 = std::min(k0 + kTile, cols); k < k1; ++k)
              for (int64_t c = c0, c1 = std::min(c0 + kTile, width); c < c1; ++c)
                put(base + k * width + c, (b0 + c) * cols + k);
      }
    };
    if (s.blocked_transpose()) {
      blocked_transpose(shape[0], shape[1], s.block());
      return;
    }
    if (!s.perm.empty() || s.row_interleave > 0) {
      for_each_stored(shape, s.perm, s.row_interleave, put);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = i;
      if (s.transposed) {  // out[c][r] = in[r][c] for in [R, C]
        const int64_t r = i / shape[1], c = i % shape[1];
        j = c * shape[0] + r;
      }
      put(j, i);
    }
  };
  std::byte* o = out.data();
  if (from_values) {
    lay_out([&](int64_t j, int64_t i) { store_element(o + j * es, dt, (*s.values)[i]); });
    return;
  }
  // The payload's elements are the stored bytes already (the dtype the device keeps): moved,
  // not converted (a conversion through double gives the same bytes).
  const PayloadReader reader(s.name, s.payload, shape, s.dtype);
  if (s.same_bytes()) {
    if (const std::byte* src = reader.contiguous_data()) {
      // The element size a compile-time constant where it can be: one load and one store.
      auto move = [&](auto size) {
        lay_out([&](int64_t j, int64_t i) { std::memcpy(o + j * size, src + i * size, size); });
      };
      // A 2-byte weight (bf16, the usual one) transposed whole or by column blocks: in 8 x 8
      // SIMD tiles.
      if (es == 2 && s.blocked_transpose()) {
        transpose_rows_into_blocks(src, 0, shape[0], shape[0], shape[1], s.block(), o);
        return;
      }
      switch (es) {
        case 1:
          move(std::integral_constant<size_t, 1>{});
          break;
        case 2:
          move(std::integral_constant<size_t, 2>{});
          break;
        case 4:
          move(std::integral_constant<size_t, 4>{});
          break;
        case 8:
          move(std::integral_constant<size_t, 8>{});
          break;
        default:
          move(es);
      }
      return;
    }
  }
  // f32 elements (a deferred cast's among them) rounded once, straight to the device dtype.
  if (const std::byte* f =
          reader.stored_type() == DType::f32 ? reader.contiguous_data() : nullptr) {
    lay_out([&](int64_t j, int64_t i) {
      float x;
      std::memcpy(&x, f + 4 * i, 4);
      store_element(o + j * es, dt, static_cast<double>(x));
    });
    return;
  }
  lay_out([&](int64_t j, int64_t i) { store_element(o + j * es, dt, reader(i)); });
}

std::vector<std::byte> constant_bytes(const ConstantSource& s) {
  std::vector<std::byte> out(s.size());
  lay_out_constant(s, out);
  return out;
}

}  // namespace

std::optional<std::vector<double>> PartitionContext::constant_values(const ir::Value* v) const {
  const ValueInfo& vi = info(v);
  auto it = constant_buffers.find(vi.buffer);
  // Absent bytes are unknown; a column-blocked weight has no strided view (only its matmul
  // reads it, through the layout).
  if (it == constant_buffers.end() || it->second.absent || it->second.column_block > 0)
    return std::nullopt;
  const ir::Value* src = it->second.value;
  std::vector<int64_t> sshape;
  for (const ir::Dim& d : src->shape()) sshape.push_back(d.value());
  const std::vector<double>* syn = nullptr;
  if (auto s = synthetic.find(src); s != synthetic.end()) syn = &s->second;
  std::optional<PayloadReader> reader;
  if (!syn) reader.emplace(src);
  // Element k of the buffer (its stored layout) as a value of `src`.
  auto buffer_element = [&](int64_t k) {
    if (it->second.transposed) k = (k % sshape[0]) * sshape[1] + k / sshape[0];
    if (!it->second.permutation.empty() || it->second.row_interleave > 0)
      k = stored_to_logical(k, sshape, it->second.permutation, it->second.row_interleave);
    return syn ? (*syn)[k] : (*reader)(k);
  };
  const HbmView& view = vi.view;
  const int64_t n = view.numel();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = view.offset;
    for (int64_t d = view.rank() - 1; d >= 0; --d) {
      off += (rem % view.shape[d]) * view.strides[d];
      rem /= view.shape[d];
    }
    out[i] = buffer_element(off);
  }
  return out;
}

std::optional<std::vector<std::byte>> constant_bytes_for(const ConstantBinding& cb,
                                                         const ir::Graph& g) {
  if (cb.origin.empty()) return std::nullopt;
  const ir::Value* v = g.find_value(cb.name);
  if (!v)
    throw Error("constant '" + cb.name + "' (of " + cb.origin +
                ") has no counterpart in the other program: expected graphs of one structure");
  if (static_shape(v) != cb.shape || device_dtype(v->dtype()) != cb.dtype)
    throw Error("constant '" + cb.name + "' differs in dtype or shape from the other program's");
  if (v->payload() && !v->producer()) {
    if (v->payload()->absent) return std::vector<std::byte>{};
    return constant_bytes(constant_source(v, nullptr, cb.transposed, cb.permutation,
                                          cb.row_interleave, cb.column_block));
  }
  // A compile-time dtype conversion of a weight (fold_constant).
  const ir::Node* n = v->producer();
  if (n && (n->op() == "aten._to_copy.default" || n->op() == "aten.to.dtype") &&
      n->input(0)->payload() && !n->input(0)->producer()) {
    if (n->input(0)->payload()->absent) return std::vector<std::byte>{};
    const int64_t count = numel(static_shape(n->input(0)));
    std::vector<double> values(static_cast<size_t>(count));
    const PayloadReader reader(n->input(0));
    for (int64_t i = 0; i < count; ++i) values[i] = reader(i);
    return constant_bytes(constant_source(v, &values, cb.transposed, cb.permutation,
                                          cb.row_interleave, cb.column_block));
  }
  throw Error("constant '" + cb.name + "' (of " + cb.origin +
              ") is computed from its weight in a way the other program cannot redo");
}

bool is_creation_op(const std::string& op) {
  static const char* kOps[] = {
      "aten.arange.default",        "aten.arange.start",      "aten.arange.start_step",
      "aten.full.default",          "aten.ones.default",      "aten.zeros.default",
      "aten.scalar_tensor.default", "aten.new_ones.default",  "aten.new_zeros.default",
      "aten.new_full.default",      "aten.full_like.default", "aten.zeros_like.default",
      "aten.ones_like.default",     "aten.fill.Scalar",       "aten.empty.memory_format",
      "aten.new_empty.default",     "aten.empty_like.default"};
  for (const char* s : kOps)
    if (op == s) return true;
  return false;
}

// Values of a creation op, row-major.
std::vector<double> creation_values(const ir::Node& n) {
  const std::vector<int64_t> shape = static_shape(n.output());
  const int64_t count = numel(shape);
  const std::string& op = n.op();
  std::vector<double> v(static_cast<size_t>(count), 0.0);
  if (op.rfind("aten.arange", 0) == 0) {
    double start = 0, step = 1;
    if (op == "aten.arange.default") {
      start = 0;
    } else {
      start = scalar_attr(n, "start", 0);
      if (op == "aten.arange.start_step") step = scalar_attr(n, "step", 1);
    }
    for (int64_t i = 0; i < count; ++i) v[i] = start + step * static_cast<double>(i);
    return v;
  }
  double fill = 0;
  if (op == "aten.full.default" || op == "aten.new_full.default" || op == "aten.full_like.default")
    fill = scalar_attr(n, "fill_value", 0);
  else if (op == "aten.fill.Scalar")
    fill = scalar_attr(n, "value", 0);
  else if (op == "aten.ones.default" || op == "aten.new_ones.default" ||
           op == "aten.ones_like.default")
    fill = 1;
  else if (op == "aten.scalar_tensor.default")
    fill = scalar_attr(n, "s", 0);
  std::fill(v.begin(), v.end(), fill);
  return v;
}

// Lowering for a compute node, or null.
const Lowering* find_lowering(const std::string& op) {
  for (auto f : {matmul_lowering, elementwise_lowering, row_lowering, group_norm_lowering,
                 attention_lowering, gather_lowering, conv_lowering, pool_lowering,
                 data_movement_lowering, collective_lowering, topk_lowering})
    if (const Lowering* l = f(op)) return l;
  return nullptr;
}

namespace {

using Buffer = HbmBuffer;

struct Kernel {
  LowerFn fn = nullptr;
  const ir::Node* node = nullptr;
  uint32_t debug_id = 0;
  std::vector<const ir::Node*> fused;  // see KernelBuilder::fused
  // Output copies: copy `copy_src` into the output buffer of `copy_dst_value` (no node).
  const ir::Value* copy_src = nullptr;
  const ir::Value* copy_dst_value = nullptr;
};

// One compile_partition call. The stages run in order: static shapes, inputs, kernel formation
// (kernel_formation.h), values and kernels in node order (views through view_lowering.h),
// output copies, the HBM plan (hbm_plan.h), bindings, lowering (parallel) and emission.
class PartitionCompiler {
 public:
  PartitionCompiler(const ir::Graph& g, const std::vector<const ir::Node*>& nodes,
                    const std::vector<const ir::Value*>& inputs,
                    const std::vector<const ir::Value*>& outputs, const device::Target& target,
                    const CodegenOptions& opts)
      : g_(g),
        nodes_(nodes),
        inputs_(inputs),
        outputs_(outputs),
        target_(target),
        opts_(opts),
        scope_(nodes, outputs),
        ctx_(g, target) {}

  CompiledPartition run() {
    check_static_shapes();
    check_collective_ranks();
    bind_inputs();
    formation_ = form_kernels(scope_, target_, opts_);
    ctx_.read_through = formation_.read_through;
    for (size_t i = 0; i < nodes_.size(); ++i) visit(i);
    add_output_copies();
    const HbmPlan plan = plan_hbm(buffers_, target_);
    for (auto& [v, vi] : ctx_.values) vi.view.base = buffers_[vi.buffer].offset;
    make_bindings();
    std::vector<KernelCode> codes = lower_kernels();
    emit(std::move(codes), plan);
    return std::move(result_);
  }

 private:
  struct Constant {
    const ir::Value* value = nullptr;
    int buffer = -1;
    bool transposed = false;
    std::vector<int64_t> permutation;
    int64_t interleave = 0;
    int synthetic = -1;   // index into synthetic_values_, or -1: the value's payload
    bool absent = false;  // bytes unknown (a weights-free export's weight, or computed from one)
    int64_t column_block = 0;  // ConstantBinding::column_block
    std::string origin;        // ConstantBinding::origin
  };

  void check_static(const ir::Value* v, const ir::Node* n) const {
    for (const ir::Dim& d : v->shape()) {
      if (d.is_symbolic()) {
        const std::string what = "value '" + v->name() + "' has symbolic dimension " +
                                 g_.dim_to_string(d) + " (shape " + g_.shape_to_string(v->shape()) +
                                 "): codegen needs static shapes (shape bucketing is not done yet)";
        if (n) fail(*n, what);
        throw Error(what);
      }
    }
    (void)device_dtype(v->dtype());
  }
  void check_static_shapes() const {
    for (const ir::Value* v : inputs_) check_static(v, nullptr);
    for (const ir::Node* n : nodes_)
      for (const ir::Value* v : n->outputs()) check_static(v, n);
  }
  // The program runs on as many cores as its collectives have ranks: all must agree.
  void check_collective_ranks() {
    const ir::Node* first = nullptr;
    for (const ir::Node* n : nodes_) {
      if (!collective_lowering(n->op())) continue;
      const int64_t ranks = n->attr_int("ranks");
      if (first && ranks != static_cast<int64_t>(cores_))
        fail(*n, "collective over " + std::to_string(ranks) + " ranks, but node '" + first->name() +
                     "' runs over " + std::to_string(cores_) +
                     ": a partition's collectives share its cores");
      if (!first) first = n;
      cores_ = static_cast<uint32_t>(ranks);
    }
  }

  int new_buffer(Buffer::Region region, const ir::Value* v, int first, const char* what) {
    Buffer b;
    b.region = region;
    b.bytes = checked_bytes(numel(static_shape(v)), device_dtype(v->dtype()),
                            std::string(what) + " '" + v->name() + "'");
    b.first = first;
    b.last = std::max(first, 0);
    buffers_.push_back(b);
    return static_cast<int>(buffers_.size()) - 1;
  }

  // --- constant layouts ----------------------------------------------------------------------
  // Weights stored transposed: 2-D constants whose every use is a linear weight or a
  // permute([1, 0]) (which then reads them contiguously).
  bool store_transposed(const ir::Value* v) const {
    if (!opts_.transpose_matmul_weights || v->shape().size() != 2 || scope_.is_output(v))
      return false;
    if (!v->has_uses()) return false;
    for (const ir::Use& u : v->uses()) {
      if (!scope_.contains(u.node)) return false;
      const std::string& op = u.node->op();
      if (op == "aten.linear.default" && u.operand == 1) continue;
      if (op == "aten.permute.default" && u.node->attr_ints("dims") == std::vector<int64_t>{1, 0})
        continue;
      if (op == "aten.t.default") continue;
      return false;
    }
    return true;
  }
  // The column block of a transposed weight whose every use is a linear's weight, all of whose
  // kernels stream it in the same n-blocks narrower than its rows (linear_weight_column_block).
  int64_t column_block(const ir::Value* v) const {
    int64_t block = 0;
    for (const ir::Use& u : v->uses()) {
      if (u.node->op() != "aten.linear.default" || u.operand != 1) return 0;
      const int64_t b = linear_weight_column_block(*u.node, target_);
      if (b == 0 || (block != 0 && b != block)) return 0;
      block = b;
    }
    return block;
  }
  // Convolution weights [O, C/g, (KH,) KW] whose every use is a (non-depthwise) convolution's
  // weight are stored [C/g, (KH,) KW, O]: each input channel's block (a partition of the
  // contraction) is one contiguous run, so the weight DMA moves long descriptors.
  std::vector<int64_t> conv_permutation(const ir::Value* v) const {
    const size_t r = v->shape().size();
    if ((r != 3 && r != 4) || scope_.is_output(v) || !v->has_uses()) return {};
    for (const ir::Use& u : v->uses()) {
      if (!scope_.contains(u.node) || !conv_lowering(u.node->op()) || u.operand != 1) return {};
      const int64_t groups = u.node->attr("groups") ? u.node->attr_int("groups") : 1;
      if (groups > 1 && v->shape()[1].value() == 1) return {};  // depthwise: [C, KK] rows
    }
    return r == 4 ? std::vector<int64_t>{1, 2, 3, 0} : std::vector<int64_t>{1, 2, 0};
  }
  // Such a weight with groups = 1 and more than one whole chunk of input channels is stored
  // with its channel rows interleaved by the partition count (ConstantBinding::row_interleave).
  int64_t conv_interleave(const ir::Value* v, const std::vector<int64_t>& perm) const {
    const int64_t P = target_.partitions;
    if (perm.empty()) return 0;
    for (const ir::Use& u : v->uses())
      if (u.node->attr("groups") && u.node->attr_int("groups") != 1) return 0;
    const int64_t c = v->shape()[1].value();
    return c % P == 0 && c / P >= 2 ? P : 0;
  }

  // A constant buffer for `v`: its payload, `values` computed at compile time, or (`absent`)
  // bytes nobody knows.
  ValueInfo new_constant(const ir::Value* v, std::vector<double>* values, bool absent = false,
                         std::string origin = {}) {
    const std::vector<int64_t> shape = static_shape(v);
    const DType dt = device_dtype(v->dtype());
    Constant c;
    c.value = v;
    c.absent = absent;
    c.origin = std::move(origin);
    c.transposed = store_transposed(v);
    if (c.transposed && opts_.block_weights) c.column_block = column_block(v);
    if (!c.transposed) c.permutation = conv_permutation(v);
    c.interleave = conv_interleave(v, c.permutation);
    c.buffer = new_buffer(Buffer::constant, v, -1, "constant");
    origin_of_buffer_[c.buffer] = c.origin;
    ctx_.constant_buffers[c.buffer] = {v,      c.transposed,  c.permutation, c.interleave,
                                       absent, c.column_block};
    if (values) {
      synthetic_values_.push_back(std::move(*values));
      c.synthetic = static_cast<int>(synthetic_values_.size()) - 1;
    }
    ValueInfo vi;
    if (c.transposed) {
      vi.view = HbmView::contiguous(dt, 0, {shape[1], shape[0]}).permute({1, 0});
    } else if (!c.permutation.empty()) {
      const std::vector<int64_t>& perm = c.permutation;
      std::vector<int64_t> stored(perm.size()), inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        stored[i] = shape[perm[i]];
        inverse[perm[i]] = static_cast<int64_t>(i);
      }
      vi.view = HbmView::contiguous(dt, 0, stored).permute(inverse);
    } else {
      vi.view = HbmView::contiguous(dt, 0, shape);
    }
    vi.buffer = c.buffer;
    constants_.push_back(std::move(c));
    return vi;
  }

  // The parameter/buffer FQN of graph input `v`, "" for any other value.
  std::string graph_target(const ir::Value* v) const {
    for (const ir::GraphInput& gi : g_.inputs())
      if (gi.value == v) return gi.target;
    return {};
  }

  // --- inputs ----------------------------------------------------------------------------------
  void bind_inputs() {
    input_buffer_.assign(inputs_.size(), -1);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const ir::Value* v = inputs_[i];
      if (ctx_.values.count(v)) continue;
      if (v->payload()) {
        const bool absent = v->payload()->absent;
        ValueInfo vi = new_constant(v, nullptr, absent, graph_target(v));
        if (numel(static_shape(v)) == 1 && !absent) vi.splat = payload_element(v, 0);
        ctx_.values[v] = vi;
        continue;
      }
      input_buffer_[i] = new_buffer(Buffer::input, v, -1, "value");
      ValueInfo vi;
      vi.view = HbmView::contiguous(device_dtype(v->dtype()), 0, static_shape(v));
      vi.buffer = input_buffer_[i];
      ctx_.values[v] = vi;
    }
  }

  // --- values and kernels, in node order -------------------------------------------------------
  void use(const ir::Value* v) {
    const int b = ctx_.info(v).buffer;
    buffers_[b].last = std::max(buffers_[b].last, static_cast<int>(kernels_.size()));
  }
  // The buffer of cat node `cat`, created by the first kernel writing into it.
  int cat_buffer_of(const ir::Node* cat, int first) {
    if (auto it = cat_buffer_.find(cat); it != cat_buffer_.end()) return it->second;
    const ir::Value* v = cat->output();
    return cat_buffer_[cat] = new_buffer(scope_.is_output(v) ? Buffer::output : Buffer::scratch, v,
                                         first, "value");
  }
  // A compile-time constant the node's result is (a cast of a constant, a creation op).
  bool fold_constant(const ir::Node& n) {
    const std::string& op = n.op();
    // A dtype conversion of a compile-time constant (auto-cast weights) is done now: the
    // constant segment holds the converted tensor.
    if ((op == "aten._to_copy.default" || op == "aten.to.dtype") &&
        device_dtype(n.output()->dtype()) != device_dtype(n.input(0)->dtype()) &&
        ctx_.values.count(n.input(0)) &&
        ctx_.constant_buffers.count(ctx_.values.at(n.input(0)).buffer) &&
        ir::is_floating(n.output()->dtype()) && !formation_.absorbed(&n)) {
      const int in_buffer = ctx_.values.at(n.input(0)).buffer;
      const std::string origin = origin_of_buffer_.at(in_buffer);
      if (ctx_.constant_buffers.at(in_buffer).absent) {
        ctx_.values[n.output()] = new_constant(n.output(), nullptr, true, origin);
        return true;
      }
      std::vector<double> vals = *ctx_.constant_values(n.input(0));
      ctx_.synthetic[n.output()] = vals;
      ctx_.values[n.output()] = new_constant(n.output(), &vals, false, origin);
      return true;
    }
    if (!is_creation_op(op)) return false;
    std::vector<double> vals = creation_values(n);
    ctx_.synthetic[n.output()] = vals;
    const bool uniform = op.rfind("aten.arange", 0) != 0;
    const double first = vals.empty() ? 0.0 : vals[0];
    ValueInfo vi = new_constant(n.output(), &vals);
    if (uniform) vi.splat = first;
    ctx_.values[n.output()] = vi;
    return true;
  }
  // Views of the operand's buffer.
  bool bind_view(const ir::Node& n) {
    if (!is_view_node(n)) return false;
    const ValueInfo& in = ctx_.info(n.input(0));
    std::optional<std::vector<HbmView>> views = lower_view(n, in.view);
    if (!views) return false;  // a materialising kernel
    // A pooling kernel reads (batch, channel) rows at one stride: a view whose rows are not
    // (a permute of NCHW) gets a copy of its own (found by the differential tester).
    if (n.outputs().size() == 1)
      for (const ir::Use& u : n.output()->uses())
        if (const int64_t spatial = pool_spatial_dims(*u.node);
            spatial > 0 && !pool_row_stride(views->front(), spatial))
          return false;
    for (size_t k = 0; k < n.outputs().size(); ++k) {
      ValueInfo vi = in;
      vi.view = (*views)[k];
      ctx_.values[n.output(k)] = vi;
    }
    return true;
  }
  // A cat whose every input was written in place by its producer: no kernel.
  bool bind_cat_in_place(const ir::Node& n) {
    auto cb = cat_buffer_.find(&n);
    if (cb == cat_buffer_.end()) return false;
    for (const ir::Value* v : n.inputs()) {
      if (numel(static_shape(v)) == 0) continue;
      // Exactly its slot (a view of an in-place value may sit in the same buffer elsewhere).
      auto slot = formation_.cat_slot.find(v);
      const ValueInfo& vi = ctx_.info(v);
      if (slot == formation_.cat_slot.end() || slot->second.cat != &n || vi.buffer != cb->second ||
          vi.view.offset != slot->second.view.offset ||
          vi.view.strides != slot->second.view.strides)
        return false;
    }
    ValueInfo vi;
    vi.view = HbmView::contiguous(device_dtype(n.output()->dtype()), 0, static_shape(n.output()));
    vi.buffer = cb->second;
    ctx_.values[n.output()] = vi;
    return true;
  }
  // Whether index_copy `n` may write its result into self's buffer (CodegenOptions::
  // update_in_place): self is the whole of a contiguous input or scratch buffer, not a partition
  // output, read by this node only and not kept for later (a constant or a view's base).
  bool updates_in_place(const ir::Node& n) const {
    if (!opts_.update_in_place || n.op() != "aten.index_copy.default") return false;
    const ir::Value* self = n.input(0);
    if (scope_.is_output(self) || self->uses().size() != 1 || ctx_.read_through.count(self))
      return false;
    const ValueInfo& vi = ctx_.info(self);
    const Buffer& b = buffers_[vi.buffer];
    if (b.region != Buffer::input && b.region != Buffer::scratch) return false;
    if (vi.splat || !vi.view.is_contiguous() || vi.view.offset != 0 ||
        b.bytes != static_cast<uint64_t>(vi.view.numel()) * device::dtype_size(vi.view.dtype) ||
        vi.view.dtype != device_dtype(n.output()->dtype()))
      return false;
    // No other value may live in that buffer (a view of self read elsewhere).
    for (const auto& [v, other] : ctx_.values)
      if (other.buffer == vi.buffer && v != self) return false;
    return true;
  }

  // Where kernel `kernel`'s result `v` lives: its slice of a cat's buffer, the buffer of the cat
  // the kernel is, self's buffer for an update in place, or a buffer of its own.
  void bind_result(const Kernel& kernel, const ir::Node& n, const ir::Value* v) {
    const int this_kernel = static_cast<int>(kernels_.size());
    if (updates_in_place(n)) {
      ctx_.values[v] = ctx_.info(n.input(0));
      updated_buffers_.insert(ctx_.values[v].buffer);
      return;
    }
    if (auto slot = formation_.cat_slot.find(v); slot != formation_.cat_slot.end()) {
      ValueInfo vi;
      vi.view = slot->second.view;
      vi.buffer = cat_buffer_of(slot->second.cat, this_kernel);
      buffers_[vi.buffer].last = std::max(buffers_[vi.buffer].last, this_kernel);
      ctx_.values[v] = vi;
      return;
    }
    if (auto cb = cat_buffer_.find(&n); cb != cat_buffer_.end()) {  // cat with inputs in place
      ValueInfo vi;
      vi.view = HbmView::contiguous(device_dtype(v->dtype()), 0, static_shape(v));
      vi.buffer = cb->second;
      buffers_[vi.buffer].last = std::max(buffers_[vi.buffer].last, this_kernel);
      ctx_.values[v] = vi;
      return;
    }
    const Buffer::Region region = scope_.is_output(v) ? Buffer::output : Buffer::scratch;
    const DType dt = device_dtype(v->dtype());
    ValueInfo vi;
    vi.buffer = new_buffer(region, v, this_kernel, "value");
    vi.view = HbmView::contiguous(dt, 0, static_shape(v));
    // An attention result read only through one transpose (the heads merging back into the
    // hidden dim) is laid out so that the transposed view is contiguous: the reshape after it
    // is then a view instead of a copy. The attention stores through any strides.
    if (opts_.fuse && kernel.node && attention_lowering(kernel.node->op()) &&
        region == Buffer::scratch && v->uses().size() == 1 && scope_.contains(v->uses()[0].node))
      if (auto perm = view_permutation(*v->uses()[0].node, vi.view.rank()))
        vi.view = layout_contiguous_under(dt, vi.view.shape, *perm);
    ctx_.values[v] = vi;
  }

  void visit(size_t ni) {
    const ir::Node& n = *nodes_[ni];
    result_.debug_names.push_back({n.name(), n.op(), n.location().to_string()});
    const std::string& op = n.op();
    for (const ir::Value* v : n.inputs())
      if (v && !ctx_.values.count(v) && !(v->producer() && formation_.absorbed(v->producer())) &&
          !ctx_.read_through.count(v))
        fail(n, "operand '" + v->name() + "' is neither a partition input nor defined earlier");
    if (fold_constant(n) || bind_view(n) || bind_cat_in_place(n)) return;
    formation_.settle_matmul_group(n, ctx_);
    if (formation_.absorbed(&n)) return;              // computed inside its consumer's kernel
    if (ctx_.read_through.count(n.output())) return;  // converted by the consuming matmul
    const Lowering* lowering = find_lowering(op);
    if (!lowering && is_alias_op(op)) lowering = data_movement_lowering("<materialize>");
    if (!lowering) fail(n, "codegen has no lowering for " + op);
    KernelNodes group = formation_.kernel_at(&n);
    const LowerFn fn = group.root == &n ? lowering->lower : find_lowering(group.root->op())->lower;
    Kernel kernel{fn,      group.root, static_cast<uint32_t>(ni), std::move(group.fused),
                  nullptr, nullptr};
    std::unordered_set<const ir::Value*> internal;
    for (const ir::Node* m : group.members)
      if (m != &n) internal.insert(m->output());
    for (const ir::Node* m : group.members)
      for (const ir::Value* v : m->inputs())
        if (v && !internal.count(v)) use(ctx_.read_through.count(v) ? ctx_.read_through.at(v) : v);
    for (const ir::Value* v : n.outputs()) bind_result(kernel, n, v);
    kernels_.push_back(std::move(kernel));
  }

  bool updated_input(int buffer) const { return updated_buffers_.count(buffer) > 0; }

  // --- outputs ---------------------------------------------------------------------------------
  // An output not written in place by its kernel (a view, an input, a constant) gets a copy.
  void add_output_copies() {
    output_buffer_.assign(outputs_.size(), -1);
    std::unordered_map<int, const ir::Value*> claimed_in_place;  // buffer -> output written there
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const ir::Value* v = outputs_[i];
      const ValueInfo& vi = ctx_.info(v);
      const Buffer& b = buffers_[vi.buffer];
      // An update in place of a partition input is an output in the input's bytes: the call
      // copies the input in and the result out of the same range.
      const bool in_place =
          (b.region == Buffer::output || (b.region == Buffer::input && updated_input(vi.buffer))) &&
          vi.view.is_contiguous() && vi.view.offset == 0 &&
          b.bytes == static_cast<uint64_t>(vi.view.numel()) * device::dtype_size(vi.view.dtype);
      // Two outputs that view the same buffer (a result and its flatten) need distinct bytes.
      if (in_place && !output_copy_buffer_.count(v) && !claimed_in_place.count(vi.buffer)) {
        claimed_in_place[vi.buffer] = v;
        output_buffer_[i] = vi.buffer;
        continue;
      }
      if (auto c = claimed_in_place.find(vi.buffer);
          c != claimed_in_place.end() && c->second == v) {
        output_buffer_[i] = vi.buffer;  // the same value listed twice
        continue;
      }
      if (auto it = output_copy_buffer_.find(v); it != output_copy_buffer_.end()) {
        output_buffer_[i] = it->second;
        continue;
      }
      use(v);
      output_buffer_[i] = new_buffer(Buffer::output, v, static_cast<int>(kernels_.size()), "value");
      output_copy_buffer_[v] = output_buffer_[i];
      result_.debug_names.push_back({"<output copy>", v->name(), ""});
      Kernel k;
      k.debug_id = static_cast<uint32_t>(result_.debug_names.size() - 1);
      k.copy_src = v;
      k.copy_dst_value = v;
      kernels_.push_back(k);
    }
  }

  // --- bindings --------------------------------------------------------------------------------
  void make_bindings() {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (input_buffer_[i] < 0) continue;
      const ir::Value* v = inputs_[i];
      const Buffer& b = buffers_[input_buffer_[i]];
      result_.inputs.push_back(
          {v->name(), device_dtype(v->dtype()), static_shape(v), b.offset, b.bytes});
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const ir::Value* v = outputs_[i];
      const Buffer& b = buffers_[output_buffer_[i]];
      result_.outputs.push_back(
          {v->name(), device_dtype(v->dtype()), static_shape(v), b.offset, b.bytes});
    }
    for (const Constant& c : constants_) {
      const ir::Value* v = c.value;
      ConstantBinding cb;
      cb.name = v->name();
      cb.target = graph_target(v);
      cb.dtype = device_dtype(v->dtype());
      cb.shape = static_shape(v);
      cb.transposed = c.transposed;
      cb.permutation = c.permutation;
      cb.row_interleave = c.interleave;
      cb.column_block = c.column_block;
      cb.offset = buffers_[c.buffer].offset;
      cb.absent = c.absent;
      cb.origin = c.origin;
      if (c.absent) {
        result_.constants.push_back(std::move(cb));
        continue;
      }
      auto source = std::make_shared<const ConstantSource>(
          constant_source(v, c.synthetic >= 0 ? &synthetic_values_[c.synthetic] : nullptr,
                          cb.transposed, cb.permutation, cb.row_interleave, cb.column_block));
      // A weight whose payload keeps its own bytes alive is laid out when the artifact is
      // written, straight into it; values codegen made, and borrowed payloads, now.
      if (opts_.defer_constant_bytes && !source->values && source->payload.owner) {
        // A mapped weight read for the last time leaves the process (a later read brings its
        // pages back from the file), so writing the artifact does not hold the model twice.
        cb.fill = [source](std::span<std::byte> out) {
          lay_out_constant(*source, out);
          const ir::ConstantPayload& p = source->payload;
          if (p.drop_pages) p.drop_pages(p.data, p.nbytes);
          if (p.parts)
            for (const ir::ConstantPayload::Part& part : *p.parts)
              if (part.drop_pages) part.drop_pages(part.data, part.nbytes);
        };
        cb.as_is = as_is(*source);
        if (!cb.as_is.empty()) {
          cb.drop_as_is = source->payload.drop_pages;
          cb.read_as_is = source->payload.read_bytes;
          cb.as_is_owner = source->payload.owner.get();
        }
        char where[64];
        std::snprintf(where, sizeof where, "@%p+%lld",
                      source->payload.parts ? static_cast<const void*>(source->payload.parts.get())
                                            : static_cast<const void*>(source->payload.data),
                      static_cast<long long>(source->payload.storage_offset));
        cb.fill_source = std::string(ir::dtype_name(source->dtype)) + where;
        if (source->payload.stored_dtype)
          cb.fill_source += "<-" + std::string(ir::dtype_name(*source->payload.stored_dtype));
        if (const auto& sc = source->payload.row_scale) {
          std::snprintf(where, sizeof where, "*%p/%lld", static_cast<const void*>(sc.get()),
                        static_cast<long long>(source->payload.row_scale_pitch));
          cb.fill_source += where;
        }
      } else {
        cb.data = constant_bytes(*source);
      }
      result_.constants.push_back(std::move(cb));
    }
  }

  // --- lowering (parallel) ---------------------------------------------------------------------
  std::vector<KernelCode> lower_kernels() {
    std::vector<KernelCode> codes(kernels_.size());
    std::vector<std::string> errors(kernels_.size());
    reordered_.assign(kernels_.size(), 0);
    const device::CostModel cost(target_);
    auto lower_one = [&](size_t i) {
      const Kernel& k = kernels_[i];
      KernelBuilder kb(target_, k.debug_id);
      kb.fused = k.fused;
      try {
        if (k.fn) {
          k.fn(kb, *k.node, ctx_);
        } else {
          const ir::Value* v = k.copy_dst_value;
          const HbmView dst =
              HbmView::contiguous(device_dtype(v->dtype()),
                                  buffers_[output_copy_buffer_.at(v)].offset, static_shape(v));
          copy_view(kb, dst, ctx_.view(k.copy_src));
        }
        codes[i] = kb.finish();
        if (opts_.schedule) reordered_[i] = schedule_kernel(codes[i].instructions, cost).reordered;
      } catch (const std::exception& e) {
        // Name the node when the lowering's message does not already start with it.
        std::string msg = e.what();
        if (k.node && msg.rfind("node '", 0) != 0) msg = k.node->describe() + ": " + msg;
        errors[i] = msg;
      }
    };
    if (opts_.threads == 1) {
      for (size_t i = 0; i < kernels_.size(); ++i) lower_one(i);
    } else {
      tbb::task_arena arena(opts_.threads > 0 ? opts_.threads : tbb::task_arena::automatic);
      arena.execute(
          [&] { tbb::parallel_for(size_t{0}, kernels_.size(), [&](size_t i) { lower_one(i); }); });
    }
    for (size_t i = 0; i < kernels_.size(); ++i)
      if (!errors[i].empty()) throw Error(errors[i]);
    return codes;
  }

  // --- emission (sequential) and statistics -----------------------------------------------------
  void emit(std::vector<KernelCode> codes, const HbmPlan& plan) {
    ProgramEmitter emitter(target_);
    emitter.set_cores(cores_);
    emitter.set_threads(opts_.threads);
    uint32_t next_sbuf = 0;
    std::vector<uint32_t> next_region(codes.size(), 0);
    for (size_t i = codes.size(); i-- > 0;) {
      next_region[i] = next_sbuf;
      if (codes[i].sbuf_bytes > 0) next_sbuf = codes[i].sbuf_bytes;
    }
    for (size_t i = 0; i < codes.size(); ++i) {
      result_.stats.flops += codes[i].flops;
      emitter.append(std::move(codes[i]), next_region[i]);
    }
    result_.program = emitter.finish(
        plan.size, opts_.forward_stores, plan.scratch_base,
        opts_.schedule ? opts_.schedule_windows : std::vector<size_t>{}, opts_.region_policies);

    CodegenStats& st = result_.stats;
    for (int e = 0; e < device::kNumEngines; ++e) {
      st.instructions[e] = result_.program.cores[0].streams[e].size();
      for (const auto& in : result_.program.cores[0].streams[e])
        st.dma_transfers += std::holds_alternative<device::DmaCopy>(in.op);
    }
    st.semaphore_waits = emitter.waits();
    st.kernels = kernels_.size();
    st.kernels_scheduled =
        static_cast<uint64_t>(std::count(reordered_.begin(), reordered_.end(), 1));
    st.program_scheduled = emitter.scheduled();
    st.hbm_bytes = plan.size;
    st.hbm_scratch_bytes = plan.scratch_end - plan.scratch_base;
    st.hbm_scratch_unshared_bytes = plan.scratch_unshared;
    st.sbuf_peak_bytes = emitter.sbuf_peak();
    st.psum_peak_bytes = emitter.psum_peak();
    st.loads_forwarded = emitter.forwarding().loads_forwarded;
    st.stores_elided = emitter.forwarding().stores_elided;
    st.dma_bytes_forwarded = emitter.forwarding().dma_bytes_saved;
  }

  const ir::Graph& g_;
  const std::vector<const ir::Node*>& nodes_;
  const std::vector<const ir::Value*>& inputs_;
  const std::vector<const ir::Value*>& outputs_;
  const device::Target& target_;
  const CodegenOptions& opts_;
  const PartitionScope scope_;
  PartitionContext ctx_;
  KernelFormation formation_;
  std::vector<Buffer> buffers_;
  std::vector<Constant> constants_;
  std::vector<std::vector<double>> synthetic_values_;
  std::vector<int> input_buffer_, output_buffer_;
  std::unordered_map<const ir::Value*, int> output_copy_buffer_;
  std::unordered_map<const ir::Node*, int> cat_buffer_;    // created at its first aliased producer
  std::unordered_set<int> updated_buffers_;                // buffers an index_copy updated in place
  std::unordered_map<int, std::string> origin_of_buffer_;  // constant buffer -> its origin
  std::vector<Kernel> kernels_;
  std::vector<uint8_t> reordered_;
  uint32_t cores_ = 1;  // the ranks of the partition's collectives (check_collective_ranks)
  CompiledPartition result_;
};

}  // namespace

CompiledPartition compile_partition(const ir::Graph& g, const std::vector<const ir::Node*>& nodes,
                                    const std::vector<const ir::Value*>& inputs,
                                    const std::vector<const ir::Value*>& outputs,
                                    const device::Target& target, const CodegenOptions& opts) {
  return PartitionCompiler(g, nodes, inputs, outputs, target, opts).run();
}

}  // namespace neuronc::codegen
