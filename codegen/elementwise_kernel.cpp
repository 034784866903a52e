// Element-wise kernels: one IR node becomes a short program of steps (activation on ScalarE,
// ALU ops on VectorE, selects), run tile by tile over the broadcast iteration space.
//
// Tiling: every operand is expanded to the output shape (broadcast dims get stride 0) and
// the dimensions are coalesced across all operands. The innermost dimension is the free axis
// (chunked to fit SBUF); the others are rows, 128 per tile, packed with row_tiles() so short
// dimensions still fill the partitions. An operand whose free stride is 0 is loaded as a
// [rows, 1] column and used as a per-partition scalar operand; a compile-time constant becomes
// an immediate. Loads and stores are double-buffered: the emitter lets tile i+1's loads run
// while tile i computes.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

#include "codegen/lowering.h"
#include "device/numerics.h"

namespace neuronc::codegen {
namespace {

using device::ActivationFunction;
using device::AluOp;
using device::DType;
using device::Engine;
using device::MemRef;

enum class ArgKind { input, reg, imm };
struct Arg {
  ArgKind kind = ArgKind::imm;
  int index = 0;
  double value = 0;
};
Arg imm(double v) {
  return {ArgKind::imm, 0, v};
}
Arg reg(int i) {
  return {ArgKind::reg, i, 0};
}

enum class StepKind { act, alu, select };
struct Step {
  StepKind kind = StepKind::alu;
  ActivationFunction fn = ActivationFunction::identity;
  float scale = 1, bias = 0;
  AluOp op = AluOp::add;
  Arg a, b, c;           // select: a ? b : c
  bool boolean = false;  // result is 0/1 (stored as u8)
};

struct EwProgram {
  std::vector<const ir::Value*> inputs;
  std::vector<Step> steps;
  std::unordered_map<const ir::Value*, Arg> fused;  // results of fused producers

