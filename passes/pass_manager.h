// Runs passes in order, optionally printing the IR after chosen passes and verifying the graph
// between passes (on by default in debug builds).
// Thread-safety: a PassManager is used by one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace neuronc::passes {

struct PassManagerOptions {
  // Pass names after which to print the IR; "all" prints after every pass.
  std::set<std::string> print_after;
  std::ostream* print_stream = nullptr;  // where print_after goes (std::cerr when null)
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
  // Called after each pass with how many of the passes have run (progress reports).
  std::function<void(size_t done, size_t total)> after_pass;
};

struct PassRecord {
  std::string name;
  bool changed = false;
  double seconds = 0;
  size_t nodes_after = 0;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions opts = {}) : opts_(std::move(opts)) {}
  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Runs every pass once, in order. Throws ir::Error, naming the pass, when verification
  // fails after it.
  void run(ir::Graph& g);
  const std::vector<PassRecord>& records() const { return records_; }
  std::vector<std::string> names() const;

 private:
  PassManagerOptions opts_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

}  // namespace neuronc::passes
