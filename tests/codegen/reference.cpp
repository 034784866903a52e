// Reference interpreter (reference.h): every node runs through the host kernels
// (kernels/host/), the code the loader runs for host-placed operators and constant folding runs
// at compile time, by way of passes/host_eval.h. The reference therefore holds no arithmetic of
// its own: a wrong kernel shows up in tests/loader/host_kernels_test.cpp and the loader, not in
// a second copy here. Values are stored in each IR value's dtype between nodes (as the loader
// stores them), computed in double inside a kernel.
#include "reference.h"

#include <stdexcept>

#include "kernels/host_kernel.h"
#include "kernels/numerics.h"
#include "passes/host_eval.h"

namespace neuronc::codegen::testing {

int64_t RefTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// `t` (the value of `v`) as dense bytes of v's dtype, in v's static shape.
passes::DenseTensor to_dense(const ir::Value& v, const RefTensor& t) {
  std::vector<int64_t> shape;
  for (const ir::Dim& d : v.shape()) {
    if (!d.is_constant()) {
      shape = t.shape;
      break;
    }
    shape.push_back(d.value());
  }
  RefTensor shaped{shape, {}};
  if (shaped.numel() != static_cast<int64_t>(t.data.size()))
    throw std::runtime_error("reference: value " + v.name() + " holds " +
                             std::to_string(t.data.size()) + " elements, its type has " +
                             std::to_string(shaped.numel()));
  const passes::HostTensor h{v.dtype(), shape, t.data};
  return passes::DenseTensor::owning(ir::element_type(v.dtype()), shape, passes::encode(h));
}

RefTensor from_dense(const passes::DenseTensor& d) {
  RefTensor t;
  t.shape = d.shape;
  t.data.resize(static_cast<size_t>(t.numel()));
  const size_t es = ::neuronc::dtype_size(d.dtype);
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = kernels::load_double(d.data + i * es, d.dtype);
  return t;
}

}  // namespace

void evaluate(const ir::Graph& g, Env& env, const Fallback& fallback) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  evaluate_nodes(nodes, env, fallback);
}

void evaluate_nodes(const std::vector<const ir::Node*>& nodes, Env& env, const Fallback& fallback) {
  for (const ir::Node* np : nodes) {
    const ir::Node& n = *np;
    if (!host::find_host_kernel(n.op())) {
      if (fallback && fallback(n, env)) continue;
      throw std::runtime_error("reference: no host kernel for " + n.op());
    }
    std::vector<passes::DenseTensor> held(n.inputs().size());
    std::vector<const passes::DenseTensor*> inputs(n.inputs().size(), nullptr);
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const ir::Value* v = n.inputs()[i];
      if (!v) continue;  // an absent optional operand
      auto it = env.find(v->name());
      if (it == env.end()) throw std::runtime_error("reference: no value " + v->name());
      held[i] = to_dense(*v, it->second);
      inputs[i] = &held[i];
    }
    Result<std::vector<passes::DenseTensor>> out = passes::evaluate_on_host(n, inputs);
    if (!out.is_ok()) throw std::runtime_error("reference: " + out.status().message());
    for (size_t k = 0; k < out.value().size(); ++k)
      env[n.output(k)->name()] = from_dense(out.value()[k]);
  }
}

}  // namespace neuronc::codegen::testing
