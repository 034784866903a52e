// The host-fallback kernel interface (the loader runs it; the compiler asks which ops it has). A
// kernel implements one ATen op
// ("aten.cumsum.default") on dense row-major CPU tensors. The plan gives every output's dtype
// and shape; a kernel first checks that its inputs, attributes and outputs agree (returning an
// error naming expected vs found), then computes. With dry_run() it stops after the checks: the
// loader runs that at load time for every host op whose shapes are static.
//
// Thread-safety: kernels are stateless functions; a HostOpContext belongs to one run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/arg.h"
#include "kernels/numerics.h"
#include "neuronc/status.h"

namespace neuronc::host {

using TensorDType = ::neuronc::DType;
using kernels::Arg;
using kernels::ArgKind;

struct HostTensor {
  std::byte* data = nullptr;  // inputs are read-only by contract
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;

  int64_t numel() const;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data);
  }
};

std::string shape_str(const std::vector<int64_t>& s);
std::string dtype_str(TensorDType t);

class HostOpContext {
 public:
  // A call of `op` ("aten.cumsum.default") with `args`, whose tensor arguments index `values`
  // (null = not available). `op` and `args` outlive the context.
  HostOpContext(std::string_view op, std::span<const Arg> args,
                const std::vector<const HostTensor*>& values, std::vector<HostTensor*> outputs,
                bool dry_run)
      : op_(op), args_(args), values_(values), outputs_(std::move(outputs)), dry_run_(dry_run) {}

  std::string_view op_name() const { return op_; }
  bool dry_run() const { return dry_run_; }

  // Tensor argument `name`: null when the argument is None or absent.
  const HostTensor* tensor(std::string_view name) const;
  // A tensor argument that must be present.
  Result<const HostTensor*> required(std::string_view name) const;
  // Tensor-list argument (entries null for None).
  std::vector<const HostTensor*> tensor_list(std::string_view name) const;

  // Attribute arguments with the schema default when absent or None.
  int64_t get_int(std::string_view name, int64_t def) const;
  std::optional<int64_t> opt_int(std::string_view name) const;
  double get_float(std::string_view name, double def) const;  // also reads int/bool scalars
  bool get_bool(std::string_view name, bool def) const;
  std::vector<int64_t> get_ints(std::string_view name) const;
  std::optional<std::string> get_string(std::string_view name) const;
  std::optional<TensorDType> get_dtype(std::string_view name) const;
  bool has(std::string_view name) const;

  size_t num_outputs() const { return outputs_.size(); }
  HostTensor& output(size_t i) const { return *outputs_[i]; }

  // Status(invalid_argument, "<op>: <message>").
  Status error(const std::string& message) const;
  // Checks output `i` exists and has `dtype` and `shape`.
  Status expect_output(size_t i, TensorDType dtype, const std::vector<int64_t>& shape) const;
  Status expect_outputs(size_t n) const;
  // Checks that a "dtype" argument, when given, is `o`'s dtype.
  Status expect_dtype_arg(const HostTensor& o) const;

 private:
  const Arg* arg(std::string_view name) const { return kernels::find_arg(args_, name); }
  std::string_view op_;
  std::span<const Arg> args_;
  const std::vector<const HostTensor*>& values_;
  std::vector<HostTensor*> outputs_;
  bool dry_run_;
};

using HostKernelFn = Status (*)(const HostOpContext&);

// The kernel for `op` ("aten.cumsum.default"), or null.
HostKernelFn find_host_kernel(std::string_view op);
// Every op with a kernel, sorted.
std::vector<std::string> host_kernel_names();

// Registration, one function per kernel family file.
struct KernelTable;
void register_elementwise_kernels(KernelTable& t);
void register_data_movement_kernels(KernelTable& t);
void register_reduction_kernels(KernelTable& t);
void register_fft_kernels(KernelTable& t);
void register_scan_kernels(KernelTable& t);
void register_indexing_kernels(KernelTable& t);
void register_sort_kernels(KernelTable& t);
void register_norm_kernels(KernelTable& t);
void register_matmul_kernels(KernelTable& t);
void register_conv_kernels(KernelTable& t);
void register_pool_kernels(KernelTable& t);
void register_attention_kernels(KernelTable& t);
void register_creation_kernels(KernelTable& t);

struct KernelTable {
  std::vector<std::pair<std::string, HostKernelFn>> entries;
  void add(std::string name, HostKernelFn fn) { entries.emplace_back(std::move(name), fn); }
};

// Element conversion helpers shared by the kernels.
std::vector<double> to_double(const HostTensor& t);
void from_double(HostTensor& t, const std::vector<double>& v);
std::vector<int64_t> to_int64(const HostTensor& t);
void from_int64(HostTensor& t, const std::vector<int64_t>& v);
using kernels::load_double;
using kernels::store_double;

// Normalises a possibly negative dim against `rank` (rank 0 accepts -1 and 0).
Result<int64_t> normalize_dim(const HostOpContext& c, int64_t dim, int64_t rank);

// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// PyTorch's broadcast shape of `a` and `b`, or an error naming the dim that does not broadcast.
Result<std::vector<int64_t>> broadcast_shapes(const HostOpContext& c, const std::vector<int64_t>& a,
                                              const std::vector<int64_t>& b);
// For each flat index of a tensor of shape `out`, the flat index of the element of a tensor of
// shape `in` (broadcast to `out`) that it reads.
std::vector<int64_t> broadcast_index(const std::vector<int64_t>& in,
                                     const std::vector<int64_t>& out);

}  // namespace neuronc::host

#define NEURONC_RETURN_IF_ERROR_(expr) \
  do {                                 \
    ::neuronc::Status _st = (expr);    \
    if (!_st.is_ok()) return _st;      \
  } while (0)
#define NEURONC_HK_CONCAT_(a, b) a##b
#define NEURONC_HK_CONCAT(a, b) NEURONC_HK_CONCAT_(a, b)
#define NEURONC_HK_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                            \
  if (!tmp.is_ok()) return tmp.status();        \
  lhs = std::move(tmp).value()
// NEURONC_ASSIGN_OR_RETURN_(const T* x, ctx.required("self"));
#define NEURONC_ASSIGN_OR_RETURN_(lhs, expr) \
  NEURONC_HK_ASSIGN_IMPL_(NEURONC_HK_CONCAT(_hk_, __LINE__), lhs, expr)
