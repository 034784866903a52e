// Blocked fp32 GEMM (gemm.h). A is packed into MR-wide panels [k][MR] and B into NR-wide
// panels [k][NR] so the micro-kernel reads both contiguously (a 128 x NR panel stays in L1);
// the micro-kernel keeps an MR x NR block of C in registers across the whole K loop.
//
// bf16 x bf16 tiles can use the host's AVX512-BF16 dot product (VDPBF16PS) and still give the
// bits of the fp32-FMA-in-increasing-K reference: a bf16 x bf16 product is exact in fp32, and
// VDPBF16PS adds the two products of a pair one after the other, each with one RNE rounding
// (Intel SDM), odd element first; so pairs are packed as (k in the odd half, k + 1 in the even
// half). What VDPBF16PS does differently is flush subnormals and round each product before
// adding it (which differs from an FMA only on overflow or underflow). bf16_exact() admits a
// tile only when its exponent range rules all of that out: every product and partial sum is a
// multiple of 2^(ea_min + eb_min - 14) >= 2^-126 (so never subnormal) and below 2^126 in
// magnitude (so never overflows), and there is no NaN or infinity. Any other tile takes the
// fp32 path.
#include "device/gemm.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device/numerics.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NEURONC_X86 1
#endif

namespace neuronc::device {
namespace {

// Scalar reference kernel for an arbitrary block (edges and non-x86 machines).
void block_scalar(int mr, int nr, int K, const float* Ap, int a_step, const float* B, size_t ldb,
                  float* C, size_t ldc, bool accumulate) {
  for (int i = 0; i < mr; ++i) {
    for (int j = 0; j < nr; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc = std::fma(Ap[k * a_step + i], B[k * ldb + j], acc);
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + acc : acc;
    }
  }
}

#ifdef NEURONC_X86
// The mb x nb block of a micro-kernel tile (computed from zero) into C, added to it or not:
// what the kernel's own store does for a whole tile.
void keep_block(const float* tile, int ld, int mb, int nb, float* C, size_t ldc, bool accumulate) {
  for (int i = 0; i < mb; ++i)
    for (int j = 0; j < nb; ++j)
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + tile[i * ld + j] : tile[i * ld + j];
}

// AVX-512: 8 rows x 32 columns = 16 zmm accumulators, written out so they stay in registers
// (a c[8][2] array is kept in memory at -O2).
#define NEURONC_ROW512(i)                       \
  {                                             \
    const __m512 av = _mm512_set1_ps(a[i]);     \
    c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0); \
    c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1); \
  }
#define NEURONC_STORE512(i)                                              \
  if (accumulate) {                                                      \
    c##i##0 = _mm512_add_ps(_mm512_loadu_ps(C + (i)*ldc), c##i##0);      \
    c##i##1 = _mm512_add_ps(_mm512_loadu_ps(C + (i)*ldc + 16), c##i##1); \
  }                                                                      \
  _mm512_storeu_ps(C + (i)*ldc, c##i##0);                                \
  _mm512_storeu_ps(C + (i)*ldc + 16, c##i##1);

__attribute__((target("avx512f,fma"))) void kernel_avx512_8x32(int K, const float* Ap,
                                                               const float* B, size_t ldb, float* C,
                                                               size_t ldc, bool accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
         c70 = c00, c71 = c00;
  for (int k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_loadu_ps(B + k * ldb);
    const __m512 b1 = _mm512_loadu_ps(B + k * ldb + 16);
    const float* a = Ap + k * 8;
    NEURONC_ROW512(0)
    NEURONC_ROW512(1)
    NEURONC_ROW512(2)
    NEURONC_ROW512(3) NEURONC_ROW512(4) NEURONC_ROW512(5) NEURONC_ROW512(6) NEURONC_ROW512(7)
  }
  NEURONC_STORE512(0)
  NEURONC_STORE512(1)
  NEURONC_STORE512(2)
  NEURONC_STORE512(3)
  NEURONC_STORE512(4) NEURONC_STORE512(5) NEURONC_STORE512(6) NEURONC_STORE512(7)
}
#undef NEURONC_ROW512

// AVX2: 6 rows x 16 columns = 12 ymm accumulators.
#define NEURONC_ROW256(i)                           \
  {                                                 \
    const __m256 av = _mm256_broadcast_ss(a + (i)); \
    c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);     \
    c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1);     \
  }
