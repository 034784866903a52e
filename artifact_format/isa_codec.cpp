// ISA <-> FlatBuffers (isa_codec.h), derived from the field schema of device/isa_schema.h. An
// instruction encodes through the generated Create<Op> with one argument per schema field (a
// ScalarOperand gives two: `<name>` and `<name>_ref`), so the builder sees the calls flatc
// orders; it decodes field by field from the table's vtable slots (schema field N, counting a
// ScalarOperand twice, is slot N at vtable offset 4 + 2N). The static_asserts below hold the
// schema and the device enumerations to the generated code.
#include "artifact_format/isa_codec.h"

#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "artifact_format/dtype_codec.h"
#include "device/isa_schema.h"
#include "device/replicate.h"

namespace neuronc::artifact {
namespace {

namespace d = ::neuronc::device;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
using std::to_string;

// ---------------------------------------------------------------------------------------------
// The device enumerations and their artifact.fbs mirrors: same values, both dense from 0 (the
// names are compared by tests/artifact_format/enum_mirror_test.cpp).
using EnumMirrors =
    std::tuple<std::pair<d::MemoryKind, fb::MemoryKind>, std::pair<d::Engine, fb::Engine>,
               std::pair<d::AluOp, fb::AluOp>,
               std::pair<d::ActivationFunction, fb::ActivationFunction>,
               std::pair<d::ReduceOp, fb::ReduceOp>, std::pair<d::CompareOp, fb::CompareOp>,
               std::pair<d::CollectiveKind, fb::CollectiveKind>>;

// The artifact.fbs mirror of device enumeration E.
template <class E, class List = EnumMirrors>
struct FbEnumOf;
template <class E, class F, class... Rest>
struct FbEnumOf<E, std::tuple<std::pair<E, F>, Rest...>> {
  using type = F;
};
template <class E, class P, class... Rest>
struct FbEnumOf<E, std::tuple<P, Rest...>> : FbEnumOf<E, std::tuple<Rest...>> {};
template <class E>
using FbEnum = typename FbEnumOf<E>::type;

template <class... P>
constexpr bool enums_mirror(std::tuple<P...>*) {
  return (
      (static_cast<int>(P::second_type::MIN) == 0 &&
       static_cast<int>(P::second_type::MAX) + 1 == d::EnumInfo<typename P::first_type>::count &&
       sizeof(typename P::second_type) == sizeof(typename P::first_type)) &&
      ...);
}
static_assert(enums_mirror(static_cast<EnumMirrors*>(nullptr)),
              "a device/isa.h enumeration and its artifact.fbs mirror have different counts");

template <class E>
FbEnum<E> to_fb(E v) {
  return static_cast<FbEnum<E>>(v);
}

// ---------------------------------------------------------------------------------------------
// The opcodes: the Operation union lists the generated tables in device::Opcode order after
// NONE, and kCreate lists their Create functions in the same order.
constexpr auto kCreate =
    std::tuple{&fb::CreateMatMul,       &fb::CreateTranspose,       &fb::CreateActivation,
               &fb::CreateTensorTensor, &fb::CreateTensorScalar,    &fb::CreateTensorReduce,
               &fb::CreateTensorCopy,   &fb::CreateMemset,          &fb::CreateIota,
               &fb::CreateAffineSelect, &fb::CreateCopyPredicated,  &fb::CreateSelect,
               &fb::CreateLocalGather,  &fb::CreateDmaCopy,         &fb::CreateCollective,
               &fb::CreateNop,          &fb::CreateTensorTensorScan};
constexpr size_t kNumOpcodes = std::variant_size_v<d::Operation>;
static_assert(std::tuple_size_v<decltype(kCreate)> == kNumOpcodes,
              "device/isa.h grew an opcode: append it to artifact.fbs's Operation union and to "
              "kCreate");
static_assert(static_cast<size_t>(fb::Operation::MAX) == kNumOpcodes);

// A generated Create function: the table it builds and its parameters after the builder.
template <class F>
struct Creator;
template <class T, class... A>
struct Creator<Offset<T> (*)(FlatBufferBuilder&, A...)> {
  using Table = T;
  using Params = std::tuple<A...>;
};

// The parameters of Create<Op> that a schema field stands for.
template <class M>
struct WireOf {
  using type = std::tuple<M>;
};
template <>
struct WireOf<d::MemRef> {
  using type = std::tuple<const fb::MemRef*>;
};
template <>
struct WireOf<std::optional<d::MemRef>> {
  using type = std::tuple<const fb::MemRef*>;
};
template <>
struct WireOf<d::ScalarOperand> {
  using type = std::tuple<float, const fb::MemRef*>;
};
template <>
struct WireOf<std::array<int32_t, 4>> {
  using type = std::tuple<const fb::Iota4*>;
};
template <class M>
requires std::is_enum_v<M>
struct WireOf<M> {
  using type = std::tuple<FbEnum<M>>;
};

template <class Schema>
struct WireOfSchema;
template <class... Fs>
struct WireOfSchema<std::tuple<Fs...>> {
  using type =
      decltype(std::tuple_cat(std::declval<typename WireOf<typename Fs::Member>::type>()...));
};
template <class T>
using Wire = typename WireOfSchema<std::remove_const_t<decltype(d::kSchema<T>)>>::type;

// Opcode I's schema against its generated table: the union member, and Create's parameters
// (count, order and type: MemRef, float, each enum, integer width) are the schema's fields.
template <size_t I>
constexpr bool schema_matches_table() {
  using T = std::variant_alternative_t<I, d::Operation>;
  using C = Creator<std::remove_const_t<std::tuple_element_t<I, decltype(kCreate)>>>;
  return fb::OperationTraits<typename C::Table>::enum_value == static_cast<fb::Operation>(I + 1) &&
         std::is_same_v<Wire<T>, typename C::Params>;
}
template <size_t... I>
constexpr bool every_schema_matches(std::index_sequence<I...>) {
  return (schema_matches_table<I>() && ...);
}
static_assert(every_schema_matches(std::make_index_sequence<kNumOpcodes>{}),
              "device/isa_schema.h and artifact.fbs list different fields for an instruction");

// ---------------------------------------------------------------------------------------------
// Encoding.

fb::MemRef enc(const d::MemRef& m) {
  std::array<fb::AccessLevel, 4> levels;
  for (int i = 0; i < 4; ++i) levels[i] = fb::AccessLevel(m.levels[i].stride, m.levels[i].count);
  return fb::MemRef(to_fb(m.memory), to_fb_device_dtype(m.dtype), m.partition_start,
                    m.partition_count, m.num_levels, m.offset, m.partition_stride,
                    flatbuffers::span<const fb::AccessLevel, 4>(levels));
}

// Holds the encoded structs of one instruction so Create<Op> can take their addresses.
struct Structs {
  std::array<fb::MemRef, 8> refs;
  size_t num_refs = 0;
  std::array<fb::Iota4, 2> iotas;
  size_t num_iotas = 0;

