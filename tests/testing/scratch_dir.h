// A test process's own scratch directory: <temporary directory>/<prefix>_<pid> (or under another
// parent directory), made on first use and removed, with everything in it, when the process that
// made it exits. The pid keeps the processes ctest runs side by side (and CI's sanitizer builds)
// apart; the removal keeps a suite of some thousand test processes from filling the disk with
// compiled artifacts. Set NEURONC_KEEP_TEST_SCRATCH=1 to keep them for a look after a failure.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace neuronc::testing {

namespace scratch_detail {

class Registry {
 public:
  std::filesystem::path get(const std::filesystem::path& parent, const std::string& prefix) {
    const std::filesystem::path d =
        parent / (prefix + "_" + std::to_string(static_cast<long>(::getpid())));
    std::lock_guard lock(mutex_);
    std::filesystem::create_directories(d);
    bool known = false;
    for (const std::filesystem::path& p : made_) known = known || p == d;
    if (!known) made_.push_back(d);
    return d;
  }
  ~Registry() {
    // A child forked by a test (a death test's, say) that exits normally runs this too: it
    // must not take away the directories of the process that made them.
    if (::getpid() != owner_) return;
    const char* keep = std::getenv("NEURONC_KEEP_TEST_SCRATCH");
    if (keep != nullptr && *keep != '\0' && std::string(keep) != "0") return;
    for (const std::filesystem::path& p : made_) {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::filesystem::path> made_;
  pid_t owner_ = ::getpid();
};

}  // namespace scratch_detail

inline std::filesystem::path scratch_dir(
    const std::string& prefix,
    const std::filesystem::path& parent = std::filesystem::temp_directory_path()) {
  static scratch_detail::Registry registry;
  return registry.get(parent, prefix);
}

}  // namespace neuronc::testing