  Arg operand(const PartitionContext& ctx, const ir::Value* v) {
    if (auto it = fused.find(v); it != fused.end()) return it->second;
    const ValueInfo& vi = ctx.info(v);
    if (vi.splat) return imm(*vi.splat);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v) return {ArgKind::input, static_cast<int>(i), 0};
    inputs.push_back(v);
    return {ArgKind::input, static_cast<int>(inputs.size()) - 1, 0};
  }
  Arg act(Arg a, ActivationFunction fn, float scale = 1, float bias = 0) {
    Step s;
    s.kind = StepKind::act;
    s.fn = fn;
    s.scale = scale;
    s.bias = bias;
    s.a = a;
    steps.push_back(s);
    return reg(static_cast<int>(steps.size()) - 1);
  }
  Arg alu(Arg a, AluOp op, Arg b) {
    Step s;
    s.kind = StepKind::alu;
    s.op = op;
    s.a = a;
    s.b = b;
    s.boolean = op >= AluOp::is_equal && op <= AluOp::logical_xor;
    steps.push_back(s);
    return reg(static_cast<int>(steps.size()) - 1);
  }
  Arg select(Arg cond, Arg if_true, Arg if_false) {
    Step s;
    s.kind = StepKind::select;
    s.a = cond;
    s.b = if_true;
    s.c = if_false;
    steps.push_back(s);
    return reg(static_cast<int>(steps.size()) - 1);
  }
};

AluOp compare_op(const std::string& name) {
  if (name == "eq") return AluOp::is_equal;
  if (name == "ne") return AluOp::not_equal;
  if (name == "gt") return AluOp::is_gt;
  if (name == "ge") return AluOp::is_ge;
  if (name == "lt") return AluOp::is_lt;
  return AluOp::is_le;
}

// The op's base name: "aten.add.Tensor" -> "add".
std::string base_name(const std::string& op) {
  const size_t a = op.find('.');
  const size_t b = op.find('.', a + 1);
  return op.substr(a + 1, b - a - 1);
}

const std::map<std::string, ActivationFunction>& unary_activations() {
  static const std::map<std::string, ActivationFunction> m = {
      {"relu", ActivationFunction::relu},
      {"silu", ActivationFunction::silu},
      {"sigmoid", ActivationFunction::sigmoid},
      {"tanh", ActivationFunction::tanh},
      {"exp", ActivationFunction::exp},
      {"log", ActivationFunction::log},
      {"sqrt", ActivationFunction::sqrt},
      {"rsqrt", ActivationFunction::rsqrt},
      {"reciprocal", ActivationFunction::reciprocal},
      {"square", ActivationFunction::square},
      {"abs", ActivationFunction::abs},
      {"sign", ActivationFunction::sign},
      {"sin", ActivationFunction::sin},
      {"cos", ActivationFunction::cos},
      {"erf", ActivationFunction::erf}};
  return m;
}

bool is_float_ir(ir::DType t) {
  return ir::is_floating(t);
}

// Builds the step program of node `n`; the last step's register is the result. Returns false
// when the op is not element-wise.
bool build(const ir::Node& n, const PartitionContext& ctx, EwProgram& p) {
  const std::string& op = n.op();
  const std::string base = base_name(op);
  const std::string overload = op.substr(op.rfind('.') + 1);
  auto in = [&](size_t i) { return p.operand(ctx, n.input(i)); };
  auto scalar = [&](const char* name, double d) { return scalar_attr(n, name, d); };
  if (auto it = unary_activations().find(base);
      it != unary_activations().end() && n.inputs().size() == 1 && overload == "default") {
    p.act(in(0), it->second);
    return true;
  }
  if (op == "aten.gelu.default") {
    const ir::Attribute* a = n.attr("approximate");
    const bool tanh =
        a && std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == "tanh";
    p.act(in(0), tanh ? ActivationFunction::gelu_tanh : ActivationFunction::gelu_erf);
    return true;
  }
  if (op == "aten.neg.default") {
    p.act(in(0), ActivationFunction::identity, -1.0f);
    return true;
  }
  if (op == "aten.relu6.default" || op == "aten.hardtanh.default" || op == "aten.clamp.default" ||
      op == "aten.clamp_min.default" || op == "aten.clamp_max.default") {
    double lo = -INFINITY, hi = INFINITY;
    if (op == "aten.relu6.default") lo = 0, hi = 6;
    if (op == "aten.hardtanh.default") lo = scalar("min_val", -1), hi = scalar("max_val", 1);
    if (op == "aten.clamp.default") {
      if (!n.attr_is_none("min")) lo = scalar("min", -INFINITY);
      if (!n.attr_is_none("max")) hi = scalar("max", INFINITY);
    }
    if (op == "aten.clamp_min.default") lo = scalar("min", -INFINITY);
    if (op == "aten.clamp_max.default") hi = scalar("max", INFINITY);
    Arg x = in(0);
    if (std::isfinite(lo)) x = p.alu(x, AluOp::max, imm(lo));
    if (std::isfinite(hi)) x = p.alu(x, AluOp::min, imm(hi));
    if (p.steps.empty()) p.act(x, ActivationFunction::identity);
    return true;
  }
  if (op == "aten.leaky_relu.default") {
    const double s = scalar("negative_slope", 0.01);
    Arg x = in(0);
    Arg sx = p.alu(x, AluOp::multiply, imm(s));
    p.alu(x, s <= 1 ? AluOp::max : AluOp::min, sx);
    return true;
  }
  if (op == "aten.hardsigmoid.default" || op == "aten.hardswish.default") {
    Arg x = in(0);
    Arg t = p.alu(x, AluOp::add, imm(3));
    t = p.alu(t, AluOp::max, imm(0));
    t = p.alu(t, AluOp::min, imm(6));
    t = p.alu(t, AluOp::multiply, imm(1.0 / 6.0));
    if (op == "aten.hardswish.default") p.alu(x, AluOp::multiply, t);
    return true;
  }
  if (base == "add" || base == "sub" || base == "rsub") {
    Arg a = in(0);
    Arg b = overload == "Tensor" ? in(1) : imm(scalar("other", 0));
    const double alpha = scalar("alpha", 1);
    if (alpha != 1)
      b = b.kind == ArgKind::imm ? imm(b.value * alpha) : p.alu(b, AluOp::multiply, imm(alpha));
    if (base == "add") p.alu(a, AluOp::add, b);
    if (base == "sub") p.alu(a, AluOp::subtract, b);
    if (base == "rsub") p.alu(b, AluOp::subtract, a);
    return true;
  }
  if (base == "mul" || base == "div" || base == "maximum" || base == "minimum") {
    Arg a = in(0);
    Arg b = overload == "Scalar" ? imm(scalar("other", 1)) : in(1);
    if (op == "aten.div.Tensor_mode" && !n.attr_is_none("rounding_mode"))
      fail(n, "codegen has no lowering for div with rounding_mode '" +
                  n.attr_string("rounding_mode") + "'");
    const AluOp o = base == "mul"       ? AluOp::multiply
                    : base == "div"     ? AluOp::divide
                    : base == "maximum" ? AluOp::max
                                        : AluOp::min;
    p.alu(a, o, b);
    return true;
  }
  if (op == "aten.pow.Tensor_Scalar") {
    const double e = scalar("exponent", 1);
    Arg x = in(0);
    if (e == 2)
      p.act(x, ActivationFunction::square);
    else if (e == 1)
      p.act(x, ActivationFunction::identity);
    else if (e == 0.5)
      p.act(x, ActivationFunction::sqrt);
    else if (e == -0.5)
      p.act(x, ActivationFunction::rsqrt);
    else if (e == -1)
      p.act(x, ActivationFunction::reciprocal);
    else if (e == 3)
      p.alu(p.act(x, ActivationFunction::square), AluOp::multiply, x);
    else
      p.alu(x, AluOp::pow, imm(e));
    return true;
  }
  if (op == "aten.pow.Tensor_Tensor") {
    p.alu(in(0), AluOp::pow, in(1));
    return true;
  }
  if (op == "aten.pow.Scalar") {
    p.alu(imm(scalar("self", 1)), AluOp::pow, in(0));
    return true;
  }
  if (base == "eq" || base == "ne" || base == "gt" || base == "ge" || base == "lt" ||
      base == "le") {
    Arg b = overload == "Scalar" ? imm(scalar("other", 0)) : in(1);
    p.alu(in(0), compare_op(base), b);
    return true;
  }
  if (op == "aten.logical_not.default" ||
      (op == "aten.bitwise_not.default" && n.input(0)->dtype() == ir::DType::boolean)) {
    p.alu(in(0), AluOp::is_equal, imm(0));
    return true;
  }
  if (base == "logical_and" || base == "logical_or" || base == "logical_xor" ||
      ((base == "bitwise_and" || base == "bitwise_or" || base == "__and__" || base == "__or__") &&
       n.output()->dtype() == ir::DType::boolean)) {
    const AluOp o = (base == "logical_or" || base == "bitwise_or" || base == "__or__")
                        ? AluOp::logical_or
                    : base == "logical_xor" ? AluOp::logical_xor
                                            : AluOp::logical_and;
    p.alu(in(0), o, in(1));
    return true;
  }
  if (op == "aten.isnan.default") {
    Arg x = in(0);
    p.alu(x, AluOp::not_equal, x);
    return true;
  }
  if (base == "where") {
    Arg c = in(0);
    Arg a = overload == "ScalarSelf" ? imm(scalar("self", 0)) : in(1);
    Arg b = overload == "ScalarOther"  ? imm(scalar("other", 0))
            : overload == "ScalarSelf" ? in(1)
                                       : in(2);
    p.select(c, a, b);
    return true;
  }
  if (base == "masked_fill") {
    Arg x = in(0);
    Arg m = in(1);
    Arg v = overload == "Scalar" ? imm(scalar("value", 0)) : in(2);
    p.select(m, v, x);
    return true;
  }
  if (op == "aten._to_copy.default" || op == "aten.type_as.default" || op == "aten.to.dtype" ||
      op == "aten.to.dtype_layout" || op == "aten.to.device") {
    const ir::DType from = n.input(0)->dtype(), to = n.output()->dtype();
    Arg x = in(0);
    if (to == ir::DType::boolean) {
      p.alu(x, AluOp::not_equal, imm(0));
    } else if (is_float_ir(from) && !is_float_ir(to)) {
      // PyTorch truncates toward zero; the engines round to nearest: subtract fmod(x, 1).
      Arg frac = p.alu(x, AluOp::mod, imm(1));
      p.alu(x, AluOp::subtract, frac);
    } else {
      p.act(x, ActivationFunction::identity);
    }
    return true;
  }
  if (op == "aten.fill.Tensor") {
    p.alu(in(0), AluOp::multiply, imm(0));
    p.alu(reg(0), AluOp::add, in(1));
    return true;
  }
  return false;
}

// A value during tile evaluation.
struct Val {
  bool is_imm = false;
  double imm = 0;
  bool col = false;  // [rows, 1] instead of [rows, F]
  MemRef m;
};

class TileEval {
 public:
  TileEval(KernelBuilder& kb, int64_t rows, int64_t F, std::vector<uint32_t> reg_off,
           std::vector<uint32_t> col_off, uint32_t bcast_off)
      : kb_(kb),
        rows_(rows),
        F_(F),
        reg_off_(std::move(reg_off)),
        col_off_(std::move(col_off)),
        bcast_off_(bcast_off) {}

