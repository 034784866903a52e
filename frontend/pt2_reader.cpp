// PT2 archive and legacy export zip readers (PT2_FORMAT.md §2, §5). Weight bytes are never
// copied: every parameter/buffer/constant input gets an ir::ConstantPayload pointing into the
// mapped file, after its view (sizes, strides, offset) is checked against the record's size.
#include "frontend/pt2_reader.h"

#include <cstring>
#include <map>
#include <optional>

#include "frontend/exported_program_reader.h"
#include "frontend/tensor_view.h"
#include "frontend/torch_save.h"

namespace neuronc::frontend {
namespace {

// A tensor ready to become a payload: its storage bytes and the view onto them.
struct BoundTensor {
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  std::span<const std::byte> storage;
  std::shared_ptr<const void> owner;  // set for tensors that own their bytes
  std::string origin;                 // "data/weights/weight_3", for messages
  bool absent = false;                // saved without its bytes (ir::ConstantPayload::absent)
};

// Where weights come from: a function from FQN to tensor (nullopt when absent).
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual std::optional<BoundTensor> find(const std::string& fqn) = 0;
  virtual std::string describe() const = 0;
};

// A torch.save dict of tensors (legacy zip state dict / constants, 2.8 `<model>.pt`).
class TorchSaveSource : public WeightSource {
 public:
  TorchSaveSource(std::span<const std::byte> bytes, std::string name) : name_(name) {
    if (bytes.empty()) return;  // zero-byte blob: nothing was saved, i.e. {}
    TorchSaveArchive a = TorchSaveArchive::open(bytes, std::move(name));
    for (auto& [k, t] : a.tensor_dict()) {
      BoundTensor b;
      b.dtype = t.dtype;
      b.sizes = t.sizes;
      b.strides = t.strides;
      b.storage_offset = t.storage_offset;
      b.storage = t.storage;
      b.origin = name_ + " storage '" + t.storage_key + "'";
      tensors_.emplace(k, std::move(b));
    }
  }
  std::optional<BoundTensor> find(const std::string& fqn) override {
    auto it = tensors_.find(fqn);
    if (it == tensors_.end()) return std::nullopt;
    return it->second;
  }
  std::string describe() const override { return name_; }

 private:
  std::string name_;
  std::map<std::string, BoundTensor> tensors_;
};

// 2.9+: `<dir>/<model>_{weights,constants}_config.json` plus raw storage files.
class PayloadConfigSource : public WeightSource {
 public:
  PayloadConfigSource(const ZipArchive& zip, std::string dir, const ZipEntry& config)
      : zip_(zip), dir_(std::move(dir)), config_name_(config.name) {
    metas_ = read_payload_config(zip.text(config), zip.display_name() + "!" + config.name);
  }
  std::optional<BoundTensor> find(const std::string& fqn) override {
    auto it = metas_.find(fqn);
    if (it == metas_.end()) return std::nullopt;
    const PayloadMeta& m = it->second;
    std::string where = zip_.display_name() + ": " + config_name_ + ": '" + fqn + "'";
    if (std::string p = zip_name_problem(m.path_name);
        !p.empty() || m.path_name.find('/') != std::string::npos) {
      throw Error(where + ": path_name '" + m.path_name + "' must be a plain file name");
    }
    if (m.path_name.starts_with("custom_obj_") || m.path_name.starts_with("opaque_obj_")) {
      throw Error(where + ": " + m.path_name + " is a TorchBind/opaque object; not supported");
    }
    std::string rec = dir_ + "/" + m.path_name;
    const ZipEntry* e = zip_.find(rec);
    if (e == nullptr) {
      throw Error(zip_.display_name() + ": " + rec + " referenced by '" + fqn + "' not found");
    }
    if (!m.tensor_meta) throw Error(where + ": tensor_meta is null for a tensor");
    const StaticTensorMeta& tm = *m.tensor_meta;
    if (!tm.dtype) {
      throw Error(where + ": dtype " + std::to_string(tm.schema_dtype) + " (" + tm.dtype_name +
                  ") is not supported");
    }
    if (tm.layout != 7) {
      throw Error(where + ": layout " + std::to_string(tm.layout) +
                  " is not supported (expected 7, strided)");
    }
    if (auto [d, inserted] = file_dtype_.emplace(m.path_name, *tm.dtype);
        !inserted && d->second != *tm.dtype) {
      throw Error(where + ": " + m.path_name + " is read as " +
                  std::string(ir::dtype_name(*tm.dtype)) + " but also as " +
                  std::string(ir::dtype_name(d->second)));
    }
    BoundTensor b;
    b.dtype = *tm.dtype;
    b.sizes = tm.sizes;
    b.strides = tm.strides;
    b.storage_offset = tm.storage_offset;
    b.origin = rec;
    if (m.use_pickle) {
      // A torch.save zip of a single tensor (tensor subclasses).
      TorchSaveArchive a = TorchSaveArchive::open(zip_.data(*e), zip_.display_name() + "!" + rec);
      StoredTensor t = a.tensor(a.pickle().root_id(), "'" + fqn + "'");
      b.dtype = t.dtype;
      b.sizes = t.sizes;
      b.strides = t.strides;
      b.storage_offset = t.storage_offset;
      b.storage = t.storage;
      return b;
    }
    std::span<const std::byte> bytes = zip_.data(*e);
    size_t esize = ir::dtype_size(*tm.dtype);
    if (bytes.size() % esize != 0) {
      throw Error(where + ": " + rec + " has " + std::to_string(bytes.size()) +
                  " bytes, not a multiple of the element size " + std::to_string(esize) + " (" +
                  std::string(ir::dtype_name(*tm.dtype)) + ")");
    }
    if (bytes.empty()) {
      // Written empty (fake or meta tensors: a weights-free export). PyTorch's loader would
      // rebuild zeros; neuronc keeps the weight absent, so the program compiles for timing only
      // and never computes outputs from made-up weights.
      if (std::string p =
              view_problem(tm.sizes, contiguous_strides(tm.sizes), 0, esize, UINT64_MAX);
          !p.empty()) {
        throw Error(where + ": " + p);
      }
      b.strides = contiguous_strides(tm.sizes);
      b.storage_offset = 0;
      bool has_elements = true;
      for (int64_t s : tm.sizes) has_elements = has_elements && s != 0;
      b.absent = has_elements;
      return b;
    }
    if (std::string p = view_problem(b.sizes, b.strides, b.storage_offset, esize, bytes.size());
        !p.empty()) {
      throw Error(zip_.display_name() + ": " + fqn + ": " + p + " (" + m.path_name + ")");
    }
    b.storage = bytes;
    return b;
  }
  std::string describe() const override { return config_name_; }