#define NEURONC_STORE256(i)                                             \
  if (accumulate) {                                                     \
    c##i##0 = _mm256_add_ps(_mm256_loadu_ps(C + (i)*ldc), c##i##0);     \
    c##i##1 = _mm256_add_ps(_mm256_loadu_ps(C + (i)*ldc + 8), c##i##1); \
  }                                                                     \
  _mm256_storeu_ps(C + (i)*ldc, c##i##0);                               \
  _mm256_storeu_ps(C + (i)*ldc + 8, c##i##1);

__attribute__((target("avx2,fma"))) void kernel_avx2_6x16(int K, const float* Ap, const float* B,
                                                          size_t ldb, float* C, size_t ldc,
                                                          bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb);
    const __m256 b1 = _mm256_loadu_ps(B + k * ldb + 8);
    const float* a = Ap + k * 6;
    NEURONC_ROW256(0)
    NEURONC_ROW256(1) NEURONC_ROW256(2) NEURONC_ROW256(3) NEURONC_ROW256(4) NEURONC_ROW256(5)
  }
  NEURONC_STORE256(0)
  NEURONC_STORE256(1)
  NEURONC_STORE256(2) NEURONC_STORE256(3) NEURONC_STORE256(4) NEURONC_STORE256(5)
}
#undef NEURONC_ROW256
#undef NEURONC_STORE256

// bf16 pairs: 8 rows x 32 columns, A packed as [K/2][8] dwords and B as [K/2][32] dwords, each
// dword (x[k] << 16) | x[k + 1].
#define NEURONC_ROWBF(i)                                                     \
  {                                                                          \
    const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i])); \
    c##i##0 = _mm512_dpbf16_ps(c##i##0, av, b0);                             \
    c##i##1 = _mm512_dpbf16_ps(c##i##1, av, b1);                             \
  }
__attribute__((target("avx512f,avx512bf16"))) void kernel_bf16_8x32(int pairs, const uint32_t* Ap,
                                                                    const uint32_t* B, float* C,
                                                                    size_t ldc, bool accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
         c70 = c00, c71 = c00;
  for (int k = 0; k < pairs; ++k) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(B + k * 32);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(B + k * 32 + 16);
    const uint32_t* a = Ap + k * 8;
    NEURONC_ROWBF(0)
    NEURONC_ROWBF(1)
    NEURONC_ROWBF(2)
    NEURONC_ROWBF(3)
    NEURONC_ROWBF(4)
    NEURONC_ROWBF(5)
    NEURONC_ROWBF(6)
    NEURONC_ROWBF(7)
  }
  NEURONC_STORE512(0)
  NEURONC_STORE512(1)
  NEURONC_STORE512(2)
  NEURONC_STORE512(3)
  NEURONC_STORE512(4)
  NEURONC_STORE512(5)
  NEURONC_STORE512(6)
  NEURONC_STORE512(7)
}
#undef NEURONC_ROWBF
#undef NEURONC_STORE512

// Smallest biased exponent of the nonzero elements (255 when there are none) and largest biased
// exponent of all elements of `rows` rows of `n` bf16 values, `row_bytes` apart (subnormals give
// 0, NaN/inf 255). The lanes are reduced once, after the last row.
__attribute__((target("avx512f,avx512bw"))) void bf16_exponents(const std::byte* data,
                                                                size_t row_bytes, int rows, int n,
                                                                uint32_t* emin, uint32_t* emax) {
  const __m512i mag_mask = _mm512_set1_epi16(0x7fff);
  __m512i lo = _mm512_set1_epi16(255), hi = _mm512_setzero_si512();
  for (int r = 0; r < rows; ++r) {
    const auto* p = reinterpret_cast<const uint16_t*>(data + size_t(r) * row_bytes);
    for (int i = 0; i < n; i += 32) {
      const __mmask32 live = n - i >= 32 ? ~__mmask32{0} : (__mmask32{1} << (n - i)) - 1;
      const __m512i mag = _mm512_and_si512(_mm512_maskz_loadu_epi16(live, p + i), mag_mask);
      const __m512i e = _mm512_srli_epi16(mag, 7);
      const __mmask32 nonzero = _mm512_test_epi16_mask(mag, mag);
      lo = _mm512_mask_min_epu16(lo, nonzero, lo, e);
      hi = _mm512_max_epu16(hi, e);
    }
  }
  alignas(64) uint16_t l[32], h[32];
  _mm512_store_si512(l, lo);
  _mm512_store_si512(h, hi);
  for (int i = 0; i < 32; ++i) {
    *emin = std::min<uint32_t>(*emin, l[i]);
    *emax = std::max<uint32_t>(*emax, h[i]);
  }
}
#endif

