// Running an artifact on .npy inputs through the loader library, shared by `run`, `verify` and
// `bench`.
#pragma once

#include <neuronc/model.h>
#include <neuronc/session.h>

#include <string>
#include <vector>

#include "tools/npy.h"

namespace neuronc::tools {

NpyType npy_type_of(neuronc::DType t);
neuronc::DType dtype_of(NpyType t);

// `--input` values: "NAME=FILE.npy" or "FILE.npy" (by position). Every model input must be
// given exactly once. Throws CommandExit with a usage message otherwise.
// `a` as input `spec` takes it: a float32 array given for a bf16 or f16 input (numpy has no
// bfloat16, so a .npy user has no other way to feed one) is converted with round-to-nearest-
// even, and stderr says so once per process; anything else is returned unchanged.
NpyArray as_input(const neuronc::TensorSpec& spec, NpyArray a);
// A bf16 or f16 array as float32 (exact); any other array unchanged.
NpyArray widen_to_f32(const NpyArray& a);
// The elements of an int64 or int32 array (token ids) as int64; empty for any other type.
std::vector<int64_t> widen_to_i64(const NpyArray& a);
std::vector<std::pair<std::string, NpyArray>> read_inputs(const neuronc::Model& model,
                                                          const std::vector<std::string>& args);
// The same for the inputs `specs` of one entry (Model::entries()).
std::vector<std::pair<std::string, NpyArray>> read_inputs(
    const std::vector<neuronc::TensorSpec>& specs, const std::vector<std::string>& args);

// Sample inputs saved in a .pt2 (torch.export's example inputs), in the model's input order.
std::vector<std::pair<std::string, NpyArray>> sample_inputs(const neuronc::Model& model,
                                                            const std::string& pt2_path);

struct RunResult {
  std::vector<std::string> names;  // the model's output order
  std::vector<NpyArray> outputs;
  neuronc::RunStats stats;
};

// A copy of `t` as an .npy array.
NpyArray npy_of(const neuronc::Tensor& t);

// Runs one inference. Throws CommandExit with the loader's message on failure.
RunResult run_once(neuronc::Session& session,
                   const std::vector<std::pair<std::string, NpyArray>>& inputs);
// The same for entry `entry` of the session's model.
RunResult run_once(neuronc::Session& session, const std::string& entry,
                   const std::vector<std::pair<std::string, NpyArray>>& inputs);

neuronc::Model load_model_or_exit(const std::string& path);

// A usage error when `model` is a directory of one model's programs (frontend::is_program_set),
// which only `compile` takes: `command` takes one program of it.
void refuse_program_set(const std::string& model, const std::string& command);

}  // namespace neuronc::tools
