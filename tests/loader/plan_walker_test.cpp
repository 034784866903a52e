// The loader's plan walker (loader/plan_walker.h): a timing-only walk visits every step of the
// plan in order, runs each device call on the device model and passes host steps over; a
// device call the model refuses stops the walk, naming the step and the program.
#include "loader/plan_walker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "artifact_format/reader.h"
#include "artifact_format/writer.h"
#include "device/target.h"
#include "tests/artifact_format/test_artifacts.h"
#include "tests/device/same_timing.h"

namespace neuronc::plan {
namespace {

namespace art = ::neuronc::artifact;
using ::testing::HasSubstr;

struct Recorder final : PlanObserver {
  std::vector<std::string> steps;  // "device <i> <program>" or "host <i> <op> <ran>"
  double device_ns = 0;
  void device_call(uint32_t step, const art::DeviceProgram& p,
                   const device::RunReport& report) override {
    steps.push_back("device " + std::to_string(step) + " " + p.name);
    device_ns += report.total_time_ns;
  }
  void host_step(uint32_t step, const art::HostOp& op, bool ran, double host_ns) override {
    steps.push_back("host " + std::to_string(step) + " " + op.op + (ran ? " ran" : " passed"));
    EXPECT_EQ(host_ns, 0);
  }
};

// A timing-only walk of the two-partition artifact.
class TimingOnlyWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = art::read_artifact(bytes_);
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    loaded_.emplace(std::move(*a));
  }
  const art::ArtifactContents& contents() const { return loaded_->contents; }
  device::Simulator& sim() { return sim_; }

 private:
  static device::SimulatorOptions timing_only() {
    device::SimulatorOptions so;
    so.functional = false;
    return so;
  }
  std::vector<std::byte> bytes_ = testing::two_partition_artifact();
  std::optional<art::LoadedArtifact> loaded_;
  device::Simulator sim_{device::target(device::TargetKind::trn1), timing_only()};
};

TEST_F(TimingOnlyWalk, VisitsEveryStepInOrder) {
  const art::ArtifactContents& c = contents();
  Recorder r;
  const Status s = walk_plan(c, sim(), /*buffers=*/nullptr, r);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(r.steps.size(), c.plan.steps.size());
  int device_calls = 0;
  for (size_t i = 0; i < c.plan.steps.size(); ++i) {
    const std::string at = " " + std::to_string(i) + " ";
    if (const auto* call = std::get_if<art::DeviceCall>(&c.plan.steps[i])) {
      EXPECT_EQ(r.steps[i], "device" + at + c.programs[call->program].name);
      ++device_calls;
    } else {
      EXPECT_EQ(r.steps[i], "host" + at + std::get<art::HostOp>(c.plan.steps[i]).op + " passed");
    }
  }
  EXPECT_EQ(device_calls, 2);
  EXPECT_GT(r.device_ns, 0);
}

// Timing tables kept between walks give every walk the device time a walk that makes its own
// gives; tables kept for another artifact's contents are refused.
TEST_F(TimingOnlyWalk, KeptProgramTimingsGiveTheSameTimes) {
  const art::ArtifactContents& c = contents();
  Recorder own;
  ASSERT_TRUE(walk_plan(c, sim(), /*buffers=*/nullptr, own).is_ok());
  ProgramTimings timings(c);
  for (int walk = 0; walk < 2; ++walk) {
    Recorder kept;
    const Status s = walk_plan(c, sim(), /*buffers=*/nullptr, kept, std::nullopt, &timings);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(kept.steps, own.steps);
    EXPECT_EQ(kept.device_ns, own.device_ns);
  }
  const art::ArtifactContents copy = c;
  Recorder other;
  const Status s = walk_plan(copy, sim(), /*buffers=*/nullptr, other, std::nullopt, &timings);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("another artifact"));
  EXPECT_TRUE(other.steps.empty());
}

