// Instruction semantics on real data (functional.h). Element-wise instructions gather each
// partition row into fp32, compute, and round on the way out, as the engines do (fp32 inside,
// free casts on load and store, TRAINIUM.md §7). Matmul widens both operands exactly to fp32
// and goes through the blocked GEMM.
#include "device/functional.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "device/gemm.h"
#include "device/verifier.h"

namespace neuronc::device {
namespace {

using std::to_string;

// A resolved operand: base address of partition 0, pitch between partitions, and the access
// pattern padded to 4 levels (outermost first) with strides in bytes.
struct View {
  std::byte* base = nullptr;
  int64_t pitch = 0;
  uint32_t size = 4;
  DType dtype = DType::f32;
  int partitions = 1;
  std::array<int64_t, 4> stride{};
  std::array<uint32_t, 4> count{};
  uint64_t n = 1;

  std::byte* row(int p) const { return base + p * pitch; }
  bool inner_contiguous() const { return count[3] == 1 || stride[3] == size; }

  // Prefetches the start of partition p + kAhead's bytes, when there is one: an instruction
  // walks its partitions in order, each a separate stream the hardware prefetcher does not
  // follow, so every row would otherwise start with cache misses.
  void prefetch_ahead(int p) const {
    constexpr int kAhead = 2;
    constexpr int64_t kMaxBytes = 2048;
    if (p + kAhead >= partitions) return;
    int64_t lo = 0, hi = 0;  // the row's footprint, relative to its base
    for (int l = 0; l < 4; ++l) (stride[l] < 0 ? lo : hi) += stride[l] * (int64_t{count[l]} - 1);
    const char* r = reinterpret_cast<const char*>(row(p + kAhead));
    for (int64_t b = lo; b < std::min<int64_t>(hi + size, lo + kMaxBytes); b += 64)
      __builtin_prefetch(r + b);
  }
};

View make_view(const ExecContext& ctx, const MemRef& m) {
  View v;
  v.size = dtype_size(m.dtype);
  v.dtype = m.dtype;
  v.partitions = m.partition_count;
  switch (m.memory) {
    case MemoryKind::hbm:
      v.base = ctx.hbm + m.offset;
      v.pitch = m.partition_stride * v.size;
      break;
    case MemoryKind::sbuf:
      v.base =
          ctx.core->sbuf.data() + uint64_t{m.partition_start} * ctx.core->sbuf_pitch + m.offset;
      v.pitch = ctx.core->sbuf_pitch;
      break;
    case MemoryKind::psum:
      v.base =
          ctx.core->psum.data() + uint64_t{m.partition_start} * ctx.core->psum_pitch + m.offset;
      v.pitch = ctx.core->psum_pitch;
      break;
  }
  // The levels with more than one element, outermost first, with each level merged into the
  // one outside it where that one steps exactly over it (a row of 4 x 1024 elements 1024 apart
  // is one run of 4096): the same elements in the same order, in fewer and longer runs.
  std::array<int64_t, 4> stride{};
  std::array<uint32_t, 4> count{};
  int levels = 0;
  for (int l = 0; l < m.num_levels; ++l) {
    const uint32_t c = m.levels[l].count;
    const int64_t st = int64_t{m.levels[l].stride} * v.size;
    if (c == 1) continue;
    if (levels > 0 && stride[levels - 1] == st * c &&
        uint64_t{count[levels - 1]} * c <= UINT32_MAX) {
      stride[levels - 1] = st;
      count[levels - 1] *= c;
      continue;
    }
    stride[levels] = st;
    count[levels] = c;
    ++levels;
  }
  const int pad = 4 - levels;
  for (int l = 0; l < 4; ++l) {
    v.stride[l] = l < pad ? 0 : stride[l - pad];
    v.count[l] = l < pad ? 1 : count[l - pad];
  }
  v.n = m.free_size();
  return v;
}

// True when each partition row of `v` is one contiguous run of v.n elements.
bool dense(const View& v) {
  int64_t expected = v.size;
  for (int l = 3; l >= 0; --l) {
    if (v.count[l] > 1 && v.stride[l] != expected) return false;
    expected *= v.count[l];
  }
  return true;
}

// Calls fn(ptr, count) for each innermost run; ptr steps by stride[3].
template <typename Fn>
void for_each_inner(const View& v, int p, Fn&& fn) {
  std::byte* r = v.row(p);
  for (uint32_t a = 0; a < v.count[0]; ++a)
    for (uint32_t b = 0; b < v.count[1]; ++b)
      for (uint32_t c = 0; c < v.count[2]; ++c)
        fn(r + a * v.stride[0] + b * v.stride[1] + c * v.stride[2]);
}

void gather_f32(const View& v, int p, float* out) {
  v.prefetch_ahead(p);
  const uint32_t n3 = v.count[3];
  const bool contig = v.inner_contiguous();
  for_each_inner(v, p, [&](std::byte* q) {
    if (contig) {
      load_f32_n(q, v.dtype, out, n3);
    } else {
      load_f32_strided(q, v.stride[3], v.dtype, out, n3);
    }
    out += n3;
  });
}

void scatter_f32(const View& v, int p, const float* in, Rounding r, StochasticRounder* rng) {
  const uint32_t n3 = v.count[3];
  const bool contig = v.inner_contiguous();
  for_each_inner(v, p, [&](std::byte* q) {
    if (contig) {
      store_f32_n(q, v.dtype, in, n3, r, rng);
    } else {
      for (uint32_t i = 0; i < n3; ++i) store_f32(q + i * v.stride[3], v.dtype, in[i], r, rng);
    }
    in += n3;
  });
}

// Copies n elements of `size` bytes between a packed run and one `stride` bytes apart
// (`to_strided` says which way), each copy one load and one store for the element sizes there
// are (a convolution's stride-2 window reads bf16 elements one by one).
void copy_strided(std::byte* packed, std::byte* strided, int64_t stride, uint32_t size, uint32_t n,
                  bool to_strided) {
  // `es`: the element size, a compile-time constant where it can be.
  auto run = [&](auto es) {
    for (uint32_t i = 0; i < n; ++i) {
      std::byte* s = strided + i * stride;
      std::byte* d = packed + size_t{i} * es;
      if (to_strided)
        std::memcpy(s, d, es);
      else
        std::memcpy(d, s, es);
    }
  };
  switch (size) {
    case 1:
      return run(std::integral_constant<size_t, 1>{});
    case 2:
      return run(std::integral_constant<size_t, 2>{});
    case 4:
      return run(std::integral_constant<size_t, 4>{});
    case 8:
      return run(std::integral_constant<size_t, 8>{});
    default:
      return run(size_t{size});
  }
}

// Raw element bytes, packed.
void gather_raw(const View& v, int p, std::byte* out) {
  v.prefetch_ahead(p);
  const uint32_t n3 = v.count[3];
  const bool contig = v.inner_contiguous();
  for_each_inner(v, p, [&](std::byte* q) {
    if (contig)
      std::memcpy(out, q, size_t{n3} * v.size);
    else
      copy_strided(out, q, v.stride[3], v.size, n3, false);
    out += size_t{n3} * v.size;
  });
}

void scatter_raw(const View& v, int p, const std::byte* in) {
  const uint32_t n3 = v.count[3];
  const bool contig = v.inner_contiguous();
  for_each_inner(v, p, [&](std::byte* q) {
    if (contig)
      std::memcpy(q, in, size_t{n3} * v.size);
    else
      copy_strided(const_cast<std::byte*>(in), q, v.stride[3], v.size, n3, true);
    in += size_t{n3} * v.size;
  });
}

void gather_int(const View& v, int p, int64_t* out) {
  std::vector<std::byte> raw(v.n * v.size);
  gather_raw(v, p, raw.data());
  for (uint64_t i = 0; i < v.n; ++i) out[i] = load_int(raw.data() + i * v.size, v.dtype);
}

void scatter_int(const View& v, int p, const int64_t* in) {
  std::vector<std::byte> raw(v.n * v.size);
  for (uint64_t i = 0; i < v.n; ++i) store_int(raw.data() + i * v.size, v.dtype, in[i]);
  scatter_raw(v, p, raw.data());
}

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// n elements of this thread's scratch buffer number `Slot`: the hot instructions gather a
// partition row into one instead of allocating and zero-filling a vector per partition. A
// caller holds at most one row of each slot at a time, and nothing it calls uses that slot.
template <typename T, int Slot = 0>
T* scratch_row(uint64_t n) {
  thread_local std::vector<T> v;
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Runs fn(p) for every partition, in parallel when the instruction is large. Isolated: while
// it waits for its partitions, a thread runs none of the simulator's other tasks (another
// instruction or core), which would reuse this thread's scratch buffers.
template <typename Fn>
void for_partitions(const ExecContext& ctx, int partitions, uint64_t work, Fn&& fn) {
  if (ctx.parallel && partitions > 1 && work >= (1u << 16)) {
    tbb::this_task_arena::isolate([&] { tbb::parallel_for(0, partitions, [&](int p) { fn(p); }); });
  } else {
    for (int p = 0; p < partitions; ++p) fn(p);
  }
}

float scalar_value(const ExecContext& ctx, const ScalarOperand& s, int p) {
  if (const float* f = std::get_if<float>(&s)) return *f;
  const View v = make_view(ctx, std::get<MemRef>(s));
  return load_f32(v.row(p), v.dtype);
}

bool compare(CompareOp c, int64_t v) {
  switch (c) {
    case CompareOp::eq:
      return v == 0;
    case CompareOp::ne:
      return v != 0;
    case CompareOp::gt:
      return v > 0;
    case CompareOp::ge:
      return v >= 0;
    case CompareOp::lt:
      return v < 0;
    case CompareOp::le:
      return v <= 0;
  }
  return false;
}

// Affine value of every element of `dst` in AP order (iota / affine_select).
void affine_values(const MemRef& dst, int p, int32_t offset, int32_t cm,
                   const std::array<int32_t, 4>& pattern, int64_t* out) {
  std::array<uint32_t, 4> cnt{1, 1, 1, 1};
  std::array<int32_t, 4> pat{0, 0, 0, 0};
  const int pad = 4 - dst.num_levels;
  for (int l = 0; l < dst.num_levels; ++l) {
    cnt[pad + l] = dst.levels[l].count;
    pat[pad + l] = pattern[l];
  }
  const int32_t base = offset + p * cm;
  for (uint32_t a = 0; a < cnt[0]; ++a)
    for (uint32_t b = 0; b < cnt[1]; ++b)
      for (uint32_t c = 0; c < cnt[2]; ++c)
        for (uint32_t d = 0; d < cnt[3]; ++d)
          *out++ = static_cast<int32_t>(
              base + static_cast<int32_t>(a) * pat[0] + static_cast<int32_t>(b) * pat[1] +
              static_cast<int32_t>(c) * pat[2] + static_cast<int32_t>(d) * pat[3]);
}

struct Rng {
  Rounding mode;
  StochasticRounder gen;
  StochasticRounder* ptr() { return mode == Rounding::stochastic ? &gen : nullptr; }
};
Rng rng_for(const ExecContext& ctx, int p) {
  return {ctx.rounding, StochasticRounder(mix(mix(ctx.seed, ctx.sequence), uint64_t(p)))};
}

// ---- PSUM accumulation-group state ---------------------------------------------------------

void mark_psum(const ExecContext& ctx, const MemRef& m, uint8_t value) {
  const Target& t = *ctx.target;
  const ByteRange r = footprint(m);
  const uint64_t words = t.psum_partition_bytes / 4;
  for (int p = 0; p < m.partition_count; ++p) {
    uint8_t* row = ctx.core->psum_from_matmul.data() + (m.partition_start + p) * words;
    std::fill(row + r.begin / 4, row + (r.end + 3) / 4, value);
  }
}

Status check_accumulate(const ExecContext& ctx, const MemRef& m) {
  const Target& t = *ctx.target;
  const ByteRange r = footprint(m);
  const uint64_t words = t.psum_partition_bytes / 4;
  for (int p = 0; p < m.partition_count; ++p) {
    const uint8_t* row = ctx.core->psum_from_matmul.data() + (m.partition_start + p) * words;
    const int64_t w0 = r.begin / 4, w1 = (r.end + 3) / 4;
    if (const void* hole = std::memchr(row + w0, 0, size_t(w1 - w0))) {
      const int64_t w = static_cast<const uint8_t*>(hole) - row;
      return failed_precondition(
          "matmul accumulates into psum partition " + to_string(m.partition_start + p) + " byte " +
          to_string(w * 4) +
          ", which was not written by a matmul of an open accumulation group: expected a "
          "first matmul with accumulate=false (accumulating onto non-matmul data is "
          "undefined)");
    }
  }
  return Status::ok();
}

// ---- Instructions --------------------------------------------------------------------------

Status exec_matmul(const ExecContext& ctx, const MatMul& x) {
  const View s = make_view(ctx, x.stationary);
  const View mv = make_view(ctx, x.moving);
  const View d = make_view(ctx, x.dst);
  const int K = x.stationary.partition_count;
  const int M = static_cast<int>(s.n);
  const int N = static_cast<int>(mv.n);
  if (x.accumulate) NEURONC_DEVICE_RETURN_IF_ERROR(check_accumulate(ctx, x.dst));
  // The GEMM reads a dense operand (every partition row one contiguous run) in place; a strided
  // one (a convolution's window over padded SBUF) has its rows gathered first, raw, in its own
  // dtype. Either way the GEMM widens the elements as it packs them, exactly as gather_f32
  // would, so a bf16 operand keeps the bf16 kernel instead of becoming an fp32 GEMM.
  thread_local std::vector<std::byte> gathered_s, gathered_m;
  auto operand = [&](const View& v, int n, std::vector<std::byte>& buf) -> GemmOperand {
    if (dense(v)) return {v.base, size_t(v.pitch), v.dtype};
    buf.resize(size_t(K) * size_t(n) * v.size);
    for_partitions(ctx, K, uint64_t(K) * uint64_t(n),
                   [&](int k) { gather_raw(v, k, buf.data() + size_t(k) * size_t(n) * v.size); });
    return {buf.data(), size_t(n) * v.size, v.dtype};
  };
  const GemmOperand A = operand(s, M, gathered_s), B = operand(mv, N, gathered_m);
  if (dense(d) && x.dst.dtype == DType::f32) {
    // The common case: the GEMM writes (or accumulates) fp32 straight into PSUM; an fp32 store
    // never rounds, so this is bit-identical to the general path below.
    gemm_at_b(M, N, K, A, B, reinterpret_cast<float*>(d.base), size_t(d.pitch) / 4, x.accumulate);
    mark_psum(ctx, x.dst, 1);
    return Status::ok();
  }
  thread_local std::vector<float> c;
  c.resize(size_t(M) * N);
  float* pc = c.data();
  gemm_at_b(M, N, K, A, B, pc, N, false);
  for_partitions(ctx, M, uint64_t(M) * N, [&](int m) {
    float* row = pc + size_t(m) * N;
    if (x.accumulate) {
      std::vector<float> prev(N);
      gather_f32(d, m, prev.data());
      for (int n = 0; n < N; ++n) row[n] = prev[n] + row[n];
    }
    Rng rng = rng_for(ctx, m);
    scatter_f32(d, m, row, rng.mode, rng.ptr());
  });
  mark_psum(ctx, x.dst, 1);
  return Status::ok();
}

Status exec_transpose(const ExecContext& ctx, Engine e, const Transpose& x) {
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  const int P = s.partitions;
  const int F = static_cast<int>(s.n);
  std::vector<float> in(size_t(P) * F), out(size_t(F) * P);
  for (int p = 0; p < P; ++p) gather_f32(s, p, in.data() + size_t(p) * F);
  if (e == Engine::tensor && ctx.target->core_generation == 2) {
    // NC-v2 computes the transpose as a matmul with the identity, so NaN/Inf spread
    // (ISA226, TRAINIUM.md §7): reproduce it by really multiplying.
    std::vector<float> eye(size_t(P) * P, 0.0f);
    for (int i = 0; i < P; ++i) eye[size_t(i) * P + i] = 1.0f;
    gemm_at_b_f32(F, P, P, in.data(), F, eye.data(), P, out.data(), P);
  } else {
    for (int p = 0; p < P; ++p)
      for (int f = 0; f < F; ++f) out[size_t(f) * P + p] = in[size_t(p) * F + f];
  }
  if (x.src.dtype == x.dst.dtype && !(e == Engine::tensor && ctx.target->core_generation == 2)) {
    // Bit-exact (v3 transpose mode, VectorE): move raw bytes.
    std::vector<std::byte> rin(size_t(P) * F * s.size), rout(rin.size());
    for (int p = 0; p < P; ++p) gather_raw(s, p, rin.data() + size_t(p) * F * s.size);
    for (int p = 0; p < P; ++p)
      for (int f = 0; f < F; ++f)
        std::memcpy(rout.data() + (size_t(f) * P + p) * s.size,
                    rin.data() + (size_t(p) * F + f) * s.size, s.size);
    for (int f = 0; f < F; ++f) scatter_raw(d, f, rout.data() + size_t(f) * P * s.size);
  } else {
    for (int f = 0; f < F; ++f) {
      Rng rng = rng_for(ctx, f);
      scatter_f32(d, f, out.data() + size_t(f) * P, rng.mode, rng.ptr());
    }
  }
  if (x.dst.memory == MemoryKind::psum) mark_psum(ctx, x.dst, e == Engine::tensor ? 1 : 0);
  return Status::ok();
}

// out[i] = fn(in[i] * scale + bias) over a row (in may be out), and the sum of the results in
// order when `sum` is given. Each case below passes a lambda of its own type with the function a
// constant, so the loop has no dispatch and the cheap functions vectorise; the arithmetic is the
// same, element by element.
template <typename Fn>
void activate_row(Fn fn, const float* in, float* out, uint64_t n, float scale, float bias,
                  float* sum) {
  if (!sum) {
    for (uint64_t i = 0; i < n; ++i) out[i] = fn(in[i] * scale + bias);
    return;
  }
  float s = 0.0f;
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = fn(in[i] * scale + bias);
    s += out[i];
  }
  *sum = s;
}

void activate_row(ActivationFunction f, const float* in, float* out, uint64_t n, float scale,
                  float bias, float* sum) {
  using A = ActivationFunction;
  auto run = [&](auto fn) { activate_row(fn, in, out, n, scale, bias, sum); };
  switch (f) {
    case A::identity:
      return run([](float x) { return activate(A::identity, x); });
    case A::relu:
      return run([](float x) { return activate(A::relu, x); });
    case A::exp:
      return run([](float x) { return activate(A::exp, x); });
    case A::silu:
      return run([](float x) { return activate(A::silu, x); });
    case A::gelu_tanh:
      return run([](float x) { return activate(A::gelu_tanh, x); });
    case A::gelu_erf:
      return run([](float x) { return activate(A::gelu_erf, x); });
    case A::square:
      return run([](float x) { return activate(A::square, x); });
    case A::rsqrt:
      return run([](float x) { return activate(A::rsqrt, x); });
    default:
      return run([f](float x) { return activate(f, x); });
  }
}

// Whether an element-wise instruction can compute straight from its fp32 source rows into its
// fp32 destination rows, skipping the gather into fp32 and the scatter out (an fp32 store never
// rounds): every row dense, and each destination row either the same bytes as the source row of
// its partition or none of them (the general path reads a whole row before writing it, so a
// partial overlap keeps that path).
bool direct_f32(const View& d, std::initializer_list<const View*> sources) {
  if (d.dtype != DType::f32 || !dense(d)) return false;
  const uint64_t row = d.n * 4;
  for (const View* s : sources) {
    if (s->dtype != DType::f32 || !dense(*s) || s->n != d.n) return false;
    const auto a = reinterpret_cast<uintptr_t>(s->base), b = reinterpret_cast<uintptr_t>(d.base);
    const bool same_memory = s->pitch == d.pitch;  // rows of one memory share its pitch
    if (same_memory && a != b && (a > b ? a - b : b - a) < row) return false;
  }
  return true;
}

Status exec_activation(const ExecContext& ctx, const Activation& x) {
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  std::optional<View> acc;
  if (x.accumulate_dst) acc = make_view(ctx, *x.accumulate_dst);
  const bool direct = direct_f32(d, {&s});
  for_partitions(ctx, s.partitions, s.n * s.partitions, [&](int p) {
    const float scale = scalar_value(ctx, x.scale, p);
    const float bias = scalar_value(ctx, x.bias, p);
    float sum = 0.0f;
    if (direct) {
      activate_row(x.function, reinterpret_cast<const float*>(s.row(p)),
                   reinterpret_cast<float*>(d.row(p)), s.n, scale, bias, acc ? &sum : nullptr);
    } else {
      float* buf = scratch_row<float>(s.n);
      gather_f32(s, p, buf);
      activate_row(x.function, buf, buf, s.n, scale, bias, acc ? &sum : nullptr);
      Rng rng = rng_for(ctx, p);
      scatter_f32(d, p, buf, rng.mode, rng.ptr());
    }
    if (acc) store_f32(acc->row(p), acc->dtype, sum);
  });
  return Status::ok();
}

// out[i] = alu(op, a[i], b[i]) over a row (out may be a or b). The common ops get a loop of
// their own with the op a constant, so it vectorises; the arithmetic is alu's, element by
// element.
void alu_row(AluOp op, const float* a, const float* b, float* out, uint64_t n) {
  auto run = [&](auto f) {
    for (uint64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  };
  switch (op) {
    case AluOp::add:
      return run([](float x, float y) { return alu(AluOp::add, x, y); });
    case AluOp::subtract:
      return run([](float x, float y) { return alu(AluOp::subtract, x, y); });
    case AluOp::multiply:
      return run([](float x, float y) { return alu(AluOp::multiply, x, y); });
    case AluOp::max:
      return run([](float x, float y) { return alu(AluOp::max, x, y); });
    default:
      return run([op](float x, float y) { return alu(op, x, y); });
  }
}

Status exec_tensor_tensor(const ExecContext& ctx, const TensorTensor& x) {
  const View a = make_view(ctx, x.in0);
  const View b = make_view(ctx, x.in1);
  const View d = make_view(ctx, x.dst);
  const bool bitwise = alu_op_is_bitwise(x.op);
  const bool direct = !bitwise && direct_f32(d, {&a, &b});
  for_partitions(ctx, d.partitions, d.n * d.partitions, [&](int p) {
    if (bitwise) {
      int64_t* va = scratch_row<int64_t, 0>(d.n);
      int64_t* vb = scratch_row<int64_t, 1>(d.n);
      gather_int(a, p, va);
      gather_int(b, p, vb);
      for (uint64_t i = 0; i < d.n; ++i) va[i] = alu_int(x.op, va[i], vb[i]);
      scatter_int(d, p, va);
      return;
    }
    if (direct) {
      alu_row(x.op, reinterpret_cast<const float*>(a.row(p)),
              reinterpret_cast<const float*>(b.row(p)), reinterpret_cast<float*>(d.row(p)), d.n);
      return;
    }
    float* va = scratch_row<float, 0>(d.n);
    float* vb = scratch_row<float, 1>(d.n);
    gather_f32(a, p, va);
    gather_f32(b, p, vb);
    alu_row(x.op, va, vb, va, d.n);
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, va, rng.mode, rng.ptr());
  });
  return Status::ok();
}

Status exec_tensor_tensor_scan(const ExecContext& ctx, const TensorTensorScan& x) {
  const View a = make_view(ctx, x.in0);
  const View b = make_view(ctx, x.in1);
  const View d = make_view(ctx, x.dst);
  for_partitions(ctx, d.partitions, d.n * d.partitions, [&](int p) {
    std::vector<float> va(d.n), vb(d.n);
    gather_f32(a, p, va.data());
    gather_f32(b, p, vb.data());
    float state = x.initial;
    for (uint64_t i = 0; i < d.n; ++i) {
      state = alu(x.op1, alu(x.op0, va[i], state), vb[i]);
      va[i] = state;
    }
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, va.data(), rng.mode, rng.ptr());
  });
  return Status::ok();
}

Status exec_tensor_scalar(const ExecContext& ctx, const TensorScalar& x) {
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  const bool bitwise = alu_op_is_bitwise(x.op0);
  const bool direct = !bitwise && direct_f32(d, {&s});
  for_partitions(ctx, d.partitions, d.n * d.partitions, [&](int p) {
    const float o0 = scalar_value(ctx, x.operand0, p);
    const float o1 = x.op1 == AluOp::bypass ? 0.0f : scalar_value(ctx, x.operand1, p);
    if (bitwise) {
      std::vector<int64_t> v(d.n);
      gather_int(s, p, v.data());
      const auto i0 = static_cast<int64_t>(o0), i1 = static_cast<int64_t>(o1);
      for (auto& e : v) {
        e = x.reverse0 ? alu_int(x.op0, i0, e) : alu_int(x.op0, e, i0);
        if (x.op1 != AluOp::bypass) e = x.reverse1 ? alu_int(x.op1, i1, e) : alu_int(x.op1, e, i1);
      }
      scatter_int(d, p, v.data());
      return;
    }
    auto compute = [&](const float* in, float* out) {
      for (uint64_t i = 0; i < d.n; ++i) {
        float e = in[i];
        e = x.reverse0 ? alu(x.op0, o0, e) : alu(x.op0, e, o0);
        if (x.op1 != AluOp::bypass) e = x.reverse1 ? alu(x.op1, o1, e) : alu(x.op1, e, o1);
        out[i] = e;
      }
    };
    if (direct) {
      compute(reinterpret_cast<const float*>(s.row(p)), reinterpret_cast<float*>(d.row(p)));
      return;
    }
    float* v = scratch_row<float>(d.n);
    gather_f32(s, p, v);
    compute(v, v);
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, v, rng.mode, rng.ptr());
  });
  return Status::ok();
}

