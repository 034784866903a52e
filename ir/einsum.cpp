// einsum equation parsing (see the header).
#include "ir/einsum.h"

#include <algorithm>
#include <map>

#include "ir/graph.h"

namespace neuronc::ir {
namespace {

[[noreturn]] void fail(const std::string& equation, const std::string& why) {
  throw Error("einsum '" + equation + "': " + why);
}

std::string term(const std::string& equation, std::string t) {
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  if (t.find('.') != std::string::npos)
    fail(equation, "an ellipsis (...) is not supported (expected one letter per dim)");
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      fail(equation, std::string("expected letters, found '") + c + "'");
    if (t.find(c, i + 1) != std::string::npos)
      fail(equation, std::string("letter '") + c +
                         "' repeats within one term (a diagonal), which is not supported");
  }
  return t;
}

}  // namespace

EinsumEquation parse_einsum(const std::string& equation, size_t n) {
  EinsumEquation e;
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    e.operands.push_back(term(equation, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.operands.size() != n) {
    fail(equation, "has " + std::to_string(e.operands.size()) + " operand terms for " +
                       std::to_string(n) + " tensors");
  }
  if (arrow != std::string::npos) {
    e.output = term(equation, equation.substr(arrow + 2));
    for (char c : e.output) {
      if (std::none_of(e.operands.begin(), e.operands.end(),
                       [c](const std::string& o) { return o.find(c) != std::string::npos; }))
        fail(equation, std::string("output letter '") + c + "' is in no operand");
    }
  } else {
    std::map<char, int> count;
    for (const std::string& o : e.operands)
      for (char c : o) ++count[c];
    for (const auto& [c, k] : count)
      if (k == 1) e.output += c;
  }
  return e;
}

}  // namespace neuronc::ir