// A tensor-parallel artifact (2 cores) read for timing alone (ReadOptions::expand_replicas false)
// keeps each program as core 0: a timing-only walk times its copies without making them, and
// reports what the walk of every copy reports, with or without kept timings. Computing data needs
// each copy's own addresses, so a walk with buffers is refused.
TEST(PlanWalker, ProgramsHeldAsCoreZeroAreTimedAsEveryCopy) {
  const auto one_core = testing::two_partition_artifact();
  auto a = art::read_artifact(one_core);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  art::ArtifactContents c = a->contents;
  const uint64_t stride = (c.memory_plan.hbm_arena_bytes + 4095) / 4096 * 4096;
  c.format_minor = 4;
  c.num_cores = 2;
  c.memory_plan.hbm_arena_bytes = 2 * stride;
  for (art::DeviceProgram& p : c.programs) {
    p.replicas = 2;
    p.replica_stride = stride;
  }
  std::vector<std::span<const std::byte>> payloads;
  for (uint32_t i = 0; i < a->num_segments(); ++i) payloads.push_back(a->segment(i));
  const std::vector<std::byte> bytes = art::encode_artifact(c, payloads);
  auto every = art::read_artifact(bytes);
  ASSERT_TRUE(every.is_ok()) << every.status().message();
  auto compact = art::read_artifact(bytes, {.expand_replicas = false});
  ASSERT_TRUE(compact.is_ok()) << compact.status().message();
  ASSERT_TRUE(compact->contents.programs[0].holds_core0_alone());
  ASSERT_EQ(every->contents.programs[0].program.cores.size(), 2u);

  struct Reports final : PlanObserver {
    std::vector<device::RunReport> calls;
    void device_call(uint32_t, const art::DeviceProgram&, const device::RunReport& r) override {
      calls.push_back(r);
    }
    void host_step(uint32_t, const art::HostOp&, bool, double) override {}
  };
  device::SimulatorOptions so;
  so.functional = false;
  so.trace = true;
  device::Simulator sim(device::target(device::TargetKind::trn1), so);
  Reports want;
  ASSERT_TRUE(walk_plan(every->contents, sim, nullptr, want).is_ok());
  ASSERT_EQ(want.calls.size(), 2u);
  ProgramTimings timings(compact->contents);
  for (ProgramTimings* kept : {static_cast<ProgramTimings*>(nullptr), &timings, &timings}) {
    Reports got;
    const Status s = walk_plan(compact->contents, sim, nullptr, got, std::nullopt, kept);
    ASSERT_TRUE(s.is_ok()) << s.message();
    ASSERT_EQ(got.calls.size(), want.calls.size());
    for (size_t i = 0; i < got.calls.size(); ++i) {
      ASSERT_EQ(got.calls[i].cores.size(), 2u);
      device::device_test::expect_same_timing(got.calls[i], want.calls[i]);
    }
  }

  const art::ArtifactContents& cc = compact->contents;
  uint32_t first_device = 0;
  while (!std::holds_alternative<art::DeviceCall>(cc.plan.steps[first_device])) ++first_device;
  std::vector<std::byte> hbm(cc.memory_plan.hbm_arena_bytes);
  const PlanBuffers buffers{{}, hbm, {}};
  Reports none;
  const Status s = walk_plan(cc, sim, &buffers, none, art::StepRange{first_device, 1});
  EXPECT_EQ(s.code(), StatusCode::failed_precondition);
  EXPECT_THAT(s.message(), HasSubstr("holds core 0 alone of its 2 copies"));
  EXPECT_TRUE(none.calls.empty());
}

TEST(PlanWalker, RefusedDeviceCallStopsTheWalkNamingStepAndProgram) {
  const auto bytes = testing::two_partition_artifact();
  auto a = art::read_artifact(bytes);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  art::ArtifactContents c = a->contents;
  size_t first_device = 0;
  while (!std::holds_alternative<art::DeviceCall>(c.plan.steps[first_device])) ++first_device;
  const auto& call = std::get<art::DeviceCall>(c.plan.steps[first_device]);
  art::DeviceProgram& p = c.programs[call.program];
  // A wait on a semaphore nothing signals: the model reports a deadlock.
  auto* stream = &p.program.cores[0].streams[0];
  for (auto& st : p.program.cores[0].streams)
    if (stream->empty()) stream = &st;
  ASSERT_FALSE(stream->empty());
  p.program.num_semaphores = std::max<uint32_t>(p.program.num_semaphores, 1);
  stream->front().waits.push_back({0, 1000});
  device::SimulatorOptions so;
  so.functional = false;
  device::Simulator sim(device::target(device::TargetKind::trn1), so);
  Recorder r;
  const Status s = walk_plan(c, sim, /*buffers=*/nullptr, r);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::failed_precondition);
  EXPECT_THAT(s.message(), HasSubstr("plan step " + std::to_string(first_device) +
                                     " (device program '" + p.name + "'): "));
  EXPECT_EQ(r.steps.size(), first_device);
}

}  // namespace
}  // namespace neuronc::plan
