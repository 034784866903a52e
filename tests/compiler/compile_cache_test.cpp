// The compile cache (compiler/compile_cache.h): a hit gives the fresh compile's bytes and
// report; the key follows every source byte and option that changes the artifact and no other;
// a corrupt entry is found by its checks, deleted and never used; the artifact goes out and in as
// a hard link (a copy with link_outputs false), and an output written into in place is found
// out; concurrent writers and readers of one key each see a whole entry; eviction keeps the most
// recently used.
#include "compiler/compile_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compiler/compiler.h"
#include "frontend/load.h"
#include "tests/testing/scratch_dir.h"

namespace neuronc::compiler {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = neuronc::testing::scratch_dir("neuronc_cache_test") / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string model_path() {
  return std::string(NEURONC_SOURCE_DIR) + "/models/cnn/model.pt2";
}

std::vector<std::byte> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

void write_file(const fs::path& p, const std::vector<std::byte>& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

CompileRequest request(const std::string& model) {
  CompileRequest req;
  req.model = model;
  req.target = "trn1";
  return req;
}

// A copy of the model in `dir`, with a modification time old enough that its digest is
// remembered (a file written within two seconds of its hashing is hashed again each time).
fs::path old_copy(const fs::path& dir) {
  const fs::path p = dir / "model.pt2";
  fs::copy_file(model_path(), p, fs::copy_options::overwrite_existing);
  fs::last_write_time(p, fs::last_write_time(p) - std::chrono::hours(1));
  return p;
}

// A cache under `dir` that holds the compile of the cnn model, stored from its bytes.
struct Stored {
  CompileCache cache;
  CacheKey key;
  CompileResult result;
};
Stored store_cnn(const fs::path& dir, bool link_outputs = true) {
  Stored s{CompileCache(dir / "cache", CompileCache::kDefaultMaxBytes, link_outputs), {}, {}};
  const CompileRequest req = request(model_path());
  s.key = s.cache.key(req);
  s.result = compile_model(req);
  std::string why;
  EXPECT_TRUE(s.cache.store(s.key, s.result, &why)) << why;
  return s;
}

TEST(CompileCache, AHitGivesTheFreshCompilesArtifactAndReport) {
  const fs::path dir = fresh_dir("hit");
  CompileCache cache(dir / "cache");
  const CompileRequest req = request(model_path());
  const CacheKey key = cache.key(req);
  EXPECT_EQ(key.hex.size(), 64u);
  std::string why;
  EXPECT_FALSE(cache.fetch(key, dir / "out.nca", &why));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(fs::exists(dir / "out.nca"));

  const CompileResult fresh = compile_model(req);
  ASSERT_TRUE(cache.store(key, fresh, &why)) << why;
  auto hit = cache.fetch(key, dir / "out.nca", &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(read_file(dir / "out.nca"), fresh.artifact);
  EXPECT_EQ(hit->artifact_bytes, fresh.artifact.size());
  const CompileResult& r = hit->result;
  EXPECT_TRUE(r.artifact.empty());
  EXPECT_EQ(r.container, fresh.container);
  EXPECT_EQ(r.torch_version, fresh.torch_version);
  EXPECT_EQ(r.imported_nodes, fresh.imported_nodes);
  EXPECT_EQ(r.optimized_nodes, fresh.optimized_nodes);
  ASSERT_EQ(r.partitions.size(), fresh.partitions.size());
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    EXPECT_EQ(r.partitions[i].instructions, fresh.partitions[i].instructions);
    EXPECT_EQ(r.partitions[i].hbm_bytes, fresh.partitions[i].hbm_bytes);
    EXPECT_EQ(r.partitions[i].flops, fresh.partitions[i].flops);
  }
  EXPECT_EQ(r.constant_bytes, fresh.constant_bytes);
  EXPECT_EQ(r.flops, fresh.flops);
  EXPECT_EQ(r.seconds_codegen, fresh.seconds_codegen);
  EXPECT_EQ(r.pass_seconds, fresh.pass_seconds);

  // The key's digests let a compile skip hashing the source: the artifact records the SHA-256
  // the key computed, and is byte-identical to a compile that hashed it itself.
  CompileRequest with_known = req;
  with_known.known_sha256 = cache.begin_key(req).digests;  // remembered now: ready
  EXPECT_EQ(compile_model(with_known).artifact, fresh.artifact);
}

// A hit onto an output that already holds the artifact (a recompile to the same path) leaves
// that file (the same inode, its modification time refreshed); an output that differs, in one
// byte or in its size, is replaced by the artifact. With link_outputs false, so that the output
// is a file of its own that the test may write into.
TEST(CompileCache, AHitOntoTheSameArtifactLeavesItAndReplacesADifferentOne) {
  const fs::path dir = fresh_dir("same_output");
  const auto [cache, key, fresh] = store_cnn(dir, /*link_outputs=*/false);
  std::string why;
  const fs::path out = dir / "out.nca";
  auto first = cache.fetch(key, out, &why);
  ASSERT_TRUE(first) << why;
  EXPECT_EQ(first->output, CompileCache::HitOutput::kCopied);
  struct stat before {};
  ASSERT_EQ(::stat(out.c_str(), &before), 0);
  fs::last_write_time(out, fs::last_write_time(out) - std::chrono::hours(1));
  const auto old_time = fs::last_write_time(out);

  auto again = cache.fetch(key, out, &why);
  ASSERT_TRUE(again) << why;
  EXPECT_EQ(again->output, CompileCache::HitOutput::kUnchanged);
  struct stat after {};
  ASSERT_EQ(::stat(out.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // left as it was
  EXPECT_GT(fs::last_write_time(out), old_time);
  EXPECT_EQ(read_file(out), fresh.artifact);

  std::vector<std::byte> changed = fresh.artifact;
  changed[changed.size() / 2] ^= std::byte{1};
  write_file(out, changed);
  auto replaced = cache.fetch(key, out, &why);
  ASSERT_TRUE(replaced) << why;
  EXPECT_EQ(replaced->output, CompileCache::HitOutput::kCopied);
  EXPECT_EQ(read_file(out), fresh.artifact);
  changed.push_back(std::byte{0});
  write_file(out, changed);
  ASSERT_TRUE(cache.fetch(key, out, &why)) << why;
  EXPECT_EQ(read_file(out), fresh.artifact);
}

// A compile that streams its artifact to a file (CompileRequest::output) writes the bytes it
// would have returned, and the cache stores it from that file as it would from the bytes; a file
// that is not the compiled artifact's size is refused, not stored.
TEST(CompileCache, AnArtifactStreamedToItsFileIsCachedFromTheFile) {
  const fs::path dir = fresh_dir("streamed");
  CompileCache cache(dir / "cache");
  const CompileRequest req = request(model_path());
  const CacheKey key = cache.key(req);
  const CompileResult in_memory = compile_model(req);
  CompileRequest to_file = req;
  to_file.output = (dir / "streamed.nca").string();
  const CompileResult streamed = compile_model(to_file);
  EXPECT_TRUE(streamed.artifact.empty());
  EXPECT_EQ(streamed.artifact_size, in_memory.artifact.size());
  EXPECT_EQ(read_file(dir / "streamed.nca"), in_memory.artifact);
  EXPECT_FALSE(fs::exists(dir / "streamed.nca.tmp"));

  std::string why;
  CompileResult wrong_size = streamed;
  wrong_size.artifact_size += 1;
  EXPECT_FALSE(cache.store(key, wrong_size, dir / "streamed.nca", &why));
  EXPECT_NE(why.find("expected the compiled artifact's"), std::string::npos) << why;
  ASSERT_TRUE(cache.store(key, streamed, dir / "streamed.nca", &why)) << why;
  auto hit = cache.fetch(key, dir / "out.nca", &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(hit->artifact_bytes, in_memory.artifact.size());
  EXPECT_EQ(read_file(dir / "out.nca"), in_memory.artifact);
}

// The artifact goes out, and in, as a hard link: the compile's output becomes the entry's
// artifact, and a hit's output is another name for it, new as of the hit. With link_outputs
// false both are copies. An output written into in place (as `cp other.nca out.nca` does) is the
// entry's artifact written into: the next hit finds it by its CRC, deletes the entry and misses.
TEST(CompileCache, ArtifactsGoOutAndInAsHardLinksAndAWriteIntoOneIsFoundOut) {
  const fs::path dir = fresh_dir("linked");
  const CompileRequest req = request(model_path());
  CompileRequest to_file = req;
  to_file.output = (dir / "compiled.nca").string();
  const CompileResult streamed = compile_model(to_file);
  const std::vector<std::byte> bytes = read_file(dir / "compiled.nca");
  std::string why;
  for (const bool link : {true, false}) {
    SCOPED_TRACE(link ? "linked" : "copied");
    const fs::path cache_dir = dir / (link ? "cache_linked" : "cache_copied");
    CompileCache cache(cache_dir, CompileCache::kDefaultMaxBytes, link);
    const CacheKey key = cache.key(req);
    const fs::path artifact = cache_dir / "entries" / (key.hex + ".nca");
    // A file of this round's own: a linked one comes to share the writes below.
    const fs::path compiled = dir / (link ? "compiled_linked.nca" : "compiled_copied.nca");
    fs::copy_file(dir / "compiled.nca", compiled);
    ASSERT_TRUE(cache.store(key, streamed, compiled, &why)) << why;
    EXPECT_EQ(fs::equivalent(artifact, compiled), link);
    EXPECT_EQ(read_file(artifact), bytes);

    const fs::path out = dir / (link ? "out_linked.nca" : "out_copied.nca");
    fs::last_write_time(artifact, fs::last_write_time(artifact) - std::chrono::hours(1));
    const auto before = fs::file_time_type::clock::now() - std::chrono::seconds(5);
    auto hit = cache.fetch(key, out, &why);
    ASSERT_TRUE(hit) << why;
    EXPECT_EQ(hit->output,
              link ? CompileCache::HitOutput::kLinked : CompileCache::HitOutput::kCopied);
    EXPECT_EQ(fs::equivalent(out, artifact), link);
    EXPECT_EQ(read_file(out), bytes);
    EXPECT_GT(fs::last_write_time(out), before);  // new as of the hit, for make and its kin
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();

    // Again onto that output: it is the entry's artifact already, left as it is.
    auto again = cache.fetch(key, out, &why);
    ASSERT_TRUE(again) << why;
    EXPECT_EQ(again->output, CompileCache::HitOutput::kUnchanged);
    EXPECT_EQ(read_file(out), bytes);

    // Another valid artifact of the same size written into the output in place.
    std::vector<std::byte> other = bytes;
    other[other.size() / 3] ^= std::byte{0x10};
    write_file(out, other);
    const fs::path elsewhere = dir / (link ? "elsewhere_linked.nca" : "elsewhere_copied.nca");
    auto after_write = cache.fetch(key, elsewhere, &why);
    EXPECT_EQ(read_file(compiled), link ? other : bytes);  // the same file, or a file of its own
    if (link) {
      EXPECT_FALSE(after_write);
      EXPECT_NE(why.find("artifact CRC32C mismatch"), std::string::npos) << why;
      EXPECT_FALSE(fs::exists(artifact));
      EXPECT_FALSE(fs::exists(elsewhere));
    } else {
      ASSERT_TRUE(after_write) << why;  // the copy was the output's own
      EXPECT_EQ(read_file(elsewhere), bytes);
    }
  }
}

// Where the output cannot be linked (another filesystem: /dev/shm is a tmpfs on Linux), the
// artifact is copied.
TEST(CompileCache, AnOutputOnAnotherFilesystemIsCopied) {
  const fs::path dir = fresh_dir("other_fs");
  struct stat here {};
  struct stat shm_fs {};
  if (::stat(dir.c_str(), &here) != 0 || ::stat("/dev/shm", &shm_fs) != 0 ||
      here.st_dev == shm_fs.st_dev)
    GTEST_SKIP() << "no second filesystem at /dev/shm";
  const fs::path shm = neuronc::testing::scratch_dir("neuronc_cache_test", "/dev/shm");
  const auto [cache, key, r] = store_cnn(dir);
  std::string why;
  auto hit = cache.fetch(key, shm / "out.nca", &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(hit->output, CompileCache::HitOutput::kCopied);
  EXPECT_EQ(read_file(shm / "out.nca"), r.artifact);
}

TEST(CompileCache, ShapeBucketsAndHostNodesSurviveTheReport) {
  // A program with symbolic dims (buckets) and one with host partitions: their reports come
  // back whole.
  for (const char* name : {"dynamic_batch", "fallback"}) {
    const fs::path dir = fresh_dir(std::string("report_") + name);
    CompileCache cache(dir / "cache");
    const CompileRequest req =
        request(std::string(NEURONC_SOURCE_DIR) + "/models/" + name + "/model.pt2");
    const CacheKey key = cache.key(req);
    const CompileResult fresh = compile_model(req);
    std::string why;
    ASSERT_TRUE(cache.store(key, fresh, &why)) << why;
    auto hit = cache.fetch(key, dir / "out.nca", &why);
    ASSERT_TRUE(hit) << why;
    const CompileResult& r = hit->result;
    ASSERT_EQ(r.buckets.size(), fresh.buckets.size()) << name;
    for (size_t i = 0; i < r.buckets.size(); ++i) {
      EXPECT_EQ(r.buckets[i].name, fresh.buckets[i].name);
      EXPECT_EQ(r.buckets[i].values, fresh.buckets[i].values);
      EXPECT_EQ(r.buckets[i].padded, fresh.buckets[i].padded);
      EXPECT_EQ(r.buckets[i].pad_with, fresh.buckets[i].pad_with);
      EXPECT_EQ(r.buckets[i].not_padded, fresh.buckets[i].not_padded);
    }
    ASSERT_EQ(r.host_nodes.size(), fresh.host_nodes.size()) << name;
    for (size_t i = 0; i < r.host_nodes.size(); ++i) {
      EXPECT_EQ(r.host_nodes[i].node, fresh.host_nodes[i].node);
      EXPECT_EQ(r.host_nodes[i].reason, fresh.host_nodes[i].reason);
      EXPECT_EQ(r.host_nodes[i].location, fresh.host_nodes[i].location);
    }
    EXPECT_EQ(read_file(dir / "out.nca"), fresh.artifact);
  }
}

TEST(CompileCache, TheKeyFollowsWhatChangesTheArtifactAndNothingElse) {
  const fs::path dir = fresh_dir("key");
  CompileCache cache(dir / "cache");
  const fs::path model = old_copy(dir);
  const CompileRequest base = request(model.string());
  const std::string k = cache.key(base).hex;
  EXPECT_EQ(cache.key(base).hex, k);  // stable

  CompileRequest threads = base;
  threads.threads = 1;
  EXPECT_EQ(cache.key(threads).hex, k) << "--threads never changes the artifact";
  CompileRequest progress = base;
  progress.progress = [](const std::string&, double) {};
  EXPECT_EQ(cache.key(progress).hex, k);

  std::vector<CompileRequest> changed(8, base);
  changed[0].target = "trn2";
  changed[1].auto_cast = passes::AutoCastMode::matmul;
  changed[2].opt_level = 1;
  changed[3].tp = 2;
  changed[4].dims["s0"] = 4;
  changed[5].buckets["s0"] = {1, 2};
  changed[6].input_shapes = {{1, 3, 16, 16}};
  changed[7].host_only = true;
  std::set<std::string> keys{k};
  for (const CompileRequest& r : changed) keys.insert(cache.key(r).hex);
  EXPECT_EQ(keys.size(), changed.size() + 1);

  // The same bytes under another name or directory are the same source.
  const fs::path other = dir / "renamed";
  fs::create_directories(other);
  fs::copy_file(model, other / "model.pt2");
  EXPECT_EQ(cache.key(request((other / "model.pt2").string())).hex, k);

  // One byte of the source changed (same size): another key, though the digest was remembered.
  std::vector<std::byte> bytes = read_file(model);
  bytes[bytes.size() / 2] ^= std::byte{1};
  write_file(model, bytes);
  EXPECT_NE(cache.key(base).hex, k);
}

TEST(CompileCache, ADirectoryOfProgramsIsKeyedByEveryFile) {
  const fs::path dir = fresh_dir("program_set");
  const fs::path src = fs::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_tiny";
  ASSERT_TRUE(fs::exists(src / "manifest.json")) << src;
  fs::copy(src, dir / "llama", fs::copy_options::recursive);
  CompileCache cache(dir / "cache");
  const CompileRequest req = request((dir / "llama").string());
  const CacheKey key = cache.key(req);
  EXPECT_GE(key.sources.size(), 3u);  // the manifest and its programs
  for (const CacheSource& s : key.sources) {
    std::vector<std::byte> bytes = read_file(s.path);
    std::vector<std::byte> changed = bytes;
    changed.back() ^= std::byte{0x20};
    write_file(s.path, changed);
    EXPECT_NE(cache.key(req).hex, key.hex) << s.path;
    write_file(s.path, bytes);
    EXPECT_EQ(cache.key(req).hex, key.hex) << s.path;
  }
}

TEST(CompileCache, ASourceChangedDuringTheCompileIsNotStored) {
  const fs::path dir = fresh_dir("changed");
  CompileCache cache(dir / "cache");
  const fs::path model = old_copy(dir);
  const CompileRequest req = request(model.string());
  const CacheKey key = cache.key(req);
  const CompileResult r = compile_model(req);
  fs::last_write_time(model, fs::file_time_type::clock::now());  // written meanwhile
  std::string why;
  EXPECT_FALSE(cache.store(key, r, &why));
  EXPECT_NE(why.find("changed during the compile"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(dir / "cache" / "entries" / (key.hex + ".nce")));
}

TEST(CompileCache, ACorruptEntryIsDeletedAndNeverUsed) {
  const fs::path dir = fresh_dir("corrupt");
  const auto [cache, key, r] = store_cnn(dir);
  std::string why;
  const fs::path entry = dir / "cache" / "entries" / (key.hex + ".nce");
  const fs::path artifact = dir / "cache" / "entries" / (key.hex + ".nca");
  const std::vector<std::byte> good = read_file(entry);
  ASSERT_GT(good.size(), 80u);
  ASSERT_EQ(read_file(artifact), r.artifact);

  struct Damage {
    const char* what;  // expected in the message
    bool to_artifact;  // else to the entry
    std::function<void(std::vector<std::byte>&)> apply;
  };
  const std::vector<Damage> damages = {
      {"artifact CRC32C mismatch", true, [](auto& b) { b[b.size() - 100] ^= std::byte{4}; }},
      {"artifact CRC32C mismatch", true, [](auto& b) { b[7] ^= std::byte{0x80}; }},
      {"-byte artifact, found", true, [](auto& b) { b.pop_back(); }},
      {"-byte artifact, found", true, [](auto& b) { b.push_back(std::byte{0}); }},
      {"report CRC32C mismatch", false, [](auto& b) { b[90] ^= std::byte{1}; }},
      {"header CRC32C mismatch", false, [](auto& b) { b[20] ^= std::byte{1}; }},
      {"bad magic", false, [](auto& b) { b[0] = std::byte{'X'}; }},
      {"expected", false, [](auto& b) { b.pop_back(); }},
      {"expected", false, [](auto& b) { b.push_back(std::byte{0}); }},
      {"expected", false, [](auto& b) { b.resize(40); }},
      {"expected", false, [](auto& b) { b.clear(); }},
  };
  for (const Damage& d : damages) {
    std::vector<std::byte> bad = d.to_artifact ? r.artifact : good;
    d.apply(bad);
    write_file(entry, d.to_artifact ? good : bad);
    write_file(artifact, d.to_artifact ? bad : r.artifact);
    fs::remove(dir / "out.nca");
    EXPECT_FALSE(cache.fetch(key, dir / "out.nca", &why)) << d.what;
    EXPECT_NE(why.find(d.what), std::string::npos) << why;
    EXPECT_NE(why.find("deleted"), std::string::npos) << why;
    EXPECT_FALSE(fs::exists(entry)) << d.what;
    EXPECT_FALSE(fs::exists(artifact)) << d.what;
    EXPECT_FALSE(fs::exists(dir / "out.nca")) << d.what;
  }

  // An entry whose artifact is not there (a writer between its renames, an eviction between its
  // deletions) is a plain miss.
  write_file(entry, good);
  EXPECT_FALSE(cache.fetch(key, dir / "out.nca", &why));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(fs::exists(dir / "out.nca"));

  // Another key's intact entry under this key's name.
  CompileRequest other = request(model_path());
  other.target = "trn2";
  const CacheKey other_key = cache.key(other);
  ASSERT_TRUE(cache.store(other_key, compile_model(other), &why)) << why;
  fs::copy_file(dir / "cache" / "entries" / (other_key.hex + ".nce"), entry,
                fs::copy_options::overwrite_existing);
  write_file(artifact, r.artifact);
  EXPECT_FALSE(cache.fetch(key, dir / "out.nca", &why));
  EXPECT_NE(why.find("another key"), std::string::npos) << why;

  // Rebuilt: stored again, it is a hit.
  ASSERT_TRUE(cache.store(key, r, &why)) << why;
  ASSERT_TRUE(cache.fetch(key, dir / "out.nca", &why)) << why;
  EXPECT_EQ(read_file(dir / "out.nca"), r.artifact);
}

// An entry's file decodes to what was encoded. One whose report is not a compile report (not
// JSON, cut short, a field missing or of the wrong type, three phases' seconds, a bucket padded
// with neither zeros nor edge values) is corrupt, named "report: …", even with its checksums
// right. The reports are the fuzzer's seeds (tests/corpus/compiler/cache_entry).
TEST(CompileCache, AnEntryWhoseReportIsNotACompileReportIsCorrupt) {
  const std::string key(64, 'b');
  const fs::path corpus = fs::path(NEURONC_SOURCE_DIR) / "tests/corpus/compiler/cache_entry";
  auto entry_of = [&](const fs::path& report) {
    const std::vector<std::byte> r = read_file(report);
    return encode_cache_entry(
        key, std::string_view(reinterpret_cast<const char*>(r.data()), r.size()), 12345, 678);
  };
  auto decode = [&](const std::string& entry, const std::string& as_key) {
    return decode_cache_entry(std::as_bytes(std::span(entry.data(), entry.size())), as_key);
  };
  int reports = 0, not_reports = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(corpus)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("report_")) {
      const CacheEntry d = decode(entry_of(e.path()), key);
      EXPECT_EQ(d.artifact_bytes, 12345u) << name;
      EXPECT_EQ(d.artifact_crc, 678u) << name;
      EXPECT_FALSE(d.report.partitions.empty()) << name;
      ++reports;
    } else if (name.starts_with("bad_")) {
      try {
        decode(entry_of(e.path()), key);
        ADD_FAILURE() << name << " decoded";
      } catch (const std::runtime_error& x) {
        EXPECT_TRUE(std::string(x.what()).starts_with("report: ")) << name << ": " << x.what();
      }
      ++not_reports;
    }
  }
  EXPECT_EQ(reports, 3);
  EXPECT_EQ(not_reports, 7);
  try {
    decode(entry_of(corpus / "report_1_plain.json"), std::string(64, 'c'));
    ADD_FAILURE() << "another key's entry decoded";
  } catch (const std::runtime_error& x) {
    EXPECT_STREQ(x.what(), "it holds another key's compile");
  }
}

// begin_key() hands the compile each source's digest as it is made, and gives the key key()
// gives; the compile that waits on those digests writes the artifact a compile that hashed the
// source itself writes. The digests are then remembered: the next key has the model's at once.
TEST(CompileCache, AKeyTakenBesideTheCompileIsTheKeyAndFeedsItsDigest) {
  const fs::path dir = fresh_dir("beside");
  CompileCache cache(dir / "cache");
  const CompileRequest plain = request(model_path());  // changed long ago: its digest is kept
  CompileCache::PendingKey pending = cache.begin_key(plain);
  ASSERT_EQ(pending.digests.size(), 1u);
  ASSERT_TRUE(pending.digests[0].sha256.valid());
  CompileRequest beside = plain;
  beside.known_sha256 = pending.digests;
  const CompileResult compiled = compile_model(beside);
  const CacheKey key = pending.key.get();
  EXPECT_EQ(compiled.artifact, compile_model(plain).artifact);
  EXPECT_EQ(pending.digests[0].sha256.get(), key.sources.at(0).sha256);
  EXPECT_EQ(pending.digests[0].file, key.sources.at(0).file);

  // The model's digest is remembered (the test's own executable, the compiler object, may have
  // been built within the two seconds that have it hashed again).
  const CompileCache::PendingKey again = cache.begin_key(plain);
  ASSERT_EQ(again.digests.size(), 1u);
  EXPECT_EQ(again.digests[0].sha256.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(again.key.get().hex, key.hex);
  EXPECT_EQ(cache.key(plain).hex, key.hex);
  // The same key from a cache that remembers nothing, computed in the foreground.
  EXPECT_EQ(CompileCache(dir / "other").key(plain).hex, key.hex);
}

// A source that cannot be read is reported by begin_key() itself, naming it.
TEST(CompileCache, BeginKeyNamesAnUnreadableSource) {
  const fs::path dir = fresh_dir("unreadable");
  CompileCache cache(dir / "cache");
  try {
    cache.begin_key(request((dir / "missing.pt2").string()));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pt2"), std::string::npos) << e.what();
  }
}

TEST(CompileCache, AFileRewrittenUnderItsOldTimesIsHashedAgain) {
  const fs::path dir = fresh_dir("racy");
  CompileCache cache(dir / "cache");
  const fs::path model = dir / "model.pt2";
  fs::copy_file(model_path(), model);  // modified now: within the racy window
  const CompileRequest req = request(model.string());
  const CacheSource s = cache.key(req).sources.at(0);
  const std::string first = s.sha256;
  // Rewritten with other bytes of the same size, and its times forced back to the recorded
  // ones: a remembered digest would now be wrong. The change time (which no one can set back)
  // differs, and the file was written within two seconds of its hashing, so it is read again.
  std::vector<std::byte> bytes = read_file(model);
  bytes[10] ^= std::byte{1};
  write_file(model, bytes);
  const struct timespec times[2] = {
      {s.file.mtime_ns / 1'000'000'000, s.file.mtime_ns % 1'000'000'000},
      {s.file.mtime_ns / 1'000'000'000, s.file.mtime_ns % 1'000'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, model.c_str(), times, 0), 0);
  EXPECT_NE(cache.key(req).sources.at(0).sha256, first);
}

TEST(CompileCache, ConcurrentWritersAndReadersSeeWholeEntries) {
  const fs::path dir = fresh_dir("concurrent");
  CompileCache cache(dir / "cache");
  const CompileRequest req = request(model_path());
  const CacheKey key = cache.key(req);
  const CompileResult r = compile_model(req);
  // One entry exists before the threads start, so every read must find a whole one: the
  // old entry or a rewritten one, never a miss, a torn file or a temporary.
  std::string first_why;
  ASSERT_TRUE(cache.store(key, r, &first_why)) << first_why;
  std::atomic<int> stored{0}, hits{0}, wrong{0}, corrupt{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::string why;
        if (t % 2 == 0) {
          if (cache.store(key, r, &why)) ++stored;
        } else {
          const fs::path out = dir / ("out" + std::to_string(t) + ".nca");
          if (cache.fetch(key, out, &why)) {
            ++hits;
            if (read_file(out) != r.artifact) ++wrong;
          } else if (!why.empty()) {
            ++corrupt;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(stored.load(), 60);
  EXPECT_EQ(hits.load(), 60);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(corrupt.load(), 0);
  // No temporaries are left behind: the entry and its artifact.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "cache" / "entries"))
    names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{key.hex + ".nce", key.hex + ".nca"}));
}

TEST(CompileCache, EvictionKeepsTheMostRecentlyUsedEntries) {
  const fs::path dir = fresh_dir("evict");
  const CompileRequest req = request(model_path());
  const CompileResult r = compile_model(req);
  // Room for two entries of this size.
  CompileCache cache(dir / "cache", 2 * (r.artifact.size() + 8192) + 100);
  std::vector<CacheKey> keys;
  for (const char* t : {"trn1", "trn2", "trn3"}) {
    CompileRequest q = req;
    q.target = t;
    keys.push_back(cache.key(q));
  }
  std::string why;
  ASSERT_TRUE(cache.store(keys[0], r, &why));
  ASSERT_TRUE(cache.store(keys[1], r, &why));
  // keys[0] used after keys[1] was stored: keys[1] is now the least recently used.
  const fs::path e0 = dir / "cache" / "entries" / (keys[0].hex + ".nce");
  const fs::path e1 = dir / "cache" / "entries" / (keys[1].hex + ".nce");
  fs::last_write_time(e1, fs::last_write_time(e1) - std::chrono::minutes(10));
  fs::last_write_time(e0, fs::last_write_time(e0) - std::chrono::minutes(20));
  ASSERT_TRUE(cache.fetch(keys[0], dir / "out.nca", &why));  // refreshes keys[0]
  ASSERT_TRUE(cache.store(keys[2], r, &why));
  EXPECT_TRUE(fs::exists(e0));
  EXPECT_FALSE(fs::exists(e1));
  EXPECT_FALSE(fs::exists(fs::path(e1).replace_extension(".nca")));  // its artifact went with it
  EXPECT_TRUE(fs::exists(dir / "cache" / "entries" / (keys[2].hex + ".nce")));
}

TEST(CompileCache, WhatIsNotCached) {
  CompileRequest req = request(model_path());
  EXPECT_EQ(CompileCache::uncacheable(req), "");
  req.print_after = {"all"};
  EXPECT_NE(CompileCache::uncacheable(req), "");
  req.print_after.clear();
  req.debug_all_values = true;
  EXPECT_NE(CompileCache::uncacheable(req), "");
  CompileCache cache(fresh_dir("missing") / "cache");
  EXPECT_THROW(cache.key(request("/nonexistent/model.pt2")), std::runtime_error);
}

}  // namespace
}  // namespace neuronc::compiler
