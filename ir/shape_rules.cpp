// Shape-rule helpers shared by the operator families.
#include <algorithm>

#include "ir/op_definitions.h"

namespace neuronc::ir::shape_rules {

int64_t normalize_dim(const ShapeContext& c, int64_t dim, int64_t rank, const char* what) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    c.fail(std::string(what) + " " + std::to_string(dim) + " is out of range for rank " +
           std::to_string(rank) + ": expected [" + std::to_string(-r) + ", " +
           std::to_string(r - 1) + "]");
  }
  return dim < 0 ? dim + r : dim;
}

std::string shape_str(const ShapeContext& c, const Shape& s) {
  return c.graph().shape_to_string(s);
}

Shape broadcast(const ShapeContext& c, const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const bool ha = i < a.size(), hb = i < b.size();
    const Dim da = ha ? a[a.size() - 1 - i] : Dim::constant(1);
    const Dim db = hb ? b[b.size() - 1 - i] : Dim::constant(1);
    Dim r;
    if (da == db) {
      r = da;
    } else if (da.is_constant() && da.value() == 1) {
      r = db;
    } else if (db.is_constant() && db.value() == 1) {
      r = da;
    } else if (da.is_symbolic() != db.is_symbolic()) {
      // A symbol against a constant: fine only when the constant lies in the symbol's range;
      // torch.export would have specialised the symbol otherwise. Keep the constant.
      const Dim& s = da.is_symbolic() ? da : db;
      const Dim& k = da.is_symbolic() ? db : da;
      const Symbol& sym = c.graph().symbol(s.symbol);
      if (k.value() % s.coeff != 0 || k.value() / s.coeff < sym.min ||
          k.value() / s.coeff > sym.max) {
        c.fail("cannot broadcast " + shape_str(c, a) + " with " + shape_str(c, b) + ": dim " +
               c.graph().dim_to_string(da) + " vs " + c.graph().dim_to_string(db));
      }
      r = k;
    } else {
      c.fail("cannot broadcast " + shape_str(c, a) + " with " + shape_str(c, b) + ": dim " +
             c.graph().dim_to_string(da) + " vs " + c.graph().dim_to_string(db));
    }
    out[n - 1 - i] = r;
  }
  return out;
}

int64_t require_constant(const ShapeContext& c, const Dim& d, const std::string& what) {
  if (!d.is_constant()) {
    c.fail(what + " must be static, found symbolic " + c.graph().dim_to_string(d));
  }
  return d.value();
}

DType promote_with_scalar(DType tensor, const Attribute* scalar) {
  if (!scalar) return tensor;
  if (std::holds_alternative<double>(*scalar)) {
    return is_floating(tensor) ? tensor : DType::f32;
  }
  if (std::holds_alternative<int64_t>(*scalar)) {
    return tensor == DType::boolean ? DType::i64 : tensor;
  }
  return tensor;
}

}  // namespace neuronc::ir::shape_rules
