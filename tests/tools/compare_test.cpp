// `neuronc compare`: through the built command on three committed fixtures. Every target row is
// there in order, its cost per million is the price table's price over its throughput, a
// cheaper instance gives a proportionally lower cost, the baseline row follows from its own
// numbers, the errors a user can make are refused, a model that does not compile shows its
// error in every row, and the HTML report renders in headless Chromium with every plot drawn.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/fixture_artifacts.h"
#include "tests/tools/headless_chromium.h"
#include "tools/bench_command.h"
#include "tools/cli_output.h"
#include "tools/compare_command.h"

namespace neuronc::tools {
namespace {

namespace fs = std::filesystem;
using testing::fixture_model;
using testing::have_chromium;
using testing::neuronc;
using testing::Ran;
using testing::render_in_chromium;
using testing::run_shell;
using testing::scratch_dir;

// Prices for the targets the built-in table cannot price (trn2.48xlarge has no public price,
// trn3 no instance): made-up figures, so the test checks the arithmetic, not the market.
std::string test_prices() {
  const fs::path p = scratch_dir() / "compare_prices.json";
  std::ofstream(p) << R"({
  "defaults": {"trn3": "trn3.test"},
  "instances": [
    {"instance": "trn2.48xlarge", "target": "trn2", "chips": 16, "neuron_cores": 128,
     "prices": [{"pricing": "on_demand", "usd_per_hour": 40.0, "source": "compare_test",
                 "date": "2026-01-01", "unverified": true}]},
    {"instance": "trn3.test", "target": "trn3", "chips": 1, "neuron_cores": 8,
     "prices": [{"pricing": "on_demand", "usd_per_hour": 5.0, "source": "compare_test",
                 "date": "2026-01-01", "unverified": true}]}
  ]
})";
  return p.string();
}

double rel_diff(double a, double b) {
  return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b));
}

class CompareFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(CompareFixture, EveryRowIsPricedFromTheTableAndTheBaselineFromItsNumbers) {
  const std::string prices = test_prices();
  const Ran r = neuronc("compare " + fixture_model(GetParam()) +
                        " --auto-cast none --iterations 2 --prices " + prices +
                        " --baseline g5.xlarge=2.5@1.006 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["quality_reference"]["kind"], "reference");
  const PriceTable table = load_price_table(prices);
  const auto& rows = j["rows"];
  ASSERT_EQ(rows.size(), 4u);
  const char* targets[] = {"trn1", "trn2", "trn3"};
  for (int i = 0; i < 3; ++i) {
    const auto& row = rows[i];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["row"], std::string(targets[i]) + " none");
    EXPECT_EQ(row["kind"], "trainium");
    EXPECT_EQ(row["target"], targets[i]);
    ASSERT_TRUE(row["error"].is_null());
    const double p50 = row["latency_us"]["p50"].get<double>();
    EXPECT_GT(p50, 0);
    EXPECT_GE(row["latency_us"]["p99"].get<double>(), p50);
    // Throughput per instance: one copy per group of the artifact's cores, one inference in
    // flight per copy, at the mean simulated latency (bench's definition).
    const auto& tp = row["throughput_per_s"];
    const InstanceInfo* inst = table.find(tp["instance"].get<std::string>());
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->target, targets[i]);
    EXPECT_EQ(inst->instance, table.default_instance(targets[i]));
    const int copies = inst->neuron_cores / row["neuron_cores_per_inference"].get<int>();
    EXPECT_LT(rel_diff(tp["per_instance"].get<double>(),
                       copies * 1e6 / row["latency_us"]["mean"].get<double>()),
              1e-12);
    // Cost per million = the table's hourly price / 3600 / throughput x 1e6.
    double usd_per_hour = 0;
    for (const InstancePrice& p : inst->prices)
      if (p.pricing == "on_demand") usd_per_hour = p.usd_per_hour;
    ASSERT_GT(usd_per_hour, 0);
    EXPECT_EQ(row["price"]["usd_per_hour"].get<double>(), usd_per_hour);
    const double cost = row["cost_per_million_usd"].get<double>();
    EXPECT_GT(cost, 0);
    EXPECT_LT(rel_diff(cost, usd_per_hour / 3600 / tp["per_instance"].get<double>() * 1e6), 1e-12);
    // Quality against the committed PyTorch outputs, every one of them.
    const auto& q = row["quality"];
    EXPECT_EQ(q["sets"], 1);
    EXPECT_EQ(q["outputs"].size(), std::string(GetParam()) == "bert" ? 2u : 1u);
    EXPECT_TRUE(q["pass"].get<bool>());
    EXPECT_GT(q["min_cosine"].get<double>(), 0.999);
    EXPECT_LT(q["max_rel_error"].get<double>(), 0.1);
  }
  // The baseline: 2.5 ms per inference, one in flight, at $1.006 per hour.
  const auto& b = rows[3];
  EXPECT_EQ(b["row"], "g5.xlarge");
  EXPECT_EQ(b["kind"], "baseline");
  EXPECT_DOUBLE_EQ(b["latency_us"]["p50"].get<double>(), 2500.0);
  EXPECT_DOUBLE_EQ(b["throughput_per_s"]["per_instance"].get<double>(), 400.0);
  EXPECT_LT(rel_diff(b["cost_per_million_usd"].get<double>(), 1.006 / 3600 * 2.5e-3 * 1e6), 1e-12);
  EXPECT_TRUE(b["quality"].is_null());
  EXPECT_EQ(b["quality_note"], "not measured");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CompareFixture, ::testing::Values("mlp", "cnn", "bert"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

// The same artifact priced on two instances of the table: the simulated latency is the same (no
// host ops in mlp, so no measured time), so the costs are in the ratio of the prices.
TEST(Compare, CostFollowsTheInstancePrice) {
  const std::string common =
      "compare " + fixture_model("mlp") + " --targets trn1 --auto-cast none --iterations 2 --json";
  const Ran a = neuronc(common);
  const Ran b = neuronc(common + " --instance trn1=inf2.xlarge");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  const auto ra = nlohmann::json::parse(a.out)["rows"][0];
  const auto rb = nlohmann::json::parse(b.out)["rows"][0];
  EXPECT_EQ(ra["throughput_per_s"]["instance"], "trn1.2xlarge");
  EXPECT_EQ(rb["throughput_per_s"]["instance"], "inf2.xlarge");
  ASSERT_EQ(ra["latency_us"]["mean"], rb["latency_us"]["mean"]);
  const PriceTable table = load_price_table("");
  const double pa = table.find("trn1.2xlarge")->prices[0].usd_per_hour;
  const double pb = table.find("inf2.xlarge")->prices[0].usd_per_hour;
  ASSERT_LT(pb, pa);
  EXPECT_LT(rb["cost_per_million_usd"].get<double>(), ra["cost_per_million_usd"].get<double>());
  EXPECT_LT(
      rel_diff(rb["cost_per_million_usd"].get<double>() / ra["cost_per_million_usd"].get<double>(),
               pb / pa),
      1e-12);
  // --price-per-hour overrides the table for its target.
  const Ran c = neuronc(common + " --price-per-hour trn1=2.68");
  ASSERT_EQ(c.code, 0) << c.out;
  const auto rc = nlohmann::json::parse(c.out)["rows"][0];
  EXPECT_LT(rel_diff(rc["cost_per_million_usd"].get<double>(),
                     2 * ra["cost_per_million_usd"].get<double>()),
            1e-12);
}

TEST(Compare, TableHasEveryRowInOrder) {
  const Ran r = neuronc("compare " + fixture_model("mlp") +
                        " --targets trn2,trn1 --auto-cast matmul,none --iterations 2 "
                        "--baseline a=1@2 --baseline b=3@0.5");
  ASSERT_EQ(r.code, 0) << r.out;
  size_t at = 0;
  for (const char* row :
       {"\ntrn2 matmul ", "\ntrn2 none ", "\ntrn1 matmul ", "\ntrn1 none ", "\na ", "\nb "}) {
    const size_t found = r.out.find(row, at);
    ASSERT_NE(found, std::string::npos) << row << " after " << at << "\n" << r.out;
    at = found + 1;
  }
  EXPECT_NE(r.out.find("not measured"), std::string::npos);
  EXPECT_NE(r.out.find("no price"), std::string::npos);  // trn2.48xlarge has no public price
  // Baseline a: $2/h at 1 ms = 0.5556 per million; b: $0.5/h at 3 ms = 0.4167.
  EXPECT_NE(r.out.find("0.5556"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.4167"), std::string::npos) << r.out;
}

// The usage error `f` throws (exit code 2), with its message; fails the test otherwise.
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const CommandExit& e) {
    EXPECT_EQ(e.code, kExitUsage) << e.message;
    return e.message;
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(Compare, BadBaselinesAndTargetsAreUsageErrors) {
  for (const char* bad : {"g5", "g5=2.5", "=2.5@1", "g5=@1", "g5=2.5@", "g5=abc@1", "g5=2.5@1x",
                          "g5=-1@1", "g5=0@1", "g5=2.5@0", "g5=nan@1", "g5=inf@1"}) {
    const std::string message = usage_error([&] { parse_baseline(bad); });
    EXPECT_EQ(message.rfind("--baseline '" + std::string(bad) + "': ", 0), 0u) << message;
  }
  EXPECT_NE(usage_error([] { parse_baseline("g5=-1@1"); }).find("is -1, expected a number > 0"),
            std::string::npos);

  const auto args = [](auto change) {
    CompareArgs a;
    a.o.model = fixture_model("mlp");
    a.o.iterations = 1;
    a.targets = "trn1";
    change(a);
    return a;
  };
  const auto refused = [&](auto change) {
    return usage_error([&] { run_compare(parse_compare_args(args(change))); });
  };
  EXPECT_NE(refused([](CompareArgs& a) {
              a.targets = "trn1,trn4";
            }).find("--targets 'trn1,trn4': 'trn4', expected trn1, trn2 or trn3"),
            std::string::npos);
  refused([](CompareArgs& a) { a.targets = "trn1,trn1"; });
  refused([](CompareArgs& a) { a.targets = ""; });
  refused([](CompareArgs& a) { a.auto_casts = "none,fp8"; });
  refused([](CompareArgs& a) { a.baselines = {"a=1@1", "a=2@1"}; });
  EXPECT_NE(refused([](CompareArgs& a) {
              a.instances = {"trn2=trn2.48xlarge"};
            }).find("target 'trn2' is not among --targets trn1"),
            std::string::npos);
  refused([](CompareArgs& a) { a.instances = {"trn1"}; });
  refused([](CompareArgs& a) { a.instances = {"trn1=inf2.xlarge", "trn1=trn1.2xlarge"}; });
  refused([](CompareArgs& a) { a.prices = {"trn1=0"}; });
  refused([](CompareArgs& a) { a.prices = {"trn1=cheap"}; });
  refused([](CompareArgs& a) { a.o.iterations = 0; });
  refused([](CompareArgs& a) {
    a.o.dataset = "a";
    a.o.reference = "b";
  });
  // Found by bench once the row is compiled: not in the table, another target's cores.
  EXPECT_NE(refused([](CompareArgs& a) {
              a.instances = {"trn1=nosuch.large"};
            }).find("'nosuch.large' is not in the price table"),
            std::string::npos);
  refused([](CompareArgs& a) { a.instances = {"trn1=trn2.48xlarge"}; });

  // Through the command line: exit code 2 and the message, before anything compiles.
  const Ran r = run_shell(std::string(NEURONC_BINARY_DIR) + "/tools/neuronc compare " +
                              fixture_model("mlp") + " --baseline g5=2.5ms@1.006",
                          /*with_stderr=*/true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--baseline 'g5=2.5ms@1.006': the latency '2.5ms' is not a number"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(neuronc("compare " + fixture_model("mlp") + " --targets trn1,trn4").code, 2);
}

// A program that no target compiles: every row carries the compile error, the table is still
// printed, and the exit code says nothing compiled.
TEST(Compare, ARowThatFailsToCompileShowsItsError) {
  const fs::path bad = scratch_dir() / "compare_not_a_model.pt2";
  std::ofstream(bad) << "not a zip";
  const Ran r = neuronc("compare " + bad.string() +
                        " --targets trn1,trn3 --auto-cast none "
                        "--baseline g5=2@1 --json");
  EXPECT_EQ(r.code, 1);
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);
  for (int i = 0; i < 2; ++i) {
    const std::string err = j["rows"][i]["error"].get<std::string>();
    EXPECT_EQ(err.rfind("compile: ", 0), 0u) << err;
    EXPECT_NE(err.find("compare_not_a_model.pt2"), std::string::npos) << err;
  }
  EXPECT_TRUE(j["rows"][2]["error"].is_null());
  EXPECT_EQ(j["quality_reference"]["kind"], "none");
}

TEST(Compare, ReportRendersEveryPlotInHeadlessChromium) {
  const fs::path html = scratch_dir() / "compare_cnn.html";
  const Ran r = neuronc("compare " + fixture_model("cnn") + " --auto-cast none,matmul " +
                        "--iterations 2 --prices " + test_prices() +
                        " --baseline g5.xlarge=2.5@1.006 --json --report " + html.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = testing::slurp(html.string());
  for (const char* id : {"id=\"latency\"", "id=\"cost\"", "id=\"latency_cost\""})
    EXPECT_NE(page.find(id), std::string::npos) << id;
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  // A point for each of the 6 Trainium rows and the baseline, all priced.
  const size_t scatter = page.find("id=\"latency_cost\"");
  size_t circles = 0;
  for (size_t at = page.find("<circle", scatter); at != std::string::npos;
       at = page.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, 7u);
  if (!have_chromium()) {
    GTEST_SKIP() << "chromium is not installed: run tests/tools/install_chromium.sh (Debian "
                    "package 'chromium')";
  }
  const testing::RenderedPage shown = render_in_chromium(html.string(), scratch_dir(), "compare");
  ASSERT_EQ(shown.exit_code, 0) << shown.command << "\n" << shown.log;
  ASSERT_EQ(shown.plots, 3) << shown.dom.substr(0, 2000);
  EXPECT_EQ(shown.plots_drawn, 3);
  EXPECT_FALSE(shown.script_errors);
  for (const std::string& line : shown.console) ADD_FAILURE() << line;
}

TEST(Compare, ParsesABaseline) {
  const Baseline b = parse_baseline("a100 (torch.compile)=1.25@4.1");
  EXPECT_EQ(b.name, "a100 (torch.compile)");
  EXPECT_DOUBLE_EQ(b.latency_ms, 1.25);
  EXPECT_DOUBLE_EQ(b.usd_per_hour, 4.1);
}

}  // namespace
}  // namespace neuronc::tools
