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
#include "codegen/hbm_plan.h"
#include "codegen/kernel_formation.h"
#include "codegen/lowering.h"
#include "codegen/scheduler.h"
#include "codegen/view_lowering.h"
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

using Buffer = HbmBuffer;

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
  const PartitionScope scope(nodes, outputs);

  // Weights stored transposed: 2-D constants whose every use is a linear weight or a
  // permute([1, 0]) (which then reads them contiguously).
  auto store_transposed = [&](const ir::Value* v) {
    if (!opts.transpose_matmul_weights || v->shape().size() != 2 || scope.is_output(v))
      return false;
    if (!v->has_uses()) return false;
    for (const ir::Use& u : v->uses()) {
      if (!scope.contains(u.node)) return false;
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
    if ((r != 3 && r != 4) || scope.is_output(v) || !v->has_uses()) return {};
    for (const ir::Use& u : v->uses()) {
      if (!scope.contains(u.node) || !conv_lowering(u.node->op()) || u.operand != 1) return {};
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

  // --- kernel formation --------------------------------------------------------------------------
  KernelFormation formation = form_kernels(scope, target, opts);
  ctx.read_through = formation.read_through;
  const auto& cat_slot = formation.cat_slot;
  std::unordered_map<const ir::Node*, int> cat_buffer;  // created at its first aliased producer
  // --- nodes: views, constants, kernels -------------------------------------------------------
  std::vector<Kernel> kernels;
  // The buffer of cat node `cat`, created by the first kernel writing into it.
  auto cat_buffer_of = [&](const ir::Node* cat, int first) {
    if (auto it = cat_buffer.find(cat); it != cat_buffer.end()) return it->second;
    const ir::Value* v = cat->output();
    Buffer b;
    b.region = scope.is_output(v) ? Buffer::output : Buffer::scratch;
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
      if (v && !ctx.values.count(v) && !(v->producer() && formation.absorbed(v->producer())) &&
          !ctx.read_through.count(v))
        fail(n, "operand '" + v->name() + "' is neither a partition input nor defined earlier");

    // A dtype conversion of a compile-time constant (auto-cast weights) is done now: the
    // constant segment holds the converted tensor.
    if ((op == "aten._to_copy.default" || op == "aten.to.dtype") &&
        device_dtype(n.output()->dtype()) != device_dtype(n.input(0)->dtype()) &&
        ctx.values.count(n.input(0)) &&
        ctx.constant_buffers.count(ctx.values.at(n.input(0)).buffer) &&
        ir::is_floating(n.output()->dtype()) && !formation.absorbed(&n)) {
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
    if (is_view_node(n)) {
      const ValueInfo& in = ctx.info(n.input(0));
      if (std::optional<std::vector<HbmView>> views = lower_view(n, in.view)) {
        for (size_t k = 0; k < n.outputs().size(); ++k) {
          ValueInfo vi = in;
          vi.view = (*views)[k];
          ctx.values[n.output(k)] = vi;
        }
        continue;
      }  // else a materialising kernel below
    }

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
    formation.settle_matmul_group(n, ctx);
    if (formation.absorbed(&n)) continue;              // computed inside its consumer's kernel
    if (ctx.read_through.count(n.output())) continue;  // converted by the consuming matmul
    const Lowering* lowering = find_lowering(op);
    if (!lowering && is_alias_op(op)) lowering = data_movement_lowering("<materialize>");
    if (!lowering) fail(n, "codegen has no lowering for " + op);
    LowerFn fn = lowering->lower;
    KernelNodes group = formation.kernel_at(&n);
    if (group.root != &n) fn = find_lowering(group.root->op())->lower;
    Kernel kernel{fn,      group.root, static_cast<uint32_t>(ni), std::move(group.fused),
                  nullptr, nullptr};
    std::unordered_map<const ir::Value*, bool> internal;
    for (const ir::Node* g2 : group.members)
      if (g2 != &n) internal[g2->output()] = true;
    for (const ir::Node* g2 : group.members)
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
      b.region = scope.is_output(v) ? Buffer::output : Buffer::scratch;
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
          b.region == Buffer::scratch && v->uses().size() == 1 && scope.contains(v->uses()[0].node))
        if (auto perm = view_permutation(*v->uses()[0].node, vi.view.rank()))
          vi.view = layout_contiguous_under(dt, vi.view.shape, *perm);
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
  const HbmPlan plan = plan_hbm(buffers, target);
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
  result.program = emitter.finish(plan.size, opts.forward_stores, plan.scratch_base,
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
  st.hbm_bytes = plan.size;
  st.hbm_scratch_bytes = plan.scratch_end - plan.scratch_base;
  st.hbm_scratch_unshared_bytes = plan.scratch_unshared;
  st.sbuf_peak_bytes = emitter.sbuf_peak();
  st.psum_peak_bytes = emitter.psum_peak();
  st.loads_forwarded = emitter.forwarding().loads_forwarded;
  st.stores_elided = emitter.forwarding().stores_elided;
  st.dma_bytes_forwarded = emitter.forwarding().dma_bytes_saved;
  return result;
}

}  // namespace neuronc::codegen