Status exec_tensor_reduce(const ExecContext& ctx, const TensorReduce& x) {
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  for_partitions(ctx, s.partitions, s.n * s.partitions, [&](int p) {
    float* v = scratch_row<float, 0>(s.n);
    gather_f32(s, p, v);
    const uint64_t outer = d.n;
    const uint64_t inner = s.n / outer;
    float* r = scratch_row<float, 1>(outer);
    for (uint64_t o = 0; o < outer; ++o) {
      const float* q = v + o * inner;
      float acc = x.op == ReduceOp::sum ? 0.0f : q[0];
      for (uint64_t i = (x.op == ReduceOp::sum ? 0 : 1); i < inner; ++i) {
        switch (x.op) {
          case ReduceOp::sum:
            acc += q[i];
            break;
          case ReduceOp::max:
            acc = std::fmax(acc, q[i]);
            break;
          case ReduceOp::min:
            acc = std::fmin(acc, q[i]);
            break;
        }
      }
      r[o] = x.negate ? -acc : acc;
    }
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, r, rng.mode, rng.ptr());
  });
  return Status::ok();
}

Status exec_tensor_copy(const ExecContext& ctx, Engine e, const TensorCopy& x) {
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  // Same dtype: bit-exact, except NC-v2 ScalarE which always goes through fp32 (ISA226).
  const bool raw =
      x.src.dtype == x.dst.dtype && !(e == Engine::scalar && ctx.target->core_generation == 2);
  for_partitions(ctx, d.partitions, d.n * d.partitions, [&](int p) {
    if (raw) {
      std::byte* buf = scratch_row<std::byte>(s.n * s.size);
      gather_raw(s, p, buf);
      scatter_raw(d, p, buf);
      return;
    }
    float* v = scratch_row<float>(s.n);
    gather_f32(s, p, v);
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, v, rng.mode, rng.ptr());
  });
  return Status::ok();
}