enum class Isa { scalar, avx2, avx512 };

Isa detect() {
#ifdef NEURONC_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
  return Isa::scalar;
}

Isa isa() {
  static const Isa kIsa = detect();
  return kIsa;
}

// Runs run(p0, p1) over column panels [0, panels): serially for small problems, else as oneTBB
// tasks of 4 panels. Each task owns its panels (and their columns of C), so the result does
// not depend on the thread count or on the order tasks run in.
template <typename Run>
void for_panel_tasks(double work, int panels, const Run& run) {
  constexpr int kPanelsPerTask = 4;
  if (work < (1 << 21) || panels <= kPanelsPerTask) {
    run(0, panels);
    return;
  }
  const int tasks = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
  tbb::parallel_for(0, tasks, [&](int t) {
    const int p0 = t * kPanelsPerTask;
    run(p0, std::min(panels, p0 + kPanelsPerTask));
  });
}

bool has_bf16_dot() {
#ifdef NEURONC_X86
  static const bool kHas = isa() == Isa::avx512 && __builtin_cpu_supports("avx512bf16") &&
                           __builtin_cpu_supports("avx512bw");
  return kHas;
#else
  return false;
#endif
}

// Whether the bf16 x bf16 tile A^T B can go through VDPBF16PS bit-exactly (see the top).
bool bf16_exact(int M, int N, int K, const GemmOperand& A, const GemmOperand& B) {
#ifdef NEURONC_X86
  uint32_t amin = 255, amax = 0, bmin = 255, bmax = 0;
  bf16_exponents(A.data, A.row_bytes, K, M, &amin, &amax);
  bf16_exponents(B.data, B.row_bytes, K, N, &bmin, &bmax);
  if (amax == 255 || bmax == 255) return false;  // NaN or infinity
  // Quantum of every product: 2^(amin - 134 + bmin - 134) >= 2^-126.
  if (amin + bmin < 142) return false;
  // |product| < 2^(amax - 126 + bmax - 126); K of them (plus rounding) stay below 2^126.
  int log2k = 0;
  while ((1 << log2k) < K) ++log2k;
  return static_cast<int>(amax + bmax) - 252 + log2k + 1 <= 126;
#else
  (void)M, (void)N, (void)K, (void)A, (void)B;
  return false;
#endif
}

#ifdef NEURONC_X86
// The bf16-pair path exists only where VDPBF16PS does (has_bf16_dot); its edge blocks run the
// same micro-kernel as whole ones.

// Reads row k of a bf16 operand as raw bits.
inline uint16_t bf16_bits(const GemmOperand& x, int k, int i) {
  uint16_t v;
  std::memcpy(&v, x.data + k * x.row_bytes + size_t(i) * 2, 2);
  return v;
}

