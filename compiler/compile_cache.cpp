// The compile cache (compile_cache.h).
#include "compiler/compile_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "artifact_format/artifact.h"
#include "artifact_format/crc32c.h"
#include "artifact_format/writer.h"
#include "frontend/load.h"
#include "frontend/mapped_file.h"
#include "frontend/sha256.h"

#ifndef NEURONC_VERSION
#define NEURONC_VERSION "0.0.0"
#endif

namespace neuronc::compiler {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using frontend::read_exactly;

constexpr char kEntryMagic[8] = {'N', 'C', 'C', 'A', 'C', 'H', 'E', '\x01'};
constexpr uint32_t kEntryVersion = 2;  // 1: the artifact inside the entry file
constexpr size_t kEntryHeader = 80;    // see encode_cache_entry
constexpr uint64_t kMaxReportBytes = uint64_t{64} << 20;
constexpr const char* kSourceDigestTag = "neuronc-source-digest 1";
constexpr int64_t kRacyNs = 2'000'000'000;  // a file modified this close to its hashing is re-read

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string errno_text() {
  return std::strerror(errno);
}

int64_t ns(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The state of `path` as stat(2) sees it; false when it cannot be read.
bool stat_source(const fs::path& path, CacheSource* s) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  s->path = path;
  s->file = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
             static_cast<uint64_t>(st.st_size), ns(st.st_mtim), ns(st.st_ctim)};
  return true;
}

std::string sha256_text(const std::string& s) {
  return frontend::sha256_hex(std::as_bytes(std::span<const char>(s.data(), s.size())));
}

// A name no other writer (thread or process) of this directory uses: `final` with a suffix.
fs::path temporary_beside(const fs::path& final_path) {
  static std::atomic<uint64_t> counter{0};
  const uint64_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return final_path.string() + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(tid % 1000000007) + "." + std::to_string(counter++);
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A file created under a temporary name and renamed to its final one by commit(); removed when
// it is not committed. Created with mode 0666 less the umask, as any file a user writes.
class AtomicFile {
 public:
  explicit AtomicFile(fs::path final_path)
      : final_(std::move(final_path)), temp_(temporary_beside(final_)) {
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) error_ = "cannot create '" + temp_.string() + "': " + errno_text();
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }
  void write(const void* data, size_t n) {
    if (ok() && !write_all(fd_, data, n))
      error_ = "writing '" + temp_.string() + "' failed: " + errno_text();
  }
  void fail(std::string why) {
    if (ok()) error_ = std::move(why);
  }
  bool commit() {
    if (!ok()) return false;
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      error_ = "writing '" + temp_.string() + "' failed: " + errno_text();
      return false;
    }
    if (!artifact::replace_file(temp_.string(), final_.string())) {
      error_ =
          "cannot rename '" + temp_.string() + "' to '" + final_.string() + "': " + errno_text();
      return false;
    }
    committed_ = true;
    return true;
  }

 private:
  fs::path final_, temp_;
  int fd_ = -1;
  bool committed_ = false;
  std::string error_;
};

// Copies `n` bytes at `offset` of `in` to the end of `out`: in the kernel (copy_file_range,
// which a filesystem with reflinks makes a clone), else through a buffer.
bool copy_range(int in, uint64_t offset, uint64_t n, AtomicFile& out) {
  loff_t off = static_cast<loff_t>(offset);
  uint64_t left = n;
  while (left > 0) {
    const ssize_t c =
        ::copy_file_range(in, &off, out.fd(), nullptr, std::min<uint64_t>(left, 1u << 30), 0);
    if (c > 0) {
      left -= static_cast<uint64_t>(c);
      continue;
    }
    if (c < 0 && errno == EINTR) continue;
    if (c == 0 || errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)
      break;  // fall back to read and write
    return false;
  }
  std::vector<char> buf(size_t{4} << 20);
  while (left > 0) {
    const size_t r = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    if (!read_exactly(in, buf.data(), r, static_cast<uint64_t>(off))) return false;
    out.write(buf.data(), r);
    if (!out.ok()) return false;
    off += static_cast<loff_t>(r);
    left -= r;
  }
  return true;
}

