// The execution-plan walker (plan_walker.h).
#include "loader/plan_walker.h"

#include <chrono>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace neuronc::plan {
namespace {

namespace art = ::neuronc::artifact;

// Copies a device call's input bindings into the arena, runs its program, copies its output
// bindings back. Without buffers, runs the program alone (timing only).
device::Result<device::RunReport> run_device_call(const art::ArtifactContents& c,
                                                  const art::DeviceCall& call,
                                                  device::Simulator& sim,
                                                  const PlanBuffers* buffers,
                                                  ProgramTimings* timings) {
  const art::DeviceProgram& p = c.programs[call.program];
  // The reader verified every program of `c` (walk_plan's contract), so it is not again.
  constexpr auto kVerified = device::Simulator::ProgramCheck::verified;
  const device::ProgramTiming* timing =
      timings ? &timings->of(call.program, sim.cost_model()) : nullptr;
  if (p.holds_core0_alone()) {
    // Its copies are timed without being made; computing data needs each copy's own addresses.
    if (buffers)
      return device::failed_precondition(
          "the program holds core 0 alone of its " + std::to_string(p.replicas) +
          " copies (read with ReadOptions::expand_replicas false), so it "
          "can only be timed");
    return timing ? sim.run(p.program, {}, kVerified, timing)
                  : sim.run_replicated(p.program, p.replicas, p.replica_stride, kVerified);
  }
  if (!buffers) return sim.run(p.program, {}, kVerified, timing);
  for (const art::Binding& b : call.inputs) {
    const host::HostTensor& s = buffers->slots[b.value];
    if (s.nbytes()) std::memcpy(buffers->hbm.data() + b.hbm_offset, s.data, s.nbytes());
  }
  auto report = sim.run(p.program, buffers->hbm, kVerified, timing);
  if (!report) return report;
  for (const art::Binding& b : call.outputs) {
    host::HostTensor& s = buffers->slots[b.value];
    if (s.nbytes()) std::memcpy(s.data, buffers->hbm.data() + b.hbm_offset, s.nbytes());
  }
  return report;
}

}  // namespace

const device::ProgramTiming& ProgramTimings::of(uint32_t program, const device::CostModel& cost) {
  std::unique_ptr<const device::ProgramTiming>& t = timings_[program];
  if (!t || t->target() != cost.target().name) {
    const artifact::DeviceProgram& p = contents_.programs[program];
    t = p.holds_core0_alone()
            ? std::make_unique<device::ProgramTiming>(cost, p.program, p.replicas, p.replica_stride)
            : std::make_unique<device::ProgramTiming>(cost, p.program);
  }
  return *t;
}

Status walk_plan(const art::ArtifactContents& c, device::Simulator& sim, const PlanBuffers* buffers,
                 PlanObserver& observer, std::optional<art::StepRange> steps,
                 ProgramTimings* timings) {
  if (timings && &timings->contents() != &c)
    return Status(StatusCode::invalid_argument,
                  "walk_plan: the program timings were made for another artifact's contents");
  const art::StepRange range = steps ? *steps : art::entry_steps(c, 0);
  std::vector<const host::HostTensor*> values;
  if (buffers) {
    values.reserve(buffers->slots.size());
    for (const host::HostTensor& s : buffers->slots) values.push_back(&s);
  }
  for (uint32_t i = range.first; i < range.first + range.count; ++i) {
    const std::string where = "plan step " + std::to_string(i);
    if (const auto* call = std::get_if<art::DeviceCall>(&c.plan.steps[i])) {
      const art::DeviceProgram& p = c.programs[call->program];
      auto report = run_device_call(c, *call, sim, buffers, timings);
      if (!report)
        return Status(StatusCode::failed_precondition,
                      where + " (device program '" + p.name + "'): " + report.status().message());
      observer.device_call(i, p, *report);
      continue;
    }
    const art::HostOp& op = std::get<art::HostOp>(c.plan.steps[i]);
    if (!buffers) {
      observer.host_step(i, op, /*ran=*/false, 0);
      continue;
    }
    std::vector<host::HostTensor*> outs;
    for (uint32_t v : op.outputs) outs.push_back(&buffers->slots[v]);
    const auto h0 = std::chrono::steady_clock::now();
    host::HostOpContext ctx(op.op, op.args, values, std::move(outs), /*dry_run=*/false);
    Status s = buffers->kernels[i](ctx);
    if (!s.is_ok()) return Status(s.code(), where + ": " + s.message());
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - h0).count();
    observer.host_step(i, op, /*ran=*/true, ns);
  }
  return Status::ok();
}

}  // namespace neuronc::plan
