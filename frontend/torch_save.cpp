#include "frontend/torch_save.h"

#include "frontend/error.h"
#include "frontend/tensor_view.h"

namespace neuronc::frontend {

TorchSaveArchive TorchSaveArchive::open(std::span<const std::byte> bytes,
                                        std::string display_name) {
  TorchSaveArchive a;
  a.zip_ = ZipArchive::open(bytes, std::move(display_name));
  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : a.zip_.entries()) {
    size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      a.root_ = e.name.substr(0, slash);
      pkl = &e;
      break;
    }
  }
  if (pkl == nullptr) {
    throw Error(a.zip_.display_name() + ": not a torch.save archive: no <root>/data.pkl entry");
  }
  if (const ZipEntry* bo = a.zip_.find(a.root_ + "/byteorder")) {
    std::string_view order = a.zip_.text(*bo);
    if (order != "little") {
      throw Error(a.zip_.display_name() + ": " + bo->name + ": byteorder '" + std::string(order) +
                  "' is not supported (expected 'little')");
    }
  }
  a.doc_ = read_pickle(a.zip_.data(*pkl), a.zip_.display_name() + "!" + pkl->name);
  return a;
}

StoredTensor TorchSaveArchive::tensor(uint32_t object_id, const std::string& what) const {
  const PyObject& o = doc_.at(object_id);
  if (o.kind != PyKind::tensor) {
    throw Error(zip_.display_name() + ": " + what + ": expected a tensor, found " +
                py_kind_name(o.kind));
  }
  const TensorRecord& r = doc_.tensors().at(o.ref);
  std::string rec = root_ + "/data/" + r.storage_key;
  const ZipEntry* e = zip_.find(rec);
  if (e == nullptr) {
    throw Error(zip_.display_name() + ": " + rec + " referenced by " + what + " not found");
  }
  if (!r.dtype) {
    throw Error(zip_.display_name() + ": " + what + ": dtype " + r.dtype_name +
                " is not supported");
  }
  auto bytes = zip_.data(*e);
  unsigned __int128 expect =
      static_cast<unsigned __int128>(r.storage_numel) * r.storage_element_size;
  if (expect != bytes.size()) {
    throw Error(zip_.display_name() + ": " + what + ": storage '" + r.storage_key + "' (" +
                r.storage_class + ") declares " + std::to_string(r.storage_numel) +
                " elements = " + std::to_string(static_cast<uint64_t>(expect)) +
                " bytes but the record has " + std::to_string(bytes.size()));
  }
  size_t esize = ir::dtype_size(*r.dtype);
  if (std::string p = view_problem(r.sizes, r.strides, r.storage_offset, esize, bytes.size());
      !p.empty()) {
    throw Error(zip_.display_name() + ": " + what + ": " + p + " (storage '" + r.storage_key +
                "')");
  }
  StoredTensor t;
  t.dtype = *r.dtype;
  t.sizes = r.sizes;
  t.strides = r.strides;
  t.storage_offset = r.storage_offset;
  t.storage = bytes;
  t.storage_key = r.storage_key;
  t.is_parameter = r.is_parameter;
  return t;
}

std::vector<std::pair<std::string, StoredTensor>> TorchSaveArchive::tensor_dict() const {
  const PyObject& root = doc_.root();
  if (root.kind != PyKind::dict) {
    throw Error(zip_.display_name() +
                ": expected a dict of tensors at the top of data.pkl, found " +
                py_kind_name(root.kind));
  }
  std::vector<std::pair<std::string, StoredTensor>> out;
  for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
    const PyObject& k = doc_.at(root.items[i]);
    if (k.kind != PyKind::string) {
      throw Error(zip_.display_name() + ": state dict key " + std::to_string(i / 2) +
                  ": expected str, found " + py_kind_name(k.kind));
    }
    out.emplace_back(k.str, tensor(root.items[i + 1], "entry '" + k.str + "'"));
  }
  return out;
}

}  // namespace neuronc::frontend
