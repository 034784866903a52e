// The MPI ranks as a ProcessGroup (mpi_processes.h).
#include "tools/mpi_processes.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli_output.h"

#ifdef NEURONC_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (no MPI C++ bindings to link)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace neuronc::tools {
namespace {

int env_int(const char* name, int otherwise) {
  const char* v = std::getenv(name);
  if (!v || !*v) return otherwise;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return *end == '\0' && x >= 0 && x <= INT_MAX ? static_cast<int>(x) : otherwise;
}

#ifdef NEURONC_HAVE_MPI

class MpiProcesses final : public neuronc::ProcessGroup {
 public:
  MpiProcesses() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiProcesses() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // MPI counts are ints: the bytes go in rounds of at most INT_MAX / size per rank.
  Result<std::vector<std::vector<std::byte>>> all_gather(std::span<const std::byte> mine) override {
    const auto n = static_cast<unsigned long long>(mine.size());
    std::vector<unsigned long long> sizes(static_cast<size_t>(size_));
    if (int rc = MPI_Allgather(&n, 1, MPI_UNSIGNED_LONG_LONG, sizes.data(), 1,
                               MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
        rc != MPI_SUCCESS)
      return failure("MPI_Allgather", rc);
    std::vector<std::vector<std::byte>> all(sizes.size());
    unsigned long long most = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      all[k].resize(sizes[k]);
      most = std::max(most, sizes[k]);
    }
    const unsigned long long round = static_cast<unsigned long long>(INT_MAX / size_);
    std::vector<int> counts(sizes.size()), displs(sizes.size());
    std::vector<std::byte> buf;
    for (unsigned long long at = 0; at < most; at += round) {
      int total = 0;
      for (size_t k = 0; k < sizes.size(); ++k) {
        counts[k] = static_cast<int>(sizes[k] > at ? std::min(round, sizes[k] - at) : 0);
        displs[k] = total;
        total += counts[k];
      }
      buf.resize(static_cast<size_t>(total));
      const int mine_count = counts[static_cast<size_t>(rank_)];
      if (int rc =
              MPI_Allgatherv(mine.data() + (mine_count ? at : 0), mine_count, MPI_BYTE, buf.data(),
                             counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD);
          rc != MPI_SUCCESS)
        return failure("MPI_Allgatherv", rc);
      for (size_t k = 0; k < sizes.size(); ++k)
        std::copy(buf.begin() + displs[k], buf.begin() + displs[k] + counts[k],
                  all[k].begin() + static_cast<std::ptrdiff_t>(counts[k] ? at : 0ULL));
    }
    return all;
  }

 private:
  static Status failure(const char* call, int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return Status(StatusCode::internal, std::string(call) + " failed: " + std::string(text, len));
  }
  int rank_ = 0, size_ = 1;
};

std::unique_ptr<MpiProcesses>& the_processes() {
  static std::unique_ptr<MpiProcesses> p;
  return p;
}

#endif

}  // namespace

MpiLaunch mpi_launch() {
  MpiLaunch l;
  l.size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
  l.rank = env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", 0));
  if (l.size < 1 || l.rank >= l.size) l = {};
  return l;
}

neuronc::ProcessGroup* mpi_processes() {
  const MpiLaunch launch = mpi_launch();
  if (launch.size <= 1) return nullptr;
#ifdef NEURONC_HAVE_MPI
  auto& p = the_processes();
  if (!p) {
    p = std::make_unique<MpiProcesses>();
    std::atexit([] { the_processes().reset(); });
    if (p->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
      throw CommandExit{
          kExitError, "MPI rank " + std::to_string(p->rank()) + ": cannot send stdout to /dev/null",
          ""};
  }
  return p.get();
#else
  throw CommandExit{kExitUsage,
                    "launched as one of " + std::to_string(launch.size) +
                        " MPI processes, but this neuronc was built without MPI (install "
                        "libopenmpi-dev and rebuild to split the cores over ranks)",
                    ""};
#endif
}

void abort_mpi_launch(int code) {
#ifdef NEURONC_HAVE_MPI
  if (auto& p = the_processes(); p && p->size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
#else
  (void)code;
#endif
}

}  // namespace neuronc::tools
