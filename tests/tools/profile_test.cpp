// `neuronc profile`: the Chrome trace JSON and the Perfetto protobuf trace of one inference
// parse back with the engine and DMA-queue tracks, every instruction as one well-nested slice
// named after its IR node.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/tools/fixture_artifacts.h"
#include "tools/cli_output.h"
#include "tools/trace_export.h"
#include "tools/trace_perfetto.pb.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {
namespace {

using testing::fixture_artifact;
using testing::kFixtures;
using testing::scratch_dir;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(TraceFormat, ChosenByExtension) {
  EXPECT_EQ(trace_format_for("a.json"), TraceFormat::chrome_json);
  EXPECT_EQ(trace_format_for("dir/a.pftrace"), TraceFormat::perfetto);
  try {
    (void)trace_format_for("a.txt");
    FAIL();
  } catch (const CommandExit& e) {
    EXPECT_EQ(e.code, kExitUsage);
    EXPECT_NE(e.message.find(".pftrace"), std::string::npos);
  }
}

class ProfileFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ProfileFixture, TimelineNamesEveryInstructionAfterItsNode) {
  const Timeline t = simulate_artifact_file(fixture_artifact(GetParam()));
  ASSERT_FALSE(t.events.empty());
  EXPECT_EQ(t.events.size() >= t.instructions, true);  // + one DMA-queue event per transfer
  std::set<std::string> units;
  for (const TimelineEvent& e : t.events) {
    units.insert(e.unit);
    EXPECT_GE(e.node, 0) << e.unit << " instruction " << e.instruction_index << " has no IR node";
    EXPECT_LE(e.start_ns, e.end_ns);
    EXPECT_LE(e.end_ns, t.device_ns + 1e-6);
  }
  EXPECT_TRUE(units.count("tensor"));
  EXPECT_TRUE(std::any_of(units.begin(), units.end(),
                          [](const std::string& u) { return u.rfind("dma.q", 0) == 0; }));
}

TEST_P(ProfileFixture, ChromeTraceParsesBack) {
  const std::string artifact = fixture_artifact(GetParam());
  const Timeline t = simulate_artifact_file(artifact);
  const std::string path = (scratch_dir() / (std::string(GetParam()) + ".json")).string();
  write_trace(path, TraceFormat::chrome_json, t, artifact);
  const nlohmann::json doc = nlohmann::json::parse(read_file(path));
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::map<std::pair<int, int>, std::string> thread_names;
  size_t slices = 0;
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "thread_name") {
      thread_names[{ev["pid"].get<int>(), ev["tid"].get<int>()}] = ev["args"]["name"];
    }
  }
  std::set<std::string> node_names;
  for (const auto& n : t.nodes) node_names.insert(n.name);
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] != "X" || ev["cat"] == "device_call") continue;
    ++slices;
    EXPECT_TRUE(thread_names.count({ev["pid"].get<int>(), ev["tid"].get<int>()})) << ev.dump();
    EXPECT_TRUE(node_names.count(ev["name"].get<std::string>())) << ev.dump();
    EXPECT_TRUE(ev["args"].contains("opcode"));
    EXPECT_GE(ev["dur"].get<double>(), 0);
  }
  EXPECT_EQ(slices, t.events.size());
  std::set<std::string> names;
  for (const auto& [k, v] : thread_names) names.insert(v);
  EXPECT_TRUE(names.count("tensor"));
  EXPECT_TRUE(names.count("device calls"));
  EXPECT_FALSE(doc["otherData"]["assumptions"].empty());
}

TEST_P(ProfileFixture, PerfettoTraceParsesBackWithTracks) {
  namespace pp = ::perfetto::protos;
  const std::string artifact = fixture_artifact(GetParam());
  const Timeline t = simulate_artifact_file(artifact);
  const std::string path = (scratch_dir() / (std::string(GetParam()) + ".pftrace")).string();
  write_trace(path, TraceFormat::perfetto, t, artifact);
  pp::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(path)));
  ASSERT_GT(trace.packet_size(), 0);
  EXPECT_EQ(trace.packet(0).sequence_flags(), pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);

  std::map<uint64_t, std::string> track_name;  // uuid -> name
  std::map<uint64_t, uint64_t> parent;
  std::map<uint64_t, std::string> process_name;
  uint64_t last_ts = 0;
  std::map<uint64_t, int> depth;
  std::map<uint64_t, size_t> begins;
  size_t instants = 0;
  std::set<std::string> node_names;
  for (const auto& n : t.nodes) node_names.insert(n.name);
  for (const pp::TracePacket& p : trace.packet()) {
    EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
    if (p.has_track_descriptor()) {
      const pp::TrackDescriptor& d = p.track_descriptor();
      if (d.has_process()) {
        process_name[d.uuid()] = d.process().process_name();
      } else {
        track_name[d.uuid()] = d.name();
        parent[d.uuid()] = d.parent_uuid();
        EXPECT_TRUE(d.has_thread());
      }
      continue;
    }
    ASSERT_TRUE(p.has_track_event());
    const pp::TrackEvent& e = p.track_event();
    EXPECT_GE(p.timestamp(), last_ts) << "packets are in time order";
    last_ts = p.timestamp();
    ASSERT_TRUE(track_name.count(e.track_uuid())) << "event on an undeclared track";
    switch (e.type()) {
      case pp::TrackEvent::TYPE_SLICE_BEGIN:
        EXPECT_EQ(depth[e.track_uuid()]++, 0) << "slices on one track do not overlap";
        ++begins[e.track_uuid()];
        if (track_name[e.track_uuid()] != "device calls") {
          EXPECT_TRUE(node_names.count(e.name())) << e.name();
          bool has_opcode = false;
          for (const pp::DebugAnnotation& a : e.debug_annotations())
            has_opcode |= a.name() == "opcode";
          EXPECT_TRUE(has_opcode);
        }
        break;
      case pp::TrackEvent::TYPE_SLICE_END:
        EXPECT_EQ(--depth[e.track_uuid()], 0);
        break;
      case pp::TrackEvent::TYPE_INSTANT:
        ++instants;
        EXPECT_EQ(track_name[e.track_uuid()], "host ops");
        break;
      default:
        ADD_FAILURE() << "unexpected event type " << e.type();
    }
  }
  for (const auto& [uuid, d] : depth) EXPECT_EQ(d, 0) << track_name[uuid];
  // Tracks: every engine/queue of the timeline under a "NeuronCore 0" process, plus the plan.
  std::set<std::string> names;
  for (const auto& [uuid, name] : track_name) {
    names.insert(name);
    ASSERT_TRUE(process_name.count(parent[uuid])) << name;
  }
  EXPECT_TRUE(names.count("tensor"));
  EXPECT_TRUE(names.count("device calls"));
  EXPECT_TRUE(std::any_of(names.begin(), names.end(),
                          [](const std::string& n) { return n.rfind("dma.q", 0) == 0; }));
  bool core0 = false;
  for (const auto& [uuid, name] : process_name) core0 |= name.rfind("NeuronCore 0", 0) == 0;
  EXPECT_TRUE(core0);
  size_t total_begins = 0;
  for (const auto& [uuid, n] : begins) total_begins += track_name[uuid] == "device calls" ? 0 : n;
  EXPECT_EQ(total_begins, t.events.size());
  size_t host_steps = 0;
  for (const TimelineStep& s : t.steps) host_steps += !s.device;
  EXPECT_EQ(instants, host_steps);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ProfileFixture, ::testing::ValuesIn(kFixtures));

}  // namespace
}  // namespace neuronc::tools
