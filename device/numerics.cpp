// What the engines compute per element (numerics.h).
#include "device/numerics.h"

#include <cmath>
#include <cstdint>

namespace neuronc::device {

// --- Engine arithmetic -------------------------------------------------------------------------

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
