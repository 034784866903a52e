// Fuzzes the whole loader (container detection, zip, JSON, weights, pickles) on in-memory files.
#include <cstddef>
#include <cstdint>

#include "frontend/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neuronc::frontend;
  auto file = MappedFile::from_bytes(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), "fuzz.pt2");
  try {
    LoadedProgram p = load_program(file);
  } catch (const Error&) {
  }
  return 0;
}
