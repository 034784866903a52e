// A small, bounded interpreter for the pickles inside torch.save zips (protocol 2, plus the
// protocol 3-5 opcodes a user may have forced). It never executes code: only the GLOBALs of
// PT2_FORMAT.md §5.2 are accepted (tensor rebuild functions, storage classes, dtypes,
// OrderedDict, torch.device, torch.Size), and a tensor becomes a TensorRecord naming its storage
// record; the bytes are resolved by TorchSaveArchive (torch_save.h).
//
// Objects live in one arena owned by the PickleDocument and refer to each other by index, so
// memo references and self-referential containers cannot leak or recurse on destruction. Every
// object is created by one opcode, so memory is bounded by the pickle's size.
// Thread-safety: a PickleDocument is immutable after read_pickle().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace neuronc::frontend {

enum class PyKind : uint8_t {
  none,
  boolean,
  integer,
  floating,
  string,
  bytes,
  tuple,
  list,
  dict,     // dict and collections.OrderedDict; insertion order kept
  set,      // set and frozenset
  global,   // an allowed GLOBAL, `str` = "module.name"
  storage,  // a persistent-id storage reference, `ref` indexes tensors()
  tensor,   // a rebuilt tensor, `ref` indexes tensors()
  device,   // torch.device, `str` = "cpu", "cuda:0"
};
const char* py_kind_name(PyKind k);

// A tensor as a pickle describes it: a view onto storage record `data/<storage_key>`.
struct TensorRecord {
  std::string storage_key;
  std::string storage_class;  // "FloatStorage", "UntypedStorage", ...
  std::string location;       // "cpu", "cuda:0"
  int64_t storage_numel = 0;  // in elements of storage_class (bytes for UntypedStorage)
  size_t storage_element_size = 1;
  std::optional<ir::DType> dtype;  // nullopt: a dtype neuronc lacks (complex, uint32, ...)
  std::string dtype_name;          // PyTorch's name: "float32", "complex64", ...
  int64_t storage_offset = 0;      // elements of dtype
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  bool requires_grad = false;
  bool is_parameter = false;
};

struct PyObject {
  PyKind kind = PyKind::none;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string str;              // string, bytes, global, device
  std::vector<uint32_t> items;  // tuple/list/set elements; dict: key0, value0, key1, value1...
  uint32_t ref = 0;             // storage/tensor: index into PickleDocument::tensors()
};

struct PickleLimits {
  size_t max_bytes = size_t{1} << 30;  // refuse larger pickles outright
  size_t max_stack = size_t{1} << 20;
};

class PickleDocument {
 public:
  const PyObject& root() const { return objects_.at(root_); }
  uint32_t root_id() const { return root_; }
  const PyObject& at(uint32_t id) const { return objects_.at(id); }
  const std::vector<TensorRecord>& tensors() const { return tensors_; }
  const std::string& display_name() const { return name_; }

 private:
  friend class PickleMachine;
  std::vector<PyObject> objects_;
  std::vector<TensorRecord> tensors_;
  uint32_t root_ = 0;
  std::string name_;
};

// Runs the pickle in `bytes`. `display_name` ("model.pt2!archive/data.pkl") starts every
// message, followed by "@0x<offset>". Throws frontend::Error.
PickleDocument read_pickle(std::span<const std::byte> bytes, const std::string& display_name,
                           const PickleLimits& limits = {});

}  // namespace neuronc::frontend