// --- The report as JSON (everything of a CompileResult but the artifact and debug values) -----

json report_json(const CompileResult& r) {
  json j;
  j["container"] = r.container;
  j["torch_version"] = r.torch_version;
  j["imported_nodes"] = r.imported_nodes;
  j["optimized_nodes"] = r.optimized_nodes;
  j["partitions"] = json::array();
  for (const PartitionReport& p : r.partitions)
    j["partitions"].push_back({{"device", p.device},
                               {"nodes", p.nodes},
                               {"instructions", p.instructions},
                               {"hbm_bytes", p.hbm_bytes},
                               {"sbuf_peak_bytes", p.sbuf_peak_bytes},
                               {"psum_peak_bytes", p.psum_peak_bytes},
                               {"flops", p.flops}});
  j["host_nodes"] = json::array();
  for (const HostNodeReport& h : r.host_nodes)
    j["host_nodes"].push_back(
        {{"node", h.node}, {"op", h.op}, {"reason", h.reason}, {"location", h.location}});
  j["specialized"] = r.specialized;
  j["specialized_from"] = r.specialized_from;
  j["buckets"] = json::array();
  for (const BucketSymbol& b : r.buckets)
    j["buckets"].push_back({{"name", b.name},
                            {"id", b.id},
                            {"min", b.min},
                            {"max", b.max},
                            {"values", b.values},
                            {"padded", b.padded},
                            {"pad_with", static_cast<int>(b.pad_with)},
                            {"not_padded", b.not_padded}});
  j["constant_bytes"] = r.constant_bytes;
  j["flops"] = r.flops;
  const passes::TensorParallelStats& t = r.tensor_parallel;
  j["tensor_parallel"] = {{"column_parallel", t.column_parallel}, {"row_parallel", t.row_parallel},
                          {"embeddings", t.embeddings},           {"all_reduces", t.all_reduces},
                          {"all_gathers", t.all_gathers},         {"split_states", t.split_states}};
  j["seconds"] = {r.seconds_frontend, r.seconds_passes, r.seconds_codegen, r.seconds_write};
  j["pass_seconds"] = json::array();
  for (const auto& [name, s] : r.pass_seconds) j["pass_seconds"].push_back({name, s});
  return j;
}

CompileResult report_from_json(const json& j) {
  CompileResult r;
  r.container = j.at("container").get<std::string>();
  r.torch_version = j.at("torch_version").get<std::string>();
  r.imported_nodes = j.at("imported_nodes").get<size_t>();
  r.optimized_nodes = j.at("optimized_nodes").get<size_t>();
  for (const json& p : j.at("partitions")) {
    PartitionReport q;
    q.device = p.at("device").get<bool>();
    q.nodes = p.at("nodes").get<size_t>();
    q.instructions = p.at("instructions").get<uint64_t>();
    q.hbm_bytes = p.at("hbm_bytes").get<uint64_t>();
    q.sbuf_peak_bytes = p.at("sbuf_peak_bytes").get<uint32_t>();
    q.psum_peak_bytes = p.at("psum_peak_bytes").get<uint32_t>();
    q.flops = p.at("flops").get<double>();
    r.partitions.push_back(q);
  }
  for (const json& h : j.at("host_nodes"))
    r.host_nodes.push_back({h.at("node").get<std::string>(), h.at("op").get<std::string>(),
                            h.at("reason").get<std::string>(),
                            h.at("location").get<std::string>()});
  r.specialized = j.at("specialized").get<std::map<std::string, int64_t>>();
  r.specialized_from = j.at("specialized_from").get<std::string>();
  for (const json& b : j.at("buckets")) {
    BucketSymbol s;
    s.name = b.at("name").get<std::string>();
    s.id = b.at("id").get<ir::SymbolId>();
    s.min = b.at("min").get<int64_t>();
    s.max = b.at("max").get<int64_t>();
    s.values = b.at("values").get<std::vector<int64_t>>();
    s.padded = b.at("padded").get<bool>();
    const int pad = b.at("pad_with").get<int>();
    if (pad != static_cast<int>(passes::PadWith::zeros) &&
        pad != static_cast<int>(passes::PadWith::edge))
      throw std::runtime_error("bucket pad_with " + std::to_string(pad));
    s.pad_with = static_cast<passes::PadWith>(pad);
    s.not_padded = b.at("not_padded").get<std::string>();
    r.buckets.push_back(std::move(s));
  }
  r.constant_bytes = j.at("constant_bytes").get<uint64_t>();
  r.flops = j.at("flops").get<double>();
  const json& t = j.at("tensor_parallel");
  r.tensor_parallel.column_parallel = t.at("column_parallel").get<int>();
  r.tensor_parallel.row_parallel = t.at("row_parallel").get<int>();
  r.tensor_parallel.embeddings = t.at("embeddings").get<int>();
  r.tensor_parallel.all_reduces = t.at("all_reduces").get<int>();
  r.tensor_parallel.all_gathers = t.at("all_gathers").get<int>();
  r.tensor_parallel.split_states = t.at("split_states").get<std::map<std::string, int>>();
  const auto sec = j.at("seconds").get<std::vector<double>>();
  if (sec.size() != 4) throw std::runtime_error("seconds: expected 4 phases");
  r.seconds_frontend = sec[0];
  r.seconds_passes = sec[1];
  r.seconds_codegen = sec[2];
  r.seconds_write = sec[3];
  for (const json& p : j.at("pass_seconds"))
    r.pass_seconds.emplace_back(p.at(0).get<std::string>(), p.at(1).get<double>());
  return r;
}

