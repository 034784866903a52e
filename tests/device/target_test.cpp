// Target parameter sets and name parsing.
#include "device/target.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "device/cost_model.h"
#include "device/isa.h"
#include "device/parameters.h"

namespace neuronc::device {
namespace {

TEST(Target, ParsesNamesAndListsValidOnes) {
  EXPECT_EQ(parse_target("trn1").value(), TargetKind::trn1);
  EXPECT_EQ(parse_target("inf2").value(), TargetKind::trn1);
  EXPECT_EQ(parse_target("trn2").value(), TargetKind::trn2);
  EXPECT_EQ(parse_target("trn3").value(), TargetKind::trn3);
  auto bad = parse_target("trn9");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "unknown target 'trn9': expected one of trn1, trn2, trn3 (inf2 is an alias of trn1)");
  EXPECT_EQ(target_name(TargetKind::trn2), "trn2");
}

TEST(Target, PeaksFollowClockTimesDatapath) {
  // §2.1 derived: 91.75 / 78.64 TFLOPS.
  EXPECT_NEAR(target(TargetKind::trn1).tensor_peak_flops_per_ns(), 91750.4, 0.1);
  EXPECT_NEAR(target(TargetKind::trn2).tensor_peak_flops_per_ns(), 78643.2, 0.1);
  EXPECT_NEAR(target(TargetKind::trn3).tensor_peak_flops_per_ns(), 78643.2, 0.1);
}

TEST(Target, MemoryGeometry) {
  EXPECT_EQ(target(TargetKind::trn1).sbuf_partition_bytes * 128u, 24u << 20);
  EXPECT_EQ(target(TargetKind::trn2).sbuf_partition_bytes * 128u, 28u << 20);
  EXPECT_EQ(target(TargetKind::trn3).sbuf_partition_bytes * 128u, 32u << 20);
  for (auto k : {TargetKind::trn1, TargetKind::trn2, TargetKind::trn3}) {
    const Target& t = target(k);
    EXPECT_EQ(t.psum_partition_bytes, t.psum_bank_bytes * t.psum_banks);
    EXPECT_NEAR(t.hbm_gbps_per_core * t.cores_per_chip, t.hbm_gbps_per_chip, 1e-9);
    EXPECT_LE(t.dma_engines_per_core, kMaxDmaEnginesPerCore);
  }
}

}  // namespace
}  // namespace neuronc::device

namespace neuronc::device {
namespace {

TEST(Isa, OpcodeIsTheVariantIndexAndEveryOpcodeHasAName) {
  Instruction i;
  i.op = TensorTensorScan{};
  EXPECT_EQ(i.opcode(), Opcode::tensor_tensor_scan);
  EXPECT_EQ(opcode_name(Opcode::tensor_tensor_scan), "tensor_tensor_scan");
  for (size_t k = 0; k < std::variant_size_v<Operation>; ++k)
    EXPECT_NE(opcode_name(static_cast<Opcode>(k)), "?") << k;
  EXPECT_EQ(opcode_name(static_cast<Opcode>(std::variant_size_v<Operation>)), "?");
}

}  // namespace
}  // namespace neuronc::device

