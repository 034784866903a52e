// Artifact verifier (verifier.h). Checks run in table order so the first error names the
// outermost thing that is wrong.
#include "artifact_format/verifier.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "device/replicate.h"
#include "device/target.h"
#include "device/verifier.h"

namespace neuronc::artifact {
namespace {

using std::to_string;

Status range(const std::string& m) {
  return Status(StatusCode::out_of_range, m);
}
Status invalid(const std::string& m) {
  return Status(StatusCode::corrupt, m);
}

bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

std::string vname(const ArtifactContents& c, uint32_t v) {
  return "value " + to_string(v) + " ('" + c.plan.values[v].name + "')";
}

Status check_value_index(const ArtifactContents& c, int64_t v, const std::string& what) {
  if (v < 0 || static_cast<uint64_t>(v) >= c.plan.values.size())
    return range(what + " refers to value " + to_string(v) + " but the plan has " +
                 to_string(c.plan.values.size()) + " values");
  return Status::ok();
}

// Byte size of a value with a static shape.
Result<uint64_t> static_bytes(const ArtifactContents& c, uint32_t v, const std::string& what) {
  const Value& val = c.plan.values[v];
  for (const Dim& d : val.dims)
    if (!d.is_constant()) return invalid(what + ": " + vname(c, v) + " needs a static shape");
  const auto n = static_numel(val);
  const uint64_t size = dtype_size(val.dtype);
  if (!n) return range(what + ": " + vname(c, v) + " element count overflows");
  if (size != 0 && *n > std::numeric_limits<uint64_t>::max() / size)
    return range(what + ": " + vname(c, v) + " byte size overflows");
  return *n * size;
}

Status verify_bindings(const ArtifactContents& c, const DeviceCall& call, bool outputs,
                       std::vector<bool>& defined) {
  const auto& list = outputs ? call.outputs : call.inputs;
  const uint64_t hbm = c.programs[call.program].hbm_size();
  std::vector<std::pair<uint64_t, uint64_t>> written;
  for (size_t i = 0; i < list.size(); ++i) {
    const Binding& b = list[i];
    const std::string what = std::string(outputs ? "output" : "input") + " binding " + to_string(i);
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, b.value, what));
    NEURONC_ARTIFACT_ASSIGN_OR_RETURN(uint64_t bytes, static_bytes(c, b.value, what));
    if (!fits(b.hbm_offset, bytes, hbm))
      return range(what + ": hbm bytes [" + to_string(b.hbm_offset) + ", +" + to_string(bytes) +
                   ") of " + vname(c, b.value) + " are outside the program's " + to_string(hbm) +
                   "-byte hbm");
    if (!outputs) {
      if (!defined[b.value])
        return invalid(what + ": " + vname(c, b.value) + " is used before it is defined");
      continue;
    }
    if (c.plan.values[b.value].kind != ValueKind::intermediate || defined[b.value])
      return invalid(what + ": " + vname(c, b.value) +
                     " is defined twice (or is an input or constant)");
    for (const auto& [o, n] : written)
      if (b.hbm_offset < o + n && o < b.hbm_offset + bytes)
        return invalid(what + ": hbm bytes of " + vname(c, b.value) +
                       " overlap another output of the same call");
    written.emplace_back(b.hbm_offset, bytes);
  }
  if (outputs)
    for (const Binding& b : list) defined[b.value] = true;
  return Status::ok();
}

