// Decompose (see the header for the rules).
#include "passes/decompose.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

using ir::Node;
using ir::Value;

class Decomposer : NodeExpander {
 public:
  explicit Decomposer(ir::Graph& g) : NodeExpander(g, "decomposing") {}

  bool run() {
    bool changed = false;
    for (Node* n : node_snapshot(g_)) changed |= visit(n);
    return changed;
  }

 private:
  enum class Mode { constant, reflect, replicate, circular };

  bool visit(Node* n) {
    const std::string& op = n->op();
    if (op == "aten.constant_pad_nd.default")
      return pad(n, Mode::constant, n->attr_ints("pad"), value_attr(n, "value"));
    if (op == "aten.pad.default") {
      const std::string mode =
          n->attr("mode") ? std::get<std::string>(*n->attr("mode")) : "constant";
      Mode m = Mode::constant;
      if (mode == "reflect")
        m = Mode::reflect;
      else if (mode == "replicate")
        m = Mode::replicate;
      else if (mode == "circular")
        m = Mode::circular;
      else if (mode != "constant")
        throw ir::Error(n->describe() + ": padding mode '" + mode +
                        "': expected constant, reflect, replicate or circular");
      return pad(n, m, n->attr_ints("pad"), value_attr(n, "value"));
    }
    if (op.rfind("aten.reflection_pad", 0) == 0)
      return pad(n, Mode::reflect, n->attr_ints("padding"), int64_t{0});
    if (op.rfind("aten.replication_pad", 0) == 0)
      return pad(n, Mode::replicate, n->attr_ints("padding"), int64_t{0});
    if (op == "aten._weight_norm.default") return weight_norm(n);
    if (op == "aten.slice_scatter.default") return slice_scatter(n);
    if (op == "aten.copy.default") return copy(n);
    if (op == "aten.empty.memory_format" || op == "aten.empty_permuted.default" ||
        op == "aten.empty_like.default")
      return empty(n);
    if (op == "aten.index.Tensor") return index_one_dim(n);
    return false;
  }

  // The fill value of a constant pad: None -> 0.
  static ir::Attribute value_attr(const Node* n, const char* name) {
    const ir::Attribute* a = n->attr(name);
    if (!a || std::holds_alternative<ir::NoneAttr>(*a)) return int64_t{0};
    return *a;
  }

  Value* slice(Node* at, Value* x, int64_t dim, int64_t start, int64_t end) {
    return add(at, "aten.slice.Tensor", {x},
               {{"dim", dim}, {"start", start}, {"end", end}, {"step", int64_t{1}}});
  }

  Value* cat(Node* at, const std::vector<Value*>& parts, int64_t dim) {
    if (parts.size() == 1) return parts[0];
    return add(at, "aten.cat.default", parts, {{"dim", dim}});
  }

  bool pad(Node* n, Mode mode, const std::vector<int64_t>& spec, const ir::Attribute& value) {
    Value* x = n->input(0);
    const int64_t rank = x->type().rank();
    if (spec.size() % 2 != 0 || static_cast<int64_t>(spec.size() / 2) > rank) return false;
    // Reflect, replicate and circular index from the far end of each padded dim: it must be
    // static. The shape rule has already checked that constant pads leave no negative dim.
    for (size_t i = 0; i < spec.size() / 2; ++i) {
      const int64_t d = rank - 1 - static_cast<int64_t>(i);
      if ((spec[2 * i] != 0 || spec[2 * i + 1] != 0) &&
          !x->shape()[static_cast<size_t>(d)].as_constant())
        return false;
    }
    for (size_t i = 0; i < spec.size() / 2; ++i) {
      const int64_t d = rank - 1 - static_cast<int64_t>(i);
      int64_t lo = spec[2 * i], hi = spec[2 * i + 1];
      if (lo == 0 && hi == 0) continue;
      int64_t size = *x->shape()[static_cast<size_t>(d)].as_constant();
      // Negative pads crop.
      if (lo < 0 || hi < 0) {
        const int64_t start = lo < 0 ? -lo : 0;
        const int64_t end = size - (hi < 0 ? -hi : 0);
        x = slice(n, x, d, start, end);
        size = end - start;
        lo = std::max<int64_t>(lo, 0);
        hi = std::max<int64_t>(hi, 0);
      }
      if (lo == 0 && hi == 0) continue;
      if (mode != Mode::constant && size == 0)
        throw ir::Error(n->describe() + ": cannot pad an empty dim " + std::to_string(d) +
                        " in reflect, replicate or circular mode");
      if (mode == Mode::reflect && (lo >= size || hi >= size))
        throw ir::Error(n->describe() + ": reflect padding (" + std::to_string(lo) + ", " +
                        std::to_string(hi) + ") of dim " + std::to_string(d) + " of size " +
                        std::to_string(size) + ": expected each side below the dim size");
      if (mode == Mode::circular && (lo > size || hi > size))
        throw ir::Error(n->describe() + ": circular padding (" + std::to_string(lo) + ", " +
                        std::to_string(hi) + ") of dim " + std::to_string(d) + " of size " +
                        std::to_string(size) + ": expected each side at most the dim size");
      std::vector<Value*> parts;
      auto border = [&](int64_t width, bool front) -> Value* {
        switch (mode) {
          case Mode::constant: {
            ir::Shape s = x->shape();
            s[static_cast<size_t>(d)] = ir::Dim::constant(width);
            return add(n, "aten.full.default", {},
                       {{"size", shape_attr(s)}, {"fill_value", value}, {"dtype", x->dtype()}});
          }
          case Mode::replicate: {
            Value* edge = front ? slice(n, x, d, 0, 1) : slice(n, x, d, size - 1, size);
            ir::Shape s = x->shape();
            s[static_cast<size_t>(d)] = ir::Dim::constant(width);
            return add(n, "aten.expand.default", {edge}, {{"size", shape_attr(s)}});
          }
          case Mode::reflect: {
            // front: x[width], x[width-1], ..., x[1]; back: x[size-2], ..., x[size-1-width].
            std::vector<Value*> rows;
            for (int64_t k = 0; k < width; ++k) {
              const int64_t j = front ? width - k : size - 2 - k;
              rows.push_back(slice(n, x, d, j, j + 1));
            }
            return cat(n, rows, d);
          }
          case Mode::circular:
            return front ? slice(n, x, d, size - width, size) : slice(n, x, d, 0, width);
        }
        return nullptr;
      };
      if (lo > 0) parts.push_back(border(lo, true));
      parts.push_back(x);
      if (hi > 0) parts.push_back(border(hi, false));
      x = cat(n, parts, d);
    }
    if (x == n->input(0)) {
      forward_to(g_, n, x);
      return true;
    }
    finish(n, x);
    return true;
  }