  // Register tile for step i.
  MemRef reg_tile(size_t i, bool col, DType dt) const {
    return KernelBuilder::sb(col ? col_off_[i] : reg_off_[i], rows_, dt, col ? 1 : F_);
  }
  MemRef bcast_tile(DType dt) const { return KernelBuilder::sb(bcast_off_, rows_, dt, F_); }

  // Makes `v` a full tile (broadcasting a column or an immediate).
  Val full(const Val& v, MemRef scratch) {
    if (!v.is_imm && !v.col) return v;
    device::Memset ms;
    ms.dst = scratch;
    ms.value = v.is_imm ? v.imm : 0.0;
    kb_.emit(Engine::vector, ms);
    if (!v.is_imm) {
      device::TensorScalar ts;
      ts.dst = scratch;
      ts.src = scratch;
      ts.op0 = AluOp::add;
      ts.operand0 = v.m;
      kb_.emit(Engine::vector, ts);
    }
    Val r;
    r.m = scratch;
    return r;
  }

  Val act(const Step& s, const Val& a, const MemRef& dst) {
    device::Activation x;
    x.dst = dst;
    x.src = a.m;
    x.function = s.fn;
    x.scale = s.scale;
    if (s.bias != 0) x.bias = s.bias;
    kb_.emit(Engine::scalar, x);
    Val r;
    r.m = dst;
    r.col = a.col;
    return r;
  }

