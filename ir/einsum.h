// einsum equations: "bchw,bcdw->bhd". Shared by the shape rule and the pass that rewrites
// einsum into permutes, sums and bmm (passes/expand_composites.cpp).
#pragma once

#include <string>
#include <vector>

namespace neuronc::ir {

struct EinsumEquation {
  std::vector<std::string> operands;  // one letter per dim of each operand
  std::string output;                 // letters of the result, in order
};

// Parses `equation` for `n` operands. Without "->" the output is every letter used once,
// in alphabetical order (NumPy's implicit mode). Throws ir::Error naming what is wrong: an
// ellipsis, a letter repeated within one operand or the output, an output letter no operand
// has, or a count of operand terms other than `n`.
EinsumEquation parse_einsum(const std::string& equation, size_t n);

}  // namespace neuronc::ir
