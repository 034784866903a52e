// Writes the hand-built two-partition artifact (tests/artifact_format/test_artifacts.h) to
// argv[1], for the install-tree consumer test.
#include <cstdio>

#include "tests/artifact_format/test_artifacts.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.nca\n", argv[0]);
    return 2;
  }
  auto w = neuronc::testing::two_partition_writer();
  const auto s = w.write_file(argv[1]);
  if (!s.is_ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
