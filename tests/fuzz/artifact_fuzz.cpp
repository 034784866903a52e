// libFuzzer target: loading an artifact from memory (header, root, segments, verifier, host
// kernel dry runs) and, when it loads, one Session run with zero-filled inputs of the declared
// shapes. Any input must give an error or a result — never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "neuronc/neuronc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  neuronc::LoadOptions options;
  options.max_hbm_arena_bytes = 64 << 20;  // keep sessions small under the fuzzer's RSS limit
  auto model = neuronc::Model::load_from_memory(
      std::span(reinterpret_cast<const std::byte*>(data), size), options);
  if (!model) return 0;
  neuronc::Session session(*model);
  if (!session.status().is_ok()) return 0;
  std::vector<std::vector<std::byte>> storage;
  std::vector<neuronc::NamedInput> inputs;
  for (const auto& spec : model->inputs()) {
    neuronc::Shape shape;
    int64_t n = 1;
    for (const auto& d : spec.dims) {
      if (d.value > (1 << 20) || d.coeff > (1 << 20) || d.min > (1 << 20)) return 0;
      const int64_t v = d.is_symbolic() ? d.coeff * d.min : d.value;
      if (v < 0 || (v > 0 && n > (1 << 20) / v)) return 0;  // not interested in huge inputs
      shape.push_back(v);
      n *= v;
    }
    storage.emplace_back(static_cast<size_t>(n) * neuronc::dtype_size(spec.dtype));
    inputs.push_back({spec.name, neuronc::TensorView(storage.back().data(), spec.dtype, shape)});
  }
  (void)session.run(inputs);
  return 0;
}