Status verify_host_op(const ArtifactContents& c, const HostOp& op, std::vector<bool>& defined) {
  if (op.op.empty()) return invalid("host op has no name");
  if (op.debug_id != device::kNoDebugId && op.debug_id >= c.debug_nodes.size())
    return range("debug id " + to_string(op.debug_id) + " but there are " +
                 to_string(c.debug_nodes.size()) + " debug nodes");
  for (size_t i = 0; i < op.args.size(); ++i) {
    const Arg& a = op.args[i];
    const std::string what = "argument " + to_string(i) + " ('" + a.name + "')";
    if (a.name.empty()) return invalid(what + " has no name");
    if (a.kind == ArgKind::tensor && a.tensors.size() != 1)
      return invalid(what + " is a tensor but lists " + to_string(a.tensors.size()) +
                     " values: expected 1");
    if (a.kind != ArgKind::tensor && a.kind != ArgKind::tensors && !a.tensors.empty())
      return invalid(what + " is of kind " + std::string(arg_kind_name(a.kind)) +
                     " but lists tensor values");
    for (int32_t t : a.tensors) {
      if (t == -1) continue;  // None
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, t, what));
      if (!defined[static_cast<uint32_t>(t)])
        return invalid(what + ": " + vname(c, static_cast<uint32_t>(t)) +
                       " is used before it is defined");
    }
  }
  if (op.outputs.empty()) return invalid("host op defines no outputs");
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const uint32_t v = op.outputs[i];
    const std::string what = "output " + to_string(i);
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, v, what));
    if (c.plan.values[v].kind != ValueKind::intermediate || defined[v])
      return invalid(what + ": " + vname(c, v) + " is defined twice (or is an input or constant)");
    defined[v] = true;
  }
  return Status::ok();
}

// Shape buckets (EntrySpec::bucket): each names known symbols at values in their ranges, and
// its declared dims are the entry's plan dims at those values; the buckets of one group agree in
// symbols, padding and signature, so a loader may run any of them for a fitting input.
Status verify_buckets(const ArtifactContents& c) {
  const auto& entries = c.signature.entries;
  std::map<std::string, uint32_t> first_of_group;
  for (uint32_t e = 0; e < entries.size(); ++e) {
    if (!entries[e].bucket) continue;
    const EntrySpec& en = entries[e];
    const ShapeBucket& b = *en.bucket;
    const std::string what = "entry " + to_string(e) + " ('" + en.name + "') bucket";
    if (b.group.empty()) return invalid(what + ": the group name is empty");
    if (b.values.size() != b.symbols.size() || b.padding.size() != b.symbols.size())
      return invalid(what + " has " + to_string(b.symbols.size()) + " symbols, " +
                     to_string(b.values.size()) + " values and " + to_string(b.padding.size()) +
                     " paddings: expected one of each per symbol");
    for (size_t k = 0; k < b.symbols.size(); ++k) {
      if (b.symbols[k] >= c.signature.symbols.size())
        return range(what + " names symbol " + to_string(b.symbols[k]) + " but there are " +
                     to_string(c.signature.symbols.size()));
      const Symbol& y = c.signature.symbols[b.symbols[k]];
      if (b.values[k] < y.min || b.values[k] > y.max || b.values[k] < 0)
        return range(what + " binds '" + y.name + "' to " + to_string(b.values[k]) +
                     ", outside its range [" + to_string(y.min) + ", " + to_string(y.max) + "]");
    }
    auto check = [&](const std::vector<std::vector<Dim>>& declared,
                     const std::vector<uint32_t>& specs, const std::vector<TensorSpec>& sig,
                     const char* kind) -> Status {
      if (declared.size() != specs.size())
        return invalid(what + " declares " + to_string(declared.size()) + " " + kind +
                       " shapes but the entry has " + to_string(specs.size()) + " " + kind + "s");
      for (size_t i = 0; i < specs.size(); ++i) {
        const Value& v = c.plan.values[sig[specs[i]].value];
        const std::string who = what + " " + kind + " '" + sig[specs[i]].name + "'";
        if (declared[i].size() != v.dims.size())
          return invalid(who + " declares rank " + to_string(declared[i].size()) +
                         ", but its value has rank " + to_string(v.dims.size()));
        for (size_t d = 0; d < v.dims.size(); ++d) {
          const Dim& dd = declared[i][d];
          int64_t at = dd.value;
          if (!dd.is_constant()) {
            auto it =
                std::find(b.symbols.begin(), b.symbols.end(), static_cast<uint32_t>(dd.symbol));
            if (it == b.symbols.end() || dd.coeff <= 0)
              return invalid(who + " dim " + to_string(d) +
                             " uses a symbol the bucket does not bind, or a coefficient below 1");
            at = dd.coeff * b.values[static_cast<size_t>(it - b.symbols.begin())];
          }
          if (!v.dims[d].is_constant() || v.dims[d].value != at)
            return invalid(who + " dim " + to_string(d) + " is " + to_string(at) +
                           " at the bucket's values but its value's dim is " +
                           to_string(v.dims[d].value));
        }
      }
      return Status::ok();
    };
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check(b.input_dims, en.inputs, c.signature.inputs, "input"));
    NEURONC_ARTIFACT_RETURN_IF_ERROR(
        check(b.output_dims, en.outputs, c.signature.outputs, "output"));
    auto [it, fresh] = first_of_group.emplace(b.group, e);
    if (fresh) continue;
    const EntrySpec& f = entries[it->second];
    const ShapeBucket& fb = *f.bucket;
    auto names = [&](const std::vector<uint32_t>& idx, const std::vector<TensorSpec>& sig) {
      std::vector<std::string> out;
      for (uint32_t i : idx) out.push_back(sig[i].name);
      return out;
    };
    if (fb.symbols != b.symbols || fb.padding != b.padding || fb.input_dims != b.input_dims ||
        fb.output_dims != b.output_dims ||
        names(f.inputs, c.signature.inputs) != names(en.inputs, c.signature.inputs) ||
        names(f.outputs, c.signature.outputs) != names(en.outputs, c.signature.outputs))
      return invalid(what + " differs from the group's first bucket (entry " +
                     to_string(it->second) + ") in its symbols, padding or signature");
  }
  return Status::ok();
}

