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
  return {.name = std::move(name), .kind = ArgKind::tensor, .tensors = {value}};
}
Arg Arg::tensor_list(std::string name, std::vector<int32_t> values) {
  return {.name = std::move(name), .kind = ArgKind::tensors, .tensors = std::move(values)};
}
Arg Arg::none(std::string name) {
  return {.name = std::move(name)};
}
Arg Arg::integer(std::string name, int64_t v) {
  return {.name = std::move(name), .kind = ArgKind::int_, .i = v};
}
Arg Arg::integers(std::string name, std::vector<int64_t> v) {
  return {.name = std::move(name), .kind = ArgKind::ints, .ints = std::move(v)};
}
Arg Arg::real(std::string name, double v) {
  return {.name = std::move(name), .kind = ArgKind::float_, .f = v};
}
Arg Arg::reals(std::string name, std::vector<double> v) {
  return {.name = std::move(name), .kind = ArgKind::floats, .floats = std::move(v)};
}
Arg Arg::boolean(std::string name, bool v) {
  return {.name = std::move(name), .kind = ArgKind::bool_, .b = v};
}
Arg Arg::booleans(std::string name, std::vector<bool> v) {
  return {.name = std::move(name), .kind = ArgKind::bools, .bools = std::move(v)};
}
Arg Arg::str(std::string name, std::string v) {
  return {.name = std::move(name), .kind = ArgKind::string, .s = std::move(v)};
}
Arg Arg::scalar_type(std::string name, DType v) {
  return {.name = std::move(name), .kind = ArgKind::dtype, .dtype = v};
}

const Arg* find_arg(std::span<const Arg> args, std::string_view name) {
  for (const Arg& a : args)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace neuronc::kernels