  Val alu(AluOp op, const Val& a, const Val& b, const MemRef& full_dst, const MemRef& col_dst) {
    Val r;
    if (a.is_imm && b.is_imm) {
      r.is_imm = true;
      // Folded with the device's own fp32 arithmetic (device/numerics.h), so the immediate is
      // what the engines would have computed.
      r.imm = device::alu(op, static_cast<float>(a.imm), static_cast<float>(b.imm));
      return r;
    }
    const bool col = (a.is_imm || a.col) && (b.is_imm || b.col);
    r.col = col;
    r.m = col ? col_dst : full_dst;
    if (!a.is_imm && !b.is_imm && a.col == b.col) {
      device::TensorTensor t;
      t.dst = r.m;
      t.in0 = a.m;
      t.in1 = b.m;
      t.op = op;
      kb_.emit(Engine::vector, t);
      return r;
    }
    // One side is a per-partition scalar (column or immediate): tensor_scalar on the other.
    const bool a_scalar = a.is_imm || (a.col && !b.col && !b.is_imm);
    const Val& tensor = a_scalar ? b : a;
    const Val& sc = a_scalar ? a : b;
    device::TensorScalar t;
    t.dst = r.m;
    t.src = tensor.m;
    t.op0 = op;
    if (sc.is_imm)
      t.operand0 = static_cast<float>(sc.imm);
    else
      t.operand0 = sc.m;
    t.reverse0 = a_scalar;
    kb_.emit(Engine::vector, t);
    return r;
  }

