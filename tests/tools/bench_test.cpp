// `neuronc bench`: the price table is well-formed data with a source and date on every price,
// user tables override it, and the benchmark report has the documented fields with numbers
// that agree with each other and with the device model, on every fixture that compiles.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include "device/parameters.h"
#include "tests/tools/fixture_artifacts.h"
#include "tools/bench_command.h"
#include "tools/cli_output.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {
namespace {

using json = nlohmann::ordered_json;
using testing::fixture_artifact;
using testing::kFixtures;
using testing::neuronc;
using testing::Ran;
using testing::scratch_dir;

TEST(PriceTable, BuiltinEntriesCarrySourceDateAndFlag) {
  const PriceTable t = parse_price_table(builtin_price_table_json(), "builtin");
  for (const char* name :
       {"trn1.2xlarge", "trn1.32xlarge", "trn2.48xlarge", "inf2.xlarge", "inf2.48xlarge"}) {
    EXPECT_NE(t.find(name), nullptr) << name;
  }
  size_t prices = 0, unverified = 0;
  for (const InstanceInfo& i : t.instances) {
    EXPECT_GT(i.neuron_cores, 0) << i.instance;
    EXPECT_FALSE(i.facts_source.empty()) << i.instance;
    for (const InstancePrice& p : i.prices) {
      ++prices;
      unverified += p.unverified;
      EXPECT_FALSE(p.source.empty()) << i.instance;
      EXPECT_EQ(p.date.size(), 10u) << i.instance << ": date " << p.date;
      EXPECT_GT(p.usd_per_hour, 0) << i.instance;
    }
  }
  EXPECT_GE(prices, 8u);
  EXPECT_GE(unverified, 1u);  // TRAINIUM.md §6.4 marks some on-demand prices unverified
  // Cores per instance from TRAINIUM.md §2.2.
  EXPECT_EQ(t.find("trn1.2xlarge")->neuron_cores, 2);
  EXPECT_EQ(t.find("trn1.32xlarge")->neuron_cores, 32);
  EXPECT_EQ(t.find("inf2.48xlarge")->neuron_cores, 24);
  EXPECT_EQ(t.default_instance("trn1"), "trn1.2xlarge");
}

TEST(PriceTable, RejectsAPriceWithoutSource) {
  const std::string bad = R"({"instances": [{"instance": "x.large", "target": "trn1", "chips": 1,
    "neuron_cores": 2, "prices": [{"pricing": "on_demand", "usd_per_hour": 1.0, "date": "2026-01-01",
    "unverified": false}]}]})";
  try {
    (void)parse_price_table(bad, "'mine.json'");
    FAIL() << "expected an error";
  } catch (const CommandExit& e) {
    EXPECT_NE(e.message.find("'mine.json'"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("instances[0] (x.large).prices[0] has no 'source'"), std::string::npos)
        << e.message;
  }
  try {
    (void)parse_price_table(
        R"({"instances": [{"instance": "y", "target": "trn1", "chips": 1, "neuron_cores": "2", "prices": []}]})",
        "t");
    FAIL() << "expected an error";
  } catch (const CommandExit& e) {
    EXPECT_NE(e.message.find("neuron_cores is \"2\", expected a non-negative integer"),
              std::string::npos)
        << e.message;
  }
}

TEST(PriceTable, UserFileReplacesAndAdds) {
  const std::string path = (scratch_dir() / "prices.json").string();
  std::ofstream(path) << R"({"instances": [
    {"instance": "trn1.2xlarge", "target": "trn1", "chips": 1, "neuron_cores": 2,
     "prices": [{"pricing": "on_demand", "usd_per_hour": 2.0, "source": "our AWS bill", "date": "2026-10-01", "unverified": false}]},
    {"instance": "lab.box", "target": "trn1", "chips": 1, "neuron_cores": 4, "prices": []}]})";
  const PriceTable t = load_price_table(path);
  ASSERT_NE(t.find("trn1.2xlarge"), nullptr);
  ASSERT_EQ(t.find("trn1.2xlarge")->prices.size(), 1u);
  EXPECT_EQ(t.find("trn1.2xlarge")->prices[0].source, "our AWS bill");
  EXPECT_NE(t.find("lab.box"), nullptr);
  EXPECT_NE(t.find("inf2.xlarge"), nullptr);  // untouched built-in entries stay
}

class BenchFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(BenchFixture, ReportHasTheDocumentedFieldsAndConsistentNumbers) {
  BenchOptions o;
  o.artifact = fixture_artifact(GetParam());
  o.iterations = 6;
  o.threads = 2;
  const json r = run_bench(o);
  for (const char* f : {"simulated_latency_us", "end_to_end_latency_us", "throughput_per_s", "mfu",
                        "mbu", "engine_utilization", "hbm_bytes", "host_seconds_per_inference",
                        "cost_per_million_usd", "assumptions"}) {
    EXPECT_TRUE(r.contains(f)) << f;
  }
  const json& lat = r["simulated_latency_us"];
  EXPECT_GT(lat["p50"].get<double>(), 0);
  EXPECT_LE(lat["p50"].get<double>(), lat["p99"].get<double>());
  EXPECT_LE(lat["min"].get<double>(), lat["p50"].get<double>());
  EXPECT_LE(lat["p99"].get<double>(), lat["max"].get<double>());

  // The loader's simulated device time equals the timing-only timeline's.
  const Timeline t = simulate_artifact_file(o.artifact, {.trace = false});
  EXPECT_NEAR(lat["device"].get<double>(), t.device_ns / 1e3, 1e-6 * t.device_ns);
  EXPECT_EQ(r["hbm_bytes"]["total"].get<uint64_t>(), t.hbm_bytes());
  EXPECT_GT(r["hbm_bytes"]["read"].get<uint64_t>(), 0u);

  // End to end: device + host ops + each execution's time outside the device, term by term:
  // program start and runtime call per device call, PCIe copies of what the calls move (the
  // same bytes the timing-only timeline counts).
  const json& e2e = r["end_to_end_latency_us"];
  EXPECT_EQ(e2e["issue"], "synchronous");
  size_t device_steps = 0;
  for (const TimelineStep& s : t.steps) device_steps += s.device;
  EXPECT_EQ(e2e["execution_calls"].get<size_t>(), device_steps);
  EXPECT_EQ(e2e["host_transfer_bytes"].get<uint64_t>(), t.traffic.bytes_in + t.traffic.bytes_out);
  EXPECT_GT(e2e["host_transfer_bytes"].get<uint64_t>(), 0u);
  const device::Target& trn1 = device::target(device::TargetKind::trn1);
  EXPECT_NEAR(e2e["program_start_and_call"].get<double>(),
              device_steps * trn1.execution_call_ns / 1e3, 1e-9);
  EXPECT_NEAR(e2e["host_transfer"].get<double>(),
              e2e["host_transfer_bytes"].get<uint64_t>() / trn1.host_link_bytes_per_ns / 1e3, 1e-9);
  EXPECT_NEAR(e2e["mean"].get<double>(),
              lat["mean"].get<double>() + e2e["program_start_and_call"].get<double>() +
                  e2e["host_transfer"].get<double>(),
              1e-6 * e2e["mean"].get<double>());
  EXPECT_GT(e2e["p50"].get<double>(), lat["p50"].get<double>());
  EXPECT_LT(e2e["asynchronous_p50"].get<double>(), e2e["p50"].get<double>());

  // Every parameter of the target with the kind of its source (docs/DEVICE_MODEL.md).
  ASSERT_TRUE(r.contains("parameters"));
  std::map<std::string, json> params;
  for (const json& p : r["parameters"]) params[p["name"].get<std::string>()] = p;
  EXPECT_EQ(params.size(), device::target_parameters(trn1).size());
  EXPECT_EQ(params.at("execution_call_ns")["kind"], "fitted");
  EXPECT_EQ(params.at("execution_call_ns")["value"].get<double>(), trn1.execution_call_ns);
  EXPECT_EQ(params.at("tensor_clock_ghz")["kind"], "published");
  EXPECT_EQ(params.at("host_link_bytes_per_ns")["kind"], "assumption");
  EXPECT_EQ(params.at("host_link_bytes_per_ns")["unit"], "B/ns");
  EXPECT_EQ(params.at("name")["value"], "trn1");

  // One inference in flight per copy, waiting for each end to end.
  const json& tp = r["throughput_per_s"];
  EXPECT_EQ(tp["instance"], "trn1.2xlarge");
  EXPECT_NEAR(tp["per_neuron_core"].get<double>(), 1e6 / e2e["mean"].get<double>(),
              1e-6 * tp["per_neuron_core"].get<double>());
  EXPECT_NEAR(tp["per_instance"].get<double>(), 2 * tp["per_neuron_core"].get<double>(),
              1e-6 * tp["per_instance"].get<double>());

