// Loads a PT2 archive of >= 100 MB and shows its weights are not copied: load time against
// reading the file once, resident memory growth (anonymous = copies, file = mapped pages), and
// the bytes of constant payloads that lie outside the file mapping (copies). By default it writes
// an archive of N linear layers (2048 x 2048 f32 = 16 MiB each) laid out as PyTorch 2.9+ writes
// them (raw weight records, 64-byte aligned, stored); any other .pt2 can be given instead.
// Usage: pt2_load_bench [MB=128] [DIR=/tmp] | pt2_load_bench --file MODEL.pt2
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "frontend/container.h"
#include "frontend/load.h"
#include "frontend/pt2_reader.h"
#include "frontend/sha256.h"
#include "frontend/zip_reader.h"
#include "tests/frontend/zip_builder.h"

namespace {

namespace fe = neuronc::frontend;

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
    if (k == "RssAnon:" && f >> v >> unit) {
      r.anon_kb = v;
    } else if (k == "RssFile:" && f >> v >> unit) {
      r.file_kb = v;
    }
  }
  return r;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The ExportedProgram JSON (schema 8.20) of x -> linear_0 -> ... -> linear_{n-1}.
std::string program_json(int layers, int d) {
  auto tensor_meta = [](std::vector<int> sizes) {
    std::string s = "{\"dtype\": 7, \"sizes\": [";
    for (size_t i = 0; i < sizes.size(); ++i) {
      s += (i ? ", " : "") + std::string("{\"as_int\": ") + std::to_string(sizes[i]) + "}";
    }
    s += "], \"requires_grad\": false, \"device\": {\"type\": \"cpu\", \"index\": null}, ";
    s += "\"strides\": [";
    for (size_t i = 0; i < sizes.size(); ++i) {
      int stride = i + 1 < sizes.size() ? sizes[i + 1] : 1;
      s += (i ? ", " : "") + std::string("{\"as_int\": ") + std::to_string(stride) + "}";
    }
    return s + "], \"storage_offset\": {\"as_int\": 0}, \"layout\": 7}";
  };
  std::string values = "\"x\": " + tensor_meta({4, d});
  std::string inputs, nodes, specs;
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    std::string w = "p_fc" + std::to_string(i) + "_weight";
    std::string out = "linear_" + std::to_string(i);
    values +=
        ", \"" + w + "\": " + tensor_meta({d, d}) + ", \"" + out + "\": " + tensor_meta({4, d});
    inputs += "{\"as_tensor\": {\"name\": \"" + w + "\"}}, ";
    specs += "{\"parameter\": {\"arg\": {\"name\": \"" + w + "\"}, \"parameter_name\": \"fc" +
             std::to_string(i) + ".weight\"}}, ";
    nodes += std::string(i ? ", " : "") +
             "{\"target\": \"torch.ops.aten.linear.default\", \"inputs\": ["
             "{\"name\": \"input\", \"arg\": {\"as_tensor\": {\"name\": \"" +
             prev +
             "\"}}, \"kind\": 1}, "
             "{\"name\": \"weight\", \"arg\": {\"as_tensor\": {\"name\": \"" +
             w +
             "\"}}, \"kind\": 1}], "
             "\"outputs\": [{\"as_tensor\": {\"name\": \"" +
             out +
             "\"}}], \"metadata\": {}, "
             "\"name\": \"" +
             out + "\"}";
    prev = out;
  }
  return "{\"graph_module\": {\"graph\": {\"inputs\": [" + inputs +
         "{\"as_tensor\": {\"name\": \"x\"}}], \"outputs\": [{\"as_tensor\": {\"name\": \"" + prev +
         "\"}}], \"nodes\": [" + nodes + "], \"tensor_values\": {" + values +
         "}, \"sym_int_values\": {}, \"sym_bool_values\": {}, \"is_single_tensor_return\": false, "
         "\"custom_obj_values\": {}, \"sym_float_values\": {}}, \"signature\": {\"input_specs\": "
         "[" +
         specs +
         "{\"user_input\": {\"arg\": {\"as_tensor\": {\"name\": \"x\"}}}}], "
         "\"output_specs\": [{\"user_output\": {\"arg\": {\"as_tensor\": {\"name\": \"" +
         prev +
         "\"}}}}]}, \"module_call_graph\": [], \"metadata\": {}}, \"opset_version\": {\"aten\": "
         "10}, "
         "\"range_constraints\": {}, \"schema_version\": {\"major\": 8, \"minor\": 20}, "
         "\"verifiers\": [\"TRAINING\"], \"torch_version\": \"2.14.1+bench\", \"guards_code\": []}";
}

std::string weights_config(int layers, int d) {
  std::string s = "{\"config\": {";
  for (int i = 0; i < layers; ++i) {
    s += std::string(i ? ", " : "") + "\"fc" + std::to_string(i) +
         ".weight\": {\"path_name\": " + "\"weight_" + std::to_string(i) +
         "\", \"is_param\": true, \"use_pickle\": false, " +
         "\"tensor_meta\": {\"dtype\": 7, \"sizes\": [{\"as_int\": " + std::to_string(d) +
         "}, {\"as_int\": " + std::to_string(d) + "}], \"requires_grad\": false, \"device\": " +
         "{\"type\": \"cpu\", \"index\": null}, \"strides\": [{\"as_int\": " + std::to_string(d) +
         "}, {\"as_int\": 1}], \"storage_offset\": {\"as_int\": 0}, \"layout\": 7}}";
  }
  return s + "}}";
}

