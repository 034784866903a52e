// Hardware numerics of the device model (TRAINIUM.md §7). Element conversions, loads and stores
// are the project's one definition in kernels/numerics.h (named here for device code); this
// header adds what the engines compute per element. All functions are pure and thread-safe.
#pragma once

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
using kernels::load_int;
using kernels::Rounding;
using kernels::StochasticRounder;
using kernels::store_f32;
using kernels::store_f32_n;
using kernels::store_int;

// --- Engine arithmetic: what VectorE / GpSimdE / ScalarE compute per element --------------------
// (the one definition: the functional simulator runs it, and codegen folds compile-time
// immediates with it, so a folded value rounds exactly as the hardware model would compute it).
// fp32 ALU op (comparisons give 1 or 0; bitwise ops are integer-only, see alu_int).
float alu(AluOp op, float a, float b);
// Integer ALU op (bitwise and shifts; shifts act on the low 32 bits).
int64_t alu_int(AluOp op, int64_t a, int64_t b);
// ScalarE activation function in fp32.
float activate(ActivationFunction f, float x);

}  // namespace neuronc::device
