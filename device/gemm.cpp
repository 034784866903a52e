// Blocked fp32 GEMM (gemm.h). A is packed into MR-wide panels [k][MR] so the micro-kernel
// reads it contiguously; B is read in place, NR columns at a time (a 128 x NR panel stays in
// L1). The micro-kernel keeps an MR x NR block of C in registers across the whole K loop.
#include "device/gemm.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
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
#undef NEURONC_STORE512

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
#endif
      (void)which;
      block_scalar(mb, nb, K, ap, mr, b, nr, c, ldc, accumulate);
    }
  }
}

}  // namespace

void gemm_at_b(int M, int N, int K, const GemmOperand& A, const GemmOperand& B, float* C,
               size_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    return;
  }
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
  const double work = static_cast<double>(M) * N * K;
  constexpr int kPanelsPerTask = 4;
  if (work < (1 << 21) || bpanels <= kPanelsPerTask) {
    run(0, bpanels);
    return;
  }
  const int tasks = (bpanels + kPanelsPerTask - 1) / kPanelsPerTask;
  tbb::parallel_for(0, tasks, [&](int t) {
    const int p0 = t * kPanelsPerTask;
    run(p0, std::min(bpanels, p0 + kPanelsPerTask));
  });
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
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::scalar:
      return "scalar";
  }
  return "scalar";
}

}  // namespace neuronc::device