 private:
  const ZipArchive& zip_;
  std::string dir_;
  std::string config_name_;
  std::map<std::string, PayloadMeta> metas_;
  std::map<std::string, ir::DType> file_dtype_;
};

// Attaches payloads to every parameter, buffer and constant input. Parameters and persistent
// buffers come from `weights`, lifted constants and non-persistent buffers from `constants`;
// each falls back on the other source, as files in the wild are not always consistent.
void bind_weights(ir::Graph& g, const std::string& file_name, WeightSource* weights,
                  WeightSource* constants, const std::shared_ptr<MappedFile>& file) {
  for (const ir::GraphInput& in : g.inputs()) {
    // A symbol input (a size read as data) is bound at run time, not by a weight.
    if (in.role == ir::InputRole::user_input || in.role == ir::InputRole::symbol) continue;
    bool from_weights =
        in.role == ir::InputRole::parameter || (in.role == ir::InputRole::buffer && in.persistent);
    WeightSource* first = from_weights ? weights : constants;
    WeightSource* second = from_weights ? constants : weights;
    std::optional<BoundTensor> t;
    if (first) t = first->find(in.target);
    if (!t && second) t = second->find(in.target);
    std::string what = std::string(ir::input_role_name(in.role)) + " '" + in.target + "' (input '" +
                       in.value->name() + "')";
    if (!t) {
      std::string looked = first ? first->describe() : std::string("no weight file");
      throw Error(file_name + ": " + what + " not found in " + looked);
    }
    const ir::TensorType& type = in.value->type();
    if (t->dtype != type.dtype) {
      throw Error(file_name + ": " + what + ": stored dtype " +
                  std::string(ir::dtype_name(t->dtype)) + " (" + t->origin +
                  ") but the graph declares " + std::string(ir::dtype_name(type.dtype)));
    }
    bool same_shape = t->sizes.size() == type.shape.size();
    for (size_t i = 0; same_shape && i < t->sizes.size(); ++i) {
      same_shape = type.shape[i].is_constant() && type.shape[i].value() == t->sizes[i];
    }
    if (!same_shape) {
      throw Error(file_name + ": " + what + ": stored sizes " + int_list_string(t->sizes) + " (" +
                  t->origin + ") but the graph declares " + g.shape_to_string(type.shape));
    }
    if (t->absent) {
      in.value->set_payload(ir::ConstantPayload::absent_bytes());
      continue;
    }
    ir::ConstantPayload p;
    p.data = t->storage.data();
    p.nbytes = t->storage.size();
    p.storage_offset = t->storage_offset;
    p.strides = t->strides;
    if (t->owner) {
      p.owner = t->owner;
    } else {
      p.owner = file;
      if (file->mapped()) {
        p.drop_pages = &MappedFile::drop_pages;
        p.read_bytes = &MappedFile::read_mapped;
      }
    }
    in.value->set_payload(std::move(p));
  }
}

// Copies a strided view into contiguous bytes.
std::vector<std::byte> gather_contiguous(const StoredTensor& t) {
  size_t esize = ir::dtype_size(t.dtype);
  size_t numel = 1;
  for (int64_t s : t.sizes) numel *= static_cast<size_t>(s);
  std::vector<std::byte> out(numel * esize);
  if (numel == 0) return out;
  std::vector<int64_t> idx(t.sizes.size(), 0);
  for (size_t n = 0; n < numel; ++n) {
    int64_t off = t.storage_offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides[d];
    std::memcpy(out.data() + n * esize, t.storage.data() + static_cast<size_t>(off) * esize, esize);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < t.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// torch.save of (args, kwargs): tensors depth-first, matched to the graph's user inputs in order.
std::vector<SampleInput> read_sample_inputs(std::span<const std::byte> bytes,
                                            const std::string& name, const ir::Graph& g) {
  std::vector<SampleInput> out;
  if (bytes.empty()) return out;
  TorchSaveArchive a = TorchSaveArchive::open(bytes, name);
  const PickleDocument& doc = a.pickle();
  std::vector<uint32_t> leaves;
  // Depth-first over tuples, lists and dict values; depth bounded (containers may be cyclic).
  auto walk = [&](auto&& self, uint32_t id, int depth) -> void {
    if (depth > 32) throw Error(name + ": sample inputs nest deeper than 32 levels");
    const PyObject& o = doc.at(id);
    switch (o.kind) {
      case PyKind::tensor:
        leaves.push_back(id);
        break;
      case PyKind::tuple:
      case PyKind::list:
        for (uint32_t c : o.items) self(self, c, depth + 1);
        break;
      case PyKind::dict:
        for (size_t i = 1; i < o.items.size(); i += 2) self(self, o.items[i], depth + 1);
        break;
      default:
        break;  // ints, floats, None: baked into the graph as constants
    }
  };
  walk(walk, doc.root_id(), 0);
  std::vector<const ir::Value*> users;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) users.push_back(in.value);
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::string what = "sample input " + std::to_string(i);
    StoredTensor t = a.tensor(leaves[i], what);
    SampleInput s;
    s.name = i < users.size() ? users[i]->name() : "arg" + std::to_string(i);
    s.dtype = t.dtype;
    s.shape = t.sizes;
    s.bytes = gather_contiguous(t);
    out.push_back(std::move(s));
  }
  return out;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

}  // namespace

LoadedProgram read_pt2_archive(std::shared_ptr<MappedFile> file, const ZipArchive& zip,
                               const std::string& root) {
  const std::string& fname = zip.display_name();
  auto entry = [&](const std::string& rel) { return zip.find(root + "/" + rel); };
  // Every entry must live under the root folder.
  for (const ZipEntry& e : zip.entries()) {
    if (!e.name.starts_with(root + "/")) {
      throw Error(fname + ": entry '" + e.name + "' is outside the archive root '" + root + "'");
    }
  }
  if (const ZipEntry* v = entry("archive_version")) {
    std::string ver = trimmed(zip.text(*v));
    if (ver != "0") {
      throw Error(fname + ": " + v->name + ": archive_version '" + ver +
                  "' is not supported (expected 0)");
    }
  }
  if (const ZipEntry* b = entry("byteorder")) {
    std::string order = trimmed(zip.text(*b));
    if (order != "little") {
      throw Error(fname + ": " + b->name + ": byteorder '" + order +
                  "' is not supported (expected 'little')");
    }
  }
  // The model: models/model.json, or the only models/*.json.
  std::vector<std::string> models;
  const std::string models_dir = root + "/models/";
  for (const ZipEntry& e : zip.entries()) {
    if (e.name.starts_with(models_dir) && e.name.ends_with(".json") &&
        e.name.find('/', models_dir.size()) == std::string::npos) {
      models.push_back(e.name.substr(models_dir.size(), e.name.size() - models_dir.size() - 5));
    }
  }
  if (models.empty())
    throw Error(fname + ": no " + models_dir + "<name>.json entry: the archive holds no program");
  std::string model;
  for (const auto& m : models) {
    if (m == "model") model = m;
  }
  if (model.empty()) {
    if (models.size() > 1) {
      std::string list;
      for (const auto& m : models) list += (list.empty() ? "" : ", ") + m;
      throw Error(fname + ": archive holds several programs (" + list +
                  ") and none is named 'model'");
    }
    model = models[0];
  }
  const ZipEntry* json_entry = entry("models/" + model + ".json");
  zip.verify_crc(*json_entry);
  ImportedProgram imported =
      import_exported_program(zip.text(*json_entry), fname + "!" + json_entry->name);

  // Weights and constants: the 2.8 torch.save files win when present (as in Python).
  std::unique_ptr<WeightSource> weights, constants;
  if (const ZipEntry* e = entry("data/weights/" + model + ".pt")) {
    weights = std::make_unique<TorchSaveSource>(zip.data(*e), fname + "!" + e->name);
  } else if (const ZipEntry* c = entry("data/weights/" + model + "_weights_config.json")) {
    weights = std::make_unique<PayloadConfigSource>(zip, root + "/data/weights", *c);
  }
  if (const ZipEntry* e = entry("data/constants/" + model + ".pt")) {
    constants = std::make_unique<TorchSaveSource>(zip.data(*e), fname + "!" + e->name);
  } else if (const ZipEntry* c = entry("data/constants/" + model + "_constants_config.json")) {
    constants = std::make_unique<PayloadConfigSource>(zip, root + "/data/constants", *c);
  }
  bool needs_weights = false;
  for (const ir::GraphInput& in : imported.graph->inputs()) {
    needs_weights =
        needs_weights || (in.role != ir::InputRole::user_input && in.role != ir::InputRole::symbol);
  }
  if (needs_weights && !weights && !constants) {
    throw Error(fname + ": neither " + root + "/data/weights/" + model + ".pt nor " + root +
                "/data/weights/" + model +
                "_weights_config.json exists, but the program has "
                "parameters");
  }
  bind_weights(*imported.graph, fname, weights.get(), constants.get(), file);

  LoadedProgram p;
  if (const ZipEntry* e = entry("data/sample_inputs/" + model + ".pt")) {
    p.sample_inputs = read_sample_inputs(zip.data(*e), fname + "!" + e->name, *imported.graph);
  }
  p.graph = std::move(imported.graph);
  p.container = "pt2_archive";
  p.torch_version = imported.info.torch_version;
  p.schema_major = imported.info.schema_major;
  p.schema_minor = imported.info.schema_minor;
  p.file = std::move(file);
  return p;
}

LoadedProgram read_legacy_export_zip(std::shared_ptr<MappedFile> file, const ZipArchive& zip) {
  const std::string& fname = zip.display_name();
  int hint_major = 0;
  if (const ZipEntry* v = zip.find("version")) {
    std::string ver = trimmed(zip.text(*v));
    hint_major = std::atoi(ver.c_str());
    if (hint_major > kNewestSchemaMajor) {
      throw Error(fname + ": version: schema major " + std::to_string(hint_major) +
                  " is newer than the newest supported (" + std::to_string(kNewestSchemaMajor) +
                  ")");
    }
  }
  const ZipEntry* json_entry = zip.find("serialized_exported_program.json");
  zip.verify_crc(*json_entry);
  ImportedProgram imported =
      import_exported_program(zip.text(*json_entry), fname + "!" + json_entry->name, hint_major);

  auto blob = [&](const char* pt, const char* js) -> const ZipEntry* {
    if (const ZipEntry* e = zip.find(pt)) return e;
    return zip.find(js);
  };
  std::unique_ptr<WeightSource> weights, constants;
  if (const ZipEntry* e = blob("serialized_state_dict.pt", "serialized_state_dict.json")) {
    weights = std::make_unique<TorchSaveSource>(zip.data(*e), fname + "!" + e->name);
  }
  if (const ZipEntry* e = blob("serialized_constants.pt", "serialized_constants.json")) {
    constants = std::make_unique<TorchSaveSource>(zip.data(*e), fname + "!" + e->name);
  }
  bind_weights(*imported.graph, fname, weights.get(), constants.get(), file);

  LoadedProgram p;
  if (const ZipEntry* e = zip.find("serialized_example_inputs.pt")) {
    p.sample_inputs = read_sample_inputs(zip.data(*e), fname + "!" + e->name, *imported.graph);
  }
  p.graph = std::move(imported.graph);
  p.container = "legacy_export_zip";
  p.torch_version = imported.info.torch_version;
  p.schema_major = imported.info.schema_major;
  p.schema_minor = imported.info.schema_minor;
  p.file = std::move(file);
  return p;
}

}  // namespace neuronc::frontend