Status exec_memset(const ExecContext& ctx, const Memset& x) {
  const View d = make_view(ctx, x.dst);
  for (int p = 0; p < d.partitions; ++p) {
    if (dtype_is_float(x.dst.dtype)) {
      std::vector<float> v(d.n, static_cast<float>(x.value));
      scatter_f32(d, p, v.data(), Rounding::nearest_even, nullptr);
    } else {
      std::vector<int64_t> v(d.n, static_cast<int64_t>(std::llround(x.value)));
      scatter_int(d, p, v.data());
    }
  }
  return Status::ok();
}

Status exec_iota(const ExecContext& ctx, const Iota& x) {
  const View d = make_view(ctx, x.dst);
  std::vector<int64_t> v(d.n);
  for (int p = 0; p < d.partitions; ++p) {
    affine_values(x.dst, p, x.offset, x.channel_multiplier, x.pattern, v.data());
    if (dtype_is_float(x.dst.dtype)) {
      std::vector<float> f(v.begin(), v.end());
      scatter_f32(d, p, f.data(), Rounding::nearest_even, nullptr);
    } else {
      scatter_int(d, p, v.data());
    }
  }
  return Status::ok();
}

Status exec_affine_select(const ExecContext& ctx, const AffineSelect& x) {
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  std::vector<int64_t> v(d.n);
  std::vector<float> f(d.n);
  for (int p = 0; p < d.partitions; ++p) {
    affine_values(x.dst, p, x.offset, x.channel_multiplier, x.pattern, v.data());
    gather_f32(s, p, f.data());
    for (uint64_t i = 0; i < d.n; ++i)
      if (!compare(x.compare, v[i])) f[i] = x.on_false;
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, f.data(), rng.mode, rng.ptr());
  }
  return Status::ok();
}

