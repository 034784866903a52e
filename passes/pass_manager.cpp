// The pass manager: ordered execution, --print-after, verification between passes.
#include "passes/pass_manager.h"

#include <chrono>
#include <iostream>

#include "ir/printer.h"
#include "ir/verifier.h"

namespace neuronc::passes {

void PassManager::run(ir::Graph& g) {
  std::ostream& os = opts_.print_stream ? *opts_.print_stream : std::cerr;
  for (const auto& pass : passes_) {
    const auto t0 = std::chrono::steady_clock::now();
    PassRecord rec;
    rec.name = std::string(pass->name());
    rec.changed = pass->run(g);
    rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rec.nodes_after = g.nodes().size();
    records_.push_back(rec);
    if (opts_.verify_each) {
      std::vector<std::string> problems = ir::verify(g);
      if (!problems.empty()) {
        throw ir::Error("after pass '" + rec.name + "': " + problems[0] +
                        (problems.size() > 1
                             ? " (and " + std::to_string(problems.size() - 1) + " more problems)"
                             : ""));
      }
    }
    if (opts_.print_after.count("all") || opts_.print_after.count(rec.name)) {
      os << "// ----- IR after " << rec.name << " -----\n" << ir::print(g);
    }
    if (opts_.after_pass) opts_.after_pass(records_.size(), passes_.size());
  }
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.emplace_back(p->name());
  return out;
}

}  // namespace neuronc::passes
