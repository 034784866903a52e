// Element-wise operators: activations, arithmetic with tensors and scalars, comparisons,
// logical ops, where / masked_fill.
#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

using namespace shape_rules;

std::vector<TensorType> same_as_input(const ShapeContext& c) {
  return {c.input(0)};
}

// Float math on an integer tensor produces the default float dtype.
std::vector<TensorType> float_result(const ShapeContext& c) {
  TensorType t = c.input(0);
  if (!is_floating(t.dtype)) t.dtype = DType::f32;
  return {t};
}

std::vector<TensorType> binary_tensor(const ShapeContext& c) {
  const TensorType& a = c.input(0);
  const TensorType& b = c.input(1);
  // A rank-0 tensor of another category behaves like a scalar operand (PyTorch rule).
  DType dt;
  if (a.rank() == 0 && b.rank() > 0 && is_floating(a.dtype) == is_floating(b.dtype)) {
    dt = b.dtype;
  } else if (b.rank() == 0 && a.rank() > 0 && is_floating(a.dtype) == is_floating(b.dtype)) {
    dt = a.dtype;
  } else {
    dt = promote_types(a.dtype, b.dtype);
  }
  return {{dt, broadcast(c, a.shape, b.shape)}};
}

std::vector<TensorType> true_divide_tensor(const ShapeContext& c) {
  std::vector<TensorType> t = binary_tensor(c);
  const Attribute* mode = c.attr("rounding_mode");
  const bool rounding = mode && std::holds_alternative<std::string>(*mode);
  if (!rounding && !is_floating(t[0].dtype)) t[0].dtype = DType::f32;
  return t;
}

std::vector<TensorType> binary_scalar(const ShapeContext& c) {
  TensorType t = c.input(0);
  t.dtype = promote_with_scalar(t.dtype, c.attr("other"));
  return {t};
}

std::vector<TensorType> compare_tensor(const ShapeContext& c) {
  return {{DType::boolean, broadcast(c, c.input(0).shape, c.input(1).shape)}};
}

std::vector<TensorType> compare_scalar(const ShapeContext& c) {
  return {{DType::boolean, c.input(0).shape}};
}

