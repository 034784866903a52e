// The partition driver: static-shape check, value analysis (which nodes are views of their
// input and which compute), compile-time constants, HBM planning with liveness-based reuse,
// parallel kernel lowering, then sequential emission (emitter.h).
//
// HBM arena: [partition inputs][partition outputs][constants][scratch]. Each region is
// 64-byte aligned. Scratch buffers (intermediates between kernels) are packed greedily by size:
// a buffer may share bytes with any buffer whose lifetime (first kernel writing it .. last
// kernel reading it or a view of it) does not intersect; the emitter orders the reuse.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "device/numerics.h"

namespace neuronc::codegen {

using device::DType;

int64_t PartitionContext::row_interleave(const ir::Value* v) const {
  auto it = constant_buffers.find(info(v).buffer);
  return it == constant_buffers.end() ? 0 : it->second.row_interleave;
}

const ValueInfo& PartitionContext::info(const ir::Value* v) const {
  auto it = values.find(v);
  if (it == values.end()) throw Error("internal: value '" + v->name() + "' has no HBM view");
  return it->second;
}

namespace {
double payload_element(const ir::Value* v, int64_t i);
}

int64_t stored_to_logical(int64_t k, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& perm, int64_t row_interleave) {
  const size_t r = shape.size();
  if (row_interleave > 0) {
    const int64_t rows = perm.empty() ? shape[0] : shape[static_cast<size_t>(perm[0])];
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    const int64_t row_elems = total / rows, chunks = rows / row_interleave;
    const int64_t s = k / row_elems;
    k = ((s % chunks) * row_interleave + s / chunks) * row_elems + k % row_elems;
  }
  if (perm.empty()) return k;
  std::vector<int64_t> idx(r);
  for (size_t i = r; i-- > 0;) {
    const int64_t n = shape[perm[i]];
    idx[perm[i]] = k % n;
    k /= n;
  }
  int64_t off = 0;
  for (size_t d = 0; d < r; ++d) off = off * shape[d] + idx[d];
  return off;
}

std::optional<std::vector<double>> PartitionContext::constant_values(const ir::Value* v) const {
  const ValueInfo& vi = info(v);
  auto it = constant_buffers.find(vi.buffer);
  if (it == constant_buffers.end()) return std::nullopt;
  const ir::Value* src = it->second.value;
  std::vector<int64_t> sshape;
  for (const ir::Dim& d : src->shape()) sshape.push_back(d.value());
  const std::vector<double>* syn = nullptr;
  if (auto s = synthetic.find(src); s != synthetic.end()) syn = &s->second;
  // Element k of the buffer (its stored layout) as a value of `src`.
  auto buffer_element = [&](int64_t k) {
    if (it->second.transposed) k = (k % sshape[0]) * sshape[1] + k / sshape[0];
    if (!it->second.permutation.empty() || it->second.row_interleave > 0)
      k = stored_to_logical(k, sshape, it->second.permutation, it->second.row_interleave);
    return syn ? (*syn)[k] : payload_element(src, k);
  };
  const HbmView& view = vi.view;
  const int64_t n = view.numel();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = view.offset;
    for (int64_t d = view.rank() - 1; d >= 0; --d) {
      off += (rem % view.shape[d]) * view.strides[d];
      rem /= view.shape[d];
    }
    out[i] = buffer_element(off);
  }
  return out;
}

[[noreturn]] void fail(const ir::Node& n, const std::string& message) {
  throw Error(n.describe() + ": " + message);
}

std::vector<int64_t> static_shape(const ir::Value* v) {
  std::vector<int64_t> s;
  for (const ir::Dim& d : v->shape()) s.push_back(d.value());
  return s;
}

double scalar_attr(const ir::Node& n, const char* name, double dflt) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return dflt;
  if (const auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  if (const auto* f = std::get_if<double>(a)) return *f;
  if (const auto* b = std::get_if<bool>(a)) return *b ? 1.0 : 0.0;
  return dflt;
}

DType device_dtype(ir::DType t) {
  switch (t) {
    case ir::DType::f64:
    case ir::DType::f32:
      return DType::f32;
    case ir::DType::f16:
      return DType::f16;
    case ir::DType::bf16:
      return DType::bf16;
    case ir::DType::f8e4m3fn:
      return DType::f8e4m3;
    case ir::DType::f8e5m2:
      return DType::f8e5m2;
    case ir::DType::i64:
    case ir::DType::i32:
      return DType::i32;
    case ir::DType::i16:
      return DType::i16;
    case ir::DType::i8:
      return DType::i8;
    case ir::DType::u8:
    case ir::DType::boolean:
      return DType::u8;
    case ir::DType::c64:
      break;
  }
  throw Error("dtype " + std::string(ir::dtype_name(t)) + " has no device equivalent");
}

namespace {

constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}

// Element count of a static shape; a count that does not fit in int64 is refused (a symbolic
// dim bound to a huge value must not wrap around into a small buffer).
int64_t numel(const std::vector<int64_t>& s) {
  auto text = [&] {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
  };
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw Error(
          "shape " + text() + " has " +
          (d < 0 ? std::string("a negative dim") : std::string("more elements than fit in int64")));
  return n;
}

// Bytes of `n` elements of `dt`, refusing a size that does not fit in 64 bits.
uint64_t checked_bytes(int64_t n, DType dt, const std::string& what) {
  uint64_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n), uint64_t{device::dtype_size(dt)}, &bytes))
    throw Error(what + " needs more than 2^64 bytes");
  return bytes;
}

// Reads element `i` (row-major over the value's shape) of a payload as double.
double payload_element(const ir::Value* v, int64_t i) {
  const ir::ConstantPayload& p = *v->payload();
  const std::vector<int64_t> shape = static_shape(v);
  int64_t off = p.storage_offset;
  if (p.strides.empty()) {
    off += i;
  } else {
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      off += (i % shape[d]) * p.strides[d];
      i /= shape[d];
    }
  }
  const size_t es = ir::dtype_size(v->dtype());
  if (static_cast<size_t>(off + 1) * es > p.nbytes)
    throw Error("constant '" + v->name() + "' payload holds " + std::to_string(p.nbytes) +
                " bytes but element offset " + std::to_string(off) + " needs more");
  const std::byte* q = p.data + off * es;
  switch (v->dtype()) {
    case ir::DType::f64: {
      double x;
      std::memcpy(&x, q, 8);
      return x;
    }
    case ir::DType::f32:
      return device::load_f32(q, DType::f32);
    case ir::DType::f16:
      return device::load_f32(q, DType::f16);
    case ir::DType::bf16:
      return device::load_f32(q, DType::bf16);
    case ir::DType::f8e4m3fn:
      return device::load_f32(q, DType::f8e4m3);
    case ir::DType::f8e5m2:
      return device::load_f32(q, DType::f8e5m2);
    case ir::DType::i64: {
      int64_t x;
      std::memcpy(&x, q, 8);
      return static_cast<double>(x);
    }
    case ir::DType::i32:
      return static_cast<double>(device::load_int(q, DType::i32));
    case ir::DType::i16:
      return static_cast<double>(device::load_int(q, DType::i16));
    case ir::DType::i8:
      return static_cast<double>(device::load_int(q, DType::i8));
    case ir::DType::u8:
    case ir::DType::boolean:
      return static_cast<double>(device::load_int(q, DType::u8));
    case ir::DType::c64:
      break;
  }
  throw Error("constant '" + v->name() + "' is complex");
}

