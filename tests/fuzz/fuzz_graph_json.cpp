// Fuzzes the ExportedProgram and PayloadConfig JSON readers: any text must import (and verify)
// or throw frontend::Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontend/error.h"
#include "frontend/exported_program_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neuronc::frontend;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    import_exported_program(text, "fuzz.json");
  } catch (const Error&) {
  }
  try {
    read_payload_config(text, "fuzz_config.json");
  } catch (const Error&) {
  }
  return 0;
}
