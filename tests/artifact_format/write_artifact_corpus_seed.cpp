// Writes the valid seed of the artifact corpus (tests/corpus/artifact/valid_two_partition.nca),
// the well-formed artifact the fuzzer mutates and the malformed cases start from. Run it after a
// change to the artifact format; `ArtifactMalformed.CommittedValidSeedIsCurrent` fails until the
// committed seed is rewritten.
//   build-ci/tests/artifact_format/write_artifact_corpus_seed [DIR]   (default: the source tree's)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/artifact_format/test_artifacts.h"

int main(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [DIR]  (expected at most one argument, found %d)\n", argv[0],
                 argc - 1);
    return 2;
  }
  const std::filesystem::path dir =
      argc == 2 ? std::filesystem::path(argv[1])
                : std::filesystem::path(NEURONC_SOURCE_DIR) / "tests/corpus/artifact";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  const auto bytes = neuronc::testing::two_partition_artifact();
  const std::filesystem::path path = dir / "valid_two_partition.nca";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("wrote %s (%zu bytes)\n", path.c_str(), bytes.size());
  return 0;
}
