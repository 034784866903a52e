// Loads an artifact holding >= 100 MB of raw weights and prints open + verify time against
// reading the file once, and the resident memory it costs (anonymous = copies, file = mapped
// pages). Usage: artifact_load_bench [MB=128] [DIR=/tmp]. Results: bench/results/.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "artifact_format/writer.h"
#include "neuronc/neuronc.h"

namespace {

struct Rss {
  long anon_kb = 0, file_kb = 0;
};

Rss rss() {
  Rss r;
  std::ifstream f("/proc/self/status");
  std::string k;
  long v;
  std::string unit;
  while (f >> k) {
    if (k == "RssAnon:" && f >> v >> unit)
      r.anon_kb = v;
    else if (k == "RssFile:" && f >> v >> unit)
      r.file_kb = v;
  }
  return r;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int mb = argc > 1 ? std::atoi(argv[1]) : 128;
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  const std::string path = dir + "/artifact_load_bench.nca";
  namespace art = neuronc::artifact;
  {
    // mb constants of 1 MiB each (host-only, so sessions would not copy them to HBM).
    art::ArtifactWriter w;
    const uint32_t x = w.add_input("x", art::TensorDType::f32, {art::Dim::constant(4)});
    const uint32_t y = w.add_value("y", art::TensorDType::f32, {art::Dim::constant(4)});
    w.add_host_op({"aten.relu.default", {art::Arg::tensor("self", static_cast<int32_t>(x))}, {y}});
    w.add_output("y", y);
    for (int i = 0; i < mb; ++i) {
      std::vector<std::byte> bytes(1 << 20);
      for (size_t k = 0; k < bytes.size(); k += 64) bytes[k] = std::byte(k * 31 + i);
      w.add_constant("w" + std::to_string(i), art::TensorDType::f32,
                     {art::Dim::constant(256), art::Dim::constant(1024)}, std::move(bytes));
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (auto s = w.write_file(path); !s.is_ok()) {
      std::fprintf(stderr, "write: %s\n", s.message().c_str());
      return 1;
    }
    std::printf("wrote %s: %d MiB of raw weights in %.1f ms\n", path.c_str(), mb, ms_since(t0));
  }

  // Baseline: read the whole file once (page cache warm, as for the loads below).
  double read_ms;
  {
    std::vector<char> buf(1 << 22);
    const auto t0 = std::chrono::steady_clock::now();
    const int fd = ::open(path.c_str(), O_RDONLY);
    size_t total = 0;
    for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) total += static_cast<size_t>(n);
    ::close(fd);
    read_ms = ms_since(t0);
    std::printf("read the file once:               %8.2f ms (%zu bytes)\n", read_ms, total);
  }
  for (bool checksums : {false, true}) {
    const Rss before = rss();
    const auto t0 = std::chrono::steady_clock::now();
    neuronc::LoadOptions o;
    o.verify_segment_checksums = checksums;
    auto model = neuronc::Model::load(path, o);
    const double ms = ms_since(t0);
    const Rss after = rss();
    if (!model) {
      std::fprintf(stderr, "load: %s\n", model.status().to_string().c_str());
      return 1;
    }
    std::printf(
        "Model::load (segment CRCs %-3s):   %8.2f ms (%.2fx the read)  rss anon +%ld KiB, "
        "file +%ld KiB, zero-copy constants: %s\n",
        checksums ? "on" : "off", ms, ms / read_ms, after.anon_kb - before.anon_kb,
        after.file_kb - before.file_kb, model->info().zero_copy_constants ? "yes" : "no");
  }
  std::remove(path.c_str());
  return 0;
}