// --- The entry file --------------------------------------------------------------------------

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

uint32_t crc_of(const void* p, size_t n) {
  return artifact::crc32c(std::span<const std::byte>(static_cast<const std::byte*>(p), n));
}

// The CRC32C of `n` bytes at `offset` of `fd`, read (not mapped: no page faults, and nothing
// stays resident) in 4 MiB pieces; nullopt on a short read. With `other` (a descriptor, else -1),
// `*same` says whether `other`'s first `n` bytes are exactly those bytes: compared piece by piece
// as they are read, `other` no longer read after the first difference.
std::optional<uint32_t> crc_of_range(int fd, uint64_t offset, uint64_t n, int other = -1,
                                     bool* same = nullptr) {
  const size_t piece = static_cast<size_t>(std::min<uint64_t>(n, uint64_t{4} << 20));
  std::vector<std::byte> buf(piece), theirs(other >= 0 ? piece : 0);
  if (same) *same = other >= 0;
  uint32_t crc = 0;
  for (uint64_t off = 0; off < n;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), n - off));
    if (!read_exactly(fd, buf.data(), want, offset + off)) return std::nullopt;
    crc = artifact::crc32c(std::span<const std::byte>(buf.data(), want), crc);
    if (same && *same)
      *same = read_exactly(other, theirs.data(), want, off) &&
              std::memcmp(buf.data(), theirs.data(), want) == 0;
    off += want;
  }
  return crc;
}

std::array<uint8_t, 32> key_bytes(const std::string& hex_key) {
  std::array<uint8_t, 32> out{};
  const std::vector<uint8_t> b = frontend::digest_from_hex(hex_key);
  std::copy_n(b.begin(), std::min(b.size(), out.size()), out.begin());
  return out;
}

fs::path entry_path(const fs::path& dir, const std::string& key) {
  return dir / "entries" / (key + ".nce");
}
fs::path artifact_path(const fs::path& dir, const std::string& key) {
  return dir / "entries" / (key + ".nca");
}

// Gives the file open as `fd` a second name, `to`, replacing any file there: a hard link made
// under a temporary name beside `to` (through /proc/self/fd, so that it is exactly the file
// `fd` read, whatever has been renamed since) and renamed into place. False, leaving nothing
// behind, where that cannot be done: another filesystem, one without hard links, no /proc.
bool link_into_place(int fd, const fs::path& to) {
  const fs::path temp = temporary_beside(to);
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) != 0)
    return false;
  const bool placed = artifact::replace_file(temp.string(), to.string());
  // Gone once placed, but for a rename onto another name of the same file, which does nothing.
  ::unlink(temp.c_str());
  return placed;
}