Status exec_copy_predicated(const ExecContext& ctx, const CopyPredicated& x) {
  const View s = make_view(ctx, x.src);
  const View pr = make_view(ctx, x.predicate);
  const View d = make_view(ctx, x.dst);
  std::vector<std::byte> src(s.n * s.size), dst(d.n * d.size);
  std::vector<int64_t> pred(pr.n);
  for (int p = 0; p < d.partitions; ++p) {
    gather_raw(s, p, src.data());
    gather_raw(d, p, dst.data());
    gather_int(pr, p, pred.data());
    for (uint64_t i = 0; i < d.n; ++i)
      if ((pred[i] != 0) != x.reverse)
        std::memcpy(dst.data() + i * d.size, src.data() + i * d.size, d.size);
    scatter_raw(d, p, dst.data());
  }
  return Status::ok();
}

Status exec_select(const ExecContext& ctx, const Select& x) {
  const View t = make_view(ctx, x.on_true);
  const View pr = make_view(ctx, x.predicate);
  const View d = make_view(ctx, x.dst);
  std::vector<float> v(d.n);
  std::vector<int64_t> pred(pr.n);
  for (int p = 0; p < d.partitions; ++p) {
    gather_f32(t, p, v.data());
    gather_int(pr, p, pred.data());
    const float off = scalar_value(ctx, x.on_false, p);
    for (uint64_t i = 0; i < d.n; ++i)
      if (pred[i] == 0) v[i] = off;
    Rng rng = rng_for(ctx, p);
    scatter_f32(d, p, v.data(), rng.mode, rng.ptr());
  }
  return Status::ok();
}

