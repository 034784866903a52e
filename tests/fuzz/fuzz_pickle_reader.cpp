// Fuzzes the pickle interpreter: any byte string must produce a document or throw
// frontend::Error, with bounded memory and no execution of anything.
#include <cstddef>
#include <cstdint>

#include "frontend/error.h"
#include "frontend/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neuronc::frontend;
  try {
    PickleDocument doc = read_pickle(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), "fuzz.pkl");
    (void)doc.root();
  } catch (const Error&) {
  }
  return 0;
}
