// What the engines compute per element (numerics.h).
#include "device/numerics.h"

#include <cmath>
#include <cstdint>

namespace neuronc::device {

// --- Engine arithmetic -------------------------------------------------------------------------

float alu(AluOp op, float a, float b) {
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

int64_t alu_int(AluOp op, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a);
  switch (op) {
    case AluOp::bitwise_and:
      return a & b;
    case AluOp::bitwise_or:
      return a | b;
    case AluOp::bitwise_xor:
      return a ^ b;
    case AluOp::shift_left:
      return static_cast<int64_t>(ua << (b & 63));
    case AluOp::shift_right:
      return static_cast<int64_t>((ua & 0xffffffffu) >> (b & 63));
    default:
      return a;
  }
}

float activate(ActivationFunction f, float x) {
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
