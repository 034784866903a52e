// Shape specialisation: binds symbolic dimensions to constants (a shape bucket), re-deriving
// every result type through the operators' shape rules, so codegen sees static shapes. Each
// value must lie in its symbol's [min, max] range (checked). Attributes holding symbolic ints
// (view sizes, expand sizes) are rewritten too. A symbol input (ir::InputRole::symbol) of a bound
// symbol becomes a constant holding the value, unless the symbol is kept: the open dims of a
// bucketed compile, whose real sizes the loader binds at run time.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "passes/pass.h"

namespace neuronc::passes {

class SpecializeShapes : public Pass {
 public:
  // Symbol name -> value. Symbols not listed keep their symbolic form.
  explicit SpecializeShapes(std::map<std::string, int64_t> values, std::set<std::string> keep = {})
      : values_(std::move(values)), keep_(std::move(keep)) {}
  std::string_view name() const override { return "specialize-shapes"; }
  bool run(ir::Graph& g) override;

 private:
  std::map<std::string, int64_t> values_;
  std::set<std::string> keep_;
};

}  // namespace neuronc::passes