  const fb::MemRef* put(const d::MemRef& m) { return &(refs.at(num_refs++) = enc(m)); }
  const fb::Iota4* put(const std::array<int32_t, 4>& a) {
    return &(iotas.at(num_iotas++) = fb::Iota4(flatbuffers::span<const int32_t, 4>(a)));
  }
};

// The Create<Op> arguments of one field (Wire<T>).
template <class T, class M>
auto wire(const d::Field<T, M>& f, const T& x, Structs& s) {
  const M& v = x.*f.member;
  if constexpr (std::is_same_v<M, d::MemRef> || std::is_same_v<M, std::array<int32_t, 4>>) {
    return std::tuple{s.put(v)};
  } else if constexpr (std::is_same_v<M, std::optional<d::MemRef>>) {
    const fb::MemRef* p = nullptr;
    if (v) p = s.put(*v);
    return std::tuple{p};
  } else if constexpr (std::is_same_v<M, d::ScalarOperand>) {
    // A vector operand leaves the immediate at its default, so the writer omits it.
    if (const auto* m = std::get_if<d::MemRef>(&v))
      return std::tuple{std::get<float>(f.wire_default), s.put(*m)};
    return std::tuple{std::get<float>(v), static_cast<const fb::MemRef*>(nullptr)};
  } else if constexpr (std::is_enum_v<M>) {
    return std::tuple{to_fb(v)};
  } else {
    return std::tuple{v};
  }
}

// What the writer stores of an instruction: a direct DMA stores no table rows.
template <class T>
T canonical(const T& x) {
  return x;
}
d::DmaCopy canonical(const d::DmaCopy& x) {
  d::DmaCopy c = x;
  if (!c.row_index) {
    c.table_rows = 0;
    c.scatter = false;
  }
  return c;
}

// The position of instruction struct T in d::Operation (its opcode).
template <class T, size_t I = 0>
constexpr size_t opcode_index() {
  if constexpr (std::is_same_v<T, std::variant_alternative_t<I, d::Operation>>)
    return I;
  else
    return opcode_index<T, I + 1>();
}

template <class T>
std::pair<fb::Operation, Offset<void>> encode_as(FlatBufferBuilder& fbb, const T& op) {
  constexpr size_t kIndex = opcode_index<T>();
  const T x = canonical(op);
  Structs s;
  const auto args =
      std::apply([&](const auto&... f) { return std::tuple_cat(wire(f, x, s)...); }, d::kSchema<T>);
  const auto create = std::get<kIndex>(kCreate);
  const Offset<void> table =
      std::apply([&](const auto&... a) { return create(fbb, a...).Union(); }, args);
  return {static_cast<fb::Operation>(kIndex + 1), table};
}

std::pair<fb::Operation, Offset<void>> encode_op(FlatBufferBuilder& fbb, const d::Operation& op) {
  return std::visit([&](const auto& x) { return encode_as(fbb, x); }, op);
}

// ---------------------------------------------------------------------------------------------
// Decoding.

Status bad(const std::string& m) {
  return Status(StatusCode::out_of_range, m);
}

// The device enum of wire value `raw`, or an error naming `what` and the valid range.
template <class E>
Result<E> dec_enum(int raw, const std::string& what) {
  constexpr int kCount = d::EnumInfo<E>::count;
  if (raw < 0 || raw >= kCount)
    return bad(what + " " + to_string(raw) + " is unknown: expected 0.." + to_string(kCount - 1));
  return static_cast<E>(raw);
}

Result<d::MemRef> dec(const fb::MemRef* m, std::string_view what) {
  const std::string w(what);
  if (!m) return bad("operand '" + w + "' is missing");
  d::MemRef r;
  auto memory = dec_enum<d::MemoryKind>(static_cast<int>(m->memory()), "memory kind");
  if (!memory) return memory.status().with_context(w);
  r.memory = *memory;
  const std::optional<d::DType> dtype = from_fb_device_dtype(m->dtype());
  if (!dtype)
    return bad("device dtype " + to_string(static_cast<int>(m->dtype())) +
               " is unknown: expected 0.." + to_string(kDeviceDTypes.size() - 1))
        .with_context(w);
  r.dtype = *dtype;
  if (m->num_levels() < 1 || m->num_levels() > 4)
    return bad(w + ": " + to_string(m->num_levels()) + " access-pattern levels, expected 1 to 4");
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

// How decode errors name an enum field: "alu op0", "activation function", "compare op".
template <class E>
std::string enum_label(std::string_view field) {
  const std::string_view noun = d::EnumInfo<E>::noun;
  if (noun.starts_with(field)) return std::string(noun);
  return std::string(noun) + " " + std::string(field);
}

constexpr flatbuffers::voffset_t vtable_offset(int slot) {
  return static_cast<flatbuffers::voffset_t>(4 + 2 * slot);
}

// Reads field `f` of `x` from `slot` (and the next, for a ScalarOperand) of table `t`.
template <class T, class M>
Status dec_field(const flatbuffers::Table& t, int& slot, const d::Field<T, M>& f, T& x) {
  M& out = x.*f.member;
  const flatbuffers::voffset_t at = vtable_offset(slot++);
  if constexpr (std::is_same_v<M, d::MemRef>) {
    auto m = dec(t.GetStruct<const fb::MemRef*>(at), f.name);
    if (!m) return m.status();
    out = *m;
  } else if constexpr (std::is_same_v<M, std::optional<d::MemRef>>) {
    if (const auto* p = t.GetStruct<const fb::MemRef*>(at)) {
      auto m = dec(p, f.name);
      if (!m) return m.status();
      out = *m;
    }
  } else if constexpr (std::is_same_v<M, d::ScalarOperand>) {
    const float imm = t.GetField<float>(at, std::get<float>(f.wire_default));
    const auto* ref = t.GetStruct<const fb::MemRef*>(vtable_offset(slot++));
    if (ref) {
      auto m = dec(ref, f.name);
      if (!m) return m.status();
      out = *m;
    } else {
      out = imm;
    }
  } else if constexpr (std::is_enum_v<M>) {
    const int raw = t.GetField<uint8_t>(at, static_cast<uint8_t>(f.wire_default));
    auto e = dec_enum<M>(raw, enum_label<M>(f.name));
    if (!e) return e.status();
    out = *e;
  } else if constexpr (std::is_same_v<M, std::array<int32_t, 4>>) {
    out = {};
    if (const auto* p = t.GetStruct<const fb::Iota4*>(at))
      for (int i = 0; i < 4; ++i) out[i] = p->v()->Get(i);
  } else if constexpr (std::is_same_v<M, bool>) {
    out = t.GetField<uint8_t>(at, f.wire_default ? 1 : 0) != 0;
  } else {
    out = t.GetField<M>(at, f.wire_default);
  }
  return Status::ok();
}

// Rules over several fields that the field list cannot state.
template <class T>
Status check(const T&) {
  return Status::ok();
}
Status check(const d::DmaCopy& x) {
  if (x.queue > 15)
    return bad("dma queue " + to_string(x.queue) + " is out of range: expected 0..15");
  if (!x.row_index && x.table_rows != 0)
    return bad("dma_copy has " + to_string(x.table_rows) + " table rows but no row_index");
  if (!x.row_index && x.scatter) return bad("dma_copy is a scatter but has no row_index");
  return Status::ok();
}

template <class T>
Result<d::Operation> decode_as(const flatbuffers::Table& t) {
  T x;
  int slot = 0;
  Status st = Status::ok();
  std::apply([&](const auto&... f) { (void)((st = dec_field(t, slot, f, x)).is_ok() && ...); },
             d::kSchema<T>);
  if (st.is_ok()) st = check(x);
  if (!st.is_ok()) return st;
  return d::Operation(std::move(x));
}

using Decoder = Result<d::Operation> (*)(const flatbuffers::Table&);
template <size_t... I>
constexpr std::array<Decoder, sizeof...(I)> decoders(std::index_sequence<I...>) {
  return {&decode_as<std::variant_alternative_t<I, d::Operation>>...};
}
constexpr auto kDecoders = decoders(std::make_index_sequence<kNumOpcodes>{});

Result<d::Operation> decode_op(const fb::Instruction& in) {
  const auto t = static_cast<size_t>(in.op_type());
  if (t == 0 || in.op() == nullptr) return bad("instruction has no operation");
  if (t > kNumOpcodes)
    return Status(StatusCode::unimplemented, "opcode " + to_string(t - 1) +
                                                 " is unknown to this loader: expected 0.." +
                                                 to_string(kNumOpcodes - 1));
  return kDecoders[t - 1](*static_cast<const flatbuffers::Table*>(in.op()));
}

}  // namespace

Offset<fb::Program> encode_program(FlatBufferBuilder& fbb, const DeviceProgram& p) {
  // A replicated program is stored as its core 0 (the verifier has checked any other core the
  // program holds is a copy of it).
  const bool replicated = p.replicas > 0;
  const std::span<const d::CoreProgram> stored =
      replicated ? std::span<const d::CoreProgram>(p.program.cores).first(1)
                 : std::span<const d::CoreProgram>(p.program.cores);
  std::vector<Offset<fb::CoreProgram>> cores;
  for (const d::CoreProgram& core : stored) {
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
      streams.push_back(
          fb::CreateStream(fbb, to_fb(static_cast<d::Engine>(e)), fbb.CreateVector(insts)));
    }
    cores.push_back(fb::CreateCoreProgram(fbb, fbb.CreateVector(streams)));
  }
  return fb::CreateProgram(fbb, fbb.CreateString(p.name), fbb.CreateVector(cores),
                           p.program.num_semaphores, p.hbm_size(), p.sbuf_peak_bytes,
                           p.psum_peak_bytes, p.replicas, p.replica_stride);
}

Result<DeviceProgram> decode_program(const fb::Program& p) {
  DeviceProgram out;
  if (p.name()) out.name = p.name()->str();
  out.program.num_semaphores = p.num_semaphores();
  out.program.hbm_size = p.hbm_size();
  out.sbuf_peak_bytes = p.sbuf_peak_bytes();
  out.psum_peak_bytes = p.psum_peak_bytes();
  if (!p.cores()) return bad("program has no core list");
  out.replicas = p.replicas();
  out.replica_stride = p.replica_stride();
  if (out.replicas > 0) {
    // Held as core 0 alone, with core 0's arena (the copies are made once it is verified).
    if (out.replicas < 2)
      return bad("program is replicated over " + to_string(out.replicas) +
                 " cores: expected 0 (not replicated) or 2 or more");
    const d::Status st = d::check_replication(out.replicas, out.replica_stride);
    if (!st.is_ok()) return bad(st.message());
    if (p.cores()->size() != 1)
      return bad("program is replicated over " + to_string(out.replicas) + " cores but holds " +
                 to_string(p.cores()->size()) + " cores: expected core 0 only");
    if (p.hbm_size() != uint64_t{out.replicas} * out.replica_stride)
      return bad("program's hbm size " + to_string(p.hbm_size()) + " is not its " +
                 to_string(out.replicas) + " replicas times the replica stride of " +
                 to_string(out.replica_stride) + " bytes");
    out.program.hbm_size = out.replica_stride;
  }
  out.program.cores.resize(p.cores()->size());
  for (uint32_t c = 0; c < p.cores()->size(); ++c) {
    const fb::CoreProgram* core = p.cores()->Get(c);
    if (!core->streams()) continue;
    for (uint32_t s = 0; s < core->streams()->size(); ++s) {
      const fb::Stream* st = core->streams()->Get(s);
      const std::string where = "core " + to_string(c) + " stream " + to_string(s);
      const auto engine = dec_enum<d::Engine>(static_cast<int>(st->engine()), "engine");
      if (!engine) return engine.status().with_context(where);
      const int e = static_cast<int>(*engine);
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
