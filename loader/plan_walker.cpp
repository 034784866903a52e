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

EntryTraffic entry_traffic(const art::ArtifactContents& c, size_t entry) {
  EntryTraffic t;
  std::vector<bool> stays(c.plan.values.size(), false);  // state updates: kept in HBM
  for (size_t i = 0; i < c.signature.states.size(); ++i)
    stays[c.signature.entries.empty() ? c.signature.states[i].update
                                      : c.signature.entries[entry].state_updates[i]] = true;
  auto host_held = [&](uint32_t v) {
    const art::ValueKind k = c.plan.values[v].kind;
    return k != art::ValueKind::constant && k != art::ValueKind::state && !stays[v];
  };
  const art::StepRange steps = art::entry_steps(c, entry);
  for (uint32_t i = steps.first; i < steps.first + steps.count; ++i) {
    const auto* call = std::get_if<art::DeviceCall>(&c.plan.steps[i]);
    if (!call) continue;
    for (const art::Binding& b : call->inputs)
      if (host_held(b.value)) t.copied_in.push_back(b.value);
    for (const art::Binding& b : call->outputs)
      if (host_held(b.value)) t.copied_out.push_back(b.value);
    t.programs.push_back(call->program);
    const art::DeviceProgram& p = c.programs[call->program];
    if (std::max<size_t>(p.program.cores.size(), p.replicas) > 1) ++t.multi_core_calls;
  }
  return t;
}

device::ExecutionTraffic execution_traffic(const EntryTraffic& traffic,
                                           const std::function<uint64_t(uint32_t)>& bytes_of,
                                           int64_t& last_program) {
  device::ExecutionTraffic t;
  t.calls = static_cast<uint32_t>(traffic.programs.size());
  t.multi_core_calls = traffic.multi_core_calls;
  for (uint32_t v : traffic.copied_in) t.bytes_in += bytes_of(v);
  for (uint32_t v : traffic.copied_out) t.bytes_out += bytes_of(v);
  for (uint32_t p : traffic.programs) {
    if (last_program >= 0 && last_program != p) ++t.program_switches;
    last_program = p;
  }
  return t;
}

void set_end_to_end(neuronc::RunStats& st, const device::Target& target,
                    const device::ExecutionTraffic& traffic) {
  const device::CostModel cost(target);
  const device::ExecutionOverhead sync =
      cost.execution_overhead(traffic, device::IssueMode::synchronous);
  st.end_to_end_ns = st.latency_ns + sync.total_ns();
  st.end_to_end_async_ns =
      st.latency_ns + cost.execution_overhead(traffic, device::IssueMode::asynchronous).total_ns();
  st.execution_call_ns = sync.call_ns;
  st.host_transfer_ns = sync.transfer_ns;
  st.host_transfer_bytes = traffic.bytes_in + traffic.bytes_out;
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