  const double mfu = r["mfu"].get<double>(), mbu = r["mbu"].get<double>();
  EXPECT_GT(mfu, 0);
  EXPECT_LE(mfu, 1);
  EXPECT_GT(mbu, 0);
  EXPECT_LE(mbu, 1);
  for (const auto& [engine, u] : r["engine_utilization"].items()) {
    EXPECT_GE(u.get<double>(), 0) << engine;
    EXPECT_LE(u.get<double>(), 1.0 + 1e-9) << engine;
  }
  EXPECT_GT(r["engine_utilization"]["dma"].get<double>(), 0);
  EXPECT_GT(r["host_seconds_per_inference"].get<double>(), 0);

  // Cost = price / 3600 / instance throughput, from the table's on-demand trn1.2xlarge entry.
  const json& p = r["price"];
  EXPECT_EQ(p["pricing"], "on_demand");
  EXPECT_FALSE(p["source"].get<std::string>().empty());
  EXPECT_FALSE(p["date"].is_null());
  EXPECT_NEAR(r["cost_per_million_usd"].get<double>(),
              p["usd_per_hour"].get<double>() / 3600 / tp["per_instance"].get<double>() * 1e6,
              1e-12);

  // Every device-model assumption is reported (TRAINIUM.md §1), plus bench's own.
  bool has_sem = false, has_bench = false;
  for (const json& a : r["assumptions"]) {
    EXPECT_TRUE(a.contains("value") && a.contains("why")) << a.dump();
    has_sem |= a["name"] == "semaphore_latency_cycles";
    has_bench |= a["name"] == "bench_model_copies_per_core";
  }
  EXPECT_TRUE(has_sem);
  EXPECT_TRUE(has_bench);
  EXPECT_FALSE(format_bench_text(r).empty());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BenchFixture, ::testing::ValuesIn(kFixtures));

TEST(Bench, HostFallbackTimeIsPartOfTheLatency) {
  BenchOptions o;
  o.artifact = fixture_artifact("fallback");
  o.iterations = 3;
  const json r = run_bench(o);
  const json& lat = r["simulated_latency_us"];
  EXPECT_GT(lat["host_ops"].get<double>(), 0);
  EXPECT_NEAR(lat["mean"].get<double>(),
              lat["device"].get<double>() + lat["host_ops"].get<double>(),
              1e-6 * lat["mean"].get<double>());
}

TEST(Bench, PriceOverrideAndInstanceChoice) {
  BenchOptions o;
  o.artifact = fixture_artifact("mlp");
  o.iterations = 2;
  o.instance = "trn1.32xlarge";
  o.price_per_hour = 3.6;
  const json r = run_bench(o);
  EXPECT_EQ(r["throughput_per_s"]["neuron_cores_per_instance"], 32);
  EXPECT_EQ(r["price"]["source"], "--price-per-hour");
  EXPECT_NEAR(r["cost_per_million_usd"].get<double>(),
              3.6 / 3600 / r["throughput_per_s"]["per_instance"].get<double>() * 1e6, 1e-12);

  o.price_per_hour.reset();
  o.pricing = "reserved_effective";
  const json rr = run_bench(o);
  EXPECT_EQ(rr["price"]["usd_per_hour"], 8.197);

  o.instance = "trn2.48xlarge";  // NeuronCore-v3: a trn1 artifact does not run there
  try {
    (void)run_bench(o);
    FAIL() << "expected a target mismatch";
  } catch (const CommandExit& e) {
    EXPECT_EQ(e.code, kExitUsage);
    EXPECT_NE(e.message.find("compiled for trn1"), std::string::npos) << e.message;
  }
  o.instance = "p5.48xlarge";
  try {
    (void)run_bench(o);
    FAIL() << "expected an unknown instance";
  } catch (const CommandExit& e) {
    EXPECT_NE(e.message.find("not in the price table"), std::string::npos) << e.message;
  }
}

// A tensor-parallel artifact (compile --tp 8) is priced on the smallest instance of its target
// with its cores, throughput per instance counts one copy per 8 cores, engine utilisation is
// the cores' average, and an instance with fewer cores is refused.
TEST(Bench, ATensorParallelArtifactIsPricedOnAnInstanceWithItsCores) {
  const std::string art = (scratch_dir() / "llama_heads8_tp8.nca").string();
  const Ran c = neuronc("compile " + std::string(NEURONC_SOURCE_DIR) +
                        "/models/llm/llama_heads8_tiny --tp 8 -o " + art + " --json");
  ASSERT_EQ(c.code, 0) << c.out;
  const json cj = json::parse(c.out);
  EXPECT_EQ(cj["tensor_parallel"]["cores"], 8);
  EXPECT_EQ(cj["tensor_parallel"]["all_reduces"], 8);  // 2 per layer, 2 layers, 2 programs
  BenchOptions o;
  o.artifact = art;
  o.iterations = 1;
  o.generate = true;
  o.prompt_len = 8;
  o.new_tokens = 4;
  const json r = run_bench_generate(o);
  EXPECT_EQ(r["neuron_cores_per_inference"], 8);
  EXPECT_EQ(r["output_tokens_per_s"]["instance"], "trn1.32xlarge");
  EXPECT_NEAR(r["output_tokens_per_s"]["per_instance"].get<double>(),
              4 * r["output_tokens_per_s"]["per_neuron_core"].get<double>() * 8, 1e-6);
  for (const auto& [engine, u] : r["decode_engine_utilization"].items())
    EXPECT_LE(u.get<double>(), 1.0) << engine;
  o.instance = "trn1.2xlarge";
  try {
    (void)run_bench_generate(o);
    FAIL() << "expected too few cores";
  } catch (const CommandExit& e) {
    EXPECT_EQ(e.code, kExitUsage);
    EXPECT_NE(e.message.find("has 2 NeuronCores but the artifact runs on 8"), std::string::npos)
        << e.message;
  }
}