// Packs rows [0, K) x columns [c0, c0 + cb) of a bf16 operand into width-wide pair panels
// [K/2][width]; odd K pads the last pair's even half with -0 (A) or +0 (B), whose product -0
// leaves every sum unchanged, and columns past cb are zero.
// (Only the bf16-pair path calls it, so AVX-512 is there: 16 or 8 columns at a time.)
__attribute__((target("avx512f,avx512bw"))) void pack_bf16_pairs(const GemmOperand& x, int K,
                                                                 int c0, int cb, int width,
                                                                 uint16_t pad, uint32_t* dst) {
  const int pairs = (K + 1) / 2;
  for (int q = 0; q < pairs; ++q) {
    uint32_t* row = dst + size_t(q) * width;
    const int k = 2 * q;
    int c = 0;
    const std::byte* hi_row = x.data + k * x.row_bytes + size_t(c0) * 2;
    const std::byte* lo_row = k + 1 < K ? x.data + (k + 1) * x.row_bytes + size_t(c0) * 2 : nullptr;
    // The zero-masking forms: GCC 12 calls the unmasked ones' undefined passthrough
    // maybe-uninitialized.
    const __mmask16 all = 0xffff;
    const __m512i pad16 = _mm512_set1_epi32(pad);
    for (; c + 16 <= cb; c += 16) {
      const __m512i hi = _mm512_maskz_cvtepu16_epi32(
          all, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi_row + size_t(c) * 2)));
      const __m512i lo =
          lo_row ? _mm512_maskz_cvtepu16_epi32(
                       all,
                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo_row + size_t(c) * 2)))
                 : pad16;
      _mm512_storeu_si512(row + c, _mm512_or_si512(_mm512_maskz_slli_epi32(all, hi, 16), lo));
    }
    for (; c + 8 <= cb; c += 8) {  // an 8-row A panel
      const __m256i hi = _mm256_cvtepu16_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi_row + size_t(c) * 2)));
      const __m256i lo = lo_row ? _mm256_cvtepu16_epi32(_mm_loadu_si128(
                                      reinterpret_cast<const __m128i*>(lo_row + size_t(c) * 2)))
                                : _mm256_set1_epi32(pad);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + c),
                          _mm256_or_si256(_mm256_slli_epi32(hi, 16), lo));
    }
    for (; c < cb; ++c) {
      const uint32_t lo = k + 1 < K ? bf16_bits(x, k + 1, c0 + c) : pad;
      row[c] = (uint32_t{bf16_bits(x, k, c0 + c)} << 16) | lo;
    }
    std::fill(row + cb, row + width, 0u);
  }
}

// The bf16-pair GEMM: 8-row A panels, 32-column B panels packed per task.
void gemm_bf16_pairs(int M, int N, int K, const GemmOperand& A, const GemmOperand& B, float* C,
                     size_t ldc, bool accumulate) {
  constexpr int mr = 8, nr = 32;
  const int pairs = (K + 1) / 2;
  const int panels = (M + mr - 1) / mr;
  thread_local std::vector<uint32_t> packed_a;
  packed_a.resize(size_t(panels) * pairs * mr);
  for (int p = 0; p < panels; ++p)
    pack_bf16_pairs(A, K, p * mr, std::min(mr, M - p * mr), mr, 0x8000,
                    packed_a.data() + size_t(p) * pairs * mr);
  const int bpanels = (N + nr - 1) / nr;
  thread_local std::vector<uint32_t> packed_b;
  packed_b.resize(size_t(bpanels) * pairs * nr);
  const uint32_t* Ap = packed_a.data();
  uint32_t* Bp = packed_b.data();
  auto run = [&](int p0, int p1) {
    for (int pj = p0; pj < p1; ++pj) {
      const int n0 = pj * nr;
      const int nb = std::min(nr, N - n0);
      uint32_t* b = Bp + size_t(pj) * pairs * nr;
      pack_bf16_pairs(B, K, n0, nb, nr, 0x0000, b);
      for (int m = 0; m < M; m += mr) {
        const int mb = std::min(mr, M - m);
        const uint32_t* ap = Ap + size_t(m / mr) * pairs * mr;
        float* c = C + size_t(m) * ldc + n0;
        if (mb == mr && nb == nr) {
          kernel_bf16_8x32(pairs, ap, b, c, ldc, accumulate);
          continue;
        }
        // An edge: the panels are zero-padded, so the kernel computes the whole tile and the
        // block's part is kept (each element depends only on its own row and column).
        alignas(64) float tile[mr * nr];
        kernel_bf16_8x32(pairs, ap, b, tile, nr, false);
        keep_block(tile, nr, mb, nb, c, ldc, accumulate);
      }
    }
  };
  for_panel_tasks(double(M) * N * K, bpanels, run);
}
#endif

