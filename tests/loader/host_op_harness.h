// Runs one host-fallback op through the real path: a host-only artifact (signature inputs ->
// one HostOp -> signature outputs) written with ArtifactWriter, loaded with Model and run with
// a Session. Values go in and come out as doubles (complex as interleaved real, imag).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "artifact_format/writer.h"
#include "neuronc/neuronc.h"

namespace neuronc::testing {

namespace art = ::neuronc::artifact;

struct In {
  std::string arg;  // schema argument name
  art::TensorDType dtype = art::TensorDType::f32;
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool list = false;  // part of a Tensor[] argument (in order)
  bool none = false;  // a None entry of a Tensor?[] list
};

struct Out {
  art::TensorDType dtype = art::TensorDType::f32;
  std::vector<int64_t> shape;
};

inline void store(std::byte* p, art::TensorDType t, double v) {
  switch (t) {
    case art::TensorDType::f32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case art::TensorDType::f64:
      std::memcpy(p, &v, 8);
      break;
    case art::TensorDType::i64: {
      int64_t i = static_cast<int64_t>(v);
      std::memcpy(p, &i, 8);
      break;
    }
    case art::TensorDType::i32: {
      int32_t i = static_cast<int32_t>(v);
      std::memcpy(p, &i, 4);
      break;
    }
    case art::TensorDType::u8:
    case art::TensorDType::boolean: {
      uint8_t i = static_cast<uint8_t>(v);
      std::memcpy(p, &i, 1);
      break;
    }
    default:
      break;
  }
}

inline std::vector<double> read(const Tensor& t) {
  std::vector<double> out;
  const auto* p = static_cast<const std::byte*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::f32: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        out.push_back(f);
        break;
      }
      case DType::f64: {
        double f;
        std::memcpy(&f, p + 8 * i, 8);
        out.push_back(f);
        break;
      }
      case DType::i64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out.push_back(static_cast<double>(v));
        break;
      }
      case DType::i32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out.push_back(v);
        break;
      }
      case DType::u8:
      case DType::boolean:
        out.push_back(static_cast<double>(static_cast<uint8_t>(p[i])));
        break;
      case DType::c64: {
        float re, im;
        std::memcpy(&re, p + 8 * i, 4);
        std::memcpy(&im, p + 8 * i + 4, 4);
        out.push_back(re);
        out.push_back(im);
        break;
      }
      default:
        break;
    }
  }
  return out;
}

// Builds the artifact bytes for one host op.
inline Result<std::vector<std::byte>> host_op_artifact(const std::string& op,
                                                       const std::vector<In>& ins,
                                                       const std::vector<art::Arg>& attrs,
                                                       const std::vector<Out>& outs) {
  art::ArtifactWriter w;
  w.contents().target = "trn1";
  art::HostOp h;
  h.op = op;
  for (size_t i = 0; i < ins.size(); ++i) {
    const In& in = ins[i];
    int32_t v = -1;
    if (!in.none) {
      std::vector<art::Dim> dims;
      for (int64_t d : in.shape) dims.push_back(art::Dim::constant(d));
      v = static_cast<int32_t>(w.add_input("in" + std::to_string(i), in.dtype, dims));
    }
    art::Arg* existing = nullptr;
    for (auto& a : h.args)
      if (a.name == in.arg) existing = &a;
    if (in.list) {
      if (!existing) {
        h.args.push_back(art::Arg::tensor_list(in.arg, {}));
        existing = &h.args.back();
      }
      existing->tensors.push_back(v);
    } else {
      h.args.push_back(art::Arg::tensor(in.arg, v));
    }
  }
  for (const auto& a : attrs) h.args.push_back(a);
  for (size_t i = 0; i < outs.size(); ++i) {
    std::vector<art::Dim> dims;
    for (int64_t d : outs[i].shape) dims.push_back(art::Dim::constant(d));
    const uint32_t v = w.add_value("out" + std::to_string(i), outs[i].dtype, dims);
    h.outputs.push_back(v);
    w.add_output("out" + std::to_string(i), v);
  }
  w.add_host_op(h);
  auto bytes = w.write_memory();
  if (!bytes) return Status(StatusCode::invalid_argument, bytes.status().message());
  return std::move(bytes).value();
}

// Returns the outputs as doubles, or the load/run error.
inline Result<std::vector<std::vector<double>>> run_host_op(const std::string& op,
                                                            const std::vector<In>& ins,
                                                            const std::vector<art::Arg>& attrs,
                                                            const std::vector<Out>& outs) {
  auto bytes = host_op_artifact(op, ins, attrs, outs);
  if (!bytes) return bytes.status();
  auto model = Model::load_from_memory(*bytes);
  if (!model) return model.status();
  Session s(*model);
  std::vector<std::vector<std::byte>> storage;
  std::vector<NamedInput> inputs;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].none) continue;
    const size_t es = dtype_size(ins[i].dtype);
    storage.emplace_back(ins[i].values.size() * es);
    for (size_t k = 0; k < ins[i].values.size(); ++k)
      store(storage.back().data() + k * es, ins[i].dtype, ins[i].values[k]);
    inputs.push_back(
        {"in" + std::to_string(i),
         TensorView(storage.back().data(), static_cast<DType>(ins[i].dtype), Shape(ins[i].shape))});
  }
  auto r = s.run(inputs);
  if (!r) return r.status();
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < outs.size(); ++i) out.push_back(read(r->at("out" + std::to_string(i))));
  return out;
}

}  // namespace neuronc::testing
