// Root table codec (root_codec.h).
#include "artifact_format/root_codec.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "artifact_format/artifact_generated.h"
#include "artifact_format/dtype_codec.h"
#include "artifact_format/isa_codec.h"

namespace neuronc::artifact {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
using std::to_string;

Offset<flatbuffers::String> str(FlatBufferBuilder& fbb, const std::string& s) {
  return fbb.CreateString(s);
}

Offset<flatbuffers::Vector<const fb::Dim*>> dims(FlatBufferBuilder& fbb,
                                                 const std::vector<Dim>& ds) {
  std::vector<fb::Dim> v;
  for (const Dim& d : ds) v.emplace_back(d.value, d.symbol, d.coeff);
  return fbb.CreateVectorOfStructs(v);
}

Offset<fb::Arg> encode_arg(FlatBufferBuilder& fbb, const Arg& a) {
  auto name = str(fbb, a.name);
  Offset<flatbuffers::Vector<int32_t>> tensors;
  Offset<flatbuffers::Vector<int64_t>> ints;
  Offset<flatbuffers::Vector<double>> floats;
  Offset<flatbuffers::Vector<uint8_t>> bools;
  Offset<flatbuffers::String> s;
  if (!a.tensors.empty()) tensors = fbb.CreateVector(a.tensors);
  if (!a.ints.empty()) ints = fbb.CreateVector(a.ints);
  if (!a.floats.empty()) floats = fbb.CreateVector(a.floats);
  if (!a.bools.empty()) {
    std::vector<uint8_t> b(a.bools.begin(), a.bools.end());
    bools = fbb.CreateVector(b);
  }
  if (!a.s.empty()) s = str(fbb, a.s);
  return fb::CreateArg(fbb, name, static_cast<fb::ArgKind>(a.kind), tensors, a.i, ints, a.f, floats,
                       a.b, bools, s, to_fb_tensor_dtype(a.dtype));
}

Offset<fb::Step> encode_step(FlatBufferBuilder& fbb, const Step& step) {
  if (const auto* d = std::get_if<DeviceCall>(&step)) {
    auto bindings = [&](const std::vector<Binding>& bs) {
      std::vector<Offset<fb::Binding>> v;
      for (const Binding& b : bs) v.push_back(fb::CreateBinding(fbb, b.value, b.hbm_offset));
      return fbb.CreateVector(v);
    };
    auto in = bindings(d->inputs);
    auto out = bindings(d->outputs);
    return fb::CreateStep(fbb, fb::CreateDeviceCall(fbb, d->program, in, out), 0);
  }
  const HostOp& h = std::get<HostOp>(step);
  std::vector<Offset<fb::Arg>> args;
  for (const Arg& a : h.args) args.push_back(encode_arg(fbb, a));
  auto op = fb::CreateHostOp(fbb, str(fbb, h.op), fbb.CreateVector(args),
                             fbb.CreateVector(h.outputs), h.debug_id);
  return fb::CreateStep(fbb, 0, op);
}

// ---------------------------------------------------------------------------------------------
// Decoding helpers: every absent string decodes to "", every absent vector to empty.

std::string s_of(const flatbuffers::String* s) {
  return s ? s->str() : std::string();
}

Status bad(const std::string& m) {
  return Status(StatusCode::out_of_range, m);
}

template <typename E>
Status check_enum(E v, int count, const std::string& what) {
  const int i = static_cast<int>(v);
  if (i >= count)
    return bad(what + " " + to_string(i) + " is unknown: expected 0.." + to_string(count - 1));
  return Status::ok();
}

template <typename T>
uint32_t size_of(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

Result<std::vector<Dim>> decode_dims(const flatbuffers::Vector<const fb::Dim*>* v) {
  std::vector<Dim> out;
  for (uint32_t i = 0; i < size_of(v); ++i) {
    const fb::Dim* d = v->Get(i);
    out.push_back({d->value(), d->symbol(), d->coeff()});
  }
  return out;
}

Result<Arg> decode_arg(const fb::Arg& a) {
  Arg r;
  r.name = s_of(a.name());
  NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(a.kind(), kNumArgKinds, "argument kind"));
  NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(a.dtype(), kNumTensorDTypes, "dtype"));
  r.kind = static_cast<ArgKind>(a.kind());
  if (a.tensors()) r.tensors.assign(a.tensors()->begin(), a.tensors()->end());
  r.i = a.i();
  if (a.ints()) r.ints.assign(a.ints()->begin(), a.ints()->end());
  r.f = a.f();
  if (a.floats()) r.floats.assign(a.floats()->begin(), a.floats()->end());
  r.b = a.b();
  if (a.bools())
    for (uint8_t b : *a.bools()) r.bools.push_back(b != 0);
  r.s = s_of(a.s());
  r.dtype = static_cast<TensorDType>(a.dtype());
  return r;
}

