// Terminal-aware output helpers for the neuronc subcommands.
#include "tools/cli_output.h"

#include <unistd.h>

#include <cstdio>

namespace neuronc::tools {

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

void print_error(const std::string& message, const std::string& location) {
  std::fprintf(stderr, "neuronc: error: %s\n", message.c_str());
  if (!location.empty()) std::fprintf(stderr, "  at %s\n", location.c_str());
}

void progress(const std::string& line) {
  if (!stderr_is_terminal()) return;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
}

void progress_done() {
  if (!stderr_is_terminal()) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace neuronc::tools