  // cond ? a : b, all full, into `dst` (f32).
  Val select(const Val& cond_in, const Val& a_in, const Val& b_in, const MemRef& dst,
             const MemRef& s1, const MemRef& s2, const MemRef& s3) {
    Val cond = full(cond_in, s1.dtype == DType::u8 ? s1 : s1);
    MemRef pred = cond.m;
    if (pred.dtype != DType::u8 && pred.dtype != DType::u16 && pred.dtype != DType::u32) {
      MemRef p8 = s1;
      p8.dtype = DType::u8;
      device::TensorScalar ts;  // pred = cond != 0
      ts.dst = p8;
      ts.src = pred;
      ts.op0 = AluOp::not_equal;
      ts.operand0 = 0.0f;
      kb_.emit(Engine::vector, ts);
      pred = p8;
    }
    Val r;
    r.m = dst;
    if (b_in.is_imm && !a_in.is_imm) {
      Val a = full(a_in, s2);
      device::Select s;
      s.dst = dst;
      s.predicate = pred;
      s.on_true = a.m;
      s.on_false = static_cast<float>(b_in.imm);
      kb_.emit(Engine::vector, s);
      return r;
    }
    if (a_in.is_imm && !b_in.is_imm) {
      MemRef np = s3;
      np.dtype = DType::u8;
      device::TensorScalar ts;  // not pred
      ts.dst = np;
      ts.src = pred;
      ts.op0 = AluOp::is_equal;
      ts.operand0 = 0.0f;
      kb_.emit(Engine::vector, ts);
      Val b = full(b_in, s2);
      device::Select s;
      s.dst = dst;
      s.predicate = np;
      s.on_true = b.m;
      s.on_false = static_cast<float>(a_in.imm);
      kb_.emit(Engine::vector, s);
      return r;
    }
    // dst = b; dst[pred] = a (same dtype as dst).
    Val b = full(b_in, dst);
    if (b.m != dst) {
      device::TensorCopy c;
      c.dst = dst;
      c.src = b.m;
      kb_.emit(Engine::vector, c);
    }
    Val a = full(a_in, s2);
    MemRef asrc = a.m;
    if (asrc.dtype != dst.dtype) {
      device::TensorCopy c;
      c.dst = s2;
      c.src = asrc;
      kb_.emit(Engine::vector, c);
      asrc = s2;
    }
    device::CopyPredicated cp;
    cp.dst = dst;
    cp.src = asrc;
    cp.predicate = pred;
    kb_.emit(Engine::vector, cp);
    return r;
  }