TEST(Bench, SameSeedSameSimulatedLatency) {
  BenchOptions o;
  o.artifact = fixture_artifact("dynamic_batch");
  o.iterations = 4;
  o.seed = 7;
  const json a = run_bench(o);
  o.threads = 3;
  const json b = run_bench(o);
  EXPECT_EQ(a["simulated_latency_us"]["device"], b["simulated_latency_us"]["device"]);
  EXPECT_EQ(a["hbm_bytes"], b["hbm_bytes"]);
  EXPECT_EQ(a["inputs"], b["inputs"]);
}

// An artifact in memory (compare's compiles) benches as the same bytes in a file do; only the
// name differs. The cost is bench's formula at the throughput.
TEST(Bench, AnArtifactInMemoryBenchesAsItsFile) {
  BenchOptions o;
  o.artifact = fixture_artifact("cnn");
  o.iterations = 3;
  const json file = run_bench(o);
  o.artifact = "cnn in memory";
  const json memory = run_bench_bytes(o, testing::compiled_fixture("cnn").artifact);
  EXPECT_EQ(memory["artifact"], "cnn in memory");
  EXPECT_EQ(memory["simulated_latency_us"]["p50"], file["simulated_latency_us"]["p50"]);
  EXPECT_EQ(memory["simulated_latency_us"]["p99"], file["simulated_latency_us"]["p99"]);
  EXPECT_EQ(memory["throughput_per_s"], file["throughput_per_s"]);
  EXPECT_EQ(memory["cost_per_million_usd"], file["cost_per_million_usd"]);
  EXPECT_EQ(memory["hbm_bytes"], file["hbm_bytes"]);
  EXPECT_DOUBLE_EQ(memory["cost_per_million_usd"].get<double>(),
                   cost_per_million_usd(memory["price"]["usd_per_hour"].get<double>(),
                                        memory["throughput_per_s"]["per_instance"].get<double>()));
  EXPECT_DOUBLE_EQ(cost_per_million_usd(3.6, 1000), 1.0);
  const std::vector<std::byte> junk(64, std::byte{7});
  EXPECT_THROW(run_bench_bytes(o, junk), CommandExit);
}

// A model with shape buckets: --dim picks the benched shape, and the bucket that fits runs.
TEST(Bench, DimPicksTheShapeOfABucketedModel) {
  BenchOptions o;
  o.artifact = fixture_artifact("bert_dynamic");
  o.iterations = 2;
  o.dims = {{"s43", 3}, {"s53", 40}};
  const json r = run_bench(o);
  EXPECT_EQ(r["entry"], "main[s43=4,s53=64]");
  EXPECT_EQ(r["inputs"][0]["shape"], json::array({3, 40}));
  // The timeline is the bucket's that ran, not the first's (1 x 8).
  o.dims = {{"s43", 1}, {"s53", 8}};
  const json first = run_bench(o);
  EXPECT_EQ(first["entry"], "main[s43=1,s53=8]");
  EXPECT_GT(r["hbm_bytes"]["total"].get<double>(), first["hbm_bytes"]["total"].get<double>());
  EXPECT_GT(r["model_flops"].get<double>(), first["model_flops"].get<double>());
  o.dims = {{"s53", 400}};
  try {
    run_bench(o);
    FAIL() << "a dim outside its range was benched";
  } catch (const CommandExit& e) {
    EXPECT_NE(e.message.find("--dim s53=400: expected [8, 128]"), std::string::npos) << e.message;
  }
}