#ifdef NEURONC_X86
// ---- Thin problems ------------------------------------------------------------------------
// A GEMM with a handful of rows (a decode step's one token as the stationary operand) or of
// columns wastes most of an 8 x 32 tile, and packing and exponent-scanning the wide operand
// cost more than its arithmetic. Here the wide operand is read in place, widened 16 elements
// at a time, and each output still gets fp32 FMAs in increasing K from zero with A's element
// as the first factor: the fp32 kernel's bits, whatever the exponent range.

// Rows of the narrow operand computed at once, and the most wide-operand elements each row is
// computed against (8 vectors: 16 independent FMA chains for one or two rows, 4 vectors for
// three or four, so the chains hide the FMA latency).
constexpr int kThin = 4;
constexpr int kThinWidth = 128;

// Widens the first `live` of 16 elements (bf16 or fp32) at p; the rest are 0.
template <DType T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 widen16(const std::byte* p,
                                                                           __mmask16 live) {
  if constexpr (T == DType::bf16) {
    const __m256i h = _mm256_maskz_loadu_epi16(live, p);
    // The zero-masking forms: GCC 12 calls the unmasked ones' passthrough maybe-uninitialized.
    const __mmask16 all = 0xffff;
    return _mm512_castsi512_ps(
        _mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, h), 16));
  } else {
    return _mm512_maskz_loadu_ps(live, p);
  }
}