namespace neuronc::device {
namespace {

// Every parameter the device model reports (RunReport::assumptions, bench --json) has its row in
// docs/DEVICE_MODEL.md, named in backticks, on every target.
TEST(DeviceModelDoc, EveryReportedParameterHasARow) {
  std::ifstream f(std::string(NEURONC_SOURCE_DIR) + "/docs/DEVICE_MODEL.md");
  ASSERT_TRUE(f.good());
  std::stringstream doc;
  doc << f.rdbuf();
  for (TargetKind k : {TargetKind::trn1, TargetKind::trn2, TargetKind::trn3})
    for (const Assumption& a : CostModel(target(k)).assumptions())
      EXPECT_NE(doc.str().find("`" + a.name + "`"), std::string::npos)
          << a.name << " (" << target(k).name << ") has no row in docs/DEVICE_MODEL.md";
}

// Every data member of device::Target (device/target.h, up to its derived helpers) has its row in
// docs/DEVICE_MODEL.md, with its value per target, source, quote and kind.
TEST(DeviceModelDoc, EveryTargetParameterHasARow) {
  auto read = [](const std::string& rel) {
    std::ifstream f(std::string(NEURONC_SOURCE_DIR) + "/" + rel);
    EXPECT_TRUE(f.good()) << rel;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  const std::string doc = read("docs/DEVICE_MODEL.md");
  const std::string header = read("device/target.h");
  const size_t begin = header.find("struct Target {");
  const size_t end = header.find("// --- Derived helpers", begin);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  std::istringstream body(header.substr(begin, end - begin));
  size_t members = 0;
  for (std::string line; std::getline(body, line);) {
    // "  double tensor_clock_ghz;  // ARCH2-4 ..." -> tensor_clock_ghz
    const size_t semi = line.find(';');
    const size_t comment = line.find("//");
    if (semi == std::string::npos || (comment != std::string::npos && comment < semi)) continue;
    size_t from = line.find_last_of(" \t", semi);
    if (from == std::string::npos) continue;
    const std::string name = line.substr(from + 1, semi - from - 1);
    if (name.empty() || name.find('(') != std::string::npos) continue;
    ++members;
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos)
        << "Target::" << name << " has no row in docs/DEVICE_MODEL.md";
  }
  EXPECT_GT(members, 50u);  // the parse found the struct's members
}

// The end-to-end time of an inference, term by term (docs/DEVICE_MODEL.md, End to end).
TEST(ExecutionOverhead, AddsEachTermOfTheCalls) {
  const Target& t = target(TargetKind::trn1);
  const CostModel cost(t);
  ExecutionTraffic traffic;
  traffic.calls = 3;
  traffic.bytes_in = 1000;
  traffic.bytes_out = 600;
  traffic.program_switches = 2;
  traffic.multi_core_calls = 1;
  const ExecutionOverhead sync = cost.execution_overhead(traffic, IssueMode::synchronous);
  EXPECT_DOUBLE_EQ(sync.call_ns, 3 * t.execution_call_ns);
  EXPECT_DOUBLE_EQ(sync.transfer_ns, 1600 / t.host_link_bytes_per_ns);
  EXPECT_DOUBLE_EQ(sync.switch_ns, 2 * t.program_switch_ns);
  EXPECT_DOUBLE_EQ(sync.multi_core_ns, t.multi_core_start_ns);
  EXPECT_DOUBLE_EQ(sync.total_ns(),
                   sync.call_ns + sync.transfer_ns + sync.switch_ns + sync.multi_core_ns);
  const ExecutionOverhead async = cost.execution_overhead(traffic, IssueMode::asynchronous);
  EXPECT_DOUBLE_EQ(async.call_ns, 3 * t.execution_call_async_ns);
  EXPECT_DOUBLE_EQ(async.transfer_ns, sync.transfer_ns);
  EXPECT_LT(async.total_ns(), sync.total_ns());
  // Nothing run, nothing paid.
  EXPECT_DOUBLE_EQ(cost.execution_overhead({}, IssueMode::synchronous).total_ns(), 0);
}

// device/parameters.cpp lists every Target member, and its kind per generation is the one the
// document's table gives: "trn1, trn2 **fitted**; trn3 **assumption**", or one kind for all.
TEST(DeviceModelDoc, ReportedParameterKindsAreTheTables) {
  std::ifstream f(std::string(NEURONC_SOURCE_DIR) + "/docs/DEVICE_MODEL.md");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  const size_t begin = doc.find("## Every parameter of `device::Target`");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = std::min(doc.find("\n## ", begin + 1), doc.find("\n### ", begin + 1));
  std::istringstream table(doc.substr(begin, end - begin));
  const char* kinds[] = {"published", "derived", "fitted", "assumption"};
  std::map<std::string, std::array<std::string, 3>> want;  // name -> kind per trn1..trn3
  for (std::string line; std::getline(table, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string name = line.substr(3, line.find('`', 3) - 3);
    const std::string cell = line.substr(line.rfind('|', line.size() - 2) + 1);
    std::array<std::string, 3>& k = want[name];
    std::istringstream parts(cell);
    for (std::string part; std::getline(parts, part, ';');) {
      size_t at = std::string::npos;
      std::string kind;
      for (const char* c : kinds) {
        const size_t i = part.find(std::string("**") + c + "**");
        if (i < at) at = i, kind = c;
      }
      if (kind.empty()) continue;
      const std::string named = part.substr(0, at);
      bool any = false;
      for (int g = 0; g < 3; ++g)
        if (named.find("trn" + std::to_string(g + 1)) != std::string::npos) {
          any = true;
          if (k[g].empty()) k[g] = kind;
        }
      if (!any)
        for (std::string& s : k)
          if (s.empty()) s = kind;
    }
  }
  for (TargetKind t : {TargetKind::trn1, TargetKind::trn2, TargetKind::trn3}) {
    const std::vector<Parameter> ps = target_parameters(target(t));
    EXPECT_EQ(ps.size(), want.size())
        << "device/parameters.cpp and the table list different members";
    for (const Parameter& p : ps) {
      const auto it = want.find(std::string(p.name));
      ASSERT_NE(it, want.end()) << p.name << " has no row";
      const int g = target(t).core_generation - 2;
      EXPECT_EQ(source_kind_name(p.kind), it->second[g])
          << p.name << " on " << target(t).name << ": device/parameters.cpp and the table differ";
    }
  }
}

// A cost model constant has its row: device/cost_model.cpp holds no literal but 0 and 1 that
// docs/DEVICE_MODEL.md's "Constants inside cost_model.cpp's formulas" table does not name (a cost
// parameter belongs in Target, with its row in the parameter table).
TEST(DeviceModelDoc, EveryCostModelConstantHasARow) {
  auto read = [](const std::string& rel) {
    std::ifstream f(std::string(NEURONC_SOURCE_DIR) + "/" + rel);
    EXPECT_TRUE(f.good()) << rel;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  const std::string doc = read("docs/DEVICE_MODEL.md");
  const size_t begin = doc.find("### Constants inside `cost_model.cpp`'s formulas");
  ASSERT_NE(begin, std::string::npos);
  const std::string table = doc.substr(begin, doc.find("\n## ", begin) - begin);
  // The code without comments and string literals.
  std::string code = read("device/cost_model.cpp");
  code = std::regex_replace(code, std::regex("//[^\\n]*"), "");
  code = std::regex_replace(code, std::regex("\"(\\\\.|[^\"\\\\])*\""), "\"\"");
  const std::regex literal("(^|[^A-Za-z_0-9.])([0-9]+(\\.[0-9]*)?)(?![A-Za-z_0-9.])");
  size_t seen = 0;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), literal);
       it != std::sregex_iterator(); ++it) {
    const std::string lit = (*it)[2];
    if (lit == "0" || lit == "1" || lit == "0.0" || lit == "1.0") continue;
    ++seen;
    EXPECT_NE(table.find("`" + lit + "`"), std::string::npos)
        << "device/cost_model.cpp uses the literal " << lit
        << ", which the constants table in docs/DEVICE_MODEL.md does not name";
  }
  EXPECT_GT(seen, 0u);  // the scan found the formula constants
}

}  // namespace
}  // namespace neuronc::device
