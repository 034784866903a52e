// Fuzzes the zip reader and container detection: any input must parse or throw
// frontend::Error; every payload handed out must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "frontend/container.h"
#include "frontend/error.h"
#include "frontend/zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neuronc::frontend;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    ZipArchive zip = ZipArchive::open(bytes, "fuzz");
    for (const ZipEntry& e : zip.entries()) {
      try {
        auto d = zip.data(e);
        if (d.data() < bytes.data() || d.data() + d.size() > bytes.data() + bytes.size()) abort();
        if (d.size() < 4096) zip.verify_crc(e);
      } catch (const Error&) {
      }
    }
    try {
      classify_zip(zip);
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }
  (void)detect_container(bytes);
  return 0;
}
