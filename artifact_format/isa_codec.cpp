// ISA <-> FlatBuffers (isa_codec.h). One encode and one decode case per opcode; the union
// member order of artifact.fbs is device::Opcode + 1.
#include "artifact_format/isa_codec.h"

#include <string>
#include <type_traits>

#include "artifact_format/dtype_codec.h"

namespace neuronc::artifact {
namespace {

namespace d = ::neuronc::device;
using flatbuffers::FlatBufferBuilder;

// device/isa.h grew an opcode: append it to artifact.fbs's Operation union and handle it here.
static_assert(std::variant_size_v<d::Operation> == 17);
static_assert(static_cast<int>(fb::Operation::MAX) == std::variant_size_v<d::Operation>);
using flatbuffers::Offset;
using std::to_string;

fb::MemRef enc(const d::MemRef& m) {
  std::array<fb::AccessLevel, 4> levels;
  for (int i = 0; i < 4; ++i) levels[i] = fb::AccessLevel(m.levels[i].stride, m.levels[i].count);
  return fb::MemRef(static_cast<fb::MemoryKind>(m.memory), to_fb_device_dtype(m.dtype),
                    m.partition_start, m.partition_count, m.num_levels, m.offset,
                    m.partition_stride, flatbuffers::span<const fb::AccessLevel, 4>(levels));
}

fb::Iota4 enc4(const std::array<int32_t, 4>& a) {
  return fb::Iota4(flatbuffers::span<const int32_t, 4>(a));
}

// Holds the encoded structs so the Create* calls can take their addresses.
struct Refs {
  fb::MemRef a, b, c, e, f;
};

template <typename T>
const fb::MemRef* opt_ref(const std::optional<T>& o, fb::MemRef& slot) {
  if (!o) return nullptr;
  slot = enc(*o);
  return &slot;
}

const fb::MemRef* scalar_ref(const d::ScalarOperand& s, fb::MemRef& slot) {
  if (const auto* m = std::get_if<d::MemRef>(&s)) {
    slot = enc(*m);
    return &slot;
  }
  return nullptr;
}

float scalar_imm(const d::ScalarOperand& s) {
  const float* f = std::get_if<float>(&s);
  return f ? *f : 0.0f;
}

std::pair<fb::Operation, Offset<void>> encode_op(FlatBufferBuilder& fbb, const d::Operation& op) {
  Refs r;
  return std::visit(
      [&](const auto& x) -> std::pair<fb::Operation, Offset<void>> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, d::MatMul>) {
          r.a = enc(x.dst), r.b = enc(x.stationary), r.c = enc(x.moving);
          return {fb::Operation::MatMul,
                  fb::CreateMatMul(fbb, &r.a, &r.b, &r.c, x.accumulate).Union()};
        } else if constexpr (std::is_same_v<T, d::Transpose>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          return {fb::Operation::Transpose, fb::CreateTranspose(fbb, &r.a, &r.b).Union()};
        } else if constexpr (std::is_same_v<T, d::Activation>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          const fb::MemRef* sr = scalar_ref(x.scale, r.c);
          const fb::MemRef* br = scalar_ref(x.bias, r.e);
          const fb::MemRef* acc = opt_ref(x.accumulate_dst, r.f);
          return {fb::Operation::Activation,
                  fb::CreateActivation(
                      fbb, &r.a, &r.b, static_cast<fb::ActivationFunction>(x.function),
                      sr ? 1.0f : scalar_imm(x.scale), sr, br ? 0.0f : scalar_imm(x.bias), br, acc)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::TensorTensor>) {
          r.a = enc(x.dst), r.b = enc(x.in0), r.c = enc(x.in1);
          return {
              fb::Operation::TensorTensor,
              fb::CreateTensorTensor(fbb, &r.a, &r.b, &r.c, static_cast<fb::AluOp>(x.op)).Union()};
        } else if constexpr (std::is_same_v<T, d::TensorScalar>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          const fb::MemRef* o0 = scalar_ref(x.operand0, r.c);
          const fb::MemRef* o1 = scalar_ref(x.operand1, r.e);
          return {fb::Operation::TensorScalar,
                  fb::CreateTensorScalar(fbb, &r.a, &r.b, static_cast<fb::AluOp>(x.op0),
                                         o0 ? 1.0f : scalar_imm(x.operand0), o0, x.reverse0,
                                         static_cast<fb::AluOp>(x.op1),
                                         o1 ? 0.0f : scalar_imm(x.operand1), o1, x.reverse1)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::TensorReduce>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          return {fb::Operation::TensorReduce,
                  fb::CreateTensorReduce(fbb, &r.a, &r.b, static_cast<fb::ReduceOp>(x.op),
                                         x.num_axes, x.negate)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::TensorCopy>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          return {fb::Operation::TensorCopy, fb::CreateTensorCopy(fbb, &r.a, &r.b).Union()};
        } else if constexpr (std::is_same_v<T, d::Memset>) {
          r.a = enc(x.dst);
          return {fb::Operation::Memset, fb::CreateMemset(fbb, &r.a, x.value).Union()};
        } else if constexpr (std::is_same_v<T, d::Iota>) {
          r.a = enc(x.dst);
          const fb::Iota4 p = enc4(x.pattern);
          return {fb::Operation::Iota,
                  fb::CreateIota(fbb, &r.a, x.offset, x.channel_multiplier, &p).Union()};
        } else if constexpr (std::is_same_v<T, d::AffineSelect>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          const fb::Iota4 p = enc4(x.pattern);
          return {fb::Operation::AffineSelect,
                  fb::CreateAffineSelect(fbb, &r.a, &r.b, x.offset, x.channel_multiplier, &p,
                                         static_cast<fb::CompareOp>(x.compare), x.on_false)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::CopyPredicated>) {
          r.a = enc(x.dst), r.b = enc(x.src), r.c = enc(x.predicate);
          return {fb::Operation::CopyPredicated,
                  fb::CreateCopyPredicated(fbb, &r.a, &r.b, &r.c, x.reverse).Union()};
        } else if constexpr (std::is_same_v<T, d::Select>) {
          r.a = enc(x.dst), r.b = enc(x.predicate), r.c = enc(x.on_true);
          const fb::MemRef* of = scalar_ref(x.on_false, r.e);
          return {fb::Operation::Select,
                  fb::CreateSelect(fbb, &r.a, &r.b, &r.c, of ? 0.0f : scalar_imm(x.on_false), of)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::LocalGather>) {
          r.a = enc(x.dst), r.b = enc(x.src), r.c = enc(x.index);
          return {fb::Operation::LocalGather,
                  fb::CreateLocalGather(fbb, &r.a, &r.b, &r.c, x.elements_per_index,
                                        x.num_valid_indices)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::DmaCopy>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          return {fb::Operation::DmaCopy,
                  fb::CreateDmaCopy(fbb, &r.a, &r.b, x.queue, opt_ref(x.row_index, r.c),
                                    x.row_index ? x.table_rows : 0)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::Collective>) {
          r.a = enc(x.dst), r.b = enc(x.src);
          return {fb::Operation::Collective,
                  fb::CreateCollective(fbb, static_cast<fb::CollectiveKind>(x.kind),
                                       static_cast<fb::ReduceOp>(x.op), &r.a, &r.b)
                      .Union()};
        } else if constexpr (std::is_same_v<T, d::Nop>) {
          return {fb::Operation::Nop, fb::CreateNop(fbb).Union()};
        } else {
          static_assert(std::is_same_v<T, d::TensorTensorScan>);
          r.a = enc(x.dst), r.b = enc(x.in0), r.c = enc(x.in1);
          return {fb::Operation::TensorTensorScan,
                  fb::CreateTensorTensorScan(fbb, &r.a, &r.b, &r.c, x.initial,
                                             static_cast<fb::AluOp>(x.op0),
                                             static_cast<fb::AluOp>(x.op1))
                      .Union()};
        }
      },
      op);
}

// ---------------------------------------------------------------------------------------------
// Decoding.

Status bad(const std::string& m) {
  return Status(StatusCode::out_of_range, m);
}

template <typename E>
Status check_enum(E v, int count, const char* what) {
  const int i = static_cast<int>(v);
  if (i >= count)
    return bad(std::string(what) + " " + to_string(i) + " is unknown: expected 0.." +
               to_string(count - 1));
  return Status::ok();
}

Result<d::MemRef> dec(const fb::MemRef* m, const char* what) {
  if (!m) return bad(std::string("operand '") + what + "' is missing");
  NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(m->memory(), 3, "memory kind").with_context(what));
  const std::optional<d::DType> dtype = from_fb_device_dtype(m->dtype());
  if (!dtype)
    return check_enum(m->dtype(), static_cast<int>(kDeviceDTypes.size()), "device dtype")
        .with_context(what);
  if (m->num_levels() < 1 || m->num_levels() > 4)
    return bad(std::string(what) + ": " + to_string(m->num_levels()) +
               " access-pattern levels, expected 1 to 4");
  d::MemRef r;
  r.memory = static_cast<d::MemoryKind>(m->memory());
  r.dtype = *dtype;
  r.partition_start = m->partition_start();
  r.partition_count = m->partition_count();
  r.num_levels = m->num_levels();
  r.offset = m->offset();
  r.partition_stride = m->partition_stride();
  for (int i = 0; i < 4; ++i) {
    const fb::AccessLevel* l = m->levels()->Get(i);
    r.levels[i] = {l->stride(), l->count()};
  }
  return r;
}

Result<d::ScalarOperand> dec_scalar(float imm, const fb::MemRef* ref, const char* what) {
  if (!ref) return d::ScalarOperand(imm);
  NEURONC_ARTIFACT_ASSIGN_OR_RETURN(d::MemRef m, dec(ref, what));
  return d::ScalarOperand(m);
}

std::array<int32_t, 4> dec4(const fb::Iota4* p) {
  std::array<int32_t, 4> a{};
  if (p)
    for (int i = 0; i < 4; ++i) a[i] = p->v()->Get(i);
  return a;
}

#define DEC(lhs, expr, name) NEURONC_ARTIFACT_ASSIGN_OR_RETURN(lhs, dec(expr, name))

Result<d::Operation> decode_op(const fb::Instruction& in) {
  const auto t = in.op_type();
  if (t == fb::Operation::NONE || in.op() == nullptr) return bad("instruction has no operation");
  switch (t) {
    case fb::Operation::MatMul: {
      const auto* x = in.op_as_MatMul();
      d::MatMul o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.stationary, x->stationary(), "stationary");
      DEC(o.moving, x->moving(), "moving");
      o.accumulate = x->accumulate();
      return d::Operation(o);
    }
    case fb::Operation::Transpose: {
      const auto* x = in.op_as_Transpose();
      d::Transpose o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      return d::Operation(o);
    }
    case fb::Operation::Activation: {
      const auto* x = in.op_as_Activation();
      d::Activation o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->function(), 18, "activation function"));
      o.function = static_cast<d::ActivationFunction>(x->function());
      NEURONC_ARTIFACT_ASSIGN_OR_RETURN(o.scale, dec_scalar(x->scale(), x->scale_ref(), "scale"));
      NEURONC_ARTIFACT_ASSIGN_OR_RETURN(o.bias, dec_scalar(x->bias(), x->bias_ref(), "bias"));
      if (x->accumulate_dst()) {
        DEC(d::MemRef acc, x->accumulate_dst(), "accumulate_dst");
        o.accumulate_dst = acc;
      }
      return d::Operation(o);
    }
    case fb::Operation::TensorTensor: {
      const auto* x = in.op_as_TensorTensor();
      d::TensorTensor o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.in0, x->in0(), "in0");
      DEC(o.in1, x->in1(), "in1");
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op(), 24, "alu op"));
      o.op = static_cast<d::AluOp>(x->op());
      return d::Operation(o);
    }
    case fb::Operation::TensorScalar: {
      const auto* x = in.op_as_TensorScalar();
      d::TensorScalar o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op0(), 24, "alu op0"));
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op1(), 24, "alu op1"));
      o.op0 = static_cast<d::AluOp>(x->op0());
      o.op1 = static_cast<d::AluOp>(x->op1());
      NEURONC_ARTIFACT_ASSIGN_OR_RETURN(o.operand0,
                                        dec_scalar(x->operand0(), x->operand0_ref(), "operand0"));
      NEURONC_ARTIFACT_ASSIGN_OR_RETURN(o.operand1,
                                        dec_scalar(x->operand1(), x->operand1_ref(), "operand1"));
      o.reverse0 = x->reverse0();
      o.reverse1 = x->reverse1();
      return d::Operation(o);
    }
    case fb::Operation::TensorReduce: {
      const auto* x = in.op_as_TensorReduce();
      d::TensorReduce o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op(), 3, "reduce op"));
      o.op = static_cast<d::ReduceOp>(x->op());
      o.num_axes = x->num_axes();
      o.negate = x->negate();
      return d::Operation(o);
    }
    case fb::Operation::TensorCopy: {
      const auto* x = in.op_as_TensorCopy();
      d::TensorCopy o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      return d::Operation(o);
    }
    case fb::Operation::Memset: {
      const auto* x = in.op_as_Memset();
      d::Memset o;
      DEC(o.dst, x->dst(), "dst");
      o.value = x->value();
      return d::Operation(o);
    }
    case fb::Operation::Iota: {
      const auto* x = in.op_as_Iota();
      d::Iota o;
      DEC(o.dst, x->dst(), "dst");
      o.offset = x->offset();
      o.channel_multiplier = x->channel_multiplier();
      o.pattern = dec4(x->pattern());
      return d::Operation(o);
    }
    case fb::Operation::AffineSelect: {
      const auto* x = in.op_as_AffineSelect();
      d::AffineSelect o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      o.offset = x->offset();
      o.channel_multiplier = x->channel_multiplier();
      o.pattern = dec4(x->pattern());
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->compare(), 6, "compare op"));
      o.compare = static_cast<d::CompareOp>(x->compare());
      o.on_false = x->on_false();
      return d::Operation(o);
    }
    case fb::Operation::CopyPredicated: {
      const auto* x = in.op_as_CopyPredicated();
      d::CopyPredicated o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      DEC(o.predicate, x->predicate(), "predicate");
      o.reverse = x->reverse();
      return d::Operation(o);
    }
    case fb::Operation::Select: {
      const auto* x = in.op_as_Select();
      d::Select o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.predicate, x->predicate(), "predicate");
      DEC(o.on_true, x->on_true(), "on_true");
      NEURONC_ARTIFACT_ASSIGN_OR_RETURN(o.on_false,
                                        dec_scalar(x->on_false(), x->on_false_ref(), "on_false"));
      return d::Operation(o);
    }
    case fb::Operation::LocalGather: {
      const auto* x = in.op_as_LocalGather();
      d::LocalGather o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      DEC(o.index, x->index(), "index");
      o.elements_per_index = x->elements_per_index();
      o.num_valid_indices = x->num_valid_indices();
      return d::Operation(o);
    }
    case fb::Operation::DmaCopy: {
      const auto* x = in.op_as_DmaCopy();
      d::DmaCopy o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      if (x->queue() > 15)
        return bad("dma queue " + to_string(x->queue()) + " is out of range: expected 0..15");
      o.queue = x->queue();
      if (x->row_index()) {
        NEURONC_ARTIFACT_ASSIGN_OR_RETURN(o.row_index, dec(x->row_index(), "row_index"));
        o.table_rows = x->table_rows();
      } else if (x->table_rows() != 0) {
        return bad("dma_copy has " + to_string(x->table_rows()) + " table rows but no row_index");
      }
      return d::Operation(o);
    }
    case fb::Operation::Collective: {
      const auto* x = in.op_as_Collective();
      d::Collective o;
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->kind(), 3, "collective kind"));
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op(), 3, "reduce op"));
      o.kind = static_cast<d::CollectiveKind>(x->kind());
      o.op = static_cast<d::ReduceOp>(x->op());
      DEC(o.dst, x->dst(), "dst");
      DEC(o.src, x->src(), "src");
      return d::Operation(o);
    }
    case fb::Operation::Nop:
      return d::Operation(d::Nop{});
    case fb::Operation::TensorTensorScan: {
      const auto* x = in.op_as_TensorTensorScan();
      d::TensorTensorScan o;
      DEC(o.dst, x->dst(), "dst");
      DEC(o.in0, x->in0(), "in0");
      DEC(o.in1, x->in1(), "in1");
      o.initial = x->initial();
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op0(), 24, "alu op0"));
      NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(x->op1(), 24, "alu op1"));
      o.op0 = static_cast<d::AluOp>(x->op0());
      o.op1 = static_cast<d::AluOp>(x->op1());
      return d::Operation(o);
    }
    default:
      return Status(StatusCode::unimplemented,
                    "opcode " + to_string(static_cast<int>(t) - 1) +
                        " is unknown to this loader: expected 0.." +
                        to_string(static_cast<int>(fb::Operation::MAX) - 1));
  }
}

