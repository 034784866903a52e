// Host kernel context, registry and element conversions (host_kernel.h).
#include "kernels/host_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/numerics.h"

namespace neuronc::host {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string dtype_str(TensorDType t) {
  return std::string(dtype_name(t));
}

const HostTensor* HostOpContext::tensor(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a || a->kind != ArgKind::tensor || a->tensors.size() != 1 || a->tensors[0] < 0)
    return nullptr;
  const auto v = static_cast<size_t>(a->tensors[0]);
  return v < values_.size() ? values_[v] : nullptr;
}

Result<const HostTensor*> HostOpContext::required(std::string_view name) const {
  const HostTensor* t = tensor(name);
  if (!t) return error("tensor argument '" + std::string(name) + "' is missing");
  return t;
}

std::vector<const HostTensor*> HostOpContext::tensor_list(std::string_view name) const {
  std::vector<const HostTensor*> out;
  const Arg* a = arg(name);
  if (!a || a->kind != ArgKind::tensors) return out;
  for (int32_t v : a->tensors)
    out.push_back(v >= 0 && static_cast<size_t>(v) < values_.size() ? values_[v] : nullptr);
  return out;
}

int64_t HostOpContext::get_int(std::string_view name, int64_t def) const {
  return opt_int(name).value_or(def);
}

std::optional<int64_t> HostOpContext::opt_int(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a) return std::nullopt;
  if (a->kind == ArgKind::int_) return a->i;
  if (a->kind == ArgKind::bool_) return a->b ? 1 : 0;
  if (a->kind == ArgKind::ints && a->ints.size() == 1) return a->ints[0];
  return std::nullopt;
}

double HostOpContext::get_float(std::string_view name, double def) const {
  const Arg* a = arg(name);
  if (!a) return def;
  if (a->kind == ArgKind::float_) return a->f;
  if (a->kind == ArgKind::int_) return static_cast<double>(a->i);
  if (a->kind == ArgKind::bool_) return a->b ? 1.0 : 0.0;
  return def;
}

bool HostOpContext::get_bool(std::string_view name, bool def) const {
  const Arg* a = arg(name);
  if (!a) return def;
  if (a->kind == ArgKind::bool_) return a->b;
  if (a->kind == ArgKind::int_) return a->i != 0;
  return def;
}

std::vector<int64_t> HostOpContext::get_ints(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a) return {};
  if (a->kind == ArgKind::ints) return a->ints;
  if (a->kind == ArgKind::int_) return {a->i};
  return {};
}

std::optional<std::string> HostOpContext::get_string(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a || a->kind != ArgKind::string) return std::nullopt;
  return a->s;
}

std::optional<TensorDType> HostOpContext::get_dtype(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a || a->kind != ArgKind::dtype) return std::nullopt;
  return a->dtype;
}

bool HostOpContext::has(std::string_view name) const {
  const Arg* a = arg(name);
  return a && a->kind != ArgKind::none;
}

Status HostOpContext::error(const std::string& message) const {
  return Status(StatusCode::invalid_argument, std::string(op_) + ": " + message);
}

Status HostOpContext::expect_outputs(size_t n) const {
  if (outputs_.size() != n)
    return error("the plan gives " + std::to_string(outputs_.size()) + " outputs, expected " +
                 std::to_string(n));
  return Status::ok();
}

Status HostOpContext::expect_dtype_arg(const HostTensor& o) const {
  if (auto dt = get_dtype("dtype"); dt && *dt != o.dtype)
    return error("dtype argument is " + dtype_str(*dt) + " but the output is " +
                 dtype_str(o.dtype));
  return Status::ok();
}

Status HostOpContext::expect_output(size_t i, TensorDType dtype,
                                    const std::vector<int64_t>& shape) const {
  if (i >= outputs_.size())
    return error("the plan gives " + std::to_string(outputs_.size()) +
                 " outputs, expected at least " + std::to_string(i + 1));
  const HostTensor& o = *outputs_[i];
  if (o.dtype != dtype || o.shape != shape)
    return error("output " + std::to_string(i) + " is " + dtype_str(o.dtype) + shape_str(o.shape) +
                 " in the plan, expected " + dtype_str(dtype) + shape_str(shape));
  return Status::ok();
}

