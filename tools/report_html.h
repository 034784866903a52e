// `neuronc compile --report report.html`: one self-contained HTML page (no network, inline SVG
// and a small inline script) with op coverage, partitions, the memory plan, per-layer simulated
// time, the engine timeline and a roofline plot of one inference on the device model.
#pragma once

#include <string>

#include "compiler/compiler.h"

namespace neuronc::tools {

struct CompileReportInfo {
  std::string model;     // input program path
  std::string artifact;  // where the artifact was written
  std::string target = "trn1";
  std::string auto_cast = "none";
  int opt_level = 2;
};

// The page for `result` (its artifact bytes are read back and simulated). Throws
// std::runtime_error when the artifact cannot be read or simulated.
std::string render_compile_report(const compiler::CompileResult& result,
                                  const CompileReportInfo& info);

// Renders and writes the page. Throws CommandExit on I/O failure.
void write_compile_report(const std::string& path, const compiler::CompileResult& result,
                          const CompileReportInfo& info);

}  // namespace neuronc::tools
