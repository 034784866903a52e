// View lowering (see view_lowering.h).
#include "codegen/view_lowering.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "codegen/codegen.h"
#include "codegen/lowering.h"

namespace neuronc::codegen {

bool is_alias_op(const std::string& op) {
  static const char* kOps[] = {"aten.view.default",
                               "aten._unsafe_view.default",
                               "aten.reshape.default",
                               "aten.flatten.using_ints",
                               "aten.unflatten.int",
                               "aten.squeeze.dim",
                               "aten.squeeze.dims",
                               "aten.squeeze.default",
                               "aten.unsqueeze.default",
                               "aten.permute.default",
                               "aten.t.default",
                               "aten.transpose.int",
                               "aten.expand.default",
                               "aten.slice.Tensor",
                               "aten.select.int",
                               "aten.split.Tensor",
                               "aten.split_with_sizes.default",
                               "aten.chunk.default",
                               "aten.unbind.int",
                               "aten.alias.default",
                               "aten.detach.default",
                               "aten.detach_.default",
                               "aten.clone.default",
                               "aten.contiguous.default",
                               "aten.lift_fresh_copy.default",
                               "aten.dropout.default",
                               "aten.expand_as.default"};
  for (const char* s : kOps)
    if (op == s) return true;
  return false;
}

bool is_view_node(const ir::Node& n) {
  return is_alias_op(n.op()) ||
         (n.op() == "aten._to_copy.default" &&
          device_dtype(n.output()->dtype()) == device_dtype(n.input(0)->dtype()));
}

std::optional<std::vector<int64_t>> view_permutation(const ir::Node& n, int64_t rank) {
  const std::string& op = n.op();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  if (op == "aten.permute.default") {
    perm = n.attr_ints("dims");
    for (int64_t& d : perm) d = d < 0 ? d + rank : d;
    if (static_cast<int64_t>(perm.size()) != rank) return std::nullopt;
    return perm;
  }
  if (op != "aten.t.default" && op != "aten.transpose.int") return std::nullopt;
  if (rank < 2) return perm;
  int64_t a = rank - 2, b = rank - 1;
  if (op == "aten.transpose.int") {
    a = n.attr_int("dim0");
    b = n.attr_int("dim1");
    if (a < 0) a += rank;
    if (b < 0) b += rank;
  }
  std::swap(perm[a], perm[b]);
  return perm;
}

std::optional<std::vector<HbmView>> lower_view(const ir::Node& n, const HbmView& x) {
  const std::string& op = n.op();
  std::vector<HbmView> outs(n.outputs().size(), x);
  const std::vector<int64_t> out_shape = static_shape(n.output());
  if (op == "aten.permute.default" || op == "aten.t.default" || op == "aten.transpose.int") {
    std::optional<std::vector<int64_t>> perm = view_permutation(n, x.rank());
    if (!perm) return std::nullopt;
    outs[0] = x.permute(*perm);
  } else if (op == "aten.expand.default" || op == "aten.expand_as.default") {
    outs[0] = x.expand(out_shape);
  } else if (op == "aten.slice.Tensor") {
    int64_t dim = n.attr_int("dim");
    if (dim < 0) dim += x.rank();
    const int64_t start = n.attr_is_none("start") ? 0 : n.attr_int("start");
    const int64_t end = n.attr_is_none("end") ? INT64_MAX : n.attr_int("end");
    const int64_t step = n.attr("step") ? n.attr_int("step") : 1;
    outs[0] = x.slice(dim, start, std::min(end, x.shape[dim]), step);
  } else if (op == "aten.select.int") {
    int64_t dim = n.attr_int("dim");
    if (dim < 0) dim += x.rank();
    outs[0] = x.select(dim, n.attr_int("index"));
  } else if (op == "aten.split.Tensor" || op == "aten.split_with_sizes.default" ||
             op == "aten.chunk.default" || op == "aten.unbind.int") {
    int64_t dim = n.attr("dim") ? n.attr_int("dim") : 0;
    if (dim < 0) dim += x.rank();
    int64_t start = 0;
    for (size_t k = 0; k < n.outputs().size(); ++k) {
      const std::vector<int64_t> s = static_shape(n.output(k));
      if (op == "aten.unbind.int") {
        outs[k] = x.select(dim, static_cast<int64_t>(k));
      } else {
        outs[k] = x.slice(dim, start, start + s[dim], 1);
        start += s[dim];
      }
    }
  } else if (op == "aten.view.default" || op == "aten._unsafe_view.default" ||
             op == "aten.reshape.default" || op == "aten.flatten.using_ints" ||
             op == "aten.unflatten.int" || op.rfind("aten.squeeze", 0) == 0 ||
             op == "aten.unsqueeze.default") {
    std::optional<HbmView> r = x.reshape(out_shape);
    if (!r) return std::nullopt;  // needs a copy
    outs[0] = *r;
  }
  // alias / detach / clone / contiguous / dropout / _to_copy (same dtype): the same view.
  for (size_t k = 0; k < outs.size(); ++k) outs[k].dtype = device_dtype(n.output(k)->dtype());
  return outs;
}

HbmView layout_contiguous_under(device::DType dtype, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& perm) {
  HbmView v = HbmView::contiguous(dtype, 0, shape);
  std::vector<int64_t> permuted(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) permuted[i] = shape[perm[i]];
  const HbmView dense = HbmView::contiguous(dtype, 0, permuted);
  for (size_t i = 0; i < perm.size(); ++i) v.strides[perm[i]] = dense.strides[i];
  return v;
}

}  // namespace neuronc::codegen
