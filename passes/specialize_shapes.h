// Shape specialisation: binds symbolic dimensions to constants (a shape bucket), re-deriving
// every result type through the operators' shape rules, so codegen sees static shapes. Each
// value must lie in its symbol's [min, max] range (checked). Attributes holding symbolic ints
// (view sizes, expand sizes) are rewritten too.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "passes/pass.h"

namespace neuronc::passes {

class SpecializeShapes : public Pass {
 public:
  // Symbol name -> value. Symbols not listed keep their symbolic form.
  explicit SpecializeShapes(std::map<std::string, int64_t> values) : values_(std::move(values)) {}
  std::string_view name() const override { return "specialize-shapes"; }
  bool run(ir::Graph& g) override;

 private:
  std::map<std::string, int64_t> values_;
};

}  // namespace neuronc::passes