Result<int64_t> normalize_dim(const HostOpContext& c, int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    return c.error("dim " + std::to_string(dim) + " is out of range for rank " +
                   std::to_string(rank) + ": expected [" + std::to_string(-r) + ", " +
                   std::to_string(r - 1) + "]");
  return dim < 0 ? dim + r : dim;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

Result<std::vector<int64_t>> broadcast_shapes(const HostOpContext& c, const std::vector<int64_t>& a,
                                              const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return c.error("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast (dim " +
                     std::to_string(i) + ": " + std::to_string(da) + " vs " + std::to_string(db) +
                     ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcast_index(const std::vector<int64_t>& in,
                                     const std::vector<int64_t>& out) {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  const size_t r = out.size();
  std::vector<int64_t> in_strides(r, 0);
  const auto cs = contiguous_strides(in);
  for (size_t i = 0; i < in.size(); ++i) in_strides[r - in.size() + i] = in[i] == 1 ? 0 : cs[i];
  std::vector<int64_t> pos(r, 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    idx[static_cast<size_t>(k)] = off;
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      if (++pos[d] < out[d]) {
        off += in_strides[d];
        break;
      }
      off -= in_strides[d] * (out[d] - 1);
      pos[d] = 0;
    }
  }
  return idx;
}

// ---------------------------------------------------------------------------------------------
// Element conversions.

namespace {
template <typename T>
T rd(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void wr(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

std::vector<double> to_double(const HostTensor& t) {
  const int64_t n = t.numel();
  std::vector<double> v(static_cast<size_t>(n));
  const size_t es = dtype_size(t.dtype);
  if (t.dtype == TensorDType::f32) {
    const float* f = t.as<const float>();
    for (int64_t i = 0; i < n; ++i) v[i] = f[i];
    return v;
  }
  for (int64_t i = 0; i < n; ++i) v[i] = load_double(t.data + i * es, t.dtype);
  return v;
}

void from_double(HostTensor& t, const std::vector<double>& v) {
  const size_t es = dtype_size(t.dtype);
  const int64_t n = std::min<int64_t>(t.numel(), static_cast<int64_t>(v.size()));
  if (t.dtype == TensorDType::f32) {
    float* f = t.as<float>();
    for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(v[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) store_double(t.data + i * es, t.dtype, v[i]);
}

std::vector<int64_t> to_int64(const HostTensor& t) {
  const int64_t n = t.numel();
  std::vector<int64_t> v(static_cast<size_t>(n));
  const size_t es = dtype_size(t.dtype);
  for (int64_t i = 0; i < n; ++i) {
    const std::byte* p = t.data + i * es;
    switch (t.dtype) {
      case TensorDType::i64:
        v[i] = rd<int64_t>(p);
        break;
      case TensorDType::i32:
        v[i] = rd<int32_t>(p);
        break;
      case TensorDType::i16:
        v[i] = rd<int16_t>(p);
        break;
      case TensorDType::i8:
        v[i] = rd<int8_t>(p);
        break;
      case TensorDType::u8:
        v[i] = rd<uint8_t>(p);
        break;
      case TensorDType::boolean:
        v[i] = rd<uint8_t>(p) != 0;
        break;
      default:
        v[i] = kernels::double_to_int64(load_double(p, t.dtype));
        break;
    }
  }
  return v;
}

void from_int64(HostTensor& t, const std::vector<int64_t>& v) {
  const size_t es = dtype_size(t.dtype);
  const int64_t n = std::min<int64_t>(t.numel(), static_cast<int64_t>(v.size()));
  for (int64_t i = 0; i < n; ++i) {
    std::byte* p = t.data + i * es;
    switch (t.dtype) {
      case TensorDType::i64:
        wr<int64_t>(p, v[i]);
        break;
      case TensorDType::i32:
        wr<int32_t>(p, static_cast<int32_t>(v[i]));
        break;
      case TensorDType::i16:
        wr<int16_t>(p, static_cast<int16_t>(v[i]));
        break;
      case TensorDType::i8:
        wr<int8_t>(p, static_cast<int8_t>(v[i]));
        break;
      case TensorDType::u8:
        wr<uint8_t>(p, static_cast<uint8_t>(v[i]));
        break;
      case TensorDType::boolean:
        wr<uint8_t>(p, v[i] != 0);
        break;
      default:
        store_double(p, t.dtype, static_cast<double>(v[i]));
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Registry.

namespace {
const std::vector<std::pair<std::string, HostKernelFn>>& table() {
  static const auto* t = [] {
    KernelTable k;
    register_elementwise_kernels(k);
    register_data_movement_kernels(k);
    register_reduction_kernels(k);
    register_fft_kernels(k);
    register_conv_kernels(k);
    register_pool_kernels(k);
    register_attention_kernels(k);
    register_scan_kernels(k);
    register_indexing_kernels(k);
    register_sort_kernels(k);
    register_norm_kernels(k);
    register_matmul_kernels(k);
    register_creation_kernels(k);
    std::sort(k.entries.begin(), k.entries.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return new std::vector<std::pair<std::string, HostKernelFn>>(std::move(k.entries));
  }();
  return *t;
}
}  // namespace

HostKernelFn find_host_kernel(std::string_view op) {
  const auto& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), op,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  return it != t.end() && it->first == op ? it->second : nullptr;
}

std::vector<std::string> host_kernel_names() {
  std::vector<std::string> out;
  for (const auto& e : table()) out.push_back(e.first);
  return out;
}

}  // namespace neuronc::host
