// Small helpers over the artifact contents (artifact.h).
#include "artifact_format/artifact.h"

#include "artifact_format/status.h"

namespace neuronc::artifact {

const char* status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::ok:
      return "ok";
    case StatusCode::invalid_argument:
      return "invalid_argument";
    case StatusCode::io_error:
      return "io_error";
    case StatusCode::truncated:
      return "truncated";
    case StatusCode::corrupt:
      return "corrupt";
    case StatusCode::incompatible_version:
      return "incompatible_version";
    case StatusCode::out_of_range:
      return "out_of_range";
    case StatusCode::unimplemented:
      return "unimplemented";
  }
  return "unknown";
}

const Arg* HostOp::arg(std::string_view name) const {
  return kernels::find_arg(args, name);
}

StepRange entry_steps(const ArtifactContents& c, size_t e) {
  if (c.signature.entries.empty()) return {0, static_cast<uint32_t>(c.plan.steps.size())};
  const EntrySpec& en = c.signature.entries.at(e);
  return {en.first_step, en.num_steps};
}

std::optional<size_t> find_entry(const ArtifactContents& c, std::string_view name) {
  if (c.signature.entries.empty())
    return name == kImplicitEntryName ? std::optional<size_t>(0) : std::nullopt;
  for (size_t i = 0; i < c.signature.entries.size(); ++i)
    if (c.signature.entries[i].name == name) return i;
  return std::nullopt;
}

bool ArtifactContents::timing_only() const {
  for (const Constant& k : constants)
    if (k.absent()) return true;
  return false;
}

uint16_t format_minor_needed(const ArtifactContents& c) {
  for (const Value& v : c.plan.values)
    if (v.kind == ValueKind::symbol) return 5;
  for (const DeviceProgram& p : c.programs)
    if (p.replicas > 0) return 4;
  if (c.timing_only()) return 3;
  for (const DeviceProgram& p : c.programs)
    for (const device::CoreProgram& core : p.program.cores)
      for (const auto& stream : core.streams)
        for (const device::Instruction& in : stream)
          if (const auto* d = std::get_if<device::DmaCopy>(&in.op); d && d->scatter) return 3;
  return c.signature.states.empty() && c.signature.entries.empty() ? 1 : 2;
}

std::optional<uint64_t> static_numel(const Value& v) {
  uint64_t n = 1;
  for (const Dim& d : v.dims) {
    if (!d.is_constant() || d.value < 0) return std::nullopt;
    if (d.value != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d.value))
      return std::nullopt;
    n *= static_cast<uint64_t>(d.value);
  }
  return n;
}

}  // namespace neuronc::artifact