#undef DEC

}  // namespace

Offset<fb::Program> encode_program(FlatBufferBuilder& fbb, const DeviceProgram& p) {
  std::vector<Offset<fb::CoreProgram>> cores;
  for (const d::CoreProgram& core : p.program.cores) {
    std::vector<Offset<fb::Stream>> streams;
    for (int e = 0; e < d::kNumEngines; ++e) {
      const auto& s = core.streams[e];
      if (s.empty()) continue;
      std::vector<Offset<fb::Instruction>> insts;
      insts.reserve(s.size());
      for (const d::Instruction& in : s) {
        auto [type, op] = encode_op(fbb, in.op);
        std::vector<fb::SemaphoreWait> waits;
        for (const auto& w : in.waits) waits.emplace_back(w.semaphore, w.value);
        std::vector<fb::SemaphoreSignal> sigs;
        for (const auto& g : in.signals) sigs.emplace_back(g.semaphore, g.core, g.increment);
        insts.push_back(fb::CreateInstruction(
            fbb, type, op, waits.empty() ? 0 : fbb.CreateVectorOfStructs(waits),
            sigs.empty() ? 0 : fbb.CreateVectorOfStructs(sigs), in.debug_id));
      }
      streams.push_back(fb::CreateStream(fbb, static_cast<fb::Engine>(e), fbb.CreateVector(insts)));
    }
    cores.push_back(fb::CreateCoreProgram(fbb, fbb.CreateVector(streams)));
  }
  return fb::CreateProgram(fbb, fbb.CreateString(p.name), fbb.CreateVector(cores),
                           p.program.num_semaphores, p.program.hbm_size, p.sbuf_peak_bytes,
                           p.psum_peak_bytes);
}

