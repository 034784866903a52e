// The functional model's fp32 GEMM for TensorE tiles: C = A^T * B with A [K, M] and B [K, N]
// (both row-major, K the partition axis as on the PE array). Each output is accumulated with
// fused multiply-adds in increasing K (TRAINIUM.md §7 assumption), so every code path (AVX-512,
// AVX2, scalar) gives bit-identical results. Thread-safe; large calls split across oneTBB
// workers by column blocks, which does not change any result.
#pragma once

#include <cstddef>

namespace neuronc::device {

// C[m * ldc + n] = sum_k A[k * lda + m] * B[k * ldb + n] for m < M, n < N, k < K.
void gemm_at_b_f32(int M, int N, int K, const float* A, size_t lda, const float* B, size_t ldb,
                   float* C, size_t ldc);

// Which kernel the dispatcher picked on this machine: "avx512", "avx2" or "scalar".
const char* gemm_kernel_name();

}  // namespace neuronc::device