Status exec_local_gather(const ExecContext& ctx, const LocalGather& x) {
  const View s = make_view(ctx, x.src);
  const View ix = make_view(ctx, x.index);
  const View d = make_view(ctx, x.dst);
  const uint32_t e = x.elements_per_index;
  const uint64_t group_src = 16 * s.n;
  for (int g = 0; g < s.partitions / 16; ++g) {
    std::vector<std::byte> src(group_src * s.size), dst(16 * d.n * d.size);
    std::vector<int64_t> idx(16 * ix.n);
    for (int q = 0; q < 16; ++q) {
      gather_raw(s, g * 16 + q, src.data() + q * s.n * s.size);
      gather_raw(d, g * 16 + q, dst.data() + q * d.n * d.size);
      gather_int(ix, g * 16 + q, idx.data() + q * ix.n);
    }
    for (uint32_t j = 0; j < x.num_valid_indices; ++j) {
      const uint64_t v = static_cast<uint64_t>(idx[j]);
      if ((v + 1) * e > group_src)
        return out_of_range("local_gather index " + to_string(v) + " (position " + to_string(j) +
                            " of partition group " + to_string(g) + ") selects elements [" +
                            to_string(v * e) + ", " + to_string((v + 1) * e) +
                            ") but the group holds " + to_string(group_src));
      std::memcpy(dst.data() + size_t(j) * e * d.size, src.data() + v * e * s.size,
                  size_t(e) * s.size);
    }
    for (int q = 0; q < 16; ++q) scatter_raw(d, g * 16 + q, dst.data() + q * d.n * d.size);
  }
  return Status::ok();
}

