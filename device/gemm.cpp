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
#include <tbb/task_arena.h>

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

// The biased exponent range of bf16 words, per lane: the smallest of the nonzero words (255 when
// there are none) and the largest of all (subnormals give 0, NaN/inf 255).
struct ExponentLanes {
  __m512i lo, hi;
};

// Folds the biased exponents of 32 bf16 words into `e` (nonzero words only for the minimum).
__attribute__((target("avx512f,avx512bw"))) inline void fold_exponents(ExponentLanes& e,
                                                                       __m512i v) {
  const __m512i mag = _mm512_and_si512(v, _mm512_set1_epi16(0x7fff));
  const __m512i ex = _mm512_srli_epi16(mag, 7);
  e.lo = _mm512_mask_min_epu16(e.lo, _mm512_test_epi16_mask(mag, mag), e.lo, ex);
  e.hi = _mm512_max_epu16(e.hi, ex);
}

// Folds the lanes of `e` into *emin and *emax.
__attribute__((target("avx512f,avx512bw"))) void reduce_exponents(const ExponentLanes& e,
                                                                  uint32_t* emin, uint32_t* emax) {
  alignas(64) uint16_t l[32], h[32];
  _mm512_store_si512(l, e.lo);
  _mm512_store_si512(h, e.hi);
  for (int i = 0; i < 32; ++i) {
    *emin = std::min<uint32_t>(*emin, l[i]);
    *emax = std::max<uint32_t>(*emax, h[i]);
  }
}

// The exponent range (ExponentLanes) of `rows` rows of `n` bf16 values, `row_bytes` apart. The
// lanes are reduced once, after the last row.
__attribute__((target("avx512f,avx512bw"))) void bf16_exponents(const std::byte* data,
                                                                size_t row_bytes, int rows, int n,
                                                                uint32_t* emin, uint32_t* emax) {
  ExponentLanes e{_mm512_set1_epi16(255), _mm512_setzero_si512()};
  for (int r = 0; r < rows; ++r) {
    const auto* p = reinterpret_cast<const uint16_t*>(data + size_t(r) * row_bytes);
    for (int i = 0; i < n; i += 32) {
      const __mmask32 live = n - i >= 32 ? ~__mmask32{0} : (__mmask32{1} << (n - i)) - 1;
      fold_exponents(e, _mm512_maskz_loadu_epi16(live, p + i));
    }
  }
  reduce_exponents(e, emin, emax);
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
// not depend on the thread count or on the order tasks run in. Isolated: while it waits, the
// calling thread runs none of the simulator's other tasks (another instruction or core), which
// would repack this thread's packed operands under the tasks still reading them.
template <typename Run>
void for_panel_tasks(double work, int panels, const Run& run) {
  constexpr int kPanelsPerTask = 4;
  if (work < (1 << 21) || panels <= kPanelsPerTask) {
    run(0, panels);
    return;
  }
  const int tasks = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(0, tasks, [&](int t) {
      const int p0 = t * kPanelsPerTask;
      run(p0, std::min(panels, p0 + kPanelsPerTask));
    });
  });
}

bool has_bf16_dot() {
#ifdef NEURONC_X86
  static const bool kHas = isa() == Isa::avx512 && __builtin_cpu_supports("avx512bf16") &&
                           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return kHas;
#else
  return false;
#endif
}

// Whether a bf16 x bf16 tile whose elements' biased exponents span [amin, amax] (A; nonzero
// elements for the minimum) and [bmin, bmax] (B), summed over K, goes through VDPBF16PS
// bit-exactly (see the top).
bool exact_range(uint32_t amin, uint32_t amax, uint32_t bmin, uint32_t bmax, int K) {
  if (amax == 255 || bmax == 255) return false;  // NaN or infinity
  // Quantum of every product: 2^(amin - 134 + bmin - 134) >= 2^-126.
  if (amin + bmin < 142) return false;
  // |product| < 2^(amax - 126 + bmax - 126); K of them (plus rounding) stay below 2^126.
  int log2k = 0;
  while ((1 << log2k) < K) ++log2k;
  return static_cast<int>(amax + bmax) - 252 + log2k + 1 <= 126;
}

// Whether the bf16 x bf16 tile A^T B can go through VDPBF16PS bit-exactly.
bool bf16_exact(int M, int N, int K, const GemmOperand& A, const GemmOperand& B) {
#ifdef NEURONC_X86
  uint32_t amin = 255, amax = 0, bmin = 255, bmax = 0;
  bf16_exponents(A.data, A.row_bytes, K, M, &amin, &amax);
  bf16_exponents(B.data, B.row_bytes, K, N, &bmin, &bmax);
  return exact_range(amin, amax, bmin, bmax, K);
#else
  (void)M, (void)N, (void)K, (void)A, (void)B;
  return false;
#endif
}

#ifdef NEURONC_X86
// The bf16-pair path exists only where VDPBF16PS does (has_bf16_dot); its edge blocks run the
// same micro-kernel as whole ones.

