// The one interpreter of an artifact's execution plan (internal to the loader; tools may use
// it). walk_plan steps through the plan in order: a device call runs its program on the device
// model, a host step runs its kernel on CPU buffers, and a PlanObserver hears of every step
// once it is done. Two walks use it:
//  - Session::run, functional: with PlanBuffers, a device call copies its input bindings from
//    their value slots into the HBM arena, runs, and copies its output bindings back; a host
//    step runs its kernel on the slots and is timed on this machine;
//  - the simulated timeline of `neuronc bench`, `neuronc profile` and the compile report
//    (tools/trace_timeline.h), timing only: without buffers, device calls run on a timing-only
//    Simulator with no HBM (simulated time does not depend on the data) and host steps are
//    passed over (their time is measured, not simulated).
// Not thread-safe (the Simulator is not); deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "artifact_format/artifact.h"
#include "device/cost_model.h"
#include "device/simulator.h"
#include "kernels/host_kernel.h"
#include "neuronc/session.h"
#include "neuronc/status.h"

namespace neuronc::plan {

// The data of a functional walk.
struct PlanBuffers {
  std::span<host::HostTensor> slots;            // per plan value, shapes resolved, data bound
  std::span<std::byte> hbm;                     // the arena device calls run against
  std::span<const host::HostKernelFn> kernels;  // per plan step; null for device calls
};

// Hears of each plan step once it has run, in plan order.
class PlanObserver {
 public:
  virtual ~PlanObserver() = default;
  // Device call `step` ran `program` (of the artifact); `report` is the device model's.
  virtual void device_call(uint32_t step, const artifact::DeviceProgram& program,
                           const device::RunReport& report) = 0;
  // Host step `step` ran in `host_ns` of wall time (functional walks), or was passed over
  // (timing-only walks: `ran` is false and `host_ns` 0).
  virtual void host_step(uint32_t step, const artifact::HostOp& op, bool ran, double host_ns) = 0;
};

// The device model's timing tables of an artifact's programs (device::ProgramTiming), made the
// first time a walk runs each program and kept for the walks after it: what a Session or a
// timing-only benchmark pays once per program rather than once per run. For one artifact's
// contents, which must outlive it (a cost model of another target remakes a program's tables).
// Not thread-safe.
class ProgramTimings {
 public:
  explicit ProgramTimings(const artifact::ArtifactContents& contents)
      : contents_(contents), timings_(contents.programs.size()) {}
  const artifact::ArtifactContents& contents() const { return contents_; }
  // The tables of program `program` for `cost`'s target.
  const device::ProgramTiming& of(uint32_t program, const device::CostModel& cost);

 private:
  const artifact::ArtifactContents& contents_;
  std::vector<std::unique_ptr<const device::ProgramTiming>> timings_;
};

// What the device calls of an entry move between host and device and which programs they run
// (docs/DEVICE_MODEL.md "End to end"), worked out once per entry: a call copies in each input
// binding of a value the host holds (an input, an intermediate, a symbol value) and copies out
// each output binding but a state's update; constants and states stay in HBM (a KV cache is
// updated in place).
struct EntryTraffic {
  std::vector<uint32_t> copied_in, copied_out;  // plan values, once per binding
  std::vector<uint32_t> programs;               // the program of each device call, in order
  uint32_t multi_core_calls = 0;                // calls of a program run over several cores
};
EntryTraffic entry_traffic(const artifact::ArtifactContents& contents, size_t entry);

// What one run of an entry moved: `bytes_of(value)` gives a plan value's bytes in this run;
// `last_program`: the program the call before ran (-1: none), updated to the last one here.
device::ExecutionTraffic execution_traffic(const EntryTraffic& traffic,
                                           const std::function<uint64_t(uint32_t)>& bytes_of,
                                           int64_t& last_program);

// Sets the end-to-end fields of `st` (RunStats::end_to_end_ns and its terms) from its
// latency_ns and what the run moved, with `target`'s per-execution costs.
void set_end_to_end(neuronc::RunStats& st, const device::Target& target,
                    const device::ExecutionTraffic& traffic);

// Walks the plan of `contents` (verified by the reader) on `sim`. With `buffers`, a functional
// walk; without, a timing-only walk (`sim` must then be timing only). Stops at the first step
// that fails: Status(failed_precondition, "plan step <i> (device program '<name>'): <why>")
// for a device call the model refuses, a host kernel's status prefixed "plan step <i>: ".
// Walks `steps` (artifact::entry_steps: one entry's; by default entry 0, or the whole plan of
// an artifact without entries). With `timings` (made for `contents`), device calls take their
// programs' timing tables from it; without, each run makes its own.
Status walk_plan(const artifact::ArtifactContents& contents, device::Simulator& sim,
                 const PlanBuffers* buffers, PlanObserver& observer,
                 std::optional<artifact::StepRange> steps = std::nullopt,
                 ProgramTimings* timings = nullptr);

}  // namespace neuronc::plan