// Indirect DMA: partition p of dst <- table row row_index[p] (gather), or table row
// row_index[p] <- partition p of src (scatter), cast through fp32 when the dtypes differ. Every
// index is checked before any row moves, so a bad one leaves the destination as it was. The
// verifier checked the whole table's footprint, so any index in range is safe.
Status exec_dma_indirect(const ExecContext& ctx, const DmaCopy& x) {
  const MemRef& table = x.scatter ? x.dst : x.src;
  const View moved = make_view(ctx, x.scatter ? x.src : x.dst);  // one table row per partition
  const View ix = make_view(ctx, *x.row_index);
  const bool same = x.src.dtype == x.dst.dtype;
  std::vector<int64_t> idx(ix.n), rows(moved.partitions);
  for (int p = 0; p < moved.partitions; ++p) {
    gather_int(ix, p, idx.data());
    rows[p] = idx[0];
    if (rows[p] < 0 || rows[p] >= static_cast<int64_t>(x.table_rows))
      return out_of_range("dma_copy row index " + to_string(rows[p]) + " at partition " +
                          to_string(p) + " is outside the table's " + to_string(x.table_rows) +
                          " rows");
  }
  std::vector<std::byte> raw(same ? moved.n * moved.size : 0);
  std::vector<float> vals(same ? 0 : moved.n);
  MemRef row = table;
  for (int p = 0; p < moved.partitions; ++p) {
    row.offset = table.offset +
                 static_cast<uint64_t>(rows[p] * table.partition_stride) * dtype_size(table.dtype);
    const View t = make_view(ctx, row);
    const View& s = x.scatter ? moved : t;
    const View& d = x.scatter ? t : moved;
    const int sp = x.scatter ? p : 0, dp = x.scatter ? 0 : p;
    if (same) {
      gather_raw(s, sp, raw.data());
      scatter_raw(d, dp, raw.data());
    } else {
      gather_f32(s, sp, vals.data());
      Rng rng = rng_for(ctx, p);
      scatter_f32(d, dp, vals.data(), rng.mode, rng.ptr());
    }
  }
  return Status::ok();
}