// Packs rows [0, K) x columns [0, cols) of a bf16 operand into `width`-wide pair panels
// dst[panel][K/2][width] (width 8: A panels, 32: B panels), each dword (x[k] << 16) | x[k + 1];
// odd K pads the last pair's even half with -0 (A) or +0 (B), whose product -0 leaves every sum
// unchanged, and columns past `cols` are zero. Row pairs are read once each, 32 columns at a
// time (masked at the edge, so nothing past `cols` is read), interleaved by word permutes, and
// their exponents folded into `e` on the way. Row by row, not panel by panel: an operand read in
// place has its rows an SBUF partition apart, and those alias to a couple of cache sets, so a
// panel-by-panel walk would miss on every row of every panel. (Only the bf16-pair path calls
// it, so AVX-512 BW and VL are there.)
__attribute__((target("avx512f,avx512bw,avx512vl"))) void pack_bf16_pairs(const GemmOperand& x,
                                                                          int K, int cols,
                                                                          int width, uint16_t pad,
                                                                          uint32_t* dst,
                                                                          ExponentLanes& e) {
  const int pairs = (K + 1) / 2;
  const int panels = (cols + width - 1) / width;
  const size_t panel_words = size_t(pairs) * width;
  // Words j of `lo` and `hi` become dword j: (hi[j] << 16) | lo[j].
  alignas(64) static constexpr uint16_t kLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                    37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                    11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                     53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                     27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);

  // Rows outer, so each row's lines are read one after the other; and the rows kPrefetch
  // pairs ahead are prefetched, since rows a partition apart are separate streams that the
  // hardware prefetcher does not follow.
  constexpr int kPrefetch = 4;
  const size_t row_span = size_t(cols) * 2;
  auto prefetch_row = [&](int k) {
    if (k >= K) return;
    const char* r = reinterpret_cast<const char*>(x.data + k * x.row_bytes);
    for (size_t b = 0; b < row_span; b += 64) _mm_prefetch(r + b, _MM_HINT_T0);
  };
  for (int q = 0; q < std::min(kPrefetch, pairs); ++q) prefetch_row(2 * q), prefetch_row(2 * q + 1);
  for (int q = 0; q < pairs; ++q) {
    const int k = 2 * q;
    prefetch_row(k + 2 * kPrefetch);
    prefetch_row(k + 2 * kPrefetch + 1);
    for (int c0 = 0; c0 < cols; c0 += 32) {
      const int n = std::min(32, cols - c0);
      const __mmask32 live = n == 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
      const __m512i padv = _mm512_maskz_mov_epi16(live, _mm512_set1_epi16(static_cast<short>(pad)));
      const std::byte* row = x.data + k * x.row_bytes + size_t(c0) * 2;
      const __m512i hi = _mm512_maskz_loadu_epi16(live, row);
      const __m512i lo = k + 1 < K ? _mm512_maskz_loadu_epi16(live, row + x.row_bytes) : padv;
      fold_exponents(e, hi);
      fold_exponents(e, lo);
      const __m512i d0 = _mm512_permutex2var_epi16(lo, low, hi);   // columns c0 .. c0 + 15
      const __m512i d1 = _mm512_permutex2var_epi16(lo, high, hi);  // c0 + 16 .. c0 + 31
      if (width == 32) {
        uint32_t* o = dst + size_t(c0 / 32) * panel_words + size_t(q) * 32;
        _mm512_storeu_si512(o, d0);
        _mm512_storeu_si512(o + 16, d1);
        continue;
      }
      // width 8: the 32 columns are up to 4 panels.
      // The zero-masking extracts: GCC 12 calls the unmasked ones' passthrough
      // maybe-uninitialized.
      const __m256i quarter[4] = {_mm512_maskz_extracti64x4_epi64(0xff, d0, 0),
                                  _mm512_maskz_extracti64x4_epi64(0xff, d0, 1),
                                  _mm512_maskz_extracti64x4_epi64(0xff, d1, 0),
                                  _mm512_maskz_extracti64x4_epi64(0xff, d1, 1)};
      for (int j = 0; j < 4 && c0 / 8 + j < panels; ++j)
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(dst + size_t(c0 / 8 + j) * panel_words + size_t(q) * 8),
            quarter[j]);
    }
  }
}

// The bf16-pair GEMM: A packed into 8-row panels and B into 32-column panels, both up front
// with their exponent ranges; false (C untouched) when the ranges rule VDPBF16PS out, so the
// fp32 path computes it.
__attribute__((target("avx512f,avx512bw"))) bool gemm_bf16_pairs(int M, int N, int K,
                                                                 const GemmOperand& A,
                                                                 const GemmOperand& B, float* C,
                                                                 size_t ldc, bool accumulate) {
  constexpr int mr = 8, nr = 32;
  const int pairs = (K + 1) / 2;
  const int panels = (M + mr - 1) / mr;
  const int bpanels = (N + nr - 1) / nr;
  thread_local std::vector<uint32_t> packed_a, packed_b;
  packed_a.resize(size_t(panels) * pairs * mr);
  packed_b.resize(size_t(bpanels) * pairs * nr);
  ExponentLanes ea{_mm512_set1_epi16(255), _mm512_setzero_si512()}, eb = ea;
  pack_bf16_pairs(A, K, M, mr, 0x8000, packed_a.data(), ea);
  pack_bf16_pairs(B, K, N, nr, 0x0000, packed_b.data(), eb);
  uint32_t amin = 255, amax = 0, bmin = 255, bmax = 0;
  reduce_exponents(ea, &amin, &amax);
  reduce_exponents(eb, &bmin, &bmax);
  if (!exact_range(amin, amax, bmin, bmax, K)) return false;
  const uint32_t* Ap = packed_a.data();
  const uint32_t* Bp = packed_b.data();
  auto run = [&](int p0, int p1) {
    for (int pj = p0; pj < p1; ++pj) {
      const int n0 = pj * nr;
      const int nb = std::min(nr, N - n0);
      const uint32_t* b = Bp + size_t(pj) * pairs * nr;
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
  return true;
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
  // gemm_path's choice, with the bf16 operands' exponent ranges taken while they are packed.
  if (thin_applies(M, N, A, B)) return gemm_thin(M, N, K, A, B, C, ldc, accumulate);
  if (A.dtype == DType::bf16 && B.dtype == DType::bf16 && has_bf16_dot() &&
      gemm_bf16_pairs(M, N, K, A, B, C, ldc, accumulate))
    return;
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
