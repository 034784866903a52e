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

std::string_view arg_kind_name(ArgKind k) {
  static constexpr std::string_view kNames[] = {"none",  "tensor", "tensors", "int",
                                                "ints",  "float",  "floats",  "bool",
                                                "bools", "string", "dtype"};
  const auto i = static_cast<size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

Arg Arg::tensor(std::string name, int32_t value) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::tensor;
  a.tensors = {value};
  return a;
}
Arg Arg::tensor_list(std::string name, std::vector<int32_t> values) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::tensors;
  a.tensors = std::move(values);
  return a;
}
Arg Arg::none(std::string name) {
  Arg a;
  a.name = std::move(name);
  return a;
}
Arg Arg::integer(std::string name, int64_t v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::int_;
  a.i = v;
  return a;
}
Arg Arg::integers(std::string name, std::vector<int64_t> v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::ints;
  a.ints = std::move(v);
  return a;
}
Arg Arg::real(std::string name, double v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::float_;
  a.f = v;
  return a;
}
Arg Arg::reals(std::string name, std::vector<double> v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::floats;
  a.floats = std::move(v);
  return a;
}
Arg Arg::boolean(std::string name, bool v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::bool_;
  a.b = v;
  return a;
}
Arg Arg::booleans(std::string name, std::vector<bool> v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::bools;
  a.bools = std::move(v);
  return a;
}
Arg Arg::str(std::string name, std::string v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::string;
  a.s = std::move(v);
  return a;
}
Arg Arg::scalar_type(std::string name, TensorDType v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::dtype;
  a.dtype = v;
  return a;
}

const Arg* HostOp::arg(std::string_view name) const {
  for (const Arg& a : args)
    if (a.name == name) return &a;
  return nullptr;
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