// The file the code of this compiler is in: the executable, or the shared object that holds
// compile_model.
fs::path compiler_object() {
  struct Find {
    uintptr_t address;
    std::string name;
    bool found = false;
  } find{reinterpret_cast<uintptr_t>(&compile_model), {}, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* f = static_cast<Find*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (f->address >= start && f->address < start + ph.p_memsz) {
            f->name = info->dlpi_name ? info->dlpi_name : "";
            f->found = true;
            return 1;
          }
        }
        return 0;
      },
      &find);
  if (!find.found || find.name.empty()) return "/proc/self/exe";
  return find.name;
}

}  // namespace

// Little-endian: magic[8], version u32, report_bytes u32, reserved u64 (zero), artifact_bytes
// u64, report_crc u32, artifact_crc u32, key[32], reserved u32, header_crc u32 (CRC32C of bytes
// [0, 76)). The report follows; the artifact is the file beside it (artifact_path).
std::string encode_cache_entry(const std::string& key_hex, std::string_view report,
                               uint64_t artifact_bytes, uint32_t artifact_crc) {
  std::array<uint8_t, kEntryHeader> b{};
  std::memcpy(b.data(), kEntryMagic, 8);
  put32(&b[8], kEntryVersion);
  put32(&b[12], static_cast<uint32_t>(report.size()));
  put64(&b[24], artifact_bytes);
  put32(&b[32], crc_of(report.data(), report.size()));
  put32(&b[36], artifact_crc);
  const std::array<uint8_t, 32> key = key_bytes(key_hex);
  std::memcpy(&b[40], key.data(), 32);
  put32(&b[76], crc_of(b.data(), 76));
  std::string out(reinterpret_cast<const char*>(b.data()), b.size());
  out.append(report);
  return out;
}

CacheEntry decode_cache_entry(std::span<const std::byte> bytes, const std::string& key_hex) {
  auto fail = [](const std::string& what) { throw std::runtime_error(what); };
  const auto* hb = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < kEntryHeader)
    fail("expected a " + std::to_string(kEntryHeader) + "-byte header, found " +
         std::to_string(bytes.size()) + " bytes");
  if (std::memcmp(hb, kEntryMagic, 8) != 0) fail("bad magic");
  if (get32(&hb[76]) != crc_of(hb, 76)) fail("header CRC32C mismatch");
  if (get32(&hb[8]) != kEntryVersion)
    fail("entry version " + std::to_string(get32(&hb[8])) + ", expected " +
         std::to_string(kEntryVersion));
  if (std::memcmp(&hb[40], key_bytes(key_hex).data(), 32) != 0)
    fail("it holds another key's compile");
  const uint64_t report_bytes = get32(&hb[12]);
  if (bytes.size() != kEntryHeader + report_bytes)
    fail("expected " + std::to_string(kEntryHeader + report_bytes) + " bytes, found " +
         std::to_string(bytes.size()));
  const std::string_view report(reinterpret_cast<const char*>(hb + kEntryHeader),
                                static_cast<size_t>(report_bytes));
  if (crc_of(report.data(), report.size()) != get32(&hb[32])) fail("report CRC32C mismatch");
  CacheEntry e;
  try {
    e.report = report_from_json(json::parse(report));
  } catch (const std::exception& x) {  // nlohmann's, and report_from_json's own
    fail(std::string("report: ") + x.what());
  }
  e.artifact_bytes = get64(&hb[24]);
  e.artifact_crc = get32(&hb[36]);
  return e;
}

fs::path CompileCache::default_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return fs::path(x) / "neuronc";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "neuronc";
  return {};
}

CompileCache::CompileCache(fs::path dir, uint64_t max_bytes, bool link_outputs)
    : dir_(std::move(dir)), max_bytes_(max_bytes), link_outputs_(link_outputs) {}

std::string CompileCache::uncacheable(const CompileRequest& req) {
  if (!req.print_after.empty()) return "--print-after prints the IR as the compile runs";
  if (req.debug_all_values) return "debug values are not cached";
  return "";
}

