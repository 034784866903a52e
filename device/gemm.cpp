// Blocked fp32 GEMM (gemm.h). A is packed into MR-wide panels [k][MR] so the micro-kernel
// reads it contiguously; B is read in place, NR columns at a time (a 128 x NR panel stays in
// L1). The micro-kernel keeps an MR x NR block of C in registers across the whole K loop.
#include "device/gemm.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NEURONC_X86 1
#endif

namespace neuronc::device {
namespace {

// Scalar reference kernel for an arbitrary block (edges and non-x86 machines).
void block_scalar(int mr, int nr, int K, const float* Ap, int a_step, const float* B, size_t ldb,
                  float* C, size_t ldc) {
  for (int i = 0; i < mr; ++i) {
    for (int j = 0; j < nr; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc = std::fma(Ap[k * a_step + i], B[k * ldb + j], acc);
      C[i * ldc + j] = acc;
    }
  }
}

#ifdef NEURONC_X86
// AVX-512: 8 rows x 32 columns = 16 zmm accumulators.
__attribute__((target("avx512f,fma"))) void kernel_avx512_8x32(int K, const float* Ap,
                                                               const float* B, size_t ldb, float* C,
                                                               size_t ldc) {
  __m512 c[8][2];
  for (int i = 0; i < 8; ++i) c[i][0] = c[i][1] = _mm512_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_loadu_ps(B + k * ldb);
    const __m512 b1 = _mm512_loadu_ps(B + k * ldb + 16);
    const float* a = Ap + k * 8;
    for (int i = 0; i < 8; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      c[i][0] = _mm512_fmadd_ps(av, b0, c[i][0]);
      c[i][1] = _mm512_fmadd_ps(av, b1, c[i][1]);
    }
  }
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_ps(C + i * ldc, c[i][0]);
    _mm512_storeu_ps(C + i * ldc + 16, c[i][1]);
  }
}

// AVX2: 6 rows x 16 columns = 12 ymm accumulators.
__attribute__((target("avx2,fma"))) void kernel_avx2_6x16(int K, const float* Ap, const float* B,
                                                          size_t ldb, float* C, size_t ldc) {
  __m256 c[6][2];
  for (int i = 0; i < 6; ++i) c[i][0] = c[i][1] = _mm256_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb);
    const __m256 b1 = _mm256_loadu_ps(B + k * ldb + 8);
    const float* a = Ap + k * 6;
    for (int i = 0; i < 6; ++i) {
      const __m256 av = _mm256_broadcast_ss(a + i);
      c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
      c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
    }
  }
  for (int i = 0; i < 6; ++i) {
    _mm256_storeu_ps(C + i * ldc, c[i][0]);
    _mm256_storeu_ps(C + i * ldc + 8, c[i][1]);
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

// Computes columns [n0, n1) of C for all rows, A already packed in mr-wide panels.
void compute_columns(int M, int n0, int n1, int K, const float* Ap, const float* B, size_t ldb,
                     float* C, size_t ldc) {
  const Isa which = isa();
  const auto [mr, nr] = shape();
  for (int n = n0; n < n1; n += nr) {
    const int nb = std::min(nr, n1 - n);
    for (int m = 0; m < M; m += mr) {
      const int mb = std::min(mr, M - m);
      const float* ap = Ap + static_cast<size_t>(m) * K;  // panel m / mr, size K * mr
      float* c = C + static_cast<size_t>(m) * ldc + n;
      const float* b = B + n;
#ifdef NEURONC_X86
      if (which == Isa::avx512 && mb == 8 && nb == 32) {
        kernel_avx512_8x32(K, ap, b, ldb, c, ldc);
        continue;
      }
      if (which == Isa::avx2 && mb == 6 && nb == 16) {
        kernel_avx2_6x16(K, ap, b, ldb, c, ldc);
        continue;
      }
#endif
      (void)which;
      block_scalar(mb, nb, K, ap, mr, b, ldb, c, ldc);
    }
  }
}

}  // namespace

void gemm_at_b_f32(int M, int N, int K, const float* A, size_t lda, const float* B, size_t ldb,
                   float* C, size_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    return;
  }
  const int mr = shape().mr;
  const int panels = (M + mr - 1) / mr;
  thread_local std::vector<float> packed;
  packed.assign(static_cast<size_t>(panels) * K * mr, 0.0f);
  for (int p = 0; p < panels; ++p) {
    float* dst = packed.data() + static_cast<size_t>(p) * K * mr;
    const int m0 = p * mr;
    const int mb = std::min(mr, M - m0);
    for (int k = 0; k < K; ++k) std::memcpy(dst + k * mr, A + k * lda + m0, mb * sizeof(float));
  }
  const float* Ap = packed.data();
  const double work = static_cast<double>(M) * N * K;
  constexpr int kColumnBlock = 128;
  if (work < (1 << 21) || N <= kColumnBlock) {
    compute_columns(M, 0, N, K, Ap, B, ldb, C, ldc);
    return;
  }
  const int blocks = (N + kColumnBlock - 1) / kColumnBlock;
  tbb::parallel_for(0, blocks, [&](int blk) {
    const int n0 = blk * kColumnBlock;
    compute_columns(M, n0, std::min(N, n0 + kColumnBlock), K, Ap, B, ldb, C, ldc);
  });
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
