// Node evaluation through the host kernels, and constants as host tensors (see the header).
#include "passes/host_eval.h"

#include <cstring>
#include <new>
#include <optional>

#include "ir/op_registry.h"
#include "kernels/numerics.h"
#include "kernels/zeroed_bytes.h"

namespace neuronc::passes {
namespace {

using Shape = std::vector<int64_t>;

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// The storage index of element i (row-major over `shape`) of a payload read through strides
// `st` from `offset`.
int64_t storage_index(size_t i, const Shape& shape, const Shape& st, int64_t offset) {
  int64_t rem = static_cast<int64_t>(i);
  for (size_t k = shape.size(); k-- > 0;) {
    offset += (rem % shape[k]) * st[k];
    rem /= shape[k];
  }
  return offset;
}

std::optional<Shape> static_shape(const ir::Shape& s) {
  Shape out;
  for (const ir::Dim& d : s) {
    if (!d.is_constant()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

HostTensor make(ir::DType t, Shape s, double fill = 0) {
  HostTensor h;
  h.dtype = t;
  h.shape = std::move(s);
  h.data.assign(static_cast<size_t>(count(h.shape)), fill);
  return h;
}

}  // namespace

double round_to(ir::DType t, double v) {
  return kernels::round_to(ir::element_type(t), v);
}

namespace {

// The values of dense `d` as doubles, typed `t` (the IR dtype d.dtype maps from).
HostTensor to_host(const DenseTensor& d, ir::DType t) {
  HostTensor h = make(t, d.shape);
  const size_t es = ::neuronc::dtype_size(d.dtype);
  for (size_t k = 0; k < h.data.size(); ++k)
    h.data[k] = kernels::load_double(d.data + k * es, d.dtype);
  return h;
}

}  // namespace

std::optional<HostTensor> read_constant(const ir::Value& v) {
  if (ir::is_complex(v.dtype())) return std::nullopt;
  std::optional<DenseTensor> d = dense_constant(v);
  if (!d) return std::nullopt;
  return to_host(*d, v.dtype());
}

std::vector<std::byte> encode(const HostTensor& t) {
  const ::neuronc::DType et = ir::element_type(t.dtype);
  const size_t es = ::neuronc::dtype_size(et);
  std::vector<std::byte> out(t.data.size() * es);
  for (size_t i = 0; i < t.data.size(); ++i)
    kernels::store_double(out.data() + i * es, et, t.data[i]);
  return out;
}

namespace {

// Attribute `name` of `n` as the kernel argument of that name (None when absent).
kernels::Arg attribute_arg(const ir::Node& n, const std::string& name) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return kernels::Arg::none(name);
  struct V {
    const ir::Node& n;
    const std::string& name;
    kernels::Arg operator()(const ir::NoneAttr&) const { return kernels::Arg::none(name); }
    kernels::Arg operator()(int64_t v) const { return kernels::Arg::integer(name, v); }
    kernels::Arg operator()(double v) const { return kernels::Arg::real(name, v); }
    kernels::Arg operator()(bool v) const { return kernels::Arg::boolean(name, v); }
    kernels::Arg operator()(const std::string& v) const { return kernels::Arg::str(name, v); }
    kernels::Arg operator()(const std::vector<int64_t>& v) const {
      return kernels::Arg::integers(name, v);
    }
    kernels::Arg operator()(const std::vector<double>& v) const {
      return kernels::Arg::reals(name, v);
    }
    kernels::Arg operator()(const std::vector<bool>& v) const {
      return kernels::Arg::booleans(name, v);
    }
    kernels::Arg operator()(const std::vector<std::string>&) const {
      return kernels::Arg::none(name);
    }
    kernels::Arg operator()(ir::DType d) const {
      return kernels::Arg::scalar_type(name, ir::element_type(d));
    }
    kernels::Arg operator()(const ir::DeviceAttr&) const { return kernels::Arg::none(name); }
    kernels::Arg operator()(ir::MemoryFormat) const { return kernels::Arg::none(name); }
    kernels::Arg operator()(ir::Layout) const { return kernels::Arg::none(name); }
    kernels::Arg operator()(const ir::SymIntList& l) const {
      std::vector<int64_t> v;
      for (const ir::Dim& d : l.dims) v.push_back(bound(d));
      return kernels::Arg::integers(name, v);
    }
    kernels::Arg operator()(const ir::Dim& d) const {
      return kernels::Arg::integer(name, bound(d));
    }
    int64_t bound(const ir::Dim& d) const {
      if (!d.is_constant())
        throw ir::Error(n.describe() + ": argument '" + name +
                        "' is a symbolic size; a host kernel needs it bound (give --dim)");
      return d.value();
    }
  };
  return std::visit(V{n, name}, *a);
}

}  // namespace

std::vector<kernels::Arg> kernel_args(const ir::Node& n, const OperandIndex& index) {
  const ir::OpInfo* info = n.info();
  if (!info) throw ir::Error(n.describe() + ": operator is not supported by neuronc");
  size_t fixed = 0;  // operands outside the schema's Tensor[] argument
  for (const ir::ArgSpec& a : info->args)
    fixed += a.type == ir::ArgType::tensor || a.type == ir::ArgType::opt_tensor;
  std::vector<kernels::Arg> args;
  size_t slot = 0;
  for (const ir::ArgSpec& a : info->args) {
    if (a.type == ir::ArgType::tensor || a.type == ir::ArgType::opt_tensor) {
      // Trailing optional tensors (linear's bias) may be left out of the node's inputs.
      const ir::Value* v = slot < n.inputs().size() ? n.inputs()[slot] : nullptr;
      if (!v && a.type == ir::ArgType::tensor)
        throw ir::Error(n.describe() + ": expected tensor argument '" + a.name + "', found none");
      args.push_back(v ? kernels::Arg::tensor(a.name, index(slot, *v))
                       : kernels::Arg::none(a.name));
      ++slot;
    } else if (a.type == ir::ArgType::tensor_list || a.type == ir::ArgType::opt_tensor_list) {
      std::vector<int32_t> vals;
      const size_t listed = n.inputs().size() > fixed ? n.inputs().size() - fixed : 0;
      for (const size_t end = slot + listed; slot < end; ++slot) {
        const ir::Value* v = n.inputs()[slot];
        vals.push_back(v ? index(slot, *v) : -1);
      }
      args.push_back(kernels::Arg::tensor_list(a.name, std::move(vals)));
    } else {
      args.push_back(attribute_arg(n, a.name));
    }
  }
  return args;
}

size_t DenseTensor::nbytes() const {
  return static_cast<size_t>(count(shape)) * ::neuronc::dtype_size(dtype);
}

host::HostTensor DenseTensor::view() const {
  // The kernels take inputs through a mutable pointer but never write them (host_kernel.h).
  return {const_cast<std::byte*>(data), dtype, shape};
}

DenseTensor DenseTensor::owning(::neuronc::DType dtype, std::vector<int64_t> shape,
                                std::vector<std::byte> bytes) {
  auto held = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  return {dtype, std::move(shape), held->data(), held};
}

std::optional<DenseTensor> dense_constant(const ir::Value& v) {
  const ir::ConstantPayload* p = v.payload();
  return p ? dense_payload(*p, v.type()) : std::nullopt;
}

namespace {

// A payload with a deferred row scale (ir::ConstantPayload::row_scale): each stored f32 element
// scaled as the fold scaled it (in double, rounded to f32), then the deferred cast, if any (as the
// host kernel casts: store_f32_n, round to nearest even).
std::optional<DenseTensor> scaled_payload(const ir::ConstantPayload& p, const ir::TensorType& type,
                                          const Shape& shape) {
  if (!p.deferral_problem(type.dtype).empty() ||
      (type.dtype != ir::DType::f32 &&
       !(ir::is_floating(type.dtype) && type.dtype != ir::DType::f64)))
    return std::nullopt;
  const size_t n = static_cast<size_t>(count(shape));
  const Shape st =
      p.strides.empty() ? strides_of(shape) : Shape(p.strides.begin(), p.strides.end());
  if (st.size() != shape.size()) return std::nullopt;
  std::vector<float> scaled(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t off = storage_index(i, shape, st, p.storage_offset);
    if (off < 0 || static_cast<size_t>(off + 1) * 4 > p.nbytes) return std::nullopt;
    float x;
    std::memcpy(&x, p.data + off * 4, 4);
    scaled[i] = static_cast<float>(static_cast<double>(x) * p.scale_at(off));
  }
  const ::neuronc::DType t = ir::element_type(type.dtype);
  std::vector<std::byte> bytes(n * ::neuronc::dtype_size(t));
  kernels::store_f32_n(bytes.data(), t, scaled.data(), n);  // f32 to f32: the bytes as they are
  return DenseTensor::owning(t, shape, std::move(bytes));
}

}  // namespace

std::optional<DenseTensor> dense_payload(const ir::ConstantPayload& payload,
                                         const ir::TensorType& type) {
  const ir::ConstantPayload* p = &payload;
  if (p->absent) return std::nullopt;
  auto shape = static_shape(type.shape);
  if (!shape) return std::nullopt;
  if (p->parts) {
    // A deferred concatenation: its storage assembled, then read as any other payload's.
    if (!p->deferral_problem(type.dtype).empty()) return std::nullopt;
    auto bytes = std::make_shared<std::vector<std::byte>>(p->nbytes);
    p->copy_stored(0, p->nbytes, bytes->data());  // the parts add up to nbytes
    ir::ConstantPayload whole = *p;
    whole.parts.reset();
    whole.data = bytes->data();
    whole.owner = bytes;
    whole.drop_pages = nullptr;
    whole.read_bytes = nullptr;
    return dense_payload(whole, type);
  }
  if (p->row_scale) return scaled_payload(*p, type, *shape);
  if (p->stored_dtype && *p->stored_dtype != type.dtype) {
    // A deferred cast (ConstantPayload::stored_dtype): the stored elements, then the cast the
    // host kernel does (store_f32_n: round to nearest even).
    ir::TensorType stored = type;
    stored.dtype = *p->stored_dtype;
    ir::ConstantPayload raw = *p;
    raw.stored_dtype.reset();
    std::optional<DenseTensor> src = dense_payload(raw, stored);
    if (!src || src->dtype != ::neuronc::DType::f32 || !ir::is_floating(type.dtype) ||
        type.dtype == ir::DType::f64)
      return std::nullopt;
    const size_t n = static_cast<size_t>(count(*shape));
    const ::neuronc::DType t = ir::element_type(type.dtype);
    std::vector<std::byte> bytes(n * ::neuronc::dtype_size(t));
    kernels::store_f32_n(bytes.data(), t, reinterpret_cast<const float*>(src->data), n);
    return DenseTensor::owning(t, *shape, std::move(bytes));
  }
  const size_t es = ir::dtype_size(type.dtype);
  const size_t n = static_cast<size_t>(count(*shape));
  const Shape dense = strides_of(*shape);
  const Shape st = p->strides.empty() ? dense : Shape(p->strides.begin(), p->strides.end());
  if (st.size() != shape->size()) return std::nullopt;
  bool is_dense = p->storage_offset == 0;
  for (size_t k = 0; k < st.size() && is_dense; ++k)
    is_dense = (*shape)[k] == 1 || st[k] == dense[k];
  if (is_dense) {
    if (n * es > p->nbytes) return std::nullopt;
    return DenseTensor{ir::element_type(type.dtype), *shape, p->data, p->owner};
  }
  std::vector<std::byte> bytes(n * es);
  for (size_t i = 0; i < n; ++i) {
    const int64_t off = storage_index(i, *shape, st, p->storage_offset);
    const size_t byte = static_cast<size_t>(off) * es;
    if (off < 0 || byte + es > p->nbytes) return std::nullopt;
    std::memcpy(bytes.data() + i * es, p->data + byte, es);
  }
  return DenseTensor::owning(ir::element_type(type.dtype), *shape, std::move(bytes));
}

Result<std::vector<DenseTensor>> evaluate_on_host(const ir::Node& n,
                                                  std::span<const DenseTensor* const> inputs) {
  auto fail = [&](const std::string& why) {
    return Status(StatusCode::invalid_argument, n.describe() + ": " + why);
  };
  const host::HostKernelFn kernel = host::find_host_kernel(n.op());
  if (!kernel) return fail("no host kernel for " + n.op());
  if (inputs.size() != n.inputs().size())
    return fail(std::to_string(inputs.size()) + " operands given, the node has " +
                std::to_string(n.inputs().size()));
  std::vector<host::HostTensor> in_views(inputs.size());
  std::vector<const host::HostTensor*> values(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    in_views[i] = inputs[i]->view();
    values[i] = &in_views[i];
  }
  std::vector<kernels::Arg> args;
  try {
    args = kernel_args(n, [](size_t slot, const ir::Value&) { return static_cast<int32_t>(slot); });
  } catch (const ir::Error& e) {
    return fail(e.what());
  }
  // Zeroed, as kernels expect: a weight-sized result (a folded cast) in huge pages the kernel
  // hands out zeroed (kernels/zeroed_bytes.h).
  std::vector<std::shared_ptr<std::byte>> out_bytes;
  std::vector<host::HostTensor> out_views;
  out_views.reserve(n.outputs().size());
  for (const ir::Value* o : n.outputs()) {
    auto shape = static_shape(o->shape());
    if (!shape) return fail("output '" + o->name() + "' has a symbolic shape");
    const ::neuronc::DType t = ir::element_type(o->dtype());
    const size_t bytes = static_cast<size_t>(count(*shape)) * ::neuronc::dtype_size(t);
    try {
      out_bytes.push_back(kernels::zeroed_bytes(bytes));
    } catch (const std::bad_alloc&) {
      return fail("cannot allocate " + std::to_string(bytes) + " bytes for its result");
    }
    out_views.push_back({out_bytes.back().get(), t, *shape});
  }
  std::vector<host::HostTensor*> out_ptrs;
  for (host::HostTensor& v : out_views) out_ptrs.push_back(&v);
  const host::HostOpContext ctx(n.op(), args, values, std::move(out_ptrs), /*dry_run=*/false);
  if (Status st = kernel(ctx); !st.is_ok()) return st;
  std::vector<DenseTensor> out;
  for (size_t i = 0; i < out_views.size(); ++i)
    out.push_back({out_views[i].dtype, out_views[i].shape, out_bytes[i].get(), out_bytes[i]});
  return out;
}

std::optional<std::vector<HostTensor>> evaluate(const ir::Node& n,
                                                const std::vector<const HostTensor*>& inputs) {
  std::vector<DenseTensor> dense(inputs.size());
  std::vector<const DenseTensor*> ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    dense[i] = DenseTensor::owning(ir::element_type(inputs[i]->dtype), inputs[i]->shape,
                                   encode(*inputs[i]));
    ptrs[i] = &dense[i];
  }
  Result<std::vector<DenseTensor>> r = evaluate_on_host(n, ptrs);
  if (!r.is_ok()) return std::nullopt;
  std::vector<HostTensor> out;
  for (size_t i = 0; i < r.value().size(); ++i)
    out.push_back(to_host(r.value()[i], n.outputs()[i]->dtype()));
  return out;
}

}  // namespace neuronc::passes