namespace {

// The memo of `canonical`'s digest under `dir`.
fs::path memo_path(const fs::path& dir, const fs::path& canonical) {
  return dir / "sources" / sha256_text(canonical.string());
}

// `canonical`'s remembered digest when the memo matches `state` (stat(2) of it now), else empty.
std::string remembered_sha256(const fs::path& dir, const fs::path& canonical,
                              const CacheSource& state) {
  std::ifstream f(memo_path(dir, canonical));
  std::string tag;
  CacheSource m;
  int64_t hashed_at = 0;
  if (std::getline(f, tag) && tag == kSourceDigestTag &&
      f >> m.file.device >> m.file.inode >> m.file.size >> m.file.mtime_ns >> m.file.ctime_ns >>
          hashed_at >> m.sha256 &&
      m.sha256.size() == 64 && m.file == state.file && state.file.mtime_ns + kRacyNs < hashed_at &&
      state.file.ctime_ns + kRacyNs < hashed_at)
    return m.sha256;
  return "";
}

// Hashes `file` (opened from `canonical` at `hashed_at`) and remembers its digest under `dir`
// when the file is still the one hashed (best effort: a cache that cannot be written still
// works, only slower).
std::string hash_and_remember(const fs::path& dir, const fs::path& canonical,
                              const frontend::MappedFile& file, int64_t hashed_at) {
  std::string sha256 = frontend::file_sha256(file);
  CacheSource after;
  if (!stat_source(canonical, &after) || !(after.file == file.identity())) return sha256;
  const fs::path memo = memo_path(dir, canonical);
  std::error_code ec;
  fs::create_directories(memo.parent_path(), ec);
  AtomicFile out(memo);
  std::ostringstream text;
  const frontend::FileIdentity& id = file.identity();
  text << kSourceDigestTag << "\n"
       << id.device << " " << id.inode << " " << id.size << " " << id.mtime_ns << " " << id.ctime_ns
       << " " << hashed_at << " " << sha256 << "\n";
  const std::string t = text.str();
  out.write(t.data(), t.size());
  out.commit();
  return sha256;
}

// A file whose digest goes into a key: its state, and the file opened when the digest is not
// remembered and must be computed.
struct KeySource {
  fs::path canonical;
  CacheSource state;
  std::shared_ptr<frontend::MappedFile> file;  // null when remembered
  int64_t opened_at = 0;
};

KeySource open_key_source(const fs::path& dir, const fs::path& path) {
  KeySource s;
  std::error_code ec;
  s.canonical = fs::canonical(path, ec);
  if (ec) throw std::runtime_error("cannot read '" + path.string() + "': " + ec.message());
  if (!stat_source(s.canonical, &s.state))
    throw std::runtime_error("cannot read '" + path.string() + "': not a regular file");
  s.state.sha256 = remembered_sha256(dir, s.canonical, s.state);
  if (s.state.sha256.empty()) {
    s.opened_at = now_ns();
    s.file = frontend::MappedFile::open(s.canonical.string());
    s.state.file = s.file->identity();  // what is hashed
  }
  return s;
}

}  // namespace