// --timing-only: the device model's time without the data. It is the functional run's device
// time exactly (simulated time depends on no data), on a model with host ops and without, and
// the host-fallback steps are said to be left out rather than silently dropped.
TEST(Bench, TimingOnlyGivesTheFunctionalRunsDeviceTime) {
  for (const char* name : kFixtures) {
    BenchOptions o;
    o.artifact = fixture_artifact(name);
    o.iterations = 2;
    const json full = run_bench(o);
    o.timing_only = true;
    if (full.contains("entry")) {  // shape buckets: refused (TimingOnlyRefusesShapeBuckets)
      EXPECT_THROW(run_bench(o), CommandExit) << name;
      continue;
    }
    const json timed = run_bench(o);
    EXPECT_TRUE(timed["timing_only"].get<bool>()) << name;
    EXPECT_FALSE(full["timing_only"].get<bool>()) << name;
    EXPECT_EQ(timed["simulated_latency_us"]["device"], full["simulated_latency_us"]["device"])
        << name;
    EXPECT_EQ(timed["simulated_latency_us"]["host_ops"].get<double>(), 0) << name;
    EXPECT_EQ(timed["hbm_bytes"], full["hbm_bytes"]) << name;
    EXPECT_EQ(timed["instructions"], full["instructions"]) << name;
    EXPECT_GT(timed["host_seconds_per_inference"].get<double>(), 0) << name;
    bool said = false;
    for (const json& a : timed["assumptions"])
      if (a["name"] == "bench_host_ops_time") {
        said = true;
        EXPECT_EQ(a["unit"], "not run") << name;
        EXPECT_NE(a["why"].get<std::string>().find("--timing-only"), std::string::npos) << a.dump();
      }
    EXPECT_TRUE(said) << name;
  }
  BenchOptions o;
  o.artifact = fixture_artifact("fallback");
  o.iterations = 1;
  o.timing_only = true;
  EXPECT_NE(format_bench_text(run_bench(o)).find("--timing-only"), std::string::npos);
}

// Which bucket runs depends on the inputs; --timing-only refuses rather than time another one.
TEST(Bench, TimingOnlyRefusesShapeBuckets) {
  BenchOptions o;
  o.artifact = fixture_artifact("bert_dynamic");
  o.iterations = 1;
  o.timing_only = true;
  try {
    run_bench(o);
    FAIL() << "a bucketed model was timed without running";
  } catch (const CommandExit& e) {
    EXPECT_EQ(e.code, kExitUsage);
    EXPECT_NE(e.message.find("shape buckets"), std::string::npos) << e.message;
  }
}

// run --timing-only: the functional run's device time, with no inputs read and no outputs
// written; the host-fallback steps it leaves out are counted; a bucket group and inputs are
// refused with the reason.
TEST(Run, TimingOnlyGivesTheFunctionalRunsDeviceTime) {
  const std::string art = fixture_artifact("fallback");
  const std::string model = std::string(NEURONC_SOURCE_DIR) + "/models/fallback/model.pt2";
  const std::filesystem::path out = scratch_dir() / "run_timing_only";
  const Ran full = neuronc("run " + art + " --model " + model + " --output-dir " +
                           (out / "full").string() + " --json");
  ASSERT_EQ(full.code, 0) << full.out;
  const Ran timed =
      neuronc("run " + art + " --timing-only --output-dir " + (out / "timed").string() + " --json");
  ASSERT_EQ(timed.code, 0) << timed.out;
  const json f = json::parse(full.out), t = json::parse(timed.out);
  EXPECT_TRUE(t["timing_only"].get<bool>());
  EXPECT_EQ(t["device_us"], f["device_us"]);
  EXPECT_EQ(t["instructions"], f["instructions"]);
  EXPECT_EQ(t["host_ops_not_run"], f["host_ops"]);
  EXPECT_GT(t["host_ops_not_run"].get<int>(), 0);
  EXPECT_FALSE(std::filesystem::exists(out / "timed"));
  EXPECT_NE(neuronc("run " + art + " --timing-only").out.find("host-fallback steps not run"),
            std::string::npos);
  EXPECT_EQ(neuronc("run " + art + " --timing-only --model " + model).code, 2);
  const std::string buckets = fixture_artifact("dynamic_batch");
  EXPECT_EQ(neuronc("run " + buckets + " --timing-only").code, 2);
  EXPECT_EQ(neuronc("run " + buckets + " --timing-only --entry main").code, 2);  // the group
  EXPECT_EQ(neuronc("run " + buckets + " --timing-only --entry nope").code, 2);
  const Ran one = neuronc("run " + buckets + " --timing-only --entry 'main[s77=2]' --json");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(json::parse(one.out)["entry"], "main[s77=2]");
}

}  // namespace
}  // namespace neuronc::tools