void store_element(std::byte* dst, DType t, double x) {
  if (device::dtype_is_float(t)) {
    device::store_f32(dst, t, static_cast<float>(x));
  } else {
    int64_t i = static_cast<int64_t>(std::trunc(x));
    device::store_int(dst, t, i);
  }
}

// Bytes of a constant in the device dtype; `transposed` stores the 2-D transpose, a non-empty
// `perm` the tensor permuted by it (stored dim i = logical dim perm[i]).
std::vector<std::byte> constant_bytes(const ir::Value* v, const std::vector<double>* values,
                                      bool transposed, const std::vector<int64_t>& perm,
                                      int64_t row_interleave) {
  const std::vector<int64_t> shape = static_shape(v);
  const int64_t n = numel(shape);
  const DType dt = device_dtype(v->dtype());
  const size_t es = device::dtype_size(dt);
  std::vector<std::byte> out(static_cast<size_t>(n) * es);
  const bool raw = values == nullptr && v->payload()->strides.empty() && !transposed &&
                   perm.empty() && row_interleave == 0 && ir::dtype_size(v->dtype()) == es &&
                   v->dtype() != ir::DType::f64 && v->dtype() != ir::DType::i64;
  if (raw) {
    const ir::ConstantPayload& p = *v->payload();
    const size_t need = static_cast<size_t>(p.storage_offset + n) * es;
    if (need > p.nbytes)
      throw Error("constant '" + v->name() + "' payload holds " + std::to_string(p.nbytes) +
                  " bytes, expected " + std::to_string(need));
    std::memcpy(out.data(), p.data + p.storage_offset * es, out.size());
    return out;
  }
  if (!perm.empty() || row_interleave > 0) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = stored_to_logical(j, shape, perm, row_interleave);
      const double x = values ? (*values)[i] : payload_element(v, i);
      store_element(out.data() + j * es, dt, x);
    }
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = i;
    if (transposed) {  // out[c][r] = in[r][c] for in [R, C]
      const int64_t r = i / shape[1], c = i % shape[1];
      j = c * shape[0] + r;
    }
    const double x = values ? (*values)[i] : payload_element(v, i);
    store_element(out.data() + j * es, dt, x);
  }
  return out;
}

}  // namespace

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

bool is_creation_op(const std::string& op) {
  static const char* kOps[] = {
      "aten.arange.default",        "aten.arange.start",      "aten.arange.start_step",
      "aten.full.default",          "aten.ones.default",      "aten.zeros.default",
      "aten.scalar_tensor.default", "aten.new_ones.default",  "aten.new_zeros.default",
      "aten.new_full.default",      "aten.full_like.default", "aten.zeros_like.default",
      "aten.ones_like.default",     "aten.fill.Scalar",       "aten.empty.memory_format",
      "aten.new_empty.default",     "aten.empty_like.default"};
  for (const char* s : kOps)
    if (op == s) return true;
  return false;
}

// Values of a creation op, row-major.
std::vector<double> creation_values(const ir::Node& n) {
  const std::vector<int64_t> shape = static_shape(n.output());
  const int64_t count = numel(shape);
  const std::string& op = n.op();
  std::vector<double> v(static_cast<size_t>(count), 0.0);
  if (op.rfind("aten.arange", 0) == 0) {
    double start = 0, step = 1;
    if (op == "aten.arange.default") {
      start = 0;
    } else {
      start = scalar_attr(n, "start", 0);
      if (op == "aten.arange.start_step") step = scalar_attr(n, "step", 1);
    }
    for (int64_t i = 0; i < count; ++i) v[i] = start + step * static_cast<double>(i);
    return v;
  }
  double fill = 0;
  if (op == "aten.full.default" || op == "aten.new_full.default" || op == "aten.full_like.default")
    fill = scalar_attr(n, "fill_value", 0);
  else if (op == "aten.fill.Scalar")
    fill = scalar_attr(n, "value", 0);
  else if (op == "aten.ones.default" || op == "aten.new_ones.default" ||
           op == "aten.ones_like.default")
    fill = 1;
  else if (op == "aten.scalar_tensor.default")
    fill = scalar_attr(n, "s", 0);
  std::fill(v.begin(), v.end(), fill);
  return v;
}

// Lowering for a compute node, or null.
const Lowering* find_lowering(const std::string& op) {
  for (auto f :
       {matmul_lowering, elementwise_lowering, row_lowering, group_norm_lowering,
        attention_lowering, gather_lowering, conv_lowering, pool_lowering, data_movement_lowering})
    if (const Lowering* l = f(op)) return l;
  return nullptr;
}

namespace {

struct Buffer {
  enum Region { input, output, constant, scratch } region = scratch;
  uint64_t bytes = 0;
  int first = 0;  // kernel index that writes it (inputs/constants: -1)
  int last = 0;   // last kernel index reading it
  uint64_t offset = 0;
};

struct Kernel {
  LowerFn fn = nullptr;
  const ir::Node* node = nullptr;
  uint32_t debug_id = 0;
  std::vector<const ir::Node*> fused;  // see KernelBuilder::fused
  // Output copies: copy `src` into `dst` (no node).
  const ir::Value* copy_src = nullptr;
  const ir::Value* copy_dst_value = nullptr;
};

void copy_kernel(KernelBuilder& kb, const HbmView& dst, const HbmView& src) {
  copy_view(kb, dst, src);
}

}  // namespace

