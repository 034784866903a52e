// The functional model's fp32 GEMM for TensorE tiles: C = A^T * B with A [K, M] and B [K, N]
// (both row-major, K the partition axis as on the PE array). Each output is accumulated with
// fused multiply-adds in increasing K (TRAINIUM.md §7 assumption), so every code path (AVX-512,
// AVX2, scalar) gives bit-identical results. Thread-safe; large calls split across oneTBB
// workers by column blocks, which does not change any result.
#pragma once

#include <cstddef>

#include "device/isa.h"

namespace neuronc::device {

// One K-row-major operand as it sits in memory: row k holds the operand's free elements
// contiguously at data + k * row_bytes, stored as `dtype` (any float or integer DType; widened
// exactly to fp32 while the GEMM packs it, so no separate widening pass is needed).
struct GemmOperand {
  const std::byte* data = nullptr;
  size_t row_bytes = 0;
  DType dtype = DType::f32;
};

// C[m * ldc + n] = sum_k A(k, m) * B(k, n), or, with `accumulate`, C + that sum (one fp32
// rounding of the finished sum onto C, as a PSUM accumulation group does).
void gemm_at_b(int M, int N, int K, const GemmOperand& A, const GemmOperand& B, float* C,
               size_t ldc, bool accumulate);

// C[m * ldc + n] = sum_k A[k * lda + m] * B[k * ldb + n] for m < M, n < N, k < K.
void gemm_at_b_f32(int M, int N, int K, const float* A, size_t lda, const float* B, size_t ldb,
                   float* C, size_t ldc);

// How gemm_at_b computes a problem (for tests and benchmarks; the bits are the same on every
// path): `thin` when one side is at most 4 wide and the other's elements are bf16 or fp32
// (AVX-512 hosts; the wide operand is widened in place, no packing), `bf16_dot` for bf16 x bf16
// tiles whose exponent range lets the host's bf16 dot product give the FMA chain's bits
// (gemm.cpp explains why), `fp32` otherwise.
enum class GemmPath { thin, bf16_dot, fp32 };
GemmPath gemm_path(int M, int N, int K, const GemmOperand& A, const GemmOperand& B);

// Which kernel the dispatcher picked on this machine: "avx512", "avx2" or "scalar", with
// "+bf16" when bf16 x bf16 tiles whose exponent range allows it use the host's bf16 dot
// product (same bits; gemm.cpp explains why).
const char* gemm_kernel_name();

}  // namespace neuronc::device