CompileCache::PendingKey CompileCache::begin_key(const CompileRequest& req) const {
  // The key's text, in order: lines, each followed by the digest of `sources[i]` where one
  // goes (the compiler's own, then the model's files).
  std::vector<std::string> text;
  std::vector<KeySource> sources;
  std::ostringstream t;
  t << "cache " << kEntryVersion << "\n";
  t << "neuronc " << NEURONC_VERSION << "\n";
  t << "artifact_format " << artifact::kFormatMajor << "." << artifact::kFormatMinor << "\n";
  t << "compiler ";
  text.push_back(t.str());
  sources.push_back(open_key_source(dir_, compiler_object()));
  t.str("");
  t << "\n";
  t << "target " << req.target << "\n";
  t << "auto_cast " << static_cast<int>(req.auto_cast) << "\n";
  t << "opt_level " << req.opt_level << "\n";
  t << "tp " << req.tp << "\n";
  t << "host_only " << req.host_only << "\n";
  for (const auto& [name, v] : req.dims) t << "dim " << name << "=" << v << "\n";
  for (const auto& [name, values] : req.buckets) {
    t << "buckets " << name << "=";
    for (int64_t v : values) t << v << ",";
    t << "\n";
  }
  for (const std::vector<int64_t>& shape : req.input_shapes) {
    t << "input_shape ";
    for (int64_t d : shape) t << d << ",";
    t << "\n";
  }
  // The sources: one file, or every file under a directory of programs, by relative name.
  std::vector<std::pair<std::string, fs::path>> files;
  std::error_code ec;
  if (fs::is_directory(req.model, ec)) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(req.model, ec))
      if (e.is_regular_file(ec))
        files.emplace_back(fs::relative(e.path(), req.model, ec).generic_string(), e.path());
    if (ec) throw std::runtime_error("cannot list '" + req.model + "': " + ec.message());
    std::sort(files.begin(), files.end());
  } else {
    files.emplace_back(fs::path(req.model).filename().string(), req.model);
  }
  for (const auto& [name, path] : files) {
    t << "source " << std::quoted(name) << " ";
    text.push_back(t.str());
    t.str("");
    sources.push_back(open_key_source(dir_, path));
    t << "\n";
  }
  text.push_back(t.str());

  // Each digest not remembered is computed on a thread of its own, in order; the model's files'
  // digests are handed to the compile as they are made.
  PendingKey pending;
  std::vector<std::promise<std::string>> made;
  for (size_t i = 0; i < sources.size(); ++i) {
    std::shared_future<std::string> digest;
    if (sources[i].file) {
      made.emplace_back();
      digest = made.back().get_future().share();
    } else {
      digest = frontend::digest_ready(sources[i].state.sha256);
    }
    if (i > 0) pending.digests.push_back({sources[i].state.file, std::move(digest)});
  }
  const bool remembered = made.empty();
  auto finish = [dir = dir_, text = std::move(text), sources = std::move(sources),
                 made = std::move(made)]() mutable {
    size_t m = 0;
    try {
      for (KeySource& s : sources) {
        if (!s.file) continue;
        s.state.sha256 = hash_and_remember(dir, s.canonical, *s.file, s.opened_at);
        s.file.reset();
        made[m++].set_value(s.state.sha256);
      }
    } catch (...) {
      for (; m < made.size(); ++m) made[m].set_exception(std::current_exception());
      throw;
    }
    CacheKey k;
    k.text = text[0];
    for (size_t i = 0; i < sources.size(); ++i) k.text += sources[i].state.sha256 + text[i + 1];
    k.hex = sha256_text(k.text);
    for (size_t i = 1; i < sources.size(); ++i) k.sources.push_back(std::move(sources[i].state));
    return k;
  };
  if (remembered) {
    std::promise<CacheKey> k;
    k.set_value(finish());
    pending.key = k.get_future().share();
  } else {
    pending.key = std::async(std::launch::async, std::move(finish)).share();
  }
  return pending;
}

CacheKey CompileCache::key(const CompileRequest& req) const {
  return begin_key(req).key.get();
}

