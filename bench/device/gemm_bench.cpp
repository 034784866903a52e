// Speed of the functional model on TensorE-shaped matmuls (issue 5 item 6): GFLOP/s of
// (a) the device GEMM kernel, (b) a whole simulated bf16 MatMul instruction (verify, event loop,
// widening, GEMM, PSUM write), next to (c) a plain auto-vectorised reference loop and, when
// built with libtorch, (d) torch::matmul on the same shapes (fp32 and bf16).
// Not a test: results are recorded in docs/DEVICE_MODEL.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "device/gemm.h"
#include "device/numerics.h"
#include "device/simulator.h"

#ifdef NEURONC_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using namespace neuronc::device;

// Shapes: K (contraction, partitions), M (stationary free), N (moving free).
void shapes(benchmark::internal::Benchmark* b) {
  b->Args({128, 128, 512})->Args({128, 128, 128})->Args({128, 64, 512})->Args({64, 128, 256});
}

void set_flops(benchmark::State& st, double k, double m, double n) {
  st.counters["GFLOP/s"] =
      benchmark::Counter(2 * k * m * n, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::OneK::kIs1000);
  st.counters["GFLOP/s"].value /= 1e9;
}

void BM_device_gemm(benchmark::State& st) {
  const int K = st.range(0), M = st.range(1), N = st.range(2);
  std::vector<float> a(K * M, 0.5f), b(K * N, 0.25f), c(M * N);
  for (auto _ : st) {
    gemm_at_b_f32(M, N, K, a.data(), M, b.data(), N, c.data(), N);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(st, K, M, N);
  st.SetLabel(std::string(gemm_kernel_name()) + ", fp32 operands");
}
BENCHMARK(BM_device_gemm)->Apply(shapes)->UseRealTime();

void BM_simulated_matmul_bf16(benchmark::State& st) {
  const int K = st.range(0), M = st.range(1), N = st.range(2);
  Simulator sim(target(TargetKind::trn1));
  sim.reset(1);
  // Random bf16 operands in [-1, 1) (zeros would make every range check trivial).
  StochasticRounder g(42);
  for (int part = 0; part < sim.target().partitions; ++part) {
    std::span<std::byte> sb = sim.sbuf(0, part);
    for (size_t i = 0; i + 1 < sb.size(); i += 2) {
      const uint16_t v = f32_to_bf16(static_cast<float>(g.next_u32()) / 2147483648.0f - 1.0f);
      std::memcpy(sb.data() + i, &v, 2);
    }
  }
  Program p;
  p.cores.resize(1);
  p.num_semaphores = 1;
  Instruction in;
  in.op = MatMul{psum(0, M, 0, DType::f32, N), sbuf(0, K, 0, DType::bf16, M),
                 sbuf(0, K, 4096, DType::bf16, N), false};
  p.cores[0].stream(Engine::tensor).push_back(in);
  for (auto _ : st) {
    auto r = sim.run(p, {});
    benchmark::DoNotOptimize(r);
  }
  set_flops(st, K, M, N);
}
BENCHMARK(BM_simulated_matmul_bf16)->Apply(shapes)->UseRealTime();

// The "naive but reasonable" reference: k-outer loop the compiler auto-vectorises.
void BM_reference_loop(benchmark::State& st) {
  const int K = st.range(0), M = st.range(1), N = st.range(2);
  std::vector<float> a(K * M, 0.5f), b(K * N, 0.25f), c(M * N);
  for (auto _ : st) {
    std::fill(c.begin(), c.end(), 0.0f);
    for (int k = 0; k < K; ++k)
      for (int m = 0; m < M; ++m) {
        const float s = a[k * M + m];
        float* cr = c.data() + m * N;
        const float* br = b.data() + k * N;
        for (int n = 0; n < N; ++n) cr[n] += s * br[n];
      }
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(st, K, M, N);
}
BENCHMARK(BM_reference_loop)->Apply(shapes)->UseRealTime();

#ifdef NEURONC_HAVE_TORCH
void torch_matmul(benchmark::State& st, torch::Dtype dt) {
  const int K = st.range(0), M = st.range(1), N = st.range(2);
  auto a = torch::rand({K, M}).to(dt);
  auto b = torch::rand({K, N}).to(dt);
  for (auto _ : st) {
    auto c = torch::matmul(a.t(), b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(st, K, M, N);
}
void BM_torch_matmul_f32(benchmark::State& st) {
  torch_matmul(st, torch::kFloat32);
}
void BM_torch_matmul_bf16(benchmark::State& st) {
  torch_matmul(st, torch::kBFloat16);
}
BENCHMARK(BM_torch_matmul_f32)->Apply(shapes)->UseRealTime();
BENCHMARK(BM_torch_matmul_bf16)->Apply(shapes)->UseRealTime();
#endif

// Console output plus a remembered GFLOP/s per benchmark, so main can print the ratios of one
// run (the criterion compares the simulated instruction with libtorch in one run).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration && r.aggregate_name != "median") continue;
      auto it = r.counters.find("GFLOP/s");
      if (it == r.counters.end()) continue;
      std::string name = r.run_name.function_name + "/" + r.run_name.args;
      gflops[name] = it->second.value;
    }
  }
  std::map<std::string, double> gflops;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  // simulated bf16 MatMul / torch bf16 and / torch fp32, per shape that ran both.
  bool header = false;
  for (const auto& [name, sim] : reporter.gflops) {
    const std::string prefix = "BM_simulated_matmul_bf16/";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string shape = name.substr(prefix.size());
    for (const char* ref : {"BM_torch_matmul_bf16", "BM_torch_matmul_f32"}) {
      auto it = reporter.gflops.find(std::string(ref) + "/" + shape);
      if (it == reporter.gflops.end() || it->second <= 0) continue;
      if (!header) std::printf("\nratio of the simulated bf16 MatMul (K/M/N) to libtorch:\n");
      header = true;
      std::printf("  %-12s %-22s %7.1f / %7.1f GFLOP/s = %.2f\n", shape.c_str(), ref + 3, sim,
                  it->second, sim / it->second);
    }
  }
  benchmark::Shutdown();
  return 0;
}