// out[r][j] = sum over k of A * B for narrow rows r0 + r (r < R) and wide elements j0 + j
// (j < live <= 16 V): the narrow operand gives one scalar per k and row, the wide one a run of
// elements. `narrow_is_a` keeps A the first factor of each FMA.
template <DType TW, int R, int V, bool narrow_is_a>
__attribute__((target("avx512f,avx512bw,avx512vl,fma"))) void thin_block(
    int K, const GemmOperand& narrow, int r0, const GemmOperand& wide, int j0, int live,
    float (*out)[kThinWidth]) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < V; ++q) acc[r][q] = _mm512_setzero_ps();
  __mmask16 mask[V];
  for (int q = 0; q < V; ++q) {
    const int n = std::clamp(live - 16 * q, 0, 16);
    mask[q] = static_cast<__mmask16>((1u << n) - 1);
  }
  constexpr size_t wsize = TW == DType::bf16 ? 2 : 4;
  const size_t nsize = dtype_size(narrow.dtype);
  for (int k = 0; k < K; ++k) {
    const std::byte* w = wide.data + size_t(k) * wide.row_bytes + size_t(j0) * wsize;
    __m512 wv[V];
    for (int q = 0; q < V; ++q) wv[q] = widen16<TW>(w + size_t(16 * q) * wsize, mask[q]);
    const std::byte* nrow = narrow.data + size_t(k) * narrow.row_bytes;
    for (int r = 0; r < R; ++r) {
      const __m512 nv = _mm512_set1_ps(load_f32(nrow + size_t(r0 + r) * nsize, narrow.dtype));
      for (int q = 0; q < V; ++q)
        acc[r][q] = narrow_is_a ? _mm512_fmadd_ps(nv, wv[q], acc[r][q])
                                : _mm512_fmadd_ps(wv[q], nv, acc[r][q]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < V; ++q) _mm512_storeu_ps(out[r] + 16 * q, acc[r][q]);
}

template <DType TW, bool narrow_is_a>
void thin_gemm(int narrow_n, int wide_n, int K, const GemmOperand& narrow, const GemmOperand& wide,
               float* C, size_t ldc, bool accumulate) {
  alignas(64) float out[kThin][kThinWidth];
  for (int r0 = 0; r0 < narrow_n; r0 += kThin) {
    const int rb = std::min(kThin, narrow_n - r0);
    const int width = rb <= 2 ? kThinWidth : kThinWidth / 2;
    for (int j0 = 0; j0 < wide_n; j0 += width) {
      const int live = std::min(width, wide_n - j0);
      switch (rb) {
        case 1:
          thin_block<TW, 1, 8, narrow_is_a>(K, narrow, r0, wide, j0, live, out);
          break;
        case 2:
          thin_block<TW, 2, 8, narrow_is_a>(K, narrow, r0, wide, j0, live, out);
          break;
        case 3:
          thin_block<TW, 3, 4, narrow_is_a>(K, narrow, r0, wide, j0, live, out);
          break;
        default:
          thin_block<TW, 4, 4, narrow_is_a>(K, narrow, r0, wide, j0, live, out);
          break;
      }
      // The narrow rows are C's rows when A is narrow, its columns when B is.
      for (int r = 0; r < rb; ++r)
        for (int j = 0; j < live; ++j) {
          float& c =
              narrow_is_a ? C[size_t(r0 + r) * ldc + j0 + j] : C[size_t(j0 + j) * ldc + r0 + r];
          c = accumulate ? c + out[r][j] : out[r][j];
        }
    }
  }
}

// Whether the thin path takes the problem: one side at most kThin wide, the other side's
// elements bf16 or fp32, AVX-512 (with BW and VL) on the host.
bool thin_applies(int M, int N, const GemmOperand& A, const GemmOperand& B) {
  static const bool kHost = isa() == Isa::avx512 && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl");
  auto widenable = [](DType t) { return t == DType::bf16 || t == DType::f32; };
  return kHost && ((M <= kThin && widenable(B.dtype)) || (N <= kThin && widenable(A.dtype)));
}

void gemm_thin(int M, int N, int K, const GemmOperand& A, const GemmOperand& B, float* C,
               size_t ldc, bool accumulate) {
  if (M <= kThin && B.dtype == DType::bf16)
    thin_gemm<DType::bf16, true>(M, N, K, A, B, C, ldc, accumulate);
  else if (M <= kThin && B.dtype == DType::f32)
    thin_gemm<DType::f32, true>(M, N, K, A, B, C, ldc, accumulate);
  else if (A.dtype == DType::bf16)
    thin_gemm<DType::bf16, false>(N, M, K, B, A, C, ldc, accumulate);
  else
    thin_gemm<DType::f32, false>(N, M, K, B, A, C, ldc, accumulate);
}
#endif

struct Shape {
  int mr, nr;  // micro-tile; A is packed in mr-wide panels
};

Shape shape() {
  switch (isa()) {
    case Isa::avx512:
      return {8, 32};
    case Isa::avx2:
      return {6, 16};
    case Isa::scalar:
      return {8, 16};
  }
  return {8, 16};
}

// Computes column panels [p0, p1) of C for all rows; A is packed in mr-wide panels [k][mr] and
// B in nr-wide panels [k][nr] (zero-padded), so both stream contiguously through L1.
void compute_panels(int M, int N, int p0, int p1, int K, const float* Ap, const float* Bp, float* C,
                    size_t ldc, bool accumulate) {
  const Isa which = isa();
  const auto [mr, nr] = shape();
  for (int pj = p0; pj < p1; ++pj) {
    const int n = pj * nr;
    const int nb = std::min(nr, N - n);
    const float* b = Bp + static_cast<size_t>(pj) * K * nr;
    for (int m = 0; m < M; m += mr) {
      const int mb = std::min(mr, M - m);
      const float* ap = Ap + static_cast<size_t>(m) * K;  // panel m / mr, size K * mr
      float* c = C + static_cast<size_t>(m) * ldc + n;
#ifdef NEURONC_X86
      if (which == Isa::avx512 && mb == 8 && nb == 32) {
        kernel_avx512_8x32(K, ap, b, nr, c, ldc, accumulate);
        continue;
      }
      if (which == Isa::avx2 && mb == 6 && nb == 16) {
        kernel_avx2_6x16(K, ap, b, nr, c, ldc, accumulate);
        continue;
      }
      // An edge: the panels are zero-padded, so the kernel computes the whole tile and the
      // block's part is kept (each element depends only on its own row and column).
      if (which == Isa::avx512 || which == Isa::avx2) {
        alignas(64) float tile[8 * 32];
        if (which == Isa::avx512)
          kernel_avx512_8x32(K, ap, b, nr, tile, nr, false);
        else
          kernel_avx2_6x16(K, ap, b, nr, tile, nr, false);
        keep_block(tile, nr, mb, nb, c, ldc, accumulate);
        continue;
      }
#endif
      (void)which;
      block_scalar(mb, nb, K, ap, mr, b, nr, c, ldc, accumulate);
    }
  }
}

}  // namespace