 private:
  KernelBuilder& kb_;
  int64_t rows_, F_;
  std::vector<uint32_t> reg_off_, col_off_;
  uint32_t bcast_off_;
};

void lower_elementwise(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  EwProgram prog;
  for (const ir::Node* f : fused_nodes(kb)) {
    if (!build(*f, ctx, prog)) fail(*f, "codegen has no element-wise lowering for " + f->op());
    prog.fused[f->output()] = reg(static_cast<int>(prog.steps.size()) - 1);
  }
  if (!build(n, ctx, prog)) fail(n, "codegen has no element-wise lowering for " + n.op());
  const std::vector<int64_t> out_shape = static_shape(n.output());
  const HbmView& out = ctx.view(n.output());

  // Iteration space: output shape; operand strides broadcast to it.
  std::vector<HbmView> views;
  views.push_back(out);
  for (const ir::Value* v : prog.inputs) views.push_back(ctx.view(v).expand(out_shape));
  std::vector<int64_t> sizes = out_shape;
  std::vector<std::vector<int64_t>> strides;
  for (const HbmView& v : views) strides.push_back(v.strides);
  coalesce(sizes, strides);

  // Free chunk: everything (inputs, registers, output, scratch) double-buffered in half the
  // target's partition (96 KiB on trn1).
  // Independent of how the rows are split below (an operand broadcast along the free
  // dimension is a column either way).
  const size_t nin = prog.inputs.size();
  const size_t nsteps = prog.steps.size();
  uint64_t per_elem = device::dtype_size(out.dtype) + 4 * (nsteps + 4);
  for (size_t i = 0; i < nin; ++i)
    if (!(strides[i + 1].back() == 0 && sizes.back() > 1))
      per_elem += device::dtype_size(views[i + 1].dtype);
  const int64_t f_cap = std::min<int64_t>(
      8192, static_cast<int64_t>(kb.target().sbuf_partition_bytes / 2 / (2 * per_elem)));

  // Fill the partitions when the rows are few and the free dimension long. When the free
  // dimension exceeds a chunk, split it into rows that fit one chunk if a divisor allows:
  // each partition then moves one contiguous run per DMA and a tile's rows lie back to back
  // in HBM (full-rate streaming, TRAINIUM.md §5.3) instead of a chunk of a long row.
  int64_t rows_total = 1;
  for (size_t d = 0; d + 1 < sizes.size(); ++d) rows_total *= sizes[d];
  const int64_t fd = sizes.back();
  const auto split = [&](int64_t a) {
    sizes.back() = fd / a;
    sizes.insert(sizes.end() - 1, a);
    for (auto& st : strides) {
      const int64_t inner = st.back();
      st.insert(st.end() - 1, inner * (fd / a));
    }
  };
  if (rows_total < 128 && fd >= 256) {
    const int64_t want = 128 / rows_total;
    bool done = false;
    if (fd > f_cap)
      for (int64_t a = want; a <= std::min<int64_t>(fd / 32, 1 << 16) && !done; ++a)
        if (fd % a == 0 && fd / a <= f_cap) {
          split(a);
          done = true;
        }
    for (int64_t a = want; a >= 2 && !done; --a)
      if (fd % a == 0 && fd / a >= 32) {
        split(a);
        done = true;
      }
  }
  const int64_t free_total = sizes.back();
  std::vector<int64_t> row_sizes(sizes.begin(), sizes.end() - 1);
  std::vector<std::vector<int64_t>> row_strides;
  std::vector<int64_t> free_stride;
  for (auto& s : strides) {
    row_strides.emplace_back(s.begin(), s.end() - 1);
    free_stride.push_back(s.back());
  }
  std::vector<bool> is_col(nin);
  for (size_t i = 0; i < nin; ++i) is_col[i] = free_stride[i + 1] == 0 && free_total > 1;
  const int64_t F = std::max<int64_t>(1, std::min<int64_t>(free_total, f_cap));

  struct Slot {
    std::vector<uint32_t> in_off, reg_off, col_off;
    uint32_t out_off = 0, bcast = 0, s1 = 0, s2 = 0, s3 = 0;
  };
  // Double-buffered only when there is a second chunk; select scratch only when selecting. A
  // smaller region lets the neighbouring kernels' regions sit beside this one (emitter.h).
  const std::vector<RowTile> tiles = row_tiles(row_sizes, row_strides, kb.target().partitions, 3);
  const int64_t chunks = static_cast<int64_t>(tiles.size()) * ((free_total + F - 1) / F);
  const bool selects = std::any_of(prog.steps.begin(), prog.steps.end(),
                                   [](const Step& st) { return st.kind == StepKind::select; });
  Slot slots[2];
  for (Slot& s : std::span(slots, chunks > 1 ? 2 : 1)) {
    for (size_t i = 0; i < nin; ++i)
      s.in_off.push_back(kb.alloc(is_col[i] ? 4 : F * device::dtype_size(views[i + 1].dtype),
                                  "element-wise input"));
    for (size_t i = 0; i < nsteps; ++i) {
      s.reg_off.push_back(kb.alloc(F * 4, "element-wise register"));
      s.col_off.push_back(kb.alloc(4, "element-wise register"));
    }
    s.out_off = kb.alloc(F * device::dtype_size(out.dtype), "element-wise output");
    s.bcast = kb.alloc(F * 4, "element-wise scratch");
    if (selects) {
      s.s1 = kb.alloc(F * 4, "element-wise scratch");
      s.s2 = kb.alloc(F * 4, "element-wise scratch");
      s.s3 = kb.alloc(F * 4, "element-wise scratch");
    }
  }

  int iter = 0;
  for (const RowTile& rt : tiles) {
    for (int64_t f0 = 0; f0 < free_total; f0 += F, ++iter) {
      const int64_t fc = std::min(F, free_total - f0);
      const Slot& s = slots[chunks > 1 ? iter % 2 : 0];
      const int64_t rows = rt.rows;
      auto hbm_ref = [&](size_t k, bool col) {
        std::vector<device::AccessLevel> lv;
        for (size_t d = 0; d < rt.inner_sizes.size(); ++d)
          lv.push_back({static_cast<int32_t>(rt.inner_strides[k][d]),
                        static_cast<uint32_t>(rt.inner_sizes[d])});
        if (!col) lv.push_back({static_cast<int32_t>(free_stride[k]), static_cast<uint32_t>(fc)});
        return KernelBuilder::hbm(views[k], rt.offset[k] + f0 * free_stride[k], rt.chunk,
                                  rt.split_stride[k], lv);
      };
      std::vector<Val> inputs(nin);
      for (size_t i = 0; i < nin; ++i) {
        Val v;
        v.col = is_col[i];
        v.m = KernelBuilder::sb(s.in_off[i], rows, views[i + 1].dtype, v.col ? 1 : fc);
        kb.dma(v.m, hbm_ref(i + 1, v.col), DmaRole::load);
        inputs[i] = v;
      }
      TileEval ev(kb, rows, fc, s.reg_off, s.col_off, s.bcast);
      const MemRef out_tile = KernelBuilder::sb(s.out_off, rows, out.dtype, fc);
      auto value = [&](const Arg& a, const std::vector<Val>& regs) {
        if (a.kind == ArgKind::imm) {
          Val v;
          v.is_imm = true;
          v.imm = a.value;
          return v;
        }
        return a.kind == ArgKind::input ? inputs[a.index] : regs[a.index];
      };
      std::vector<Val> regs(nsteps);
      bool wrote_out = false;
      for (size_t i = 0; i < nsteps; ++i) {
        const Step& st = prog.steps[i];
        const bool last = i + 1 == nsteps;
        const DType rdt = st.boolean ? DType::u8 : DType::f32;
        MemRef full_dst = ev.reg_tile(i, false, rdt);
        MemRef col_dst = ev.reg_tile(i, true, rdt);
        Val a = value(st.a, regs), b = value(st.b, regs);
        if (st.kind == StepKind::act) {
          if (a.is_imm) a = ev.full(a, ev.bcast_tile(DType::f32));
          const bool direct = last && !a.col;
          regs[i] = ev.act(st, a, direct ? out_tile : (a.col ? col_dst : full_dst));
          wrote_out = direct;
        } else if (st.kind == StepKind::alu) {
          const bool direct = last && !((a.is_imm || a.col) && (b.is_imm || b.col));
          regs[i] = ev.alu(st.op, a, b, direct ? out_tile : full_dst, col_dst);
          wrote_out = direct;
        } else {
          Val c = value(st.c, regs);
          regs[i] = ev.select(a, b, c, KernelBuilder::sb(s.reg_off[i], rows, DType::f32, fc),
                              KernelBuilder::sb(s.s1, rows, DType::f32, fc),
                              KernelBuilder::sb(s.s2, rows, DType::f32, fc),
                              KernelBuilder::sb(s.s3, rows, DType::f32, fc));
        }
      }
      if (!wrote_out) {
        Val r = ev.full(regs.back(), KernelBuilder::sb(s.bcast, rows, DType::f32, fc));
        device::TensorCopy c;
        c.dst = out_tile;
        c.src = r.m;
        kb.emit(Engine::scalar, c);
      }
      kb.dma(hbm_ref(0, false), out_tile, DmaRole::store);
    }
  }
}

}  // namespace