// The data flow of entry `e` (the whole plan without entries); defined after verify_contents.
Status verify_flow(const ArtifactContents& c, uint32_t e, const std::vector<uint32_t>& in_entry,
                   const std::vector<uint32_t>& out_entry);

}  // namespace

namespace {

// A replicated program (DeviceProgram::replicas): the file says 1.4 or newer, the copies fit the
// artifact's cores, core 0 passes as each copy would (device::verify_replicated_program), and
// the program holds core 0 alone, inside one replica stride, or every copy of it.
Status verify_replication(const device::Target& t, const ArtifactContents& c,
                          const DeviceProgram& dp, const std::string& what) {
  if (c.format_minor < 4)
    return invalid(what + " is replicated over " + to_string(dp.replicas) +
                   " cores but the file says format 1." + to_string(c.format_minor) +
                   ": expected 1.4 or newer");
  if (dp.replicas < 2 || dp.replicas > c.num_cores)
    return range(what + " is replicated over " + to_string(dp.replicas) +
                 " cores: expected 2 to the artifact's " + to_string(c.num_cores));
  const device::Status s =
      device::verify_replicated_program(t, dp.program, dp.replicas, dp.replica_stride);
  if (!s.is_ok()) return range(what + ": " + s.message());
  const device::Program& p = dp.program;
  if (p.cores.size() == 1) {
    if (p.hbm_size > dp.replica_stride)
      return range(what + ": core 0's arena of " + to_string(p.hbm_size) +
                   " bytes is larger than the replica stride of " + to_string(dp.replica_stride));
    return Status::ok();
  }
  if (p.cores.size() != dp.replicas)
    return invalid(what + " is replicated over " + to_string(dp.replicas) + " cores but holds " +
                   to_string(p.cores.size()) + ": expected core 0 alone or every copy");
  if (p.hbm_size != uint64_t{dp.replicas} * dp.replica_stride)
    return range(what + " holds every copy but its hbm size " + to_string(p.hbm_size) + " is not " +
                 to_string(dp.replicas) + " replicas of " + to_string(dp.replica_stride) +
                 " bytes");
  for (uint32_t r = 1; r < dp.replicas; ++r)
    if (!device::is_core_replica(p.cores[0], p.cores[r], r, dp.replica_stride))
      return invalid(what + ": core " + to_string(r) +
                     " is not core 0 with its hbm operands moved by " + to_string(r) +
                     " replica strides of " + to_string(dp.replica_stride) + " bytes");
  return Status::ok();
}

}  // namespace

