// Runs a pass on IR text and returns the printed result, for before/after tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

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

// Gives the f32 value `name` of `g` the payload `values`.
inline void set_f32(ir::Graph& g, const char* name, std::vector<float> values) {
  auto buf = std::make_shared<std::vector<float>>(std::move(values));
  g.find_value(name)->set_payload(
      {reinterpret_cast<const std::byte*>(buf->data()), buf->size() * sizeof(float), 0, {}, buf});
}

}  // namespace neuronc::passes::testing