std::optional<ActivationFunction> epilogue_activation(const ir::Node& n) {
  const std::string& op = n.op();
  if (n.inputs().size() != 1) return std::nullopt;
  if (op == "aten._to_copy.default" && ir::is_floating(n.input(0)->dtype()) &&
      ir::is_floating(n.output()->dtype()))
    return ActivationFunction::identity;  // the epilogue stores in the new dtype
  if (op == "aten.relu.default") return ActivationFunction::relu;
  if (op == "aten.silu.default") return ActivationFunction::silu;
  if (op == "aten.sigmoid.default") return ActivationFunction::sigmoid;
  if (op == "aten.tanh.default") return ActivationFunction::tanh;
  if (op == "aten.gelu.default") {
    const ir::Attribute* a = n.attr("approximate");
    const bool tanh =
        a && std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == "tanh";
    return tanh ? ActivationFunction::gelu_tanh : ActivationFunction::gelu_erf;
  }
  return std::nullopt;
}

const Lowering* elementwise_lowering(const std::string& op) {
  static const std::set<std::string> kOps = [] {
    std::set<std::string> s;
    for (const auto& [k, v] : unary_activations()) s.insert("aten." + k + ".default");
    for (const char* o : {"aten.gelu.default",        "aten.neg.default",
                          "aten.relu6.default",       "aten.hardtanh.default",
                          "aten.clamp.default",       "aten.clamp_min.default",
                          "aten.clamp_max.default",   "aten.leaky_relu.default",
                          "aten.hardsigmoid.default", "aten.hardswish.default",
                          "aten.add.Tensor",          "aten.add.Scalar",
                          "aten.sub.Tensor",          "aten.sub.Scalar",
                          "aten.rsub.Tensor",         "aten.rsub.Scalar",
                          "aten.mul.Tensor",          "aten.mul.Scalar",
                          "aten.div.Tensor",          "aten.div.Scalar",
                          "aten.div.Tensor_mode",     "aten.maximum.default",
                          "aten.minimum.default",     "aten.pow.Tensor_Scalar",
                          "aten.pow.Tensor_Tensor",   "aten.pow.Scalar",
                          "aten.logical_not.default", "aten.bitwise_not.default",
                          "aten.logical_and.default", "aten.logical_or.default",
                          "aten.logical_xor.default", "aten.bitwise_and.Tensor",
                          "aten.bitwise_or.Tensor",   "aten.__and__.Tensor",
                          "aten.__or__.Tensor",       "aten.isnan.default",
                          "aten.where.self",          "aten.where.ScalarOther",
                          "aten.where.ScalarSelf",    "aten.masked_fill.Scalar",
                          "aten.masked_fill.Tensor",  "aten._to_copy.default",
                          "aten.type_as.default",     "aten.to.dtype",
                          "aten.to.dtype_layout",     "aten.to.device",
                          "aten.fill.Tensor"})
      s.insert(o);
    for (const char* c : {"eq", "ne", "gt", "ge", "lt", "le"}) {
      s.insert(std::string("aten.") + c + ".Tensor");
      s.insert(std::string("aten.") + c + ".Scalar");
    }
    return s;
  }();
  static constexpr Lowering kElementwise{
      &lower_elementwise,
      [](const ir::Node& n, const device::Target&) -> std::optional<std::string> {
        if (n.op() == "aten.div.Tensor_mode" && !n.attr_is_none("rounding_mode"))
          return "div with rounding_mode '" + n.attr_string("rounding_mode") + "' is not lowered";
        return std::nullopt;
      }};
  return kOps.count(op) ? &kElementwise : nullptr;
}

}  // namespace neuronc::codegen