Result<Step> decode_step(const fb::Step& s) {
  if ((s.device() != nullptr) == (s.host() != nullptr))
    return bad(
        std::string("step holds ") +
        (s.device() ? "both a device call and a host op" : "neither a device call nor a host op") +
        ": expected exactly one");
  if (const fb::DeviceCall* d = s.device()) {
    DeviceCall c;
    c.program = d->program();
    for (uint32_t i = 0; i < size_of(d->inputs()); ++i)
      c.inputs.push_back({d->inputs()->Get(i)->value(), d->inputs()->Get(i)->hbm_offset()});
    for (uint32_t i = 0; i < size_of(d->outputs()); ++i)
      c.outputs.push_back({d->outputs()->Get(i)->value(), d->outputs()->Get(i)->hbm_offset()});
    return Step(std::move(c));
  }
  const fb::HostOp* h = s.host();
  HostOp op;
  op.op = s_of(h->op());
  for (uint32_t i = 0; i < size_of(h->args()); ++i) {
    auto a = decode_arg(*h->args()->Get(i));
    if (!a) return a.status().with_context("argument " + to_string(i));
    op.args.push_back(std::move(a).value());
  }
  if (h->outputs()) op.outputs.assign(h->outputs()->begin(), h->outputs()->end());
  op.debug_id = h->debug_id();
  return Step(std::move(op));
}

}  // namespace

