// torch.save zips (PT2_FORMAT.md §2.3, §5.2): `<root>/data.pkl` plus one raw storage record per
// key in `<root>/data/`. Used for legacy export state dicts and constants, 2.8 PT2 weight files,
// `use_pickle` payloads and sample inputs. Tensors are views into the archive's bytes.
// Thread-safety: immutable after open().
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "frontend/pickle_reader.h"
#include "frontend/zip_reader.h"
#include "ir/dtype.h"

namespace neuronc::frontend {

// A tensor whose bytes stay inside the archive: `storage` is the whole storage record.
struct StoredTensor {
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // elements
  int64_t storage_offset = 0;    // elements
  std::span<const std::byte> storage;
  std::string storage_key;
  bool is_parameter = false;
};

class TorchSaveArchive {
 public:
  // Opens the zip in `bytes` (display_name starts messages) and runs its data.pkl.
  static TorchSaveArchive open(std::span<const std::byte> bytes, std::string display_name);

  const PickleDocument& pickle() const { return doc_; }
  const std::string& display_name() const { return zip_.display_name(); }
  // Resolves tensor object `object_id` to its storage record and validates the view. `what`
  // names the tensor in messages ("state dict entry 'fc.weight'").
  StoredTensor tensor(uint32_t object_id, const std::string& what) const;
  // The top object as a {str: tensor} dict (dict or OrderedDict); non-tensor values are an
  // error naming the key.
  std::vector<std::pair<std::string, StoredTensor>> tensor_dict() const;

 private:
  ZipArchive zip_;
  std::string root_;
  PickleDocument doc_;
};

}  // namespace neuronc::frontend