Status exec_dma(const ExecContext& ctx, const DmaCopy& x) {
  if (x.row_index) return exec_dma_indirect(ctx, x);
  const View s = make_view(ctx, x.src);
  const View d = make_view(ctx, x.dst);
  const bool same = x.src.dtype == x.dst.dtype;
  if (same && s.partitions == d.partitions && s.n == d.n) {
    for (int p = 0; p < s.partitions; ++p) {
      if (s.inner_contiguous() && d.inner_contiguous() &&
          s.count[0] * s.count[1] * s.count[2] == 1 && d.count[0] * d.count[1] * d.count[2] == 1) {
        std::memmove(d.row(p), s.row(p), s.n * s.size);
      } else {
        std::byte* buf = scratch_row<std::byte>(s.n * s.size);
        gather_raw(s, p, buf);
        scatter_raw(d, p, buf);
      }
    }
    return Status::ok();
  }
  // General case: flatten both sides (partition-major), cast through fp32 (DMA).
  const uint64_t total = s.n * s.partitions;
  std::vector<float> all(total);
  std::vector<std::byte> raw;
  if (same) raw.resize(total * s.size);
  for (int p = 0; p < s.partitions; ++p) {
    if (same)
      gather_raw(s, p, raw.data() + p * s.n * s.size);
    else
      gather_f32(s, p, all.data() + p * s.n);
  }
  for (int p = 0; p < d.partitions; ++p) {
    if (same) {
      scatter_raw(d, p, raw.data() + p * d.n * d.size);
    } else {
      Rng rng = rng_for(ctx, p);
      scatter_f32(d, p, all.data() + p * d.n, rng.mode, rng.ptr());
    }
  }
  return Status::ok();
}

}  // namespace