std::vector<std::byte> encode_root(const ArtifactContents& c) {
  // Room for the programs from the start (~180 bytes per instruction: Llama-2-7B over 32 cores
  // is 3.6M instructions in a 650 MB root), so a large root (every core's copy under --tp) is
  // not copied at each doubling; untouched room is never faulted in.
  size_t instructions = 0;
  for (const DeviceProgram& p : c.programs)
    for (const auto& core : p.program.cores)
      for (const auto& stream : core.streams) instructions += stream.size();
  FlatBufferBuilder fbb((size_t{1} << 16) + 192 * instructions);
  auto producer = fb::CreateProducer(fbb, str(fbb, c.producer.name), str(fbb, c.producer.version));
  auto source =
      fb::CreateSource(fbb, str(fbb, c.source.container), str(fbb, c.source.schema_version),
                       str(fbb, c.source.torch_version), fbb.CreateVector(c.source.sha256),
                       str(fbb, c.source.file_name));
  std::vector<Offset<fb::KeyValue>> extra;
  for (const auto& [k, v] : c.options.extra)
    extra.push_back(fb::CreateKeyValue(fbb, str(fbb, k), str(fbb, v)));
  auto options = fb::CreateCompileOptions(fbb, str(fbb, c.options.auto_cast), c.options.opt_level,
                                          fbb.CreateVector(extra));
  auto specs = [&](const std::vector<TensorSpec>& ts) {
    std::vector<Offset<fb::TensorSpec>> v;
    for (const TensorSpec& t : ts) {
      Offset<fb::IndexBound> bound;
      if (t.index_bound)
        bound = fb::CreateIndexBound(fbb, t.index_bound->lo, t.index_bound->hi,
                                     str(fbb, t.index_bound->what));
      v.push_back(fb::CreateTensorSpec(fbb, str(fbb, t.name), t.value, bound));
    }
    return fbb.CreateVector(v);
  };
  auto sig_in = specs(c.signature.inputs);
  auto sig_out = specs(c.signature.outputs);
  std::vector<Offset<fb::Symbol>> syms;
  for (const Symbol& s : c.signature.symbols)
    syms.push_back(fb::CreateSymbol(fbb, str(fbb, s.name), s.min, s.max));
  // No states field at all without state, so such files are 1.1 files byte for byte.
  Offset<flatbuffers::Vector<Offset<fb::StateSpec>>> states_vec;
  if (!c.signature.states.empty()) {
    std::vector<Offset<fb::StateSpec>> states;
    for (const StateSpec& s : c.signature.states)
      states.push_back(fb::CreateStateSpec(fbb, str(fbb, s.name), s.value, s.update, s.initial));
    states_vec = fbb.CreateVector(states);
  }
  Offset<flatbuffers::Vector<Offset<fb::EntrySpec>>> entries_vec;
  if (!c.signature.entries.empty()) {
    std::vector<Offset<fb::EntrySpec>> entries;
    for (const EntrySpec& e : c.signature.entries) {
      Offset<fb::ShapeBucket> bucket;
      if (const auto& b = e.bucket) {
        auto lists = [&](const std::vector<std::vector<Dim>>& ls) {
          std::vector<Offset<fb::DimList>> v;
          for (const auto& l : ls) v.push_back(fb::CreateDimList(fbb, dims(fbb, l)));
          return fbb.CreateVector(v);
        };
        std::vector<fb::BucketPadding> padding;
        for (BucketPadding m : b->padding) padding.push_back(static_cast<fb::BucketPadding>(m));
        bucket = fb::CreateShapeBucket(fbb, str(fbb, b->group), fbb.CreateVector(b->symbols),
                                       fbb.CreateVector(b->values), fbb.CreateVector(padding),
                                       lists(b->input_dims), lists(b->output_dims));
      }
      entries.push_back(fb::CreateEntrySpec(fbb, str(fbb, e.name), e.first_step, e.num_steps,
                                            fbb.CreateVector(e.inputs), fbb.CreateVector(e.outputs),
                                            fbb.CreateVector(e.state_updates), bucket));
    }
    entries_vec = fbb.CreateVector(entries);
  }
  auto signature =
      fb::CreateSignature(fbb, sig_in, sig_out, fbb.CreateVector(syms), states_vec, entries_vec);

  std::vector<Offset<fb::Value>> values;
  for (const Value& v : c.plan.values)
    values.push_back(fb::CreateValue(fbb, str(fbb, v.name), to_fb_tensor_dtype(v.dtype),
                                     dims(fbb, v.dims), static_cast<fb::ValueKind>(v.kind),
                                     v.index));
  auto values_vec = fbb.CreateVector(values);
  std::vector<Offset<fb::Step>> steps;
  for (const Step& s : c.plan.steps) steps.push_back(encode_step(fbb, s));
  auto plan = fb::CreateExecutionPlan(fbb, values_vec, fbb.CreateVector(steps));

  std::vector<Offset<fb::Program>> programs;
  for (const DeviceProgram& p : c.programs) programs.push_back(encode_program(fbb, p));
  auto programs_vec = fbb.CreateVector(programs);
  auto memory_plan =
      fb::CreateMemoryPlan(fbb, c.memory_plan.hbm_arena_bytes, c.memory_plan.sbuf_peak_bytes,
                           c.memory_plan.psum_peak_bytes);
  std::vector<Offset<fb::Constant>> constants;
  for (const Constant& k : c.constants)
    constants.push_back(fb::CreateConstant(fbb, str(fbb, k.name), k.value, k.segment, k.offset,
                                           k.size, k.hbm_offset));
  auto constants_vec = fbb.CreateVector(constants);
  std::vector<Offset<fb::DebugNode>> nodes;
  for (const DebugNode& n : c.debug_nodes)
    nodes.push_back(fb::CreateDebugNode(fbb, str(fbb, n.name), str(fbb, n.op), str(fbb, n.file),
                                        n.line, str(fbb, n.stack)));
  auto debug = fb::CreateDebugInfo(fbb, fbb.CreateVector(nodes));
  // Every field of a segment is stored, zero or not, so the root's size does not depend on the
  // segments' CRCs: the writer encodes the root before it has streamed the segments (whose CRCs
  // it learns on the way) and re-encodes it, at the same size, after.
  std::vector<Offset<fb::Segment>> segments;
  for (const SegmentInfo& s : c.segments) {
    auto name = str(fbb, s.name);
    fbb.ForceDefaults(true);
    segments.push_back(fb::CreateSegment(fbb, name, s.offset, s.stored_size, s.raw_size,
                                         static_cast<fb::Compression>(s.compression), s.crc32c));
    fbb.ForceDefaults(false);
  }
  auto segments_vec = fbb.CreateVector(segments);
  auto target = str(fbb, c.target);
  auto root = fb::CreateArtifact(fbb, c.format_major, c.format_minor, producer, source, target,
                                 c.num_cores, options, signature, plan, programs_vec, memory_plan,
                                 constants_vec, debug, segments_vec);
  fb::FinishArtifactBuffer(fbb, root);
  const auto* p = reinterpret_cast<const std::byte*>(fbb.GetBufferPointer());
  std::vector<std::byte> out(p, p + fbb.GetSize());
  out.resize((out.size() + 7) / 8 * 8);
  return out;
}