std::vector<TensorType> inplace_binary(const ShapeContext& c) {
  const TensorType& self = c.input(0);
  Shape b = broadcast(c, self.shape, c.input(1).shape);
  if (b != self.shape) {
    c.fail("in-place result shape " + shape_str(c, b) + " differs from self " +
           shape_str(c, self.shape));
  }
  return {self};
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  const auto E = OpCategory::elementwise;
  const auto Cmp = OpCategory::comparison;
  const auto D = Placement::device;

  // Activations and unary math (device: ScalarE activation functions / VectorE).
  for (const char* s : {
           "relu(Tensor self) -> Tensor",
           "relu_(Tensor(a!) self) -> Tensor(a!)",
           "silu(Tensor self) -> Tensor",
           "silu_(Tensor(a!) self) -> Tensor(a!)",
           "sigmoid(Tensor self) -> Tensor",
           "sigmoid_(Tensor(a!) self) -> Tensor(a!)",
           "tanh(Tensor self) -> Tensor",
           "tanh_(Tensor(a!) self) -> Tensor(a!)",
           "gelu(Tensor self, *, str approximate='none') -> Tensor",
           "gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)",
           "hardswish(Tensor self) -> Tensor",
           "hardswish_(Tensor(a!) self) -> Tensor(a!)",
           "hardsigmoid(Tensor self) -> Tensor",
           "hardsigmoid_(Tensor(a!) self) -> Tensor(a!)",
           "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
           "hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)",
           "relu6(Tensor self) -> Tensor",
           "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
           "leaky_relu_(Tensor(a!) self, Scalar negative_slope=0.01) -> Tensor(a!)",
           "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
           "neg(Tensor self) -> Tensor",
           "sign(Tensor self) -> Tensor",
           "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
           "clamp_min(Tensor self, Scalar min) -> Tensor",
           "clamp_max(Tensor self, Scalar max) -> Tensor",
           "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)",
           "clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)",
           "neg_(Tensor(a!) self) -> Tensor(a!)",
           "square(Tensor self) -> Tensor",
       }) {
    r.add(s, E, D, same_as_input);
  }
  for (const char* s : {
           "rsqrt(Tensor self) -> Tensor",
           "sqrt(Tensor self) -> Tensor",
           "exp(Tensor self) -> Tensor",
           "log(Tensor self) -> Tensor",
           "erf(Tensor self) -> Tensor",
           "sin(Tensor self) -> Tensor",
           "cos(Tensor self) -> Tensor",
           "reciprocal(Tensor self) -> Tensor",
       }) {
    r.add(s, E, D, float_result);
  }

  // Arithmetic: Tensor-Tensor, Tensor-Scalar and their in-place forms.
  for (const char* s : {
           "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
           "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
           "mul.Tensor(Tensor self, Tensor other) -> Tensor",
           "maximum(Tensor self, Tensor other) -> Tensor",
           "minimum(Tensor self, Tensor other) -> Tensor",
           "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
           "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
       }) {
    r.add(s, E, D, binary_tensor);
  }
  // On the host (no engine lowering; exact there): log1p, expm1, softplus (Mamba, RG-LRU).
  r.add("log1p(Tensor self) -> Tensor", E, Placement::host, float_result);
  for (const char* f : {"acos", "asin", "atan", "sinh", "cosh", "tan"})
    r.add(std::string(f) + "(Tensor self) -> Tensor", E, Placement::host, float_result);
  r.add("expm1(Tensor self) -> Tensor", E, Placement::host, float_result);
  r.add("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", E, Placement::host,
        float_result);
  // min/max of two tensors (torch.min(a, b)): the element-wise minimum/maximum; canonicalize
  // renames them.
  r.add("min.other(Tensor self, Tensor other) -> Tensor", E, D, binary_tensor);
  r.add("max.other(Tensor self, Tensor other) -> Tensor", E, D, binary_tensor);
  // Remainders: exact on the host (fmod keeps the dividend's sign, remainder the divisor's).
  const auto H = Placement::host;
  r.add("fmod.Tensor(Tensor self, Tensor other) -> Tensor", E, H, binary_tensor);
  r.add("remainder.Tensor(Tensor self, Tensor other) -> Tensor", E, H, binary_tensor);
  r.add("fmod.Scalar(Tensor self, Scalar other) -> Tensor", E, H, binary_scalar);
  r.add("remainder.Scalar(Tensor self, Scalar other) -> Tensor", E, H, binary_scalar);
  r.add("div.Tensor(Tensor self, Tensor other) -> Tensor", E, D, true_divide_tensor);
  r.add("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor", E, D,
        true_divide_tensor);
  for (const char* s : {
           "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
           "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
           "mul.Scalar(Tensor self, Scalar other) -> Tensor",
           "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       }) {
    r.add(s, E, D, binary_scalar);
  }
  r.add("div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          const Attribute* mode = c.attr("rounding_mode");
          if (mode && std::holds_alternative<std::string>(*mode))
            t.dtype = promote_with_scalar(t.dtype, c.attr("other"));
          else if (!is_floating(t.dtype))
            t.dtype = DType::f32;
          return {t};
        });
  r.add("div.Scalar(Tensor self, Scalar other) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          if (!is_floating(t.dtype)) t.dtype = DType::f32;
          return {t};
        });
  r.add("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          t.dtype = promote_with_scalar(t.dtype, c.attr("exponent"));
          return {t};
        });
  r.add("pow.Scalar(Scalar self, Tensor exponent) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          TensorType t = c.input(0);
          t.dtype = promote_with_scalar(t.dtype, c.attr("self"));
          return {t};
        });
  for (const char* s : {
           "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
           "sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
           "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
           "div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
       }) {
    r.add(s, E, D, inplace_binary);
  }
  for (const char* s : {
           "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
           "sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
           "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
           "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
       }) {
    r.add(s, E, D, same_as_input);
  }

  // Comparisons and logical ops produce bool.
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    const std::string n(name);
    r.add(n + ".Tensor(Tensor self, Tensor other) -> Tensor", Cmp, D, compare_tensor);
    r.add(n + ".Scalar(Tensor self, Scalar other) -> Tensor", Cmp, D, compare_scalar);
  }
  r.add("logical_and(Tensor self, Tensor other) -> Tensor", Cmp, D, compare_tensor);
  r.add("logical_or(Tensor self, Tensor other) -> Tensor", Cmp, D, compare_tensor);
  r.add("logical_xor(Tensor self, Tensor other) -> Tensor", Cmp, D, compare_tensor);
  r.add("logical_not(Tensor self) -> Tensor", Cmp, D, compare_scalar);
  r.add("bitwise_not(Tensor self) -> Tensor", Cmp, D, same_as_input);
  // Bitwise ops on bool masks (attention masks) and integers keep the promoted dtype.
  for (const char* s : {"bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor",
                        "bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor",
                        "__and__.Tensor(Tensor self, Tensor other) -> Tensor",
                        "__or__.Tensor(Tensor self, Tensor other) -> Tensor"}) {
    r.add(s, Cmp, D, binary_tensor);
  }
  for (const char* s : {"bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor",
                        "__xor__.Tensor(Tensor self, Tensor other) -> Tensor"}) {
    r.add(s, Cmp, H, binary_tensor);
  }
  // abs of a complex tensor is its real magnitude.
  r.add("abs(Tensor self) -> Tensor", E, D, [](const ShapeContext& c) -> std::vector<TensorType> {
    TensorType t = c.input(0);
    if (is_complex(t.dtype)) t.dtype = DType::f32;
    return {t};
  });
  r.add("isnan(Tensor self) -> Tensor", Cmp, D, compare_scalar);

  // Selection.
  r.add("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const TensorType& cond = c.input(0);
          if (cond.dtype != DType::boolean && cond.dtype != DType::u8) {
            c.fail("condition must be bool, found " + std::string(dtype_name(cond.dtype)));
          }
          Shape s = broadcast(c, broadcast(c, cond.shape, c.input(1).shape), c.input(2).shape);
          const TensorType& a = c.input(1);
          const TensorType& b = c.input(2);
          DType dt = promote_types(a.dtype, b.dtype);
          if (a.rank() == 0 && b.rank() > 0 && is_floating(a.dtype) == is_floating(b.dtype))
            dt = b.dtype;
          if (b.rank() == 0 && a.rank() > 0 && is_floating(a.dtype) == is_floating(b.dtype))
            dt = a.dtype;
          return {{dt, s}};
        });
  r.add("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          Shape s = broadcast(c, c.input(0).shape, c.input(1).shape);
          return {{promote_with_scalar(c.input(1).dtype, c.attr("other")), s}};
        });
  r.add("where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor", E, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          Shape s = broadcast(c, c.input(0).shape, c.input(1).shape);
          return {{promote_with_scalar(c.input(1).dtype, c.attr("self")), s}};
        });
  auto masked_fill_rule = [](const ShapeContext& c) -> std::vector<TensorType> {
    const TensorType& self = c.input(0);
    const TensorType& mask = c.input(1);
    if (mask.dtype != DType::boolean) {
      c.fail("mask must be bool, found " + std::string(dtype_name(mask.dtype)));
    }
    Shape s = broadcast(c, self.shape, mask.shape);
    if (s != self.shape) {
      c.fail("mask " + shape_str(c, mask.shape) + " does not broadcast to self " +
             shape_str(c, self.shape));
    }
    return {self};
  };
  r.add("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", E, D,
        masked_fill_rule);
  r.add("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", E, D,
        masked_fill_rule);
  r.add("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)", E, D,
        masked_fill_rule);
  r.add("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)", E, D,
        masked_fill_rule);
}

}  // namespace neuronc::ir
