// One-line text form of device instructions for `neuronc inspect --disasm` and diagnostics:
//   activation dst=sbuf:f32[0:4]@1024{32} src=sbuf:f32[0:4]@0{32} function=relu scale=2 bias=1
//     wait(s0>=1) signal(s1+=1)
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "device/isa.h"

namespace neuronc::artifact {

std::string memref_text(const device::MemRef& m);
std::string instruction_text(const device::Instruction& inst);

}  // namespace neuronc::artifact