CompiledPartition compile_partition(const ir::Graph& g, const std::vector<const ir::Node*>& nodes,
                                    const std::vector<const ir::Value*>& inputs,
                                    const std::vector<const ir::Value*>& outputs,
                                    const device::Target& target, const CodegenOptions& opts) {
  // --- static shapes -------------------------------------------------------------------------
  auto check_static = [&](const ir::Value* v, const ir::Node* n) {
    for (const ir::Dim& d : v->shape()) {
      if (d.is_symbolic()) {
        const std::string what = "value '" + v->name() + "' has symbolic dimension " +
                                 g.dim_to_string(d) + " (shape " + g.shape_to_string(v->shape()) +
                                 "): codegen needs static shapes (shape bucketing is not done yet)";
        if (n) fail(*n, what);
        throw Error(what);
      }
    }
    (void)device_dtype(v->dtype());
  };
  for (const ir::Value* v : inputs) check_static(v, nullptr);
  for (const ir::Node* n : nodes)
    for (const ir::Value* v : n->outputs()) check_static(v, n);

  PartitionContext ctx(g, target);
  std::vector<Buffer> buffers;
  std::vector<std::pair<const ir::Value*, int>> constant_buffers;  // value, buffer
  std::vector<std::vector<double>> synthetic_values;               // per constant buffer slot
  std::vector<bool> constant_transposed;
  std::vector<std::vector<int64_t>> constant_permutation;
  std::vector<int64_t> constant_interleave;
  std::vector<int> constant_synthetic;  // index into synthetic_values or -1

  CompiledPartition result;
  std::unordered_map<const ir::Value*, bool> is_output;
  for (const ir::Value* v : outputs) is_output[v] = true;

  // Weights stored transposed: 2-D constants whose every use is a linear weight or a
  // permute([1, 0]) (which then reads them contiguously).
  std::unordered_map<const ir::Node*, bool> in_partition;
  for (const ir::Node* n : nodes) in_partition[n] = true;
  auto store_transposed = [&](const ir::Value* v) {
    if (!opts.transpose_matmul_weights || v->shape().size() != 2 || is_output.count(v))
      return false;
    if (!v->has_uses()) return false;
    for (const ir::Use& u : v->uses()) {
      if (!in_partition.count(u.node)) return false;
      const std::string& op = u.node->op();
      if (op == "aten.linear.default" && u.operand == 1) continue;
      if (op == "aten.permute.default" && u.node->attr_ints("dims") == std::vector<int64_t>{1, 0})
        continue;
      if (op == "aten.t.default") continue;
      return false;
    }
    return true;
  };

  // Convolution weights [O, C/g, (KH,) KW] whose every use is a (non-depthwise) convolution's
  // weight are stored [C/g, (KH,) KW, O]: each input channel's block (a partition of the
  // contraction) is one contiguous run, so the weight DMA moves long descriptors.
  auto conv_permutation = [&](const ir::Value* v) -> std::vector<int64_t> {
    const size_t r = v->shape().size();
    if ((r != 3 && r != 4) || is_output.count(v) || !v->has_uses()) return {};
    for (const ir::Use& u : v->uses()) {
      if (!in_partition.count(u.node) || !conv_lowering(u.node->op()) || u.operand != 1) return {};
      const int64_t groups = u.node->attr("groups") ? u.node->attr_int("groups") : 1;
      if (groups > 1 && v->shape()[1].value() == 1) return {};  // depthwise: [C, KK] rows
    }
    return r == 4 ? std::vector<int64_t>{1, 2, 3, 0} : std::vector<int64_t>{1, 2, 0};
  };
  // Such a weight with groups = 1 and more than one whole chunk of input channels is stored
  // with its channel rows interleaved by the partition count (ConstantBinding::row_interleave).
  auto conv_interleave = [&](const ir::Value* v, const std::vector<int64_t>& perm) -> int64_t {
    const int64_t P = target.partitions;
    if (perm.empty()) return 0;
    for (const ir::Use& u : v->uses())
      if (u.node->attr("groups") && u.node->attr_int("groups") != 1) return 0;
    const int64_t c = v->shape()[1].value();
    return c % P == 0 && c / P >= 2 ? P : 0;
  };

  auto new_constant = [&](const ir::Value* v, std::vector<double>* values) {
    const std::vector<int64_t> shape = static_shape(v);
    const DType dt = device_dtype(v->dtype());
    const bool tr = store_transposed(v);
    const std::vector<int64_t> perm = tr ? std::vector<int64_t>{} : conv_permutation(v);
    const int64_t interleave = conv_interleave(v, perm);
    Buffer b;
    b.region = Buffer::constant;
    b.bytes = checked_bytes(numel(shape), dt, "constant '" + v->name() + "'");
    b.first = -1;
    buffers.push_back(b);
    const int id = static_cast<int>(buffers.size()) - 1;
    constant_buffers.push_back({v, id});
    ctx.constant_buffers[id] = {v, tr, perm, interleave};
    constant_interleave.push_back(interleave);
    constant_transposed.push_back(tr);
    constant_permutation.push_back(perm);
    if (values) {
      synthetic_values.push_back(std::move(*values));
      constant_synthetic.push_back(static_cast<int>(synthetic_values.size()) - 1);
    } else {
      constant_synthetic.push_back(-1);
    }
    ValueInfo vi;
    if (tr) {
      vi.view = HbmView::contiguous(dt, 0, {shape[1], shape[0]}).permute({1, 0});
    } else if (!perm.empty()) {
      std::vector<int64_t> stored(perm.size()), inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        stored[i] = shape[perm[i]];
        inverse[perm[i]] = static_cast<int64_t>(i);
      }
      vi.view = HbmView::contiguous(dt, 0, stored).permute(inverse);
    } else {
      vi.view = HbmView::contiguous(dt, 0, shape);
    }
    vi.buffer = id;
    return vi;
  };

  // --- inputs ---------------------------------------------------------------------------------
  std::vector<int> input_buffer(inputs.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* v = inputs[i];
    if (ctx.values.count(v)) continue;
    if (v->payload()) {
      ValueInfo vi = new_constant(v, nullptr);
      if (numel(static_shape(v)) == 1) vi.splat = payload_element(v, 0);
      ctx.values[v] = vi;
      continue;
    }
    Buffer b;
    b.region = Buffer::input;
    const DType dt = device_dtype(v->dtype());
    b.bytes = checked_bytes(numel(static_shape(v)), dt, "value '" + v->name() + "'");
    b.first = -1;
    buffers.push_back(b);
    input_buffer[i] = static_cast<int>(buffers.size()) - 1;
    ValueInfo vi;
    vi.view = HbmView::contiguous(dt, 0, static_shape(v));
    vi.buffer = input_buffer[i];
    ctx.values[v] = vi;
  }

  // --- fusion ------------------------------------------------------------------------------------
  // A node whose only result feeds exactly one later node of the partition, and is not a
  // partition output, is computed inside that consumer's kernel: element-wise producers of an
  // element-wise consumer with the same shape (one tile program), and a matmul whose only
  // consumer is a unary activation (the epilogue applies it). The value never reaches HBM.
  std::unordered_map<const ir::Node*, const ir::Node*> absorbed_into;  // producer -> consumer
  std::unordered_map<const ir::Node*, const ir::Node*> epilogue_of;    // activation -> matmul
  auto elementwise_kernel = [&](const ir::Node* n) {
    if (!elementwise_lowering(n->op())) return false;
    if (n->op() == "aten._to_copy.default" &&
        device_dtype(n->output()->dtype()) == device_dtype(n->input(0)->dtype()))
      return false;  // a view
    return n->outputs().size() == 1;
  };
  // Float casts feeding a matmul or convolution operand, or the query, key or value of an
  // attention: the kernel's DMA converts while loading.
  if (opts.fuse) {
    for (const ir::Node* n : nodes) {
      if (n->op() != "aten._to_copy.default" || n->input(0)->payload()) continue;
      const ir::Value* v = n->output();
      if (!ir::is_floating(v->dtype()) || !ir::is_floating(n->input(0)->dtype()) ||
          device_dtype(v->dtype()) == device_dtype(n->input(0)->dtype()))
        continue;
      if (is_output.count(v) || v->uses().empty()) continue;
      // Every reader converts on load (a layer norm's bf16 copy feeding Q, K and V, say).
      bool all = true;
      for (const ir::Use& u : v->uses()) {
        const ir::Node* m = u.node;
        if (!in_partition.count(m)) {
          all = false;
        } else if (attention_lowering(m->op())) {
          all = all && u.operand <= 2;
        } else if (matmul_lowering(m->op()) || conv_lowering(m->op())) {
          const bool bias_slot =
              (m->op() == "aten.addmm.default" || m->op() == "aten.baddbmm.default")
                  ? u.operand == 0
                  : u.operand == 2;
          all = all && !bias_slot;
        } else {
          all = false;
        }
      }
      if (all) ctx.read_through[v] = n->input(0);
    }
  }

  // Residual epilogues: conv or matmul -> [float cast] -> add(alpha 1, same shape and dtype) ->
  // [unary activation], each intermediate read once and not a partition output, becomes one
  // convolution or matmul kernel emitted at the last node of the chain (every operand of the
  // chain is defined by then). The other operand of the add is loaded per output tile. A matmul
  // flattens leading dims into its own [batch, M, N] problem, so its residual must be defined
  // before it (its view is then checked against that layout when the matmul is reached, and
  // the group is dissolved when it does not fit).
  std::unordered_map<const ir::Node*, std::vector<const ir::Node*>> residual_group;  // last ->
  std::unordered_map<const ir::Node*, bool> grouped;  // every node of a residual group
  std::unordered_map<const ir::Node*, size_t> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) node_index[nodes[i]] = i;
  std::unordered_map<const ir::Node*, std::pair<const ir::Node*, const ir::Value*>>
      matmul_residual;  // matmul -> {last node of its group, residual}
  auto only_consumer = [&](const ir::Value* v) -> const ir::Node* {
    if (is_output.count(v) || v->uses().size() != 1 || ctx.read_through.count(v)) return nullptr;
    const ir::Node* m = v->uses()[0].node;
    if (!in_partition.count(m) || m->outputs().size() != 1) return nullptr;
    return m;
  };
  if (opts.fuse && opts.fuse_residual) {
    for (const ir::Node* c : nodes) {
      const bool matmul = matmul_lowering(c->op()) != nullptr;
      if (!(conv_lowering(c->op()) || matmul) || c->outputs().size() != 1 || grouped.count(c))
        continue;
      std::vector<const ir::Node*> chain = {c};
      const ir::Node* m = only_consumer(c->output());
      if (m && m->op() == "aten._to_copy.default" && epilogue_activation(*m) &&
          device_dtype(m->output()->dtype()) != device_dtype(m->input(0)->dtype()) &&
          !grouped.count(m)) {
        chain.push_back(m);
        m = only_consumer(m->output());
      }
      if (!m || m->op() != "aten.add.Tensor" || grouped.count(m) || m->inputs().size() != 2 ||
          scalar_attr(*m, "alpha", 1.0) != 1.0)
        continue;
      const ir::Value* v = chain.back()->output();
      const ir::Value* r = m->input(0) == v ? m->input(1) : m->input(0);
      const ir::Value* out = m->output();
      if (!r || r == v || !(r->shape() == out->shape()) || !(v->shape() == out->shape()) ||
          r->dtype() != out->dtype() || v->dtype() != out->dtype() || ctx.read_through.count(r))
        continue;
      if (matmul && r->producer() && in_partition.count(r->producer()) &&
          node_index.at(r->producer()) > node_index.at(c))
        continue;
      chain.push_back(m);
      if (const ir::Node* a = only_consumer(out);
          a && a->op() != "aten._to_copy.default" && epilogue_activation(*a) && !grouped.count(a))
        chain.push_back(a);
      // A layer norm reading the chain's result becomes the matmul's epilogue too (checked
      // against the matmul's tiling when it is reached; dropped from the group if it does not
      // fit).
      if (const ir::Node* l = only_consumer(chain.back()->output());
          matmul && l && l->op() == "aten.layer_norm.default" && !grouped.count(l) &&
          l->input(0) == chain.back()->output())
        chain.push_back(l);
      for (const ir::Node* x : chain) grouped[x] = true;
      for (size_t i = 0; i + 1 < chain.size(); ++i) absorbed_into[chain[i]] = chain.back();
      if (matmul) matmul_residual[c] = {chain.back(), r};
      residual_group[chain.back()] = std::move(chain);
    }
  }
  // Matmul or convolution -> float cast -> unary activation (what `--auto-cast matmul` makes of
  // linear -> gelu and conv -> relu): one kernel whose evacuation applies the activation and
  // stores in the cast's dtype, exactly what the cast epilogue and the activation kernel
  // computed separately.
  if (opts.fuse) {
    for (const ir::Node* c : nodes) {
      if (!(matmul_lowering(c->op()) || conv_lowering(c->op())) || c->outputs().size() != 1 ||
          grouped.count(c))
        continue;
      const ir::Node* m = only_consumer(c->output());
      if (!m || m->op() != "aten._to_copy.default" || !epilogue_activation(*m) || grouped.count(m))
        continue;
      const ir::Node* a = only_consumer(m->output());
      if (!a || a->op() == "aten._to_copy.default" || !epilogue_activation(*a) ||
          grouped.count(a) || !(a->output()->shape() == m->output()->shape()) ||
          a->output()->dtype() != m->output()->dtype())
        continue;
      std::vector<const ir::Node*> group = {c, m, a};
      // A narrowing float cast that is the activation's only reader (what `--auto-cast
      // matmul` puts before the next projection: gelu -> bf16) is done by the kernel's own
      // evacuation, so the value crosses HBM once, in the narrow dtype, instead of wide and
      // converted by the reader's load DMA (the same rounding: ScalarE computes in fp32 and
      // rounds once to the destination dtype).
      if (const ir::Node* n2 = only_consumer(a->output());
          opts.fuse_narrowing_store && c->op() == "aten.linear.default" &&
          (c->inputs().size() < 3 || !c->input(2) ||
           c->input(2)->dtype() == c->input(0)->dtype()) &&
          n2 && n2->op() == "aten._to_copy.default" && epilogue_activation(*n2) &&
          !grouped.count(n2) && n2->output()->shape() == a->output()->shape() &&
          ir::dtype_size(n2->output()->dtype()) < ir::dtype_size(a->output()->dtype())) {
        ctx.read_through.erase(n2->output());
        group.push_back(n2);
      }
      for (const ir::Node* x : group) grouped[x] = true;
      for (size_t i = 0; i + 1 < group.size(); ++i) absorbed_into[group[i]] = group.back();
      residual_group[group.back()] = group;
    }
  }

  // Channel scales: mul(x, s[N, C, 1, 1]) read only by a convolution (as its input) that keeps
  // channels on the partitions, all in one dtype: the convolution's kernel scales its bands.
  std::unordered_map<const ir::Node*, const ir::Node*> channel_scale_of;  // conv -> mul
  if (opts.fuse && opts.fuse_channel_scale) {
    for (const ir::Node* m : nodes) {
      if (m->op() != "aten.mul.Tensor" || grouped.count(m) || m->outputs().size() != 1) continue;
      const ir::Value* v = m->output();
      if (is_output.count(v) || v->uses().size() != 1 || ctx.read_through.count(v)) continue;
      const ir::Node* c = v->uses()[0].node;
      if (!in_partition.count(c) || !conv_lowering(c->op()) || v->uses()[0].operand != 0 ||
          channel_scale_of.count(c))
        continue;
      const ir::Value* x = channel_scale_operands(*m, *c).first;
      ConvGeometry geo;
      if (!x || conv_geometry(*c, target, geo) || conv_packs_rows(geo, target.partitions)) continue;
      const ir::Value* w = c->input(1);
      if (ctx.read_through.count(w)) w = ctx.read_through.at(w);
      const DType xdt = device_dtype(v->dtype()), wdt = device_dtype(w->dtype());
      if (xdt != ((xdt == DType::f32 || wdt == DType::f32) ? DType::f32 : xdt)) continue;
      channel_scale_of[c] = m;
      grouped[m] = true;
      absorbed_into[m] = c;
    }
  }

  if (opts.fuse) {
    for (const ir::Node* n : nodes) {
      if (n->outputs().size() != 1 || epilogue_of.count(n) || grouped.count(n)) continue;
      const ir::Value* v = n->output();
      if (is_output.count(v) || v->uses().size() != 1) continue;
      const ir::Node* m = v->uses()[0].node;
      if (!in_partition.count(m) || m->outputs().size() != 1 || grouped.count(m)) continue;
      if (ctx.read_through.count(v) || ctx.read_through.count(m->output())) continue;
      if (!(m->output()->shape() == v->shape())) continue;
      bool multiple = false;  // the consumer reads v once
      int count = 0;
      for (const ir::Value* in : m->inputs()) count += in == v;
      multiple = count != 1;
      if (multiple) continue;
      if (elementwise_kernel(n) && elementwise_kernel(m)) {
        absorbed_into[n] = m;
      } else if (!absorbed_into.count(n) && epilogue_activation(*m) &&
                 (matmul_lowering(n->op()) || conv_lowering(n->op()) ||
                  // an attention's float cast: its store DMA converts the rounded result
                  (attention_lowering(n->op()) && m->op() == "aten._to_copy.default"))) {
        absorbed_into[n] = m;
        epilogue_of[m] = n;
      }
    }
  }
  // Producers fused into `m`, in node order.
  auto producers_of = [&](const ir::Node* m) {
    std::vector<const ir::Node*> chain;
    for (const ir::Node* n : nodes) {
      const ir::Node* c = n;
      while (absorbed_into.count(c) && !epilogue_of.count(absorbed_into.at(c)))
        c = absorbed_into.at(c);
      if (c == m && n != m) chain.push_back(n);
    }
    return chain;
  };

  // --- concatenation in place -----------------------------------------------------------------
  // A cat input produced by a kernel of this partition is written by that kernel straight into
  // its slice of the cat's buffer (an HbmView slice; kernels store through access patterns), so
  // the cat copies nothing for it. Only when provably safe: a single-result kernel whose
  // lowering stores through any strides (convolution and its fused activation, element-wise,
  // pooling with uniform rows, group norm), of the cat's dtype and exact slice shape, not a
  // partition output, listed once in this cat and aliased into no other cat. Other readers of
  // the value read the slice view. Everything else is copied by the cat kernel as before.
  struct CatSlot {
    const ir::Node* cat = nullptr;
    HbmView view;  // the slice, relative to the cat's buffer
  };
  std::unordered_map<const ir::Value*, CatSlot> cat_slot;
  std::unordered_map<const ir::Node*, int> cat_buffer;  // created at its first aliased producer
  auto writes_any_view = [&](const ir::Node* p, const HbmView& slice) {
    if (p->outputs().size() != 1 || absorbed_into.count(p)) return false;
    if (auto e = epilogue_of.find(p); e != epilogue_of.end())
      return conv_lowering(e->second->op()) != nullptr;
    if (auto rg = residual_group.find(p); rg != residual_group.end())
      return conv_lowering(rg->second[0]->op()) != nullptr;  // a matmul stores [batch, M, N]
    const std::string& op = p->op();
    if (conv_lowering(op) || elementwise_kernel(p) || op == "aten.group_norm.default") return true;
    if (pool_lowering(op)) {  // its rows (leading dims) must be one uniform stride
      const int64_t spatial = op.find("pool1d") != std::string::npos ? 1 : 2;
      for (int64_t d = slice.rank() - spatial - 2; d >= 0; --d)
        if (slice.shape[d] != 1 && slice.strides[d] != slice.strides[d + 1] * slice.shape[d + 1])
          return false;
      return true;
    }
    return false;
  };
  if (opts.cat_in_place) {
    for (const ir::Node* n : nodes) {
      if (n->op() != "aten.cat.default") continue;
      const std::vector<int64_t> out_shape = static_shape(n->output());
      const DType dt = device_dtype(n->output()->dtype());
      int64_t dim = n->attr("dim") ? n->attr_int("dim") : 0;
      if (dim < 0) dim += static_cast<int64_t>(out_shape.size());
      const HbmView whole = HbmView::contiguous(dt, 0, out_shape);
      int64_t start = 0;
      for (const ir::Value* v : n->inputs()) {
        const std::vector<int64_t> shape = static_shape(v);
        if (numel(shape) == 0) continue;  // skipped by the cat as well
        const int64_t len = shape.size() == out_shape.size() ? shape[dim] : 0;
        const int64_t at = start;
        start += len;
        const ir::Node* p = v->producer();
        if (!p || !in_partition.count(p) || is_output.count(v) || cat_slot.count(v)) continue;
        if (std::count(n->inputs().begin(), n->inputs().end(), v) != 1) continue;
        if (device_dtype(v->dtype()) != dt) continue;
        const HbmView slice = whole.slice(dim, at, at + len, 1);
        if (slice.shape != shape || !writes_any_view(p, slice)) continue;
        cat_slot[v] = {n, slice};
      }
    }
  }

  // --- nodes: views, constants, kernels -------------------------------------------------------
  std::vector<Kernel> kernels;
  // The buffer of cat node `cat`, created by the first kernel writing into it.
  auto cat_buffer_of = [&](const ir::Node* cat, int first) {
    if (auto it = cat_buffer.find(cat); it != cat_buffer.end()) return it->second;
    const ir::Value* v = cat->output();
    Buffer b;
    b.region = is_output.count(v) ? Buffer::output : Buffer::scratch;
    b.bytes = checked_bytes(numel(static_shape(v)), device_dtype(v->dtype()),
                            "value '" + v->name() + "'");
    b.first = first;
    b.last = first;
    buffers.push_back(b);
    return cat_buffer[cat] = static_cast<int>(buffers.size()) - 1;
  };
  auto use = [&](const ir::Value* v) {
    const int b = ctx.info(v).buffer;
    buffers[b].last = std::max(buffers[b].last, static_cast<int>(kernels.size()));
  };
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    const ir::Node& n = *nodes[ni];
    result.debug_names.push_back({n.name(), n.op(), n.location().to_string()});
    const std::string& op = n.op();
    for (const ir::Value* v : n.inputs())
      if (v && !ctx.values.count(v) && !(v->producer() && absorbed_into.count(v->producer())) &&
          !ctx.read_through.count(v))
        fail(n, "operand '" + v->name() + "' is neither a partition input nor defined earlier");

    // A dtype conversion of a compile-time constant (auto-cast weights) is done now: the
    // constant segment holds the converted tensor.
    if ((op == "aten._to_copy.default" || op == "aten.to.dtype") &&
        device_dtype(n.output()->dtype()) != device_dtype(n.input(0)->dtype()) &&
        ctx.values.count(n.input(0)) &&
        ctx.constant_buffers.count(ctx.values.at(n.input(0)).buffer) &&
        ir::is_floating(n.output()->dtype()) && !absorbed_into.count(&n)) {
      std::vector<double> vals = *ctx.constant_values(n.input(0));
      ctx.synthetic[n.output()] = vals;
      ValueInfo vi = new_constant(n.output(), &vals);
      ctx.values[n.output()] = vi;
      continue;
    }
    if (is_creation_op(op)) {
      std::vector<double> vals = creation_values(n);
      ctx.synthetic[n.output()] = vals;
      const bool uniform = op.rfind("aten.arange", 0) != 0;
      const double first = vals.empty() ? 0.0 : vals[0];
      ValueInfo vi = new_constant(n.output(), &vals);
      if (uniform) vi.splat = first;
      ctx.values[n.output()] = vi;
      continue;
    }

    // Views of the input's buffer.
    bool aliased = false;
    if (is_alias_op(op) ||
        (op == "aten._to_copy.default" &&
         device_dtype(n.output()->dtype()) == device_dtype(n.input(0)->dtype()))) {
      const ValueInfo& in = ctx.info(n.input(0));
      std::vector<ValueInfo> outs(n.outputs().size(), in);
      const HbmView& x = in.view;
      bool ok = true;
      const std::vector<int64_t> out_shape = static_shape(n.output());
      if (op == "aten.permute.default") {
        outs[0].view = x.permute(n.attr_ints("dims"));
      } else if (op == "aten.t.default" || op == "aten.transpose.int") {
        std::vector<int64_t> perm(static_cast<size_t>(x.rank()));
        std::iota(perm.begin(), perm.end(), 0);
        if (x.rank() >= 2) {
          int64_t a = x.rank() - 2, b = x.rank() - 1;
          if (op == "aten.transpose.int") {
            a = n.attr_int("dim0");
            b = n.attr_int("dim1");
            if (a < 0) a += x.rank();
            if (b < 0) b += x.rank();
          }
          std::swap(perm[a], perm[b]);
        }
        outs[0].view = x.permute(perm);
      } else if (op == "aten.expand.default" || op == "aten.expand_as.default") {
        outs[0].view = x.expand(out_shape);
      } else if (op == "aten.slice.Tensor") {
        int64_t dim = n.attr_int("dim");
        if (dim < 0) dim += x.rank();
        const int64_t start = n.attr_is_none("start") ? 0 : n.attr_int("start");
        const int64_t end = n.attr_is_none("end") ? INT64_MAX : n.attr_int("end");
        const int64_t step = n.attr("step") ? n.attr_int("step") : 1;
        outs[0].view = x.slice(dim, start, std::min(end, x.shape[dim]), step);
      } else if (op == "aten.select.int") {
        int64_t dim = n.attr_int("dim");
        if (dim < 0) dim += x.rank();
        outs[0].view = x.select(dim, n.attr_int("index"));
      } else if (op == "aten.split.Tensor" || op == "aten.split_with_sizes.default" ||
                 op == "aten.chunk.default" || op == "aten.unbind.int") {
        int64_t dim = n.attr("dim") ? n.attr_int("dim") : 0;
        if (dim < 0) dim += x.rank();
        int64_t start = 0;
        for (size_t k = 0; k < n.outputs().size(); ++k) {
          const std::vector<int64_t> s = static_shape(n.output(k));
          if (op == "aten.unbind.int") {
            outs[k].view = x.select(dim, static_cast<int64_t>(k));
          } else {
            outs[k].view = x.slice(dim, start, start + s[dim], 1);
            start += s[dim];
          }
        }
      } else if (op == "aten.view.default" || op == "aten._unsafe_view.default" ||
                 op == "aten.reshape.default" || op == "aten.flatten.using_ints" ||
                 op == "aten.unflatten.int" || op.rfind("aten.squeeze", 0) == 0 ||
                 op == "aten.unsqueeze.default") {
        auto r = x.reshape(out_shape);
        if (r) {
          outs[0].view = *r;
        } else {
          ok = false;  // needs a copy: lowered as a materialising kernel below
        }
      }
      // alias/detach/clone/contiguous/dropout/_to_copy(same dtype): same view.
      if (ok) {
        for (size_t k = 0; k < n.outputs().size(); ++k) {
          outs[k].view.dtype = device_dtype(n.output(k)->dtype());
          ctx.values[n.output(k)] = outs[k];
        }
        aliased = true;
      }
    }
    if (aliased) continue;

    // A cat whose every input was written in place by its producer: no kernel.
    if (auto cb = cat_buffer.find(&n); cb != cat_buffer.end()) {
      bool all = true;
      for (const ir::Value* v : n.inputs()) {
        if (numel(static_shape(v)) == 0) continue;
        // Exactly its slot (a view of an in-place value may sit in the same buffer elsewhere).
        auto slot = cat_slot.find(v);
        const ValueInfo& vi = ctx.info(v);
        all = all && slot != cat_slot.end() && slot->second.cat == &n && vi.buffer == cb->second &&
              vi.view.offset == slot->second.view.offset &&
              vi.view.strides == slot->second.view.strides;
      }
      if (all) {
        ValueInfo vi;
        vi.view =
            HbmView::contiguous(device_dtype(n.output()->dtype()), 0, static_shape(n.output()));
        vi.buffer = cb->second;
        ctx.values[n.output()] = vi;
        continue;
      }
    }
    // A matmul whose residual's view does not reshape to its problem layout runs unfused: the
    // group dissolves into the kernels plain fusion makes of it (a cast as the matmul's
    // epilogue, the add fused into a following activation).
    if (auto mr = matmul_residual.find(&n); mr != matmul_residual.end()) {
      // A layer-norm epilogue that does not fit the matmul's tiling leaves the group, which then
      // ends at the add (or its activation).
      if (const ir::Node* ln = mr->second.first;
          ln->op() == "aten.layer_norm.default" && !matmul_layer_norm_fits(n, *ln, ctx)) {
        std::vector<const ir::Node*> chain = residual_group.at(ln);
        residual_group.erase(ln);
        grouped.erase(ln);
        chain.pop_back();
        const ir::Node* end = chain.back();
        absorbed_into.erase(end);
        for (size_t i = 0; i + 1 < chain.size(); ++i) absorbed_into[chain[i]] = end;
        residual_group[end] = chain;
        mr->second.first = end;
      }
      const auto [last, residual] = mr->second;
      if (!ctx.values.count(residual) || !matmul_residual_fits(n, ctx, ctx.view(residual))) {
        std::vector<const ir::Node*> chain = residual_group.at(last);
        residual_group.erase(last);
        for (const ir::Node* x : chain) absorbed_into.erase(x);
        if (chain.back()->op() == "aten.layer_norm.default") {  // a kernel of its own again
          grouped.erase(chain.back());
          chain.pop_back();
        }
        size_t add = 1;
        if (chain[1]->op() == "aten._to_copy.default") {
          absorbed_into[chain[0]] = chain[1];
          epilogue_of[chain[1]] = chain[0];
          add = 2;
        }
        if (add + 1 < chain.size()) absorbed_into[chain[add]] = chain[add + 1];
      }
    }
    if (absorbed_into.count(&n)) continue;             // computed inside its consumer's kernel
    if (ctx.read_through.count(n.output())) continue;  // converted by the consuming matmul
    const Lowering* lowering = find_lowering(op);
    if (!lowering && is_alias_op(op)) lowering = data_movement_lowering("<materialize>");
    if (!lowering) fail(n, "codegen has no lowering for " + op);
    LowerFn fn = lowering->lower;
    Kernel kernel{fn, &n, static_cast<uint32_t>(ni), {}, nullptr, nullptr};
    std::vector<const ir::Node*> group;
    if (auto rg = residual_group.find(&n); rg != residual_group.end()) {
      kernel.fn = find_lowering(rg->second[0]->op())->lower;
      kernel.node = rg->second[0];
      kernel.fused.assign(rg->second.begin() + 1, rg->second.end());
      group = rg->second;
    } else if (auto e = epilogue_of.find(&n); e != epilogue_of.end()) {
      kernel.fn = find_lowering(e->second->op())->lower;
      kernel.node = e->second;
      kernel.fused = {&n};
      group = {e->second, &n};
    } else {
      kernel.fused = producers_of(&n);
      for (const ir::Node* f : kernel.fused) group.push_back(f);
      group.push_back(&n);
    }
    if (auto cs = channel_scale_of.find(kernel.node); cs != channel_scale_of.end() && kernel.fn) {
      if (std::find(kernel.fused.begin(), kernel.fused.end(), cs->second) == kernel.fused.end())
        kernel.fused.insert(kernel.fused.begin(), cs->second);
      if (std::find(group.begin(), group.end(), cs->second) == group.end())
        group.insert(group.begin(), cs->second);
    }
    std::unordered_map<const ir::Value*, bool> internal;
    for (const ir::Node* g2 : group)
      if (g2 != &n) internal[g2->output()] = true;
    for (const ir::Node* g2 : group)
      for (const ir::Value* v : g2->inputs())
        if (v && !internal.count(v)) use(ctx.read_through.count(v) ? ctx.read_through.at(v) : v);
    for (const ir::Value* v : n.outputs()) {
      const int this_kernel = static_cast<int>(kernels.size());
      if (auto slot = cat_slot.find(v); slot != cat_slot.end()) {
        ValueInfo vi;
        vi.view = slot->second.view;
        vi.buffer = cat_buffer_of(slot->second.cat, this_kernel);
        buffers[vi.buffer].last = std::max(buffers[vi.buffer].last, this_kernel);
        ctx.values[v] = vi;
        continue;
      }
      if (auto cb = cat_buffer.find(&n); cb != cat_buffer.end()) {  // cat with inputs in place
        ValueInfo vi;
        vi.view = HbmView::contiguous(device_dtype(v->dtype()), 0, static_shape(v));
        vi.buffer = cb->second;
        buffers[vi.buffer].last = std::max(buffers[vi.buffer].last, this_kernel);
        ctx.values[v] = vi;
        continue;
      }
      Buffer b;
      b.region = is_output.count(v) ? Buffer::output : Buffer::scratch;
      const DType dt = device_dtype(v->dtype());
      b.bytes = checked_bytes(numel(static_shape(v)), dt, "value '" + v->name() + "'");
      b.first = static_cast<int>(kernels.size());
      b.last = b.first;
      buffers.push_back(b);
      ValueInfo vi;
      vi.view = HbmView::contiguous(dt, 0, static_shape(v));
      // An attention result read only through one transpose (the heads merging back into the
      // hidden dim) is laid out so that the transposed view is contiguous: the reshape after it
      // is then a view instead of a copy. The attention stores through any strides.
      if (opts.fuse && kernel.node && attention_lowering(kernel.node->op()) &&
          b.region == Buffer::scratch && v->uses().size() == 1 &&
          in_partition.count(v->uses()[0].node)) {
        const ir::Node& t = *v->uses()[0].node;
        const int64_t rank = vi.view.rank();
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        bool is_perm = false;
        if (t.op() == "aten.transpose.int" && rank >= 2) {
          int64_t a = t.attr_int("dim0"), c = t.attr_int("dim1");
          if (a < 0) a += rank;
          if (c < 0) c += rank;
          std::swap(perm[a], perm[c]);
          is_perm = true;
        } else if (t.op() == "aten.permute.default") {
          perm = t.attr_ints("dims");
          for (int64_t& d : perm) d = d < 0 ? d + rank : d;
          is_perm = static_cast<int64_t>(perm.size()) == rank;
        }
        if (is_perm) {
          std::vector<int64_t> permuted(perm.size());
          for (size_t i = 0; i < perm.size(); ++i) permuted[i] = vi.view.shape[perm[i]];
          const HbmView dense = HbmView::contiguous(dt, 0, permuted);
          for (size_t i = 0; i < perm.size(); ++i) vi.view.strides[perm[i]] = dense.strides[i];
        }
      }
      vi.buffer = static_cast<int>(buffers.size()) - 1;
      ctx.values[v] = vi;
    }
    kernels.push_back(std::move(kernel));
  }

  // --- outputs ----------------------------------------------------------------------------------
  // An output not written in place by its kernel (a view, an input, a constant) gets a copy.
  std::vector<int> output_buffer(outputs.size(), -1);
  std::unordered_map<const ir::Value*, int> output_copy_buffer;
  std::unordered_map<int, const ir::Value*> claimed_in_place;  // buffer -> output written there
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value* v = outputs[i];
    const ValueInfo& vi = ctx.info(v);
    const Buffer& b = buffers[vi.buffer];
    const bool in_place =
        b.region == Buffer::output && vi.view.is_contiguous() && vi.view.offset == 0 &&
        b.bytes == static_cast<uint64_t>(vi.view.numel()) * device::dtype_size(vi.view.dtype);
    // Two outputs that view the same buffer (a result and its flatten) need distinct bytes.
    if (in_place && !output_copy_buffer.count(v) && !claimed_in_place.count(vi.buffer)) {
      claimed_in_place[vi.buffer] = v;
      output_buffer[i] = vi.buffer;
      continue;
    }
    if (auto c = claimed_in_place.find(vi.buffer); c != claimed_in_place.end() && c->second == v) {
      output_buffer[i] = vi.buffer;  // the same value listed twice
      continue;
    }
    if (auto it = output_copy_buffer.find(v); it != output_copy_buffer.end()) {
      output_buffer[i] = it->second;
      continue;
    }
    use(v);
    Buffer ob;
    ob.region = Buffer::output;
    const DType dt = device_dtype(v->dtype());
    ob.bytes = checked_bytes(numel(static_shape(v)), dt, "value '" + v->name() + "'");
    ob.first = static_cast<int>(kernels.size());
    ob.last = ob.first;
    buffers.push_back(ob);
    output_buffer[i] = static_cast<int>(buffers.size()) - 1;
    output_copy_buffer[v] = output_buffer[i];
    result.debug_names.push_back({"<output copy>", v->name(), ""});
    Kernel k;
    k.debug_id = static_cast<uint32_t>(result.debug_names.size() - 1);
    k.fn = nullptr;
    k.copy_src = v;
    k.copy_dst_value = v;
    kernels.push_back(k);
  }

  // --- HBM plan ---------------------------------------------------------------------------------
  uint64_t cursor = 0;
  for (auto region : {Buffer::input, Buffer::output, Buffer::constant}) {
    for (Buffer& b : buffers) {
      if (b.region != region) continue;
      b.offset = cursor;
      cursor = align_up(cursor + std::max<uint64_t>(b.bytes, 1));
    }
  }
  const uint64_t scratch_base = cursor;
  std::vector<int> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].region == Buffer::scratch) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<int> placed;
  uint64_t scratch_end = scratch_base, unshared = 0;
  for (int id : order) {
    Buffer& b = buffers[id];
    const uint64_t size = align_up(std::max<uint64_t>(b.bytes, 1));
    unshared += size;
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (int o : placed) {
      const Buffer& c = buffers[o];
      if (c.first <= b.last && b.first <= c.last)
        busy.push_back({c.offset, c.offset + align_up(std::max<uint64_t>(c.bytes, 1))});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t off = scratch_base;
    for (const auto& [s, e] : busy) {
      if (off + size <= s) break;
      off = std::max(off, e);
    }
    b.offset = off;
    scratch_end = std::max(scratch_end, off + size);
    placed.push_back(id);
  }
  const uint64_t hbm_size = std::max<uint64_t>(scratch_end, kAlign);
  if (hbm_size > target.hbm_bytes_per_core)
    throw Error("the partition needs " + std::to_string(hbm_size) +
                " bytes of HBM (constants, inputs, outputs and scratch after reuse), but a " +
                std::string(target.name) + " NeuronCore has " +
                std::to_string(target.hbm_bytes_per_core) +
                ": expected a model (at these shapes) that fits one NeuronCore's HBM");
  for (auto& [v, vi] : ctx.values) vi.view.base = buffers[vi.buffer].offset;

  // --- bindings ---------------------------------------------------------------------------------
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input_buffer[i] < 0) continue;
    const ir::Value* v = inputs[i];
    const Buffer& b = buffers[input_buffer[i]];
    result.inputs.push_back(
        {v->name(), device_dtype(v->dtype()), static_shape(v), b.offset, b.bytes});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value* v = outputs[i];
    const Buffer& b = buffers[output_buffer[i]];
    result.outputs.push_back(
        {v->name(), device_dtype(v->dtype()), static_shape(v), b.offset, b.bytes});
  }
  std::string no_target;
  for (size_t c = 0; c < constant_buffers.size(); ++c) {
    const auto& [v, id] = constant_buffers[c];
    ConstantBinding cb;
    cb.name = v->name();
    for (const ir::GraphInput& gi : g.inputs())
      if (gi.value == v) cb.target = gi.target;
    cb.dtype = device_dtype(v->dtype());
    cb.shape = static_shape(v);
    cb.transposed = constant_transposed[c];
    cb.permutation = constant_permutation[c];
    cb.row_interleave = constant_interleave[c];
    cb.offset = buffers[id].offset;
    cb.data = constant_bytes(
        v, constant_synthetic[c] >= 0 ? &synthetic_values[constant_synthetic[c]] : nullptr,
        cb.transposed, cb.permutation, cb.row_interleave);
    result.constants.push_back(std::move(cb));
  }

  // --- lowering (parallel) and emission (sequential) --------------------------------------------
  std::vector<KernelCode> codes(kernels.size());
  std::vector<std::string> errors(kernels.size());
  std::vector<uint8_t> reordered(kernels.size(), 0);
  const device::CostModel cost(target);
  auto lower_one = [&](size_t i) {
    const Kernel& k = kernels[i];
    KernelBuilder kb(target, k.debug_id);
    kb.fused = k.fused;
    try {
      if (k.fn) {
        k.fn(kb, *k.node, ctx);
      } else {
        HbmView dst = HbmView::contiguous(device_dtype(k.copy_dst_value->dtype()),
                                          buffers[output_copy_buffer.at(k.copy_dst_value)].offset,
                                          static_shape(k.copy_dst_value));
        copy_kernel(kb, dst, ctx.view(k.copy_src));
      }
      codes[i] = kb.finish();
      if (opts.schedule) reordered[i] = schedule_kernel(codes[i].instructions, cost).reordered;
    } catch (const std::exception& e) {
      // Name the node when the lowering's message does not already start with it.
      std::string msg = e.what();
      if (k.node && msg.rfind("node '", 0) != 0) msg = k.node->describe() + ": " + msg;
      errors[i] = msg;
    }
  };
  if (opts.threads == 1) {
    for (size_t i = 0; i < kernels.size(); ++i) lower_one(i);
  } else {
    tbb::task_arena arena(opts.threads > 0 ? opts.threads : tbb::task_arena::automatic);
    arena.execute(
        [&] { tbb::parallel_for(size_t{0}, kernels.size(), [&](size_t i) { lower_one(i); }); });
  }
  for (size_t i = 0; i < kernels.size(); ++i)
    if (!errors[i].empty()) throw Error(errors[i]);

  ProgramEmitter emitter(target);
  uint32_t next_sbuf = 0;
  std::vector<uint32_t> next_region(codes.size(), 0);
  for (size_t i = codes.size(); i-- > 0;) {
    next_region[i] = next_sbuf;
    if (codes[i].sbuf_bytes > 0) next_sbuf = codes[i].sbuf_bytes;
  }
  for (size_t i = 0; i < codes.size(); ++i) {
    result.stats.flops += codes[i].flops;
    emitter.append(std::move(codes[i]), next_region[i]);
  }
  result.program = emitter.finish(hbm_size, opts.forward_stores, scratch_base,
                                  opts.schedule ? opts.schedule_windows : std::vector<size_t>{},
                                  opts.region_policies);

  CodegenStats& st = result.stats;
  for (int e = 0; e < device::kNumEngines; ++e) {
    st.instructions[e] = result.program.cores[0].streams[e].size();
    for (const auto& in : result.program.cores[0].streams[e])
      st.dma_transfers += std::holds_alternative<device::DmaCopy>(in.op);
  }
  st.semaphore_waits = emitter.waits();
  st.kernels = kernels.size();
  st.kernels_scheduled = static_cast<uint64_t>(std::count(reordered.begin(), reordered.end(), 1));
  st.program_scheduled = emitter.scheduled();
  st.hbm_bytes = hbm_size;
  st.hbm_scratch_bytes = scratch_end - scratch_base;
  st.hbm_scratch_unshared_bytes = unshared;
  st.sbuf_peak_bytes = emitter.sbuf_peak();
  st.psum_peak_bytes = emitter.psum_peak();
  st.loads_forwarded = emitter.forwarding().loads_forwarded;
  st.stores_elided = emitter.forwarding().stores_elided;
  st.dma_bytes_forwarded = emitter.forwarding().dma_bytes_saved;
  return result;
}

}  // namespace neuronc::codegen