std::optional<CompileCache::Hit> CompileCache::fetch(const CacheKey& key, const fs::path& output,
                                                     std::string* why) const {
  why->clear();
  const fs::path path = entry_path(dir_, key.hex);
  const fs::path artifact = artifact_path(dir_, key.hex);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // a miss
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd}, artifact_closer{-1};
  auto corrupt = [&](const std::string& what) -> std::optional<Hit> {
    *why = "cache entry '" + path.string() + "' is corrupt (" + what + "); it was deleted";
    ::unlink(path.c_str());
    ::unlink(artifact.c_str());
    return std::nullopt;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return corrupt("cannot stat it: " + errno_text());
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > kEntryHeader + kMaxReportBytes)
    return corrupt("expected at most " + std::to_string(kEntryHeader + kMaxReportBytes) +
                   " bytes, found " + std::to_string(size));
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  if (!read_exactly(fd, bytes.data(), bytes.size(), 0))
    return corrupt("cannot read it: " + errno_text());
  CacheEntry h;
  try {
    h = decode_cache_entry(bytes, key.hex);
  } catch (const std::runtime_error& e) {
    return corrupt(e.what());
  }
  Hit hit;
  hit.result = std::move(h.report);
  hit.artifact_bytes = h.artifact_bytes;

  const int afd = ::open(artifact.c_str(), O_RDONLY | O_CLOEXEC);
  // Not there: a writer between its two renames, or an eviction between its two deletions. A
  // miss; the compile that follows stores both files again.
  if (afd < 0) return std::nullopt;
  artifact_closer.fd = afd;
  struct stat ast {};
  if (::fstat(afd, &ast) != 0) return corrupt("cannot stat its artifact: " + errno_text());
  if (static_cast<uint64_t>(ast.st_size) != h.artifact_bytes)
    return corrupt("expected a " + std::to_string(h.artifact_bytes) + "-byte artifact, found " +
                   std::to_string(ast.st_size) + " bytes");
  // An output that is the entry's artifact itself (an earlier hit linked it), or a file that
  // holds exactly its bytes (a recompile to the same path), is left as it is, its modification
  // time refreshed. The bytes are compared while the entry's CRC is taken: one more read
  // instead of writing the whole artifact again.
  struct stat out_st {};
  int existing = -1;
  bool linked_already = false;
  if (::stat(output.c_str(), &out_st) == 0 && S_ISREG(out_st.st_mode)) {
    linked_already = out_st.st_dev == ast.st_dev && out_st.st_ino == ast.st_ino;
    if (!linked_already && static_cast<uint64_t>(out_st.st_size) == h.artifact_bytes)
      existing = ::open(output.c_str(), O_RDONLY | O_CLOEXEC);
  }
  Closer existing_closer{existing};
  bool same = false;
  const std::optional<uint32_t> crc = crc_of_range(afd, 0, h.artifact_bytes, existing, &same);
  if (!crc) return corrupt("short read of the artifact");
  if (*crc != h.artifact_crc) return corrupt("artifact CRC32C mismatch");
  // Recently used (eviction goes by the entry's modification time), and the output, whichever
  // way it is made, new as of now.
  ::futimens(fd, nullptr);
  if ((same || linked_already) && ::utimensat(AT_FDCWD, output.c_str(), nullptr, 0) == 0) {
    hit.output = HitOutput::kUnchanged;
    return hit;
  }
  if (link_outputs_) {
    ::futimens(afd, nullptr);  // the output's own time, once it is linked
    if (link_into_place(afd, output)) {
      hit.output = HitOutput::kLinked;
      return hit;
    }
  }
  AtomicFile out(output);
  if (!out.ok() || !copy_range(afd, 0, h.artifact_bytes, out) || !out.commit()) {
    *why = out.ok()
               ? "copying the cached artifact to '" + output.string() + "' failed: " + errno_text()
               : out.error();
    return std::nullopt;
  }
  hit.output = HitOutput::kCopied;
  return hit;
}

bool CompileCache::store(const CacheKey& key, const CompileResult& result, std::string* why) const {
  return store(key, result, {}, why);
}

