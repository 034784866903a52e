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

}  // namespace neuronc::device