  bool weight_norm(Node* n) {
    Value* v = n->input(0);
    Value* g = n->input(1);
    const int64_t rank = v->type().rank();
    int64_t dim = n->attr("dim") ? n->attr_int("dim") : 0;
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < rank; ++i)
      if (dim == -1 || i != (dim < 0 ? dim + rank : dim)) dims.push_back(i);
    Value* sq = add(n, "aten.pow.Tensor_Scalar", {v}, {{"exponent", int64_t{2}}});
    Value* sum = add(n, "aten.sum.dim_IntList", {sq}, {{"dim", dims}, {"keepdim", true}});
    Value* norm = add(n, "aten.pow.Tensor_Scalar", {sum}, {{"exponent", 0.5}});
    Value* scale = add(n, "aten.div.Tensor", {g, norm}, {});
    finish(n, add(n, "aten.mul.Tensor", {v, scale}, {}));
    return true;
  }

  bool slice_scatter(Node* n) {
    Value* self = n->input(0);
    Value* src = n->input(1);
    const int64_t rank = self->type().rank();
    int64_t dim = n->attr_int("dim");
    if (dim < 0) dim += rank;
    if ((n->attr("step") ? n->attr_int("step") : 1) != 1) return false;
    const auto size = self->shape()[static_cast<size_t>(dim)].as_constant();
    if (!size) return false;
    auto bound = [&](const char* name, int64_t fallback) {
      const ir::Attribute* a = n->attr(name);
      if (!a || std::holds_alternative<ir::NoneAttr>(*a)) return fallback;
      int64_t v = std::get<int64_t>(*a);
      if (v < 0) v += *size;
      return std::clamp<int64_t>(v, 0, *size);
    };
    const int64_t start = bound("start", 0);
    const int64_t end = std::max(start, bound("end", *size));
    std::vector<Value*> parts;
    if (start > 0) parts.push_back(slice(n, self, dim, 0, start));
    Value* body = src;
    if (body->dtype() != self->dtype())
      body = add(n, "aten._to_copy.default", {body}, {{"dtype", self->dtype()}});
    parts.push_back(body);
    if (end < *size) parts.push_back(slice(n, self, dim, end, *size));
    finish(n, cat(n, parts, dim));
    return true;
  }

  bool copy(Node* n) {
    Value* self = n->input(0);
    Value* v = n->input(1);
    if (!(v->shape() == self->shape()))
      v = add(n, "aten.expand.default", {v}, {{"size", shape_attr(self->shape())}});
    if (v->dtype() != self->dtype())
      v = add(n, "aten._to_copy.default", {v}, {{"dtype", self->dtype()}});
    if (v == n->input(1)) {
      forward_to(g_, n, v);
      return true;
    }
    finish(n, v);
    return true;
  }

  // x[:, ..., idx, ...] with one integer 1-D index and None (full slices) elsewhere is
  // index_select along that dim (core ATen writes reflect padding this way).
  bool index_one_dim(Node* n) {
    int64_t dim = -1;
    for (size_t i = 1; i < n->inputs().size(); ++i) {
      const Value* v = n->input(i);
      if (!v) continue;
      if (dim >= 0 || v->type().rank() != 1 || !ir::is_integral(v->dtype())) return false;
      dim = static_cast<int64_t>(i) - 1;
    }
    if (dim < 0 || n->inputs().size() == 2) return false;  // no index, or already x[idx]
    finish(n, add(n, "aten.index_select.default",
                  {n->input(0), n->input(static_cast<size_t>(dim) + 1)}, {{"dim", dim}}));
    return true;
  }

  bool empty(Node* n) {
    finish(n, add(n, "aten.full.default", {},
                  {{"size", shape_attr(n->output()->shape())},
                   {"fill_value", int64_t{0}},
                   {"dtype", n->output()->dtype()}}));
    return true;
  }
};

}  // namespace

bool Decompose::run(ir::Graph& g) {
  return Decomposer(g).run();
}

}  // namespace neuronc::passes