Status verify_contents(const ArtifactContents& c) {
  auto kind = device::parse_target(c.target);
  if (!kind) return invalid("target: " + kind.status().message());
  const device::Target& t = device::target(*kind);
  // A tensor-parallel artifact spans the cores of several chips of one instance.
  if (!device::valid_tensor_parallel_degree(t, static_cast<int>(c.num_cores)))
    return range("artifact uses " + to_string(c.num_cores) + " cores but " + std::string(t.name) +
                 " instances run programs over " + device::tensor_parallel_degrees_text(t));
  if (!c.source.sha256.empty() && c.source.sha256.size() != kSourceSha256Bytes)
    return invalid("source sha256 has " + to_string(c.source.sha256.size()) + " bytes, expected " +
                   to_string(kSourceSha256Bytes));

  // Symbols and values.
  const auto& syms = c.signature.symbols;
  for (size_t i = 0; i < syms.size(); ++i)
    if (syms[i].min < 0 || syms[i].min > syms[i].max)
      return invalid("symbol " + to_string(i) + " ('" + syms[i].name + "') has range [" +
                     to_string(syms[i].min) + ", " + to_string(syms[i].max) +
                     "]: expected 0 <= min <= max");
  for (uint32_t v = 0; v < c.plan.values.size(); ++v) {
    const Value& val = c.plan.values[v];
    if (!is_tensor_dtype(val.dtype))
      return invalid(vname(c, v) + " has dtype " + std::string(dtype_name(val.dtype)) +
                     ": expected a tensor dtype (f32 ... f8e5m2); " +
                     std::string(dtype_name(val.dtype)) + " exists only on the device");
    for (size_t d = 0; d < val.dims.size(); ++d) {
      const Dim& dim = val.dims[d];
      const std::string what = vname(c, v) + " dim " + to_string(d);
      if (dim.is_constant() && dim.value < 0)
        return invalid(what + " is " + to_string(dim.value) + ": expected >= 0");
      if (!dim.is_constant() && (static_cast<size_t>(dim.symbol) >= syms.size() || dim.coeff < 1))
        return range(what + " refers to symbol " + to_string(dim.symbol) + " x " +
                     to_string(dim.coeff) + " but there are " + to_string(syms.size()) +
                     " symbols (coefficient must be >= 1)");
      // coeff x max must fit in int64 so sessions can compute the extent without overflow.
      if (!dim.is_constant() && dim.coeff > std::numeric_limits<int64_t>::max() /
                                                std::max<int64_t>(syms[dim.symbol].max, 1))
        return range(what + " is " + to_string(dim.coeff) + " x '" + syms[dim.symbol].name +
                     "' with '" + syms[dim.symbol].name + "' up to " +
                     to_string(syms[dim.symbol].max) + ": the extent overflows");
    }
    if (val.kind == ValueKind::input &&
        (val.index >= c.signature.inputs.size() || c.signature.inputs[val.index].value != v))
      return invalid(vname(c, v) + " claims to be signature input " + to_string(val.index) +
                     " but that input does not refer back to it");
    if (val.kind == ValueKind::constant &&
        (val.index >= c.constants.size() || c.constants[val.index].value != v))
      return invalid(vname(c, v) + " claims to be constant " + to_string(val.index) +
                     " but that constant does not refer back to it");
    if (val.kind == ValueKind::state &&
        (val.index >= c.signature.states.size() || c.signature.states[val.index].value != v))
      return invalid(vname(c, v) + " claims to be state " + to_string(val.index) +
                     " but that state does not refer back to it");
    if (val.kind == ValueKind::symbol) {
      if (c.format_minor < 5)
        return invalid(vname(c, v) + " is a symbol value but the artifact says format 1." +
                       to_string(c.format_minor) + ": expected 1.5 or newer");
      if (val.index >= syms.size())
        return range(vname(c, v) + " holds symbol " + to_string(val.index) + " but there are " +
                     to_string(syms.size()) + " symbols");
      const auto n = static_numel(val);
      if (!n || *n != 1)
        return invalid(vname(c, v) + " holds symbol '" + syms[val.index].name +
                       "': expected one element, found a shape of " + to_string(val.dims.size()) +
                       " dims");
      const TensorDType dt = val.dtype;
      if (dt != TensorDType::f32 && dt != TensorDType::f64 && dt != TensorDType::bf16 &&
          dt != TensorDType::f16 && dt != TensorDType::i64 && dt != TensorDType::i32)
        return invalid(vname(c, v) + " holds symbol '" + syms[val.index].name + "' as " +
                       std::string(dtype_name(dt)) + ": expected f32, f64, bf16, f16, i64 or i32");
    }
  }

  // Entries (format 1.2): which entry each input and output belongs to (0 without entries).
  const auto& entries = c.signature.entries;
  if (!entries.empty() && c.format_minor < 2)
    return invalid("the artifact has " + to_string(entries.size()) + " entries but says format 1." +
                   to_string(c.format_minor) + ": expected 1.2 or newer");
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  const uint32_t unowned = entries.empty() ? 0 : kNone;
  std::vector<uint32_t> in_entry(c.signature.inputs.size(), unowned);
  std::vector<uint32_t> out_entry(c.signature.outputs.size(), unowned);
  for (uint32_t e = 0; e < entries.size(); ++e) {
    const std::string what = "entry " + to_string(e) + " ('" + entries[e].name + "')";
    for (auto [list, owner, kind] : {std::tuple{&entries[e].inputs, &in_entry, "input"},
                                     std::tuple{&entries[e].outputs, &out_entry, "output"}}) {
      for (uint32_t i : *list) {
        if (i >= owner->size())
          return range(what + " lists signature " + kind + " " + to_string(i) + " but there are " +
                       to_string(owner->size()));
        if ((*owner)[i] != kNone)
          return invalid(what + " lists signature " + kind + " " + to_string(i) + ", which entry " +
                         to_string((*owner)[i]) + " lists too");
        (*owner)[i] = e;
      }
    }
  }
  for (auto [owner, kind] : {std::pair{&in_entry, "input"}, std::pair{&out_entry, "output"}})
    for (size_t i = 0; i < owner->size(); ++i)
      if ((*owner)[i] == kNone)
        return invalid("signature " + std::string(kind) + " " + to_string(i) +
                       " belongs to no entry");

  // Signature: names are unique within an entry.
  std::set<std::pair<uint32_t, std::string>> names;
  for (size_t i = 0; i < c.signature.inputs.size(); ++i) {
    const TensorSpec& s = c.signature.inputs[i];
    const std::string what = "signature input " + to_string(i) + " ('" + s.name + "')";
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, s.value, what));
    if (c.plan.values[s.value].kind != ValueKind::input || c.plan.values[s.value].index != i)
      return invalid(what + " refers to " + vname(c, s.value) + ", which is not that input");
    if (s.name.empty() || !names.insert({in_entry[i], s.name}).second)
      return invalid(what + ": names must be non-empty and unique");
    if (s.index_bound) {
      const TensorDType dt = c.plan.values[s.value].dtype;
      if (dt != TensorDType::i64 && dt != TensorDType::i32 && dt != TensorDType::i16 &&
          dt != TensorDType::i8 && dt != TensorDType::u8)
        return invalid(what + " has an index bound but its dtype is " +
                       std::string(dtype_name(dt)) + ", expected an integer dtype");
      if (s.index_bound->lo >= s.index_bound->hi)
        return invalid(what + " has an empty index bound [" + to_string(s.index_bound->lo) + ", " +
                       to_string(s.index_bound->hi) + ")");
    }
  }
  names.clear();
  for (size_t i = 0; i < c.signature.outputs.size(); ++i) {
    const TensorSpec& s = c.signature.outputs[i];
    const std::string what = "signature output " + to_string(i) + " ('" + s.name + "')";
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, s.value, what));
    if (s.index_bound) return invalid(what + " has an index bound, which only inputs may have");
    if (s.name.empty() || !names.insert({out_entry[i], s.name}).second)
      return invalid(what + ": names must be non-empty and unique");
  }

  // States (format 1.2): a static tensor, its update of the same type, its initial constant.
  if (!c.signature.states.empty() && c.format_minor < 2)
    return invalid("the artifact has " + to_string(c.signature.states.size()) +
                   " states but says format 1." + to_string(c.format_minor) +
                   ": expected 1.2 or newer");
  names.clear();
  for (size_t i = 0; i < c.signature.states.size(); ++i) {
    const StateSpec& s = c.signature.states[i];
    const std::string what = "state " + to_string(i) + " ('" + s.name + "')";
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, s.value, what));
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, s.update, what + " update"));
    const Value& v = c.plan.values[s.value];
    if (v.kind != ValueKind::state || v.index != i)
      return invalid(what + " refers to " + vname(c, s.value) + ", which is not that state");
    if (s.name.empty() || !names.insert({0, s.name}).second)
      return invalid(what + ": names must be non-empty and unique");
    if (!entries.empty() && s.update != s.value)
      return invalid(what + ": its update is " + vname(c, s.update) +
                     ", but with entries each entry lists its own: expected the state's value");
    if (!static_numel(v))
      return invalid(what + " has a symbolic or negative dim: expected a static shape");
    const Value& u = c.plan.values[s.update];
    if (u.dtype != v.dtype || u.dims != v.dims)
      return invalid(what + ": its update " + vname(c, s.update) + " has another dtype or shape");
    if (u.kind == ValueKind::state && s.update != s.value)
      return invalid(what + ": its update is another state's value");
    if (s.initial >= c.constants.size())
      return range(what + " starts from constant " + to_string(s.initial) + " but there are " +
                   to_string(c.constants.size()) + " constants");
    const Value& k = c.plan.values[c.constants[s.initial].value];
    if (k.dtype != v.dtype || k.dims != v.dims)
      return invalid(what + ": its initial constant '" + c.constants[s.initial].name +
                     "' has another dtype or shape");
  }

  // Entries: names, contiguous step ranges in order covering the plan, a state update each.
  names.clear();
  uint64_t next_step = 0;
  for (uint32_t e = 0; e < entries.size(); ++e) {
    const EntrySpec& en = entries[e];
    const std::string what = "entry " + to_string(e) + " ('" + en.name + "')";
    if (en.name.empty() || !names.insert({0, en.name}).second)
      return invalid(what + ": names must be non-empty and unique");
    if (en.first_step != next_step)
      return invalid(what + " starts at plan step " + to_string(en.first_step) + ": expected " +
                     to_string(next_step) + ", where the previous entry ends");
    next_step += en.num_steps;
    if (next_step > c.plan.steps.size())
      return range(what + " ends at plan step " + to_string(next_step) + " but there are " +
                   to_string(c.plan.steps.size()));
    if (en.state_updates.size() != c.signature.states.size())
      return invalid(what + " lists " + to_string(en.state_updates.size()) +
                     " state updates: expected one per state (" +
                     to_string(c.signature.states.size()) + ")");
    for (size_t i = 0; i < en.state_updates.size(); ++i) {
      const uint32_t u = en.state_updates[i];
      const std::string su = what + " state update " + to_string(i);
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, u, su));
      const Value& v = c.plan.values[c.signature.states[i].value];
      if (c.plan.values[u].dtype != v.dtype || c.plan.values[u].dims != v.dims)
        return invalid(su + ": " + vname(c, u) + " has another dtype or shape than the state");
      if (c.plan.values[u].kind == ValueKind::state && u != c.signature.states[i].value)
        return invalid(su + " is another state's value");
    }
  }
  NEURONC_ARTIFACT_RETURN_IF_ERROR(verify_buckets(c));
  if (!entries.empty() && next_step != c.plan.steps.size())
    return invalid("the entries end at plan step " + to_string(next_step) + " but the plan has " +
                   to_string(c.plan.steps.size()) + " steps");

  // Memory plan and programs.
  const MemoryPlan& mp = c.memory_plan;
  const uint64_t hbm_cap = t.hbm_bytes_per_core * c.num_cores;
  if (mp.hbm_arena_bytes > hbm_cap)
    return range("hbm arena of " + to_string(mp.hbm_arena_bytes) + " bytes exceeds the " +
                 to_string(hbm_cap) + " bytes of " + to_string(c.num_cores) + " " +
                 std::string(t.name) + " cores");
  if (mp.sbuf_peak_bytes > t.sbuf_partition_bytes || mp.psum_peak_bytes > t.psum_partition_bytes)
    return range("memory plan peaks sbuf " + to_string(mp.sbuf_peak_bytes) + " / psum " +
                 to_string(mp.psum_peak_bytes) + " bytes per partition exceed " +
                 std::string(t.name) + "'s " + to_string(t.sbuf_partition_bytes) + " / " +
                 to_string(t.psum_partition_bytes));
  for (size_t p = 0; p < c.programs.size(); ++p) {
    const DeviceProgram& dp = c.programs[p];
    const std::string what = "program " + to_string(p) + " ('" + dp.name + "')";
    if (dp.replicas > 0) {
      NEURONC_ARTIFACT_RETURN_IF_ERROR(verify_replication(t, c, dp, what));
    } else {
      if (dp.program.cores.size() > c.num_cores)
        return range(what + " uses " + to_string(dp.program.cores.size()) +
                     " cores but the artifact declares " + to_string(c.num_cores));
      const device::Status s = device::verify_program(t, dp.program);
      if (!s.is_ok()) return range(what + ": " + s.message());
    }
    const uint64_t hbm_size = dp.hbm_size();
    if (hbm_size > mp.hbm_arena_bytes)
      return range(what + " needs " + to_string(hbm_size) + " hbm bytes but the arena has " +
                   to_string(mp.hbm_arena_bytes));
    if (dp.sbuf_peak_bytes > mp.sbuf_peak_bytes || dp.psum_peak_bytes > mp.psum_peak_bytes)
      return range(what + " peaks exceed the memory plan's");
    // A replicated program's copies have core 0's debug ids and opcodes.
    const std::span<const device::CoreProgram> cores(dp.program.cores.data(),
                                                     dp.replicas > 0 ? 1 : dp.program.cores.size());
    for (const auto& core : cores)
      for (const auto& stream : core.streams)
        for (size_t i = 0; i < stream.size(); ++i) {
          if (stream[i].debug_id != device::kNoDebugId &&
              stream[i].debug_id >= c.debug_nodes.size())
            return range(what + ": instruction debug id " + to_string(stream[i].debug_id) +
                         " but there are " + to_string(c.debug_nodes.size()) + " debug nodes");
          if (const auto* d = std::get_if<device::DmaCopy>(&stream[i].op);
              d && d->scatter && c.format_minor < 3)
            return invalid(what + " has an indirect scatter dma_copy but says format 1." +
                           to_string(c.format_minor) + ": expected 1.3 or newer");
        }
  }

  // Constants.
  for (uint32_t i = 0; i < c.constants.size(); ++i) {
    const Constant& k = c.constants[i];
    const std::string what = "constant " + to_string(i) + " ('" + k.name + "')";
    if (k.absent() && c.format_minor < 3)
      return invalid(what + " is absent (a timing-only artifact) but the file says format 1." +
                     to_string(c.format_minor) + ": expected 1.3 or newer");
    if (k.absent() && k.offset != 0)
      return invalid(what + " is absent but has segment offset " + to_string(k.offset));
    if (k.absent()) {
      // No bytes to check; its size must still be its value's.
    } else if (k.segment >= c.segments.size())
      return range(what + " is in segment " + to_string(k.segment) + " but there are " +
                   to_string(c.segments.size()) + " segments");
    else if (!fits(k.offset, k.size, c.segments[k.segment].raw_size))
      return range(what + " bytes [" + to_string(k.offset) + ", +" + to_string(k.size) +
                   ") are outside segment " + to_string(k.segment) + " of " +
                   to_string(c.segments[k.segment].raw_size) + " bytes");
    NEURONC_ARTIFACT_RETURN_IF_ERROR(check_value_index(c, k.value, what));
    if (c.plan.values[k.value].kind != ValueKind::constant || c.plan.values[k.value].index != i)
      return invalid(what + " backs " + vname(c, k.value) + ", which is not that constant");
    NEURONC_ARTIFACT_ASSIGN_OR_RETURN(uint64_t bytes, static_bytes(c, k.value, what));
    if (bytes != k.size)
      return invalid(what + " holds " + to_string(k.size) + " bytes but " + vname(c, k.value) +
                     " needs " + to_string(bytes));
    if (k.hbm_offset != kHostOnly && !fits(k.hbm_offset, k.size, mp.hbm_arena_bytes))
      return range(what + " is placed at hbm [" + to_string(k.hbm_offset) + ", +" +
                   to_string(k.size) + ") outside the " + to_string(mp.hbm_arena_bytes) +
                   "-byte arena");
  }

  // Plan data flow, per entry: an entry sees constants, states and its own inputs, and what its
  // own steps define.
  const size_t num_entries = std::max<size_t>(entries.size(), 1);
  for (uint32_t e = 0; e < num_entries; ++e) {
    Status s = verify_flow(c, e, in_entry, out_entry);
    if (!s.is_ok())
      return entries.empty()
                 ? s
                 : s.with_context("in entry " + to_string(e) + " ('" + entries[e].name + "')");
  }
  return Status::ok();
}