std::string write_archive(int mb, const std::string& dir) {
  constexpr int kDim = 2048;  // 16 MiB of f32 per layer
  const int layers = (mb + 15) / 16;
  std::vector<fe::testing::ZipFileSpec> files;
  files.emplace_back("model/archive_format", "pt2");
  files.emplace_back("model/archive_version", "0");
  files.emplace_back("model/byteorder", "little");
  files.emplace_back("model/models/model.json", program_json(layers, kDim));
  files.emplace_back("model/data/weights/model_weights_config.json", weights_config(layers, kDim));
  files.emplace_back("model/data/constants/model_constants_config.json", "{\"config\": {}}");
  for (int i = 0; i < layers; ++i) {
    std::string w(size_t{kDim} * kDim * 4, '\0');
    for (size_t k = 0; k < w.size(); k += 64) w[k] = static_cast<char>(k * 31 + i);
    files.emplace_back("model/data/weights/weight_" + std::to_string(i), std::move(w));
  }
  std::string zip = fe::testing::build_zip(files);
  const std::string path = dir + "/pt2_load_bench.pt2";
  std::ofstream(path, std::ios::binary).write(zip.data(), static_cast<std::streamsize>(zip.size()));
  return path;
}

// Reads the whole file once with read(2): the floor any loader that touches every byte pays.
double read_once_ms(const std::string& path, size_t* bytes) {
  auto t0 = std::chrono::steady_clock::now();
  int fd = ::open(path.c_str(), O_RDONLY);
  std::vector<char> buf(size_t{8} << 20);
  size_t total = 0;
  for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) total += static_cast<size_t>(n);
  ::close(fd);
  *bytes = total;
  return ms_since(t0);
}

// Payload bytes outside the file mapping (copies), and inside it (zero-copy views).
void count_payloads(const fe::LoadedProgram& p, size_t* viewed, size_t* copied, size_t* tensors) {
  const std::byte* lo = p.file->data();
  const std::byte* hi = lo + p.file->size();
  *viewed = *copied = *tensors = 0;
  for (const auto& in : p.graph->inputs()) {
    const auto* pl = in.value->payload();
    if (pl == nullptr) continue;
    ++*tensors;
    bool inside = pl->data >= lo && pl->data + pl->nbytes <= hi;
    (inside ? *viewed : *copied) += pl->nbytes;
  }
}

void report(const char* what, double ms, double read_ms, Rss before, const fe::LoadedProgram& p) {
  Rss after = rss();
  size_t viewed = 0, copied = 0, tensors = 0;
  count_payloads(p, &viewed, &copied, &tensors);
  std::printf(
      "%-34s %9.2f ms (%5.2fx the read)  rss anon %+ld KiB, file %+ld KiB; %zu weights: "
      "%.1f MiB viewed in the mapping, %zu bytes copied\n",
      what, ms, ms / read_ms, after.anon_kb - before.anon_kb, after.file_kb - before.file_kb,
      tensors, static_cast<double>(viewed) / (1 << 20), copied);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  if (argc > 2 && std::strcmp(argv[1], "--file") == 0) {
    path = argv[2];
  } else {
    const int mb = argc > 1 ? std::atoi(argv[1]) : 128;
    const std::string dir = argc > 2 ? argv[2] : "/tmp";
    auto t0 = std::chrono::steady_clock::now();
    path = write_archive(mb, dir);
    std::printf("wrote %s: %d MiB of raw weights in %.1f ms\n", path.c_str(), mb, ms_since(t0));
  }
  size_t bytes = 0;
  read_once_ms(path, &bytes);  // warm the page cache so both sides see the same cache state
  const double read_ms = read_once_ms(path, &bytes);
  std::printf("read the file once:                 %9.2f ms (%zu bytes, %.0f MiB/s)\n", read_ms,
              bytes, static_cast<double>(bytes) / (1 << 20) / (read_ms / 1000));

  {
    // The reader alone: container detection, JSON, weight binding (no file hash).
    Rss before = rss();
    auto t0 = std::chrono::steady_clock::now();
    auto file = fe::MappedFile::open(path);
    fe::ZipArchive zip;
    fe::ContainerInfo info = fe::identify_container(file->bytes(), file->path(), &zip);
    fe::LoadedProgram p = fe::read_pt2_archive(file, zip, info.root);
    double ms = ms_since(t0);
    report("read_pt2_archive (no hash):", ms, read_ms, before, p);
  }
  {
    // load_program: the above plus the SHA-256 of the whole file that goes into the artifact.
    Rss before = rss();
    auto t0 = std::chrono::steady_clock::now();
    fe::LoadedProgram p = fe::load_program(path);
    double ms = ms_since(t0);
    report("load_program (with SHA-256):", ms, read_ms, before, p);
    std::printf("  %zu nodes, sha256 %.16s...\n", p.graph->nodes().size(), p.sha256.get().c_str());
  }
  return 0;
}