void patch_segment_crcs(std::span<std::byte> root, std::span<const SegmentInfo> segments) {
  auto* buf = reinterpret_cast<uint8_t*>(root.data());
  const fb::Artifact* a = fb::GetArtifact(buf);
  if (!a->segments() || a->segments()->size() != segments.size())
    throw std::logic_error("patch_segment_crcs: the root's segments are not these");
  for (uint32_t i = 0; i < segments.size(); ++i) {
    const auto* table = reinterpret_cast<const flatbuffers::Table*>(a->segments()->Get(i));
    const uint8_t* field = table->GetAddressOf(fb::Segment::VT_CRC32C);
    if (!field) throw std::logic_error("patch_segment_crcs: a segment without its CRC field");
    flatbuffers::WriteScalar(buf + (field - buf), segments[i].crc32c);
  }
}

void patch_source_sha256(std::span<std::byte> root, std::span<const uint8_t> sha256) {
  auto* buf = reinterpret_cast<uint8_t*>(root.data());
  const fb::Artifact* a = fb::GetArtifact(buf);
  if (!a->source() || !a->source()->sha256() || a->source()->sha256()->size() != sha256.size())
    throw std::logic_error("patch_source_sha256: the root has no source SHA-256 of that size");
  const uint8_t* at = a->source()->sha256()->data();
  std::copy(sha256.begin(), sha256.end(), buf + (at - buf));
}

