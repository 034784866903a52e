// The arguments of a host kernel call: one ATen schema argument each, by name, in schema order.
// The artifact stores a host op's arguments in this form (artifact_format/artifact.h), and the
// compiler builds them from IR nodes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neuronc/dtype.h"

namespace neuronc::kernels {

enum class ArgKind : uint8_t {
  none = 0,
  tensor,
  tensors,
  int_,
  ints,
  float_,
  floats,
  bool_,
  bools,
  string,
  dtype,
};
inline constexpr int kNumArgKinds = 11;
std::string_view arg_kind_name(ArgKind k);

// One ATen schema argument; only the member matching `kind` is meaningful. Tensor arguments
// hold value indices (the artifact's plan values, or a caller's own numbering), -1 for None.
struct Arg {
  std::string name{};
  ArgKind kind = ArgKind::none;
  std::vector<int32_t> tensors{};
  int64_t i = 0;
  std::vector<int64_t> ints{};
  double f = 0;
  std::vector<double> floats{};
  bool b = false;
  std::vector<bool> bools{};
  std::string s{};
  DType dtype = DType::f32;
  bool operator==(const Arg&) const = default;

  static Arg tensor(std::string name, int32_t value);
  static Arg tensor_list(std::string name, std::vector<int32_t> values);
  static Arg none(std::string name);
  static Arg integer(std::string name, int64_t v);
  static Arg integers(std::string name, std::vector<int64_t> v);
  static Arg real(std::string name, double v);
  static Arg reals(std::string name, std::vector<double> v);
  static Arg boolean(std::string name, bool v);
  static Arg booleans(std::string name, std::vector<bool> v);
  static Arg str(std::string name, std::string v);
  static Arg scalar_type(std::string name, DType v);
};

// The argument called `name` in `args`, or null.
const Arg* find_arg(std::span<const Arg> args, std::string_view name);

}  // namespace neuronc::kernels
