// Loads an artifact with the installed loader, runs it once and prints an output element.
#include <neuronc/neuronc.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto model = neuronc::Model::load(argv[1]);
  if (!model) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  neuronc::Session session(*model, {.target_cores = 1});
  std::vector<float> x(128, 0.5f);
  auto out = session.run({{"x", neuronc::TensorView(x.data(), neuronc::DType::f32, {4, 32})}});
  if (!out) {
    std::fprintf(stderr, "%s\n", out.status().to_string().c_str());
    return 1;
  }
  // relu(2 * 0.5 + 1) = 2 per element; cumsum over 32 columns; + weight[31] (= 0.25 * 3 - 0.5).
  const float y = out->at("y").as<float>()[31];
  std::printf("y[0, 31] = %g, simulated %.0f ns\n", y, session.stats().device_ns);
  return y == 64.25f ? 0 : 1;
}