Result<ArtifactContents> decode_root(std::span<const std::byte> root) {
  const auto* buf = reinterpret_cast<const uint8_t*>(root.data());
  if (root.size() < 8 || !flatbuffers::BufferHasIdentifier(buf, fb::ArtifactIdentifier()))
    return Status(StatusCode::corrupt, std::string("root table has no file identifier '") +
                                           fb::ArtifactIdentifier() + "'");
  // Bounded nesting and table count: a hostile root cannot make the verifier run away.
  const size_t max_tables = std::max<size_t>(root.size() / 4, 1024);
  flatbuffers::Verifier verifier(buf, root.size(), 64, max_tables);
  if (!fb::VerifyArtifactBuffer(verifier))
    return Status(StatusCode::corrupt,
                  "root table of " + to_string(root.size()) +
                      " bytes fails FlatBuffers verification (an offset, size or nesting is out "
                      "of bounds)");
  const fb::Artifact* a = fb::GetArtifact(buf);
  ArtifactContents c;
  c.format_major = a->format_major();
  c.format_minor = a->format_minor();
  if (const auto* p = a->producer()) c.producer = {s_of(p->name()), s_of(p->version())};
  if (const auto* s = a->source()) {
    c.source.container = s_of(s->container());
    c.source.schema_version = s_of(s->schema_version());
    c.source.torch_version = s_of(s->torch_version());
    if (s->sha256()) c.source.sha256.assign(s->sha256()->begin(), s->sha256()->end());
    c.source.file_name = s_of(s->file_name());
  }
  c.target = s_of(a->target());
  c.num_cores = a->num_cores();
  if (const auto* o = a->options()) {
    c.options.auto_cast = s_of(o->auto_cast());
    c.options.opt_level = o->opt_level();
    for (uint32_t i = 0; i < size_of(o->extra()); ++i)
      c.options.extra.emplace_back(s_of(o->extra()->Get(i)->key()),
                                   s_of(o->extra()->Get(i)->value()));
  } else {
    c.options = {};
  }
  if (const auto* s = a->signature()) {
    auto spec_of = [](const fb::TensorSpec* t) {
      TensorSpec r{s_of(t->name()), t->value()};
      if (const fb::IndexBound* b = t->index_bound())
        r.index_bound = IndexBound{b->lo(), b->hi(), s_of(b->what())};
      return r;
    };
    for (uint32_t i = 0; i < size_of(s->inputs()); ++i)
      c.signature.inputs.push_back(spec_of(s->inputs()->Get(i)));
    for (uint32_t i = 0; i < size_of(s->outputs()); ++i)
      c.signature.outputs.push_back(spec_of(s->outputs()->Get(i)));
    for (uint32_t i = 0; i < size_of(s->symbols()); ++i) {
      const fb::Symbol* y = s->symbols()->Get(i);
      c.signature.symbols.push_back({s_of(y->name()), y->min(), y->max()});
    }
    for (uint32_t i = 0; i < size_of(s->states()); ++i) {
      const fb::StateSpec* y = s->states()->Get(i);
      c.signature.states.push_back({s_of(y->name()), y->value(), y->update(), y->initial()});
    }
    auto uints = [](const flatbuffers::Vector<uint32_t>* v) {
      return v ? std::vector<uint32_t>(v->begin(), v->end()) : std::vector<uint32_t>{};
    };
    for (uint32_t i = 0; i < size_of(s->entries()); ++i) {
      const fb::EntrySpec* e = s->entries()->Get(i);
      EntrySpec en{s_of(e->name()),    e->first_step(),     e->num_steps(),
                   uints(e->inputs()), uints(e->outputs()), uints(e->state_updates()),
                   std::nullopt};
      if (const fb::ShapeBucket* b = e->bucket()) {
        ShapeBucket sb;
        sb.group = s_of(b->group());
        sb.symbols = uints(b->symbols());
        if (b->values()) sb.values.assign(b->values()->begin(), b->values()->end());
        for (uint32_t k = 0; k < size_of(b->padding()); ++k) {
          const auto m = b->padding()->Get(k);
          NEURONC_ARTIFACT_RETURN_IF_ERROR(check_enum(m, kNumBucketPaddings, "bucket padding")
                                               .with_context("entry " + to_string(i)));
          sb.padding.push_back(static_cast<BucketPadding>(m));
        }
        for (auto [from, to] : {std::pair{b->input_dims(), &sb.input_dims},
                                std::pair{b->output_dims(), &sb.output_dims}})
          for (uint32_t k = 0; k < size_of(from); ++k) {
            NEURONC_ARTIFACT_ASSIGN_OR_RETURN(auto ds, decode_dims(from->Get(k)->dims()));
            to->push_back(std::move(ds));
          }
        en.bucket = std::move(sb);
      }
      c.signature.entries.push_back(std::move(en));
    }
  }
  if (const auto* p = a->plan()) {
    for (uint32_t i = 0; i < size_of(p->values()); ++i) {
      const fb::Value* v = p->values()->Get(i);
      const std::string where = "plan value " + to_string(i);
      NEURONC_ARTIFACT_RETURN_IF_ERROR(
          check_enum(v->dtype(), kNumTensorDTypes, "dtype").with_context(where));
      NEURONC_ARTIFACT_RETURN_IF_ERROR(
          check_enum(v->kind(), kNumValueKinds, "kind").with_context(where));
      Value out;
      out.name = s_of(v->name());
      out.dtype = static_cast<TensorDType>(v->dtype());
      NEURONC_ARTIFACT_ASSIGN_OR_RETURN(out.dims, decode_dims(v->dims()));
      out.kind = static_cast<ValueKind>(v->kind());
      out.index = v->index();
      c.plan.values.push_back(std::move(out));
    }
    for (uint32_t i = 0; i < size_of(p->steps()); ++i) {
      auto s = decode_step(*p->steps()->Get(i));
      if (!s) return s.status().with_context("plan step " + to_string(i));
      c.plan.steps.push_back(std::move(s).value());
    }
  }
  for (uint32_t i = 0; i < size_of(a->programs()); ++i) {
    auto p = decode_program(*a->programs()->Get(i));
    if (!p) return p.status().with_context("program " + to_string(i));
    c.programs.push_back(std::move(p).value());
  }
  if (const auto* m = a->memory_plan())
    c.memory_plan = {m->hbm_arena_bytes(), m->sbuf_peak_bytes(), m->psum_peak_bytes()};
  for (uint32_t i = 0; i < size_of(a->constants()); ++i) {
    const fb::Constant* k = a->constants()->Get(i);
    c.constants.push_back(
        {s_of(k->name()), k->value(), k->segment(), k->offset(), k->size(), k->hbm_offset()});
  }
  if (const auto* d = a->debug_info())
    for (uint32_t i = 0; i < size_of(d->nodes()); ++i) {
      const fb::DebugNode* n = d->nodes()->Get(i);
      c.debug_nodes.push_back(
          {s_of(n->name()), s_of(n->op()), s_of(n->file()), n->line(), s_of(n->stack())});
    }
  for (uint32_t i = 0; i < size_of(a->segments()); ++i) {
    const fb::Segment* s = a->segments()->Get(i);
    NEURONC_ARTIFACT_RETURN_IF_ERROR(
        check_enum(s->compression(), 2, "compression").with_context("segment " + to_string(i)));
    c.segments.push_back({s_of(s->name()), s->offset(), s->stored_size(), s->raw_size(),
                          static_cast<Compression>(s->compression()), s->crc32c()});
  }
  return c;
}

}  // namespace neuronc::artifact