Result<DeviceProgram> decode_program(const fb::Program& p) {
  DeviceProgram out;
  if (p.name()) out.name = p.name()->str();
  out.program.num_semaphores = p.num_semaphores();
  out.program.hbm_size = p.hbm_size();
  out.sbuf_peak_bytes = p.sbuf_peak_bytes();
  out.psum_peak_bytes = p.psum_peak_bytes();
  if (!p.cores()) return bad("program has no core list");
  out.program.cores.resize(p.cores()->size());
  for (uint32_t c = 0; c < p.cores()->size(); ++c) {
    const fb::CoreProgram* core = p.cores()->Get(c);
    if (!core->streams()) continue;
    for (uint32_t s = 0; s < core->streams()->size(); ++s) {
      const fb::Stream* st = core->streams()->Get(s);
      const std::string where = "core " + to_string(c) + " stream " + to_string(s);
      const int e = static_cast<int>(st->engine());
      if (e >= d::kNumEngines)
        return bad(where + ": engine " + to_string(e) + " is unknown: expected 0.." +
                   to_string(d::kNumEngines - 1));
      auto& dst = out.program.cores[c].streams[e];
      if (!dst.empty()) return bad(where + ": a second stream for engine " + to_string(e));
      if (!st->instructions()) continue;
      dst.reserve(st->instructions()->size());
      for (uint32_t i = 0; i < st->instructions()->size(); ++i) {
        const fb::Instruction* in = st->instructions()->Get(i);
        const std::string at = "core " + to_string(c) + " " +
                               std::string(d::engine_name(static_cast<d::Engine>(e))) + "[" +
                               to_string(i) + "]";
        auto op = decode_op(*in);
        if (!op) return op.status().with_context(at);
        d::Instruction inst;
        inst.op = std::move(op).value();
        if (in->waits())
          for (const fb::SemaphoreWait* w : *in->waits())
            inst.waits.push_back({w->semaphore(), w->value()});
        if (in->signals())
          for (const fb::SemaphoreSignal* g : *in->signals())
            inst.signals.push_back({g->semaphore(), g->increment(), g->core()});
        inst.debug_id = in->debug_id();
        dst.push_back(std::move(inst));
      }
    }
  }
  return out;
}

}  // namespace neuronc::artifact
