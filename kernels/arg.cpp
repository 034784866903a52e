// Host kernel arguments (arg.h).
#include "kernels/arg.h"

#include <utility>

namespace neuronc::kernels {

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
Arg Arg::scalar_type(std::string name, DType v) {
  Arg a;
  a.name = std::move(name);
  a.kind = ArgKind::dtype;
  a.dtype = v;
  return a;
}

const Arg* find_arg(std::span<const Arg> args, std::string_view name) {
  for (const Arg& a : args)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace neuronc::kernels
