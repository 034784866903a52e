// The type of an IR value: a tensor's element type and shape (possibly symbolic).
#pragma once

#include <string>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace neuronc::ir {

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

}  // namespace neuronc::ir
