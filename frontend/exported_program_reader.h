// The torch.export ExportedProgram JSON (PT2_FORMAT.md §3) into an ir::Graph, and the
// PayloadConfig JSON that maps weight FQNs to raw storage files (§5.1). Weights are not bound
// here (see pt2_reader.h): graph inputs carry their role and FQN and get payloads afterwards.
// Every schema from 2.1 (schema 1) to 8.x is accepted; nlohmann-json stays inside the .cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace neuronc::frontend {

struct ExportedProgramInfo {
  int schema_major = 0;
  int schema_minor = 0;
  std::string torch_version;                   // "<=2.4" when the file does not say
  std::vector<std::string> verifiers;          // "TRAINING", "ATEN", "EDGE"; or the 2.2 dialect
  std::vector<std::string> forward_arg_names;  // root module's forward() parameters, if known
  size_t dropped_nodes = 0;                    // runtime checks and resolved symbolic-int nodes
};

struct ImportedProgram {
  std::unique_ptr<ir::Graph> graph;
  ExportedProgramInfo info;
};

inline constexpr int kNewestSchemaMajor = 8;

// Parses `json_text` and builds the graph. `where` starts every message ("model.pt2!model/
// models/model.json"). `hint_major`, when positive, is the schema major from a legacy zip's
// `version` record, used when the JSON itself does not carry one. Throws frontend::Error.
ImportedProgram import_exported_program(std::string_view json_text, const std::string& where,
                                        int hint_major = 0);

// TensorMeta with constant dims (weights, constants).
struct StaticTensorMeta {
  int64_t schema_dtype = 0;        // export ScalarType numbering (PT2_FORMAT.md §4)
  std::optional<ir::DType> dtype;  // nullopt for a dtype neuronc lacks
  std::string dtype_name;          // "FLOAT", "COMPLEXFLOAT", ...
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  int64_t layout = 7;
  std::string device = "cpu";
};

struct PayloadMeta {
  std::string path_name;
  bool is_param = false;
  bool use_pickle = false;
  std::optional<StaticTensorMeta> tensor_meta;
};

// `{"config": {FQN: PayloadMeta}}`, keyed by FQN. Throws frontend::Error.
std::map<std::string, PayloadMeta> read_payload_config(std::string_view json_text,
                                                       const std::string& where);

// Export ScalarType (not c10) to ir::DType; nullopt for values neuronc cannot represent.
std::optional<ir::DType> schema_dtype_to_ir(int64_t v);
// "FLOAT", "BFLOAT16", ... or "" for a value the schema never assigned.
const char* schema_dtype_name(int64_t v);

}  // namespace neuronc::frontend
