// Terminal-aware output helpers for the neuronc subcommands.
#include "tools/cli_output.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "tools/mpi_processes.h"

namespace neuronc::tools {

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

void print_error(const std::string& message, const std::string& location) {
  // One of several MPI ranks other than 0 says which (every rank may report the same error).
  const MpiLaunch launch = mpi_launch();
  const std::string who = launch.rank > 0 ? "neuronc (MPI rank " + std::to_string(launch.rank) +
                                                " of " + std::to_string(launch.size) + ")"
                                          : "neuronc";
  std::fprintf(stderr, "%s: error: %s\n", who.c_str(), message.c_str());
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

std::string eta_line(const std::string& step, double fraction, double elapsed,
                     double elapsed_at_fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  char buf[96];
  std::snprintf(buf, sizeof buf, " %.0f %% \u00b7 %.0f s", 100 * fraction, elapsed);
  std::string line = step + buf;
  if (fraction >= 0.02 && fraction < 1) {
    const double left = std::max(0.0, elapsed_at_fraction / fraction - elapsed);
    std::snprintf(buf, sizeof buf, " \u00b7 ~%.0f s left", std::max(1.0, left));
    line += buf;
  }
  return line;
}

struct EtaProgress::State {
  using Clock = std::chrono::steady_clock;
  std::mutex m;
  std::condition_variable cv;
  bool stop = false, drawn = false;
  std::string step;
  double fraction = 0, at = 0;
  Clock::time_point start = Clock::now();
  std::thread ticker;

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  void draw() {  // with `m` held
    const double e = elapsed();
    if (e < 1.0 || step.empty()) return;
    progress(eta_line(step, fraction, e, at));
    drawn = true;
  }
};

EtaProgress::EtaProgress() : s_(std::make_unique<State>()) {
  if (!stderr_is_terminal()) return;
  s_->ticker = std::thread([s = s_.get()] {
    std::unique_lock lock(s->m);
    while (!s->cv.wait_for(lock, std::chrono::seconds(1), [s] { return s->stop; })) s->draw();
  });
}

EtaProgress::~EtaProgress() {
  {
    std::lock_guard lock(s_->m);
    s_->stop = true;
  }
  s_->cv.notify_all();
  if (s_->ticker.joinable()) s_->ticker.join();
  if (s_->drawn) progress_done();
}

void EtaProgress::update(const std::string& step, double fraction) {
  std::lock_guard lock(s_->m);
  s_->step = step;
  s_->fraction = fraction;
  s_->at = s_->elapsed();
  if (s_->ticker.joinable()) s_->draw();
}

namespace {

// "SYM=REST" of option `flag`: the symbol and the text after '='; a usage error otherwise.
std::pair<std::string, std::string> split_binding(const std::string& item, const std::string& flag,
                                                  const char* form) {
  const size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
    throw CommandExit{kExitUsage, flag + " '" + item + "': expected " + form, ""};
  return {item.substr(0, eq), item.substr(eq + 1)};
}

// `text` as a whole integer; a usage error naming the option's `item` otherwise.
int64_t whole_int(const std::string& text, const std::string& item, const std::string& flag) {
  try {
    size_t used = 0;
    const int64_t v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (...) {
  }
  throw CommandExit{kExitUsage, flag + " '" + item + "': '" + text + "' is not an integer", ""};
}

}  // namespace

std::map<std::string, int64_t> parse_dim_bindings(const std::vector<std::string>& items,
                                                  const std::string& flag) {
  std::map<std::string, int64_t> out;
  for (const std::string& d : items) {
    const auto [sym, value] =
        split_binding(d, flag, ("SYMBOL=VALUE, e.g. " + flag + " s0=8").c_str());
    out[sym] = whole_int(value, d, flag);
  }
  return out;
}

std::map<std::string, std::vector<int64_t>> parse_bucket_lists(
    const std::vector<std::string>& items) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& b : items) {
    const auto [sym, list] =
        split_binding(b, "--buckets", "SYMBOL=V1,V2,..., e.g. --buckets s0=8,32,128");
    std::vector<int64_t>& values = out[sym];
    for (size_t at = 0; at <= list.size();) {
      size_t end = list.find(',', at);
      if (end == std::string::npos) end = list.size();
      values.push_back(whole_int(list.substr(at, end - at), b, "--buckets"));
      at = end + 1;
    }
  }
  return out;
}

}  // namespace neuronc::tools
