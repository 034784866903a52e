// Terminal-aware output helpers for the neuronc subcommands.
#include "tools/cli_output.h"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

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

std::map<std::string, int64_t> parse_dim_bindings(const std::vector<std::string>& items,
                                                  const std::string& flag) {
  std::map<std::string, int64_t> out;
  for (const std::string& d : items) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == d.size())
      throw CommandExit{kExitUsage,
                        flag + " '" + d + "': expected SYMBOL=VALUE, e.g. " + flag + " s0=8", ""};
    try {
      size_t used = 0;
      out[d.substr(0, eq)] = std::stoll(d.substr(eq + 1), &used);
      if (used != d.size() - eq - 1) throw std::invalid_argument(d);
    } catch (...) {
      throw CommandExit{kExitUsage, flag + " '" + d + "': the value is not an integer", ""};
    }
  }
  return out;
}

}  // namespace neuronc::tools