namespace {

Status verify_flow(const ArtifactContents& c, uint32_t e, const std::vector<uint32_t>& in_entry,
                   const std::vector<uint32_t>& out_entry) {
  const auto& entries = c.signature.entries;
  const size_t first = entries.empty() ? 0 : entries[e].first_step;
  const size_t last = entries.empty() ? c.plan.steps.size() : first + entries[e].num_steps;
  std::vector<bool> defined(c.plan.values.size(), false);
  // The symbols the entry binds: those of its inputs' dims and of its shape bucket. A symbol
  // value of any other symbol would have nothing to hold.
  std::vector<bool> bound(c.signature.symbols.size(), false);
  for (uint32_t i = 0; i < c.signature.inputs.size(); ++i)
    if (in_entry[i] == e)
      for (const Dim& d : c.plan.values[c.signature.inputs[i].value].dims)
        if (!d.is_constant()) bound[static_cast<size_t>(d.symbol)] = true;
  if (!entries.empty() && entries[e].bucket)
    for (uint32_t s : entries[e].bucket->symbols)
      if (s < bound.size()) bound[s] = true;
  for (uint32_t v = 0; v < c.plan.values.size(); ++v) {
    const Value& val = c.plan.values[v];
    defined[v] = val.kind == ValueKind::constant || val.kind == ValueKind::state ||
                 (val.kind == ValueKind::input && in_entry[val.index] == e) ||
                 (val.kind == ValueKind::symbol && bound[val.index]);
  }
  for (size_t i = first; i < last; ++i) {
    const std::string where = "plan step " + to_string(i);
    if (const auto* call = std::get_if<DeviceCall>(&c.plan.steps[i])) {
      if (call->program >= c.programs.size())
        return range(where + " calls program " + to_string(call->program) + " but there are " +
                     to_string(c.programs.size()) + " programs");
      Status s = verify_bindings(c, *call, false, defined);
      if (s.is_ok()) s = verify_bindings(c, *call, true, defined);
      if (!s.is_ok()) return s.with_context(where);
    } else {
      const HostOp& op = std::get<HostOp>(c.plan.steps[i]);
      Status s = verify_host_op(c, op, defined);
      if (!s.is_ok()) return s.with_context(where + " (" + op.op + ")");
    }
  }
  for (size_t i = 0; i < c.signature.states.size(); ++i)
    if (!defined[entries.empty() ? c.signature.states[i].update : entries[e].state_updates[i]])
      return invalid("state " + to_string(i) + " ('" + c.signature.states[i].name +
                     "'): its update is never computed by the plan");
  for (size_t i = 0; i < c.signature.outputs.size(); ++i)
    if (out_entry[i] == e && !defined[c.signature.outputs[i].value])
      return invalid("signature output " + to_string(i) + " ('" + c.signature.outputs[i].name +
                     "') is never computed by the plan");
  return Status::ok();
}

}  // namespace

}  // namespace neuronc::artifact
