// Runs a pass on IR text and returns the printed result, for before/after tests.
#pragma once

#include <string>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass.h"

namespace neuronc::passes::testing {

template <typename P>
std::string run_pass(const std::string& before, bool* changed = nullptr) {
  auto g = ir::parse(before);
  P pass;
  const bool c = pass.run(*g);
  if (changed) *changed = c;
  ir::verify_or_throw(*g);
  return ir::print(*g, {.locations = false});
}

}  // namespace neuronc::passes::testing