Status execute(const ExecContext& ctx, Engine engine, const Operation& op) {
  Status st = std::visit(
      [&](const auto& x) -> Status {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, MatMul>)
          return exec_matmul(ctx, x);
        else if constexpr (std::is_same_v<T, Transpose>)
          return exec_transpose(ctx, engine, x);
        else if constexpr (std::is_same_v<T, Activation>)
          return exec_activation(ctx, x);
        else if constexpr (std::is_same_v<T, TensorTensor>)
          return exec_tensor_tensor(ctx, x);
        else if constexpr (std::is_same_v<T, TensorTensorScan>)
          return exec_tensor_tensor_scan(ctx, x);
        else if constexpr (std::is_same_v<T, TensorScalar>)
          return exec_tensor_scalar(ctx, x);
        else if constexpr (std::is_same_v<T, TensorReduce>)
          return exec_tensor_reduce(ctx, x);
        else if constexpr (std::is_same_v<T, TensorCopy>)
          return exec_tensor_copy(ctx, engine, x);
        else if constexpr (std::is_same_v<T, Memset>)
          return exec_memset(ctx, x);
        else if constexpr (std::is_same_v<T, Iota>)
          return exec_iota(ctx, x);
        else if constexpr (std::is_same_v<T, AffineSelect>)
          return exec_affine_select(ctx, x);
        else if constexpr (std::is_same_v<T, CopyPredicated>)
          return exec_copy_predicated(ctx, x);
        else if constexpr (std::is_same_v<T, Select>)
          return exec_select(ctx, x);
        else if constexpr (std::is_same_v<T, LocalGather>)
          return exec_local_gather(ctx, x);
        else if constexpr (std::is_same_v<T, DmaCopy>)
          return exec_dma(ctx, x);
        else
          return Status::ok();  // Nop; collectives go through execute_collective
      },
      op);
  if (!st.is_ok()) return st;
  // Any non-matmul write into PSUM ends the accumulation group there (§3.4).
  const bool tensor_write = std::holds_alternative<MatMul>(op) ||
                            (std::holds_alternative<Transpose>(op) && engine == Engine::tensor);
  if (!tensor_write) {
    for (const MemRef& w : operands(op).writes)
      if (w.memory == MemoryKind::psum) mark_psum(ctx, w, 0);
  }
  return Status::ok();
}

Status execute_collective(const ExecContext& ctx, const std::vector<Collective>& per_core) {
  const size_t n = per_core.size();
  std::vector<std::vector<float>> src(n);
  for (size_t c = 0; c < n; ++c) {
    const View s = make_view(ctx, per_core[c].src);
    src[c].resize(s.n * s.partitions);
    for (int p = 0; p < s.partitions; ++p) gather_f32(s, p, src[c].data() + p * s.n);
  }
  const CollectiveKind kind = per_core[0].kind;
  auto reduce = [&](ReduceOp op) {
    std::vector<float> acc = src[0];
    for (size_t c = 1; c < n; ++c)
      for (size_t i = 0; i < acc.size(); ++i) {
        const float v = src[c][i];
        acc[i] = op == ReduceOp::sum   ? acc[i] + v
                 : op == ReduceOp::max ? std::fmax(acc[i], v)
                                       : std::fmin(acc[i], v);
      }
    return acc;
  };
  for (size_t c = 0; c < n; ++c) {
    const View d = make_view(ctx, per_core[c].dst);
    std::vector<float> out;
    if (kind == CollectiveKind::all_reduce) {
      out = reduce(per_core[c].op);
    } else if (kind == CollectiveKind::all_gather) {
      for (size_t k = 0; k < n; ++k) out.insert(out.end(), src[k].begin(), src[k].end());
    } else {
      const std::vector<float> all = reduce(per_core[c].op);
      const size_t chunk = all.size() / n;
      out.assign(all.begin() + c * chunk, all.begin() + (c + 1) * chunk);
    }
    for (int p = 0; p < d.partitions; ++p) {
      Rng rng = rng_for(ctx, p + static_cast<int>(c) * 1000);
      scatter_f32(d, p, out.data() + p * d.n, rng.mode, rng.ptr());
    }
  }
  return Status::ok();
}

}  // namespace neuronc::device
