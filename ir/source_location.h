// Where a node came from in the user's Python program, kept so errors and numeric mismatches
// can name the line that produced the node.
#pragma once

#include <string>

namespace neuronc::ir {

struct SourceLocation {
  std::string file;         // innermost user frame of stack_trace, e.g. "model.py"
  int line = 0;             // 0: unknown
  std::string function;     // enclosing function, e.g. "forward"
  std::string code;         // the source line text when the trace carries it
  std::string module_path;  // innermost nn_module_stack entry, e.g. "encoder.layer.0.attention"
  std::string stack_trace;  // the full trace as written by PyTorch

  bool empty() const { return file.empty() && module_path.empty() && stack_trace.empty(); }
  // "model.py:12 (encoder.layer.0)" — or "" when nothing is known.
  std::string to_string() const;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

// Extracts the innermost frame ("File \"x.py\", line 12, in forward\n    code") of a Python
// stack trace, the form torch.export stores in node metadata.
SourceLocation parse_python_stack_trace(const std::string& trace);

}  // namespace neuronc::ir
