// Hardware numerics of the device model (TRAINIUM.md §7). Element conversions, loads and stores
// are the project's one definition in kernels/numerics.h (named here for device code); this
// header adds what the engines compute per element. All functions are pure and thread-safe.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "device/isa.h"
#include "kernels/numerics.h"

namespace neuronc::device {

using kernels::bf16_to_f32;
using kernels::f16_to_f32;
using kernels::f32_to_bf16;
using kernels::f32_to_f16;
using kernels::f32_to_f8e4m3;
using kernels::f32_to_f8e5m2;
using kernels::f32_to_int;
using kernels::f32_to_tf32_bits;
using kernels::f8e4m3_to_f32;
using kernels::f8e5m2_to_f32;
using kernels::load_f32;
using kernels::load_f32_n;
using kernels::load_f32_strided;
using kernels::load_int;
using kernels::Rounding;
using kernels::StochasticRounder;
using kernels::store_f32;
using kernels::store_f32_n;
using kernels::store_int;

// --- Engine arithmetic: what VectorE / GpSimdE / ScalarE compute per element --------------------
// (the one definition: the functional simulator runs it, and codegen folds compile-time
// immediates with it, so a folded value rounds exactly as the hardware model would compute it).
// fp32 ALU op (comparisons give 1 or 0; bitwise ops are integer-only, see alu_int). Inline, as
// activate is, so a row loop with a constant `op` loses the dispatch.
inline float alu(AluOp op, float a, float b) {
  switch (op) {
    case AluOp::bypass:
      return a;
    case AluOp::add:
      return a + b;
    case AluOp::subtract:
      return a - b;
    case AluOp::multiply:
      return a * b;
    case AluOp::divide:
      return a / b;
    case AluOp::max:
      return std::fmax(a, b);
    case AluOp::min:
      return std::fmin(a, b);
    case AluOp::pow:
      return std::pow(a, b);
    case AluOp::mod:
      return std::fmod(a, b);
    case AluOp::is_equal:
      return a == b ? 1.0f : 0.0f;
    case AluOp::not_equal:
      return a != b ? 1.0f : 0.0f;
    case AluOp::is_gt:
      return a > b ? 1.0f : 0.0f;
    case AluOp::is_ge:
      return a >= b ? 1.0f : 0.0f;
    case AluOp::is_lt:
      return a < b ? 1.0f : 0.0f;
    case AluOp::is_le:
      return a <= b ? 1.0f : 0.0f;
    case AluOp::logical_and:
      return (a != 0 && b != 0) ? 1.0f : 0.0f;
    case AluOp::logical_or:
      return (a != 0 || b != 0) ? 1.0f : 0.0f;
    case AluOp::logical_xor:
      return ((a != 0) != (b != 0)) ? 1.0f : 0.0f;
    case AluOp::abs_max:
      return std::fmax(std::fabs(a), std::fabs(b));
    default:
      break;
  }
  // Bitwise ops on floats are rejected by the verifier.
  return a;
}
// Integer ALU op (bitwise and shifts; shifts act on the low 32 bits).
int64_t alu_int(AluOp op, int64_t a, int64_t b);
// ScalarE activation function in fp32. Inline, so a loop over a row with a constant `f` (the
// functional simulator's) loses the dispatch and, for the cheap functions, vectorises.
inline float activate(ActivationFunction f, float x) {
  switch (f) {
    case ActivationFunction::identity:
      return x;
    case ActivationFunction::relu:
      return x > 0 ? x : 0.0f;
    case ActivationFunction::gelu_erf:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case ActivationFunction::gelu_tanh: {
      const float k = 0.79788456080286536f;  // sqrt(2 / pi)
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    }
    case ActivationFunction::silu:
      return x / (1.0f + std::exp(-x));
    case ActivationFunction::sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case ActivationFunction::tanh:
      return std::tanh(x);
    case ActivationFunction::exp:
      return std::exp(x);
    case ActivationFunction::log:
      return std::log(x);
    case ActivationFunction::sqrt:
      return std::sqrt(x);
    case ActivationFunction::rsqrt:
      return 1.0f / std::sqrt(x);
    case ActivationFunction::reciprocal:
      return 1.0f / x;
    case ActivationFunction::square:
      return x * x;
    case ActivationFunction::abs:
      return std::fabs(x);
    case ActivationFunction::sign:
      return x > 0 ? 1.0f : (x < 0 ? -1.0f : (x == 0 ? 0.0f : x));
    case ActivationFunction::sin:
      return std::sin(x);
    case ActivationFunction::cos:
      return std::cos(x);
    case ActivationFunction::erf:
      return std::erf(x);
  }
  return x;
}

}  // namespace neuronc::device
