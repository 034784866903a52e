// Shared conventions of the neuronc subcommands: exit codes, error lines, progress on a
// terminal only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace neuronc::tools {

// Exit codes (documented in docs/CLI.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,     // bad input, unsupported model, I/O failure
  kExitUsage = 2,     // bad command line
  kExitMismatch = 3,  // verify: outputs differ from the reference beyond tolerance
};

// Thrown by a subcommand to end with a specific exit code; main prints the message (when not
// empty) as one error line.
struct CommandExit {
  int code = kExitError;
  std::string message;
  std::string location;
};

// True when stderr is a terminal: progress lines are printed only then.
bool stderr_is_terminal();
// Prints "neuronc: error: <message>" (+ "  at <location>" when given) to stderr.
void print_error(const std::string& message, const std::string& location = "");
// Transient progress line on a terminal ("\r[2/5] reading weights"); nothing when piped.
void progress(const std::string& line);
void progress_done();

// A long-running step's progress line with its elapsed time and an ETA, redrawn every second
// (by a ticker thread) while the step runs: "[3/4] generating code ... 46 % · 9 s · ~11 s
// left". `fraction` is the caller's estimate of the work done; the ETA extrapolates the time
// the estimate took so far. Nothing is printed when stderr is not a terminal, nor during the
// first second. The destructor stops the ticker and clears the line. Thread-safe.
class EtaProgress {
 public:
  EtaProgress();
  ~EtaProgress();
  EtaProgress(const EtaProgress&) = delete;
  EtaProgress& operator=(const EtaProgress&) = delete;
  void update(const std::string& step, double fraction);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The line EtaProgress draws: `step` with the fraction, the seconds elapsed and the time left,
// extrapolated from `fraction` having been reached at `elapsed_at_fraction` seconds (no ETA
// below 2 % done, where the extrapolation means nothing).
std::string eta_line(const std::string& step, double fraction, double elapsed,
                     double elapsed_at_fraction);

// `--dim SYMBOL=VALUE` options (repeatable) as a map; a malformed one is a usage error naming
// `flag`.
std::map<std::string, int64_t> parse_dim_bindings(const std::vector<std::string>& items,
                                                  const std::string& flag = "--dim");
// `--buckets SYMBOL=V1,V2,...` options (repeatable) as a map of value lists.
std::map<std::string, std::vector<int64_t>> parse_bucket_lists(
    const std::vector<std::string>& items);

}  // namespace neuronc::tools
