// load_program: map the file, identify the container, dispatch to its reader, record the hash.
#include "frontend/load.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "frontend/container.h"
#include "frontend/pt2_reader.h"
#include "frontend/sha256.h"
#include "frontend/torchscript_reader.h"

namespace neuronc::frontend {

namespace {

// The digest of `f`, or nullopt once `*stop` is set (checked between 4 MiB reads).
std::optional<std::string> sha256_unless_stopped(const MappedFile& f,
                                                 const std::atomic<bool>* stop) {
  Sha256 h;
  if (f.mapped()) {
    constexpr size_t kChunk = size_t{4} << 20;
    std::vector<std::byte> buf(std::min(kChunk, f.size()));
    for (uint64_t off = 0; off < f.size(); off += kChunk) {
      if (stop && stop->load(std::memory_order_relaxed)) return std::nullopt;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, f.size() - off));
      if (!f.read_at(off, buf.data(), n))
        throw Error(f.path() + ": reading " + std::to_string(n) + " bytes at offset " +
                    std::to_string(off) + " failed: " + std::strerror(errno));
      h.update(std::span<const std::byte>(buf.data(), n));
    }
  } else {
    h.update(f.bytes());
  }
  return digest_hex(h.finish());
}

}  // namespace

std::string file_sha256(const MappedFile& f) {
  return *sha256_unless_stopped(f, nullptr);
}

namespace {

// The program in `file`, with no sha256 yet.
LoadedProgram read_program(std::shared_ptr<MappedFile> file) {
  const std::string name = file->path();
  ZipArchive zip;
  ContainerInfo info = identify_container(file->bytes(), name, &zip);
  LoadedProgram p;
  switch (info.kind) {
    case ContainerKind::pt2_archive:
      p = read_pt2_archive(file, zip, info.root);
      break;
    case ContainerKind::legacy_export_zip:
      p = read_legacy_export_zip(file, zip);
      break;
    case ContainerKind::torchscript:
      p = read_torchscript(file);
      break;
    case ContainerKind::torch_save:
      throw Error(name + ": is a torch.save checkpoint (" + info.root +
                  "/data.pkl without constants.pkl), which holds weights but no program. Export "
                  "the model with torch.export.export(model, example_inputs) and "
                  "torch.export.save(ep, 'model.pt2')");
    case ContainerKind::lite_interpreter:
      throw Error(name + ": is a PyTorch Mobile lite-interpreter archive (" + info.root +
                  "/bytecode.pkl), which is not supported; export the model with "
                  "torch.export.save to a .pt2 file");
    case ContainerKind::unknown:
      throw Error(name + ": unrecognised container");
  }
  return p;
}

// Reads the program in `file` while its SHA-256 is made on a thread of its own. A mapped file is
// hashed from the start, beside the parse: reading and hashing a large file takes longer than
// parsing it. A parse that throws stops that hash (within one read) before the error goes on.
// Bytes already in memory (tests, fuzzers) are hashed after a parse that succeeds.
LoadedProgram read_program_hashing(std::shared_ptr<MappedFile> file) {
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto hash = [file, stop] {
    std::optional<std::string> d = sha256_unless_stopped(*file, stop.get());
    if (!d) throw Error(file->path() + ": hashing stopped");
    return *std::move(d);
  };
  if (!file->mapped()) {
    LoadedProgram p = read_program(file);
    p.sha256 = std::async(std::launch::async, std::move(hash)).share();
    return p;
  }
  std::shared_future<std::string> sha256 = std::async(std::launch::async, std::move(hash)).share();
  try {
    LoadedProgram p = read_program(std::move(file));
    p.sha256 = std::move(sha256);
    return p;
  } catch (...) {
    stop->store(true, std::memory_order_relaxed);
    throw;  // `sha256` waits for the thread, now one read at most
  }
}

}  // namespace

LoadedProgram load_program(const std::string& path, std::span<const KnownDigest> known) {
  std::shared_ptr<MappedFile> file = MappedFile::open(path);
  std::shared_future<std::string> sha256;
  for (const KnownDigest& k : known)
    if (k.file == file->identity() && k.sha256.valid()) sha256 = k.sha256;
  if (!sha256.valid()) return read_program_hashing(std::move(file));
  LoadedProgram p = read_program(std::move(file));
  p.sha256 = std::move(sha256);
  return p;
}

LoadedProgram load_program(std::shared_ptr<MappedFile> file) {
  return read_program_hashing(std::move(file));
}

std::shared_future<std::string> digest_ready(std::string sha256) {
  std::promise<std::string> p;
  p.set_value(std::move(sha256));
  return p.get_future().share();
}

bool is_program_set(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) &&
         std::filesystem::is_regular_file(std::filesystem::path(path) / "manifest.json", ec);
}

std::vector<std::pair<std::string, LoadedProgram>> load_program_set(
    const std::string& dir, ProgramSetHeads* heads, std::span<const KnownDigest> known) {
  const std::filesystem::path manifest = std::filesystem::path(dir) / "manifest.json";
  const std::string where = manifest.string();
  std::ifstream in(manifest);
  if (!in) throw Error(where + ": cannot read it");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json m = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) throw Error(where + ": expected a JSON object");
  const std::string kFormat = "neuronc-causal-lm/1";
  if (!m.contains("format") || !m["format"].is_string() || m["format"] != kFormat)
    throw Error(where + ": \"format\" is " +
                (m.contains("format") ? m["format"].dump() : "absent") + ", expected \"" + kFormat +
                "\"");
  if (!m.contains("programs") || !m["programs"].is_array() || m["programs"].empty())
    throw Error(where + ": expected a non-empty \"programs\" list");
  if (heads) {
    auto count = [&](const char* key) -> int64_t {
      if (!m.contains(key)) return 0;
      if (!m[key].is_number_integer() || m[key].get<int64_t>() < 1)
        throw Error(where + ": \"" + key + "\" is " + m[key].dump() +
                    ", expected a positive integer");
      return m[key].get<int64_t>();
    };
    heads->attention = count("attention_heads");
    heads->kv = count("kv_heads");
  }
  std::vector<std::pair<std::string, LoadedProgram>> out;
  for (size_t i = 0; i < m["programs"].size(); ++i) {
    const nlohmann::json& p = m["programs"][i];
    const std::string at = where + ": programs[" + std::to_string(i) + "]";
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("file") ||
        !p["file"].is_string())
      throw Error(at + ": expected an object with string \"name\" and \"file\"");
    const std::string file = p["file"];
    const std::filesystem::path rel(file);
    if (file.empty() || rel.is_absolute() ||
        std::find(rel.begin(), rel.end(), std::filesystem::path("..")) != rel.end())
      throw Error(at + ": file '" + file + "' must be a relative path inside " + dir);
    for (const auto& [name, prog] : out)
      if (name == p["name"]) throw Error(at + ": name '" + name + "' appears twice");
    out.emplace_back(p["name"].get<std::string>(),
                     load_program((std::filesystem::path(dir) / rel).string(), known));
  }
  return out;
}

}  // namespace neuronc::frontend