bool CompileCache::store(const CacheKey& key, const CompileResult& result,
                         const fs::path& artifact_file, std::string* why) const {
  why->clear();
  // The artifact's bytes: the result's, or the file's (read, and linked or copied, through one
  // descriptor, so that the CRC and the entry are of the same file).
  int in = -1;
  struct Closer {
    int& fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{in};
  uint64_t artifact_bytes = result.artifact.size();
  uint32_t artifact_crc = 0;
  if (!artifact_file.empty()) {
    in = ::open(artifact_file.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (in < 0 || ::fstat(in, &st) != 0) {
      *why = "cannot read '" + artifact_file.string() + "': " + errno_text();
      return false;
    }
    artifact_bytes = static_cast<uint64_t>(st.st_size);
    if (artifact_bytes != result.artifact_size) {
      *why = "'" + artifact_file.string() + "' holds " + std::to_string(artifact_bytes) +
             " bytes, expected the compiled artifact's " + std::to_string(result.artifact_size) +
             "; it was not cached";
      return false;
    }
    const std::optional<uint32_t> crc = crc_of_range(in, 0, artifact_bytes);
    if (!crc) {
      *why = "cannot read '" + artifact_file.string() + "': " + errno_text();
      return false;
    }
    artifact_crc = *crc;
  } else {
    artifact_crc = crc_of(result.artifact.data(), result.artifact.size());
  }
  for (const CacheSource& s : key.sources) {
    CacheSource now;
    if (!stat_source(s.path, &now) || !(now.file == s.file)) {
      *why = "'" + s.path.string() + "' changed during the compile; the artifact was not cached";
      return false;
    }
  }
  const fs::path path = entry_path(dir_, key.hex);
  const fs::path artifact = artifact_path(dir_, key.hex);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    *why = "cannot create '" + path.parent_path().string() + "': " + ec.message();
    return false;
  }
  // The artifact first, then the entry that vouches for it: a reader that finds the entry finds
  // an artifact its CRC is checked against. Two writers of one key write the same bytes.
  if (in < 0 || !link_outputs_ || !link_into_place(in, artifact)) {
    AtomicFile out(artifact);
    if (in >= 0) {
      if (!copy_range(in, 0, artifact_bytes, out) && out.ok()) {
        *why = "copying '" + artifact_file.string() + "' into the cache failed: " + errno_text();
        return false;
      }
    } else {
      out.write(result.artifact.data(), result.artifact.size());
    }
    if (!out.commit()) {
      *why = out.error();
      return false;
    }
  }
  const std::string entry =
      encode_cache_entry(key.hex, report_json(result).dump(), artifact_bytes, artifact_crc);
  {
    AtomicFile out(path);
    out.write(entry.data(), entry.size());
    if (!out.commit()) {
      *why = out.error();
      return false;
    }
  }
  // Evict: least recently used first, until the entries fit; old temporaries of crashed
  // writers, and artifacts an entry no longer vouches for, go too.
  struct Entry {
    fs::path path;
    uint64_t bytes;
    int64_t mtime;
  };
  std::vector<Entry> entries;
  std::vector<std::pair<fs::path, int64_t>> artifacts;
  uint64_t total = 0;
  const int64_t hour_ago = now_ns() - int64_t{3600} * 1'000'000'000;
  for (const fs::path& sub : {dir_ / "entries", dir_ / "sources"}) {
    for (const fs::directory_entry& e : fs::directory_iterator(sub, ec)) {
      struct stat st {};
      if (::stat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      const std::string name = e.path().filename().string();
      if (name.find(".tmp.") != std::string::npos) {
        if (ns(st.st_mtim) < hour_ago) ::unlink(e.path().c_str());
        continue;
      }
      if (sub.filename() != "entries") continue;
      if (e.path().extension() == ".nca") {
        artifacts.emplace_back(e.path(), ns(st.st_mtim));
        continue;
      }
      if (e.path().extension() != ".nce") continue;
      uint64_t bytes = static_cast<uint64_t>(st.st_size);
      struct stat ast {};
      const fs::path a = fs::path(e.path()).replace_extension(".nca");
      if (::stat(a.c_str(), &ast) == 0) bytes += static_cast<uint64_t>(ast.st_size);
      entries.push_back({e.path(), bytes, ns(st.st_mtim)});
      total += bytes;
    }
  }
  for (const auto& [a, mtime] : artifacts) {
    // A writer renames the artifact in before its entry: only an hour-old one is an orphan.
    if (mtime < hour_ago && !fs::exists(fs::path(a).replace_extension(".nce"), ec))
      ::unlink(a.c_str());
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.path == path) continue;  // the entry just stored stays
    // The entry before its artifact: a reader never finds an entry whose artifact was evicted
    // under it but as a miss.
    if (::unlink(e.path.c_str()) == 0) {
      ::unlink(fs::path(e.path).replace_extension(".nca").c_str());
      total -= e.bytes;
    }
  }
  return true;
}

}  // namespace neuronc::compiler
