// Test helper: compiles a committed fixture (models/<name>/model.pt2) once per process into a
// temporary .nca, for the bench / profile / report tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "compiler/compiler.h"
#include "tests/testing/scratch_dir.h"

namespace neuronc::tools::testing {

// Every committed fixture (issue 9: the commands work on each).
inline const char* const kFixtures[] = {
    "mlp",   "cnn", "transformer_encoder", "bert",    "gpt2",
    "llama", "vit", "dynamic_batch",       "buffers", "fallback"};

// This test process's scratch directory, removed when it exits.
inline std::filesystem::path scratch_dir() {
  return neuronc::testing::scratch_dir("neuronc_tools_test");
}

inline std::string fixture_model(const std::string& name) {
  return std::string(NEURONC_SOURCE_DIR) + "/models/" + name + "/model.pt2";
}

inline const compiler::CompileResult& compiled_fixture(const std::string& name) {
  static std::map<std::string, compiler::CompileResult> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  compiler::CompileRequest req;
  req.model = fixture_model(name);
  return cache.emplace(name, compiler::compile_model(req)).first->second;
}

// Path of the fixture's artifact (written on first use).
inline std::string fixture_artifact(const std::string& name) {
  const std::filesystem::path p = scratch_dir() / (name + ".nca");
  if (!std::filesystem::exists(p)) {
    const compiler::CompileResult& r = compiled_fixture(name);
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(r.artifact.data()),
            static_cast<std::streamsize>(r.artifact.size()));
  }
  return p.string();
}

// Runs `cmd` in the shell: exit code and stdout (stderr after it with `with_stderr`, else
// discarded).
struct Ran {
  int code = -1;
  std::string out;
};
inline Ran run_shell(const std::string& cmd, bool with_stderr = false) {
  Ran r;
  FILE* p = popen((cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs the built `neuronc` command with `args` (stderr discarded): exit code and stdout.
inline Ran neuronc(const std::string& args) {
  return run_shell(std::string(NEURONC_BINARY_DIR) + "/tools/neuronc " + args);
}

}  // namespace neuronc::tools::testing
