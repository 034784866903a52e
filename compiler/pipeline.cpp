// The one pass pipeline (see pipeline.h).
#include "compiler/pipeline.h"

#include <memory>
#include <set>

#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/pipeline.h"
#include "passes/specialize_shapes.h"
#include "passes/symbol_values.h"

namespace neuronc::compiler {

std::set<ir::SymbolId> used_symbols(const ir::Graph& g) {
  std::set<ir::SymbolId> used;
  auto add_shape = [&](const ir::Shape& shape) {
    for (const ir::Dim& d : shape) {
      if (!d.is_symbolic()) continue;
      const ir::Symbol& s = g.symbol(d.symbol);
      if (s.is_product())
        used.insert(s.factors.begin(), s.factors.end());
      else
        used.insert(d.symbol);
    }
  };
  for (const ir::GraphInput& in : g.inputs()) add_shape(in.value->shape());
  for (const auto& n : g.nodes())
    for (const ir::Value* v : n->outputs()) add_shape(v->shape());
  return used;
}

std::map<std::string, int64_t> bind_symbolic_dims(const ir::Graph& g,
                                                  const std::vector<frontend::SampleInput>& samples,
                                                  const std::map<std::string, int64_t>& given,
                                                  bool require_all) {
  std::map<std::string, int64_t> dims = given;
  if (g.symbols().empty()) return dims;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role != ir::InputRole::user_input) continue;
    for (const frontend::SampleInput& s : samples) {
      if (s.name != in.value->name() || s.shape.size() != in.value->shape().size()) continue;
      for (size_t i = 0; i < s.shape.size(); ++i) {
        const ir::Dim& d = in.value->shape()[i];
        if (d.is_symbolic() && s.shape[i] % d.coeff == 0)
          dims.emplace(g.symbol(d.symbol).name, s.shape[i] / d.coeff);
      }
    }
  }
  if (!require_all) return dims;
  const std::set<ir::SymbolId> used = used_symbols(g);
  for (ir::SymbolId id = 0; id < static_cast<ir::SymbolId>(g.symbols().size()); ++id) {
    const ir::Symbol& s = g.symbol(id);
    if (!s.is_product() && used.count(id) && !dims.count(s.name)) {
      throw ir::Error("symbolic dim " + s.name + " in [" + std::to_string(s.min) + ", " +
                      (s.max == INT64_MAX ? std::string("inf") : std::to_string(s.max)) +
                      "] needs a value: pass --dim " + s.name +
                      "=N (codegen compiles one static shape bucket)");
    }
  }
  return dims;
}

void build_compile_pipeline(passes::PassManager& pm, const PipelineOptions& o) {
  if (!o.symbol_values.empty()) pm.add(std::make_unique<passes::SymbolValues>(o.symbol_values));
  if (!o.dims.empty()) pm.add(std::make_unique<passes::SpecializeShapes>(o.dims, o.symbol_values));
  passes::PipelineOptions popts;
  popts.opt_level = o.opt_level;
  popts.tensor_parallel = o.tensor_parallel;
  popts.tensor_parallel_stats = o.tensor_parallel_stats;
  passes::build_pipeline(pm, popts);
  if (o.auto_cast != passes::AutoCastMode::none) {
    pm.add(std::make_unique<passes::AutoCast>(o.auto_cast));
    pm.add(std::make_unique<passes::ConstantFolding>());
    pm.add(std::make_unique<passes::DeadCodeElimination>());
  }
}

}  // namespace neuronc::compiler
