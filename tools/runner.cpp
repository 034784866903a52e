// Running artifacts on .npy inputs.
#include "tools/runner.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "device/numerics.h"
#include "frontend/load.h"
#include "tools/cli_output.h"

namespace neuronc::tools {

NpyType npy_type_of(neuronc::DType t) {
  switch (t) {
    case neuronc::DType::f32:
      return NpyType::f32;
    case neuronc::DType::f16:
      return NpyType::f16;
    case neuronc::DType::bf16:
      return NpyType::bf16;
    case neuronc::DType::f64:
      return NpyType::f64;
    case neuronc::DType::i64:
      return NpyType::i64;
    case neuronc::DType::i32:
      return NpyType::i32;
    case neuronc::DType::i16:
      return NpyType::i16;
    case neuronc::DType::i8:
      return NpyType::i8;
    case neuronc::DType::u8:
      return NpyType::u8;
    case neuronc::DType::boolean:
      return NpyType::boolean;
    case neuronc::DType::c64:
      return NpyType::c64;
    default:
      throw CommandExit{kExitError,
                        "dtype " + std::string(neuronc::dtype_name(t)) + " has no .npy form", ""};
  }
}

neuronc::DType dtype_of(NpyType t) {
  switch (t) {
    case NpyType::f32:
      return neuronc::DType::f32;
    case NpyType::f16:
      return neuronc::DType::f16;
    case NpyType::bf16:
      return neuronc::DType::bf16;
    case NpyType::f64:
      return neuronc::DType::f64;
    case NpyType::i64:
      return neuronc::DType::i64;
    case NpyType::i32:
      return neuronc::DType::i32;
    case NpyType::i16:
      return neuronc::DType::i16;
    case NpyType::i8:
      return neuronc::DType::i8;
    case NpyType::u8:
      return neuronc::DType::u8;
    case NpyType::boolean:
      return neuronc::DType::boolean;
    case NpyType::c64:
      return neuronc::DType::c64;
  }
  return neuronc::DType::f32;
}

neuronc::Model load_model_or_exit(const std::string& path) {
  auto m = neuronc::Model::load(path);
  if (!m.is_ok()) throw CommandExit{kExitError, m.status().message(), ""};
  return std::move(m).value();
}

NpyArray as_input(const neuronc::TensorSpec& spec, NpyArray a) {
  const NpyType want = npy_type_of(spec.dtype);
  if (a.type != NpyType::f32 || (want != NpyType::bf16 && want != NpyType::f16)) return a;
  static bool said = false;
  if (!said) {
    std::fprintf(stderr,
                 "neuronc: note: input '%s' is %s; converting the float32 .npy with "
                 "round-to-nearest-even\n",
                 spec.name.c_str(), npy_type_name(want));
    said = true;
  }
  NpyArray out;
  out.type = want;
  out.shape = a.shape;
  out.data.resize(a.numel() * 2);
  for (size_t i = 0; i < a.numel(); ++i) {
    float x;
    std::memcpy(&x, a.data.data() + i * 4, 4);
    const uint16_t h = want == NpyType::bf16 ? device::f32_to_bf16(x) : device::f32_to_f16(x);
    std::memcpy(out.data.data() + i * 2, &h, 2);
  }
  return out;
}

NpyArray widen_to_f32(const NpyArray& a) {
  if (a.type != NpyType::bf16 && a.type != NpyType::f16) return a;
  NpyArray out;
  out.type = NpyType::f32;
  out.shape = a.shape;
  out.data.resize(a.numel() * 4);
  for (size_t i = 0; i < a.numel(); ++i) {
    uint16_t h;
    std::memcpy(&h, a.data.data() + i * 2, 2);
    const float x = a.type == NpyType::bf16 ? device::bf16_to_f32(h) : device::f16_to_f32(h);
    std::memcpy(out.data.data() + i * 4, &x, 4);
  }
  return out;
}

std::vector<int64_t> widen_to_i64(const NpyArray& a) {
  std::vector<int64_t> out;
  if (a.type != NpyType::i64 && a.type != NpyType::i32) return out;
  out.resize(a.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    if (a.type == NpyType::i64) {
      std::memcpy(&out[i], a.data.data() + 8 * i, 8);
    } else {
      int32_t w = 0;
      std::memcpy(&w, a.data.data() + 4 * i, 4);
      out[i] = w;
    }
  }
  return out;
}

std::vector<std::pair<std::string, NpyArray>> read_inputs(const neuronc::Model& model,
                                                          const std::vector<std::string>& args) {
  return read_inputs(model.inputs(), args);
}

std::vector<std::pair<std::string, NpyArray>> read_inputs(
    const std::vector<neuronc::TensorSpec>& specs, const std::vector<std::string>& args) {
  std::map<std::string, NpyArray> by_name;
  size_t position = 0;
  for (const std::string& a : args) {
    std::string name, file = a;
    const size_t eq = a.find('=');
    if (eq != std::string::npos && a.rfind(".npy") != eq - 4) {
      name = a.substr(0, eq);
      file = a.substr(eq + 1);
    }
    if (name.empty()) {
      if (position >= specs.size()) {
        throw CommandExit{kExitUsage,
                          "too many inputs: the model takes " + std::to_string(specs.size()), ""};
      }
      name = specs[position++].name;
    } else {
      bool known = false;
      std::string names;
      for (const auto& s : specs) {
        known |= s.name == name;
        names += (names.empty() ? "" : ", ") + s.name;
      }
      if (!known)
        throw CommandExit{kExitUsage,
                          "unknown input '" + name + "': the model's inputs are " + names, ""};
    }
    if (by_name.count(name))
      throw CommandExit{kExitUsage, "input '" + name + "' is given twice", ""};
    try {
      by_name[name] = read_npy(file);
    } catch (const NpyError& e) {
      throw CommandExit{kExitError, e.what(), ""};
    }
  }
  std::vector<std::pair<std::string, NpyArray>> out;
  for (const auto& s : specs) {
    auto it = by_name.find(s.name);
    if (it == by_name.end()) {
      throw CommandExit{kExitUsage,
                        "input '" + s.name + "' is missing: pass --input " + s.name + "=FILE.npy",
                        ""};
    }
    out.emplace_back(s.name, as_input(s, std::move(it->second)));
  }
  return out;
}

std::vector<std::pair<std::string, NpyArray>> sample_inputs(const neuronc::Model& model,
                                                            const std::string& pt2_path) {
  frontend::LoadedProgram prog = frontend::load_program(pt2_path);
  std::vector<std::pair<std::string, NpyArray>> out;
  for (const auto& spec : model.inputs()) {
    const frontend::SampleInput* found = nullptr;
    for (const frontend::SampleInput& s : prog.sample_inputs) {
      if (s.name == spec.name) found = &s;
    }
    if (!found) {
      throw CommandExit{kExitError,
                        pt2_path + " has no sample input for '" + spec.name +
                            "' (torch.export saves example inputs from 2.4 on): pass --input",
                        ""};
    }
    NpyArray a;
    a.type = npy_type_of(spec.dtype);
    a.shape = found->shape;
    a.data = found->bytes;
    if (a.data.size() != a.numel() * npy_type_size(a.type)) {
      throw CommandExit{kExitError,
                        "sample input '" + spec.name + "' has " + std::to_string(a.data.size()) +
                            " bytes, expected " + std::to_string(a.numel() * npy_type_size(a.type)),
                        ""};
    }
    out.emplace_back(spec.name, std::move(a));
  }
  return out;
}

RunResult run_once(neuronc::Session& session,
                   const std::vector<std::pair<std::string, NpyArray>>& inputs) {
  return run_once(session, "", inputs);
}

RunResult run_once(neuronc::Session& session, const std::string& entry,
                   const std::vector<std::pair<std::string, NpyArray>>& inputs) {
  std::vector<neuronc::NamedInput> named;
  for (const auto& [name, a] : inputs) {
    named.push_back({name, neuronc::TensorView(a.data.data(), dtype_of(a.type), a.shape)});
  }
  auto out = entry.empty() ? session.run(named) : session.run(entry, named);
  if (!out.is_ok()) throw CommandExit{kExitError, out.status().message(), ""};
  RunResult r;
  r.stats = session.stats();
  for (const std::string& name : out->names()) {
    r.names.push_back(name);
    r.outputs.push_back(npy_of(out->at(name)));
  }
  return r;
}

NpyArray npy_of(const neuronc::Tensor& t) {
  NpyArray a;
  a.type = npy_type_of(t.dtype());
  a.shape = t.shape();
  const auto* p = static_cast<const std::byte*>(t.data());
  a.data.assign(p, p + t.nbytes());
  return a;
}

void refuse_program_set(const std::string& model, const std::string& command) {
  if (!frontend::is_program_set(model)) return;
  throw CommandExit{
      kExitUsage,
      model + " is a directory of one model's programs (it has a manifest.json): `neuronc " +
          command + "` takes one program of it, such as " +
          (std::filesystem::path(model) / "decode" / "model.pt2").string() +
          "; `neuronc compile` takes the whole directory",
      ""};
}

}  // namespace neuronc::tools