GemmPath gemm_path(int M, int N, int K, const GemmOperand& A, const GemmOperand& B) {
#ifdef NEURONC_X86
  if (M > 0 && N > 0 && K > 0) {
    if (thin_applies(M, N, A, B)) return GemmPath::thin;
    if (A.dtype == DType::bf16 && B.dtype == DType::bf16 && has_bf16_dot() &&
        bf16_exact(M, N, K, A, B))
      return GemmPath::bf16_dot;
  }
#else
  (void)M, (void)N, (void)K, (void)A, (void)B;
#endif
  return GemmPath::fp32;
}

void gemm_at_b(int M, int N, int K, const GemmOperand& A, const GemmOperand& B, float* C,
               size_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    return;
  }
#ifdef NEURONC_X86
  switch (gemm_path(M, N, K, A, B)) {
    case GemmPath::thin:
      return gemm_thin(M, N, K, A, B, C, ldc, accumulate);
    case GemmPath::bf16_dot:
      return gemm_bf16_pairs(M, N, K, A, B, C, ldc, accumulate);
    case GemmPath::fp32:
      break;
  }
#endif
  const size_t a_size = dtype_size(A.dtype);
  const size_t b_size = dtype_size(B.dtype);
  // Packs (and widens) A into mr-wide panels [k][mr], zero-padded at the edge.
  const int mr = shape().mr;
  const int panels = (M + mr - 1) / mr;
  thread_local std::vector<float> packed;
  packed.resize(static_cast<size_t>(panels) * K * mr);
  for (int p = 0; p < panels; ++p) {
    float* dst = packed.data() + static_cast<size_t>(p) * K * mr;
    const int m0 = p * mr;
    const int mb = std::min(mr, M - m0);
    for (int k = 0; k < K; ++k) {
      load_f32_n(A.data + k * A.row_bytes + m0 * a_size, A.dtype, dst + k * mr, mb);
      if (mb < mr) std::fill(dst + k * mr + mb, dst + (k + 1) * mr, 0.0f);
    }
  }
  const float* Ap = packed.data();
  const int nr = shape().nr;
  const int bpanels = (N + nr - 1) / nr;
  // B panels live in the shared buffer of the calling thread; tasks pack disjoint panels.
  thread_local std::vector<float> packed_b;
  packed_b.resize(static_cast<size_t>(bpanels) * K * nr);
  float* Bp = packed_b.data();
  // Packs B panels [p0, p1) and computes them; tasks own disjoint panels and columns of C.
  auto run = [&](int p0, int p1) {
    for (int pj = p0; pj < p1; ++pj) {
      float* dst = Bp + static_cast<size_t>(pj) * K * nr;
      const int n0 = pj * nr;
      const int nb = std::min(nr, N - n0);
      for (int k = 0; k < K; ++k) {
        load_f32_n(B.data + k * B.row_bytes + n0 * b_size, B.dtype, dst + k * nr, nb);
        if (nb < nr) std::fill(dst + k * nr + nb, dst + (k + 1) * nr, 0.0f);
      }
    }
    compute_panels(M, N, p0, p1, K, Ap, Bp, C, ldc, accumulate);
  };
  for_panel_tasks(static_cast<double>(M) * N * K, bpanels, run);
}

void gemm_at_b_f32(int M, int N, int K, const float* A, size_t lda, const float* B, size_t ldb,
                   float* C, size_t ldc) {
  gemm_at_b(M, N, K, {reinterpret_cast<const std::byte*>(A), lda * sizeof(float), DType::f32},
            {reinterpret_cast<const std::byte*>(B), ldb * sizeof(float), DType::f32}, C, ldc,
            false);
}

const char* gemm_kernel_name() {
  switch (isa()) {
    case Isa::avx512:
      return has_bf16_dot() ? "avx512+bf16" : "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::scalar:
      return "scalar";
  }
  return "scalar";
}

}  // namespace neuronc::device
