// Quality over an evaluation set: input sets with PyTorch's outputs beside them (`verify
// --dataset DIR`, DIR/<k>/input_<i>.npy and output_<i>.npy; or the one set beside a model), run
// through a compiled model and summarised per output: the distribution of each set's errors and,
// for classifier-shaped outputs, how often the predicted class agrees with PyTorch's. Shared by
// `verify --dataset` and `compare`. Thread-safety: free functions, no shared state.
#pragma once

#include <neuronc/model.h>

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/output_comparison.h"

namespace neuronc::tools {

// One input set and PyTorch's outputs on it.
struct ReferenceSet {
  std::string name;  // the dataset's subdirectory ("7"); empty for a lone reference folder
  std::filesystem::path dir;
  std::vector<std::string> inputs;   // input_0.npy, input_1.npy, ... as found
  std::vector<std::string> outputs;  // output_0.npy, ...
};

// Natural order of names: runs of digits compare as numbers ("set2" before "set10"), the rest
// byte by byte; names equal as numbers ("7", "07") fall back to byte order.
bool natural_less(const std::string& a, const std::string& b);

// The sets of `--dataset DIR`: its subdirectories in natural order. Each must hold input_0.npy
// and output_0.npy, and as many input_<i>.npy and output_<i>.npy as the first. Throws
// CommandExit (exit code 1) naming the directory or file, with what was expected and found.
std::vector<ReferenceSet> list_dataset(const std::string& dir);

// The input_<i>.npy and output_<i>.npy of one folder (the model's, or verify's --reference);
// `inputs` or `outputs` empty when there are none.
ReferenceSet reference_set(const std::filesystem::path& dir);

// The shapes of the set's inputs, in order (CompileRequest::input_shapes). Throws CommandExit
// naming an unreadable file.
std::vector<std::vector<int64_t>> input_shapes(const ReferenceSet& set);

// One output over the sets.
struct OutputQuality {
  std::string name;            // the model's output name
  std::vector<int64_t> shape;  // the first set's reference shape
  Tolerance tol;               // what each set's output was held to
  size_t sets_failed = 0;      // sets whose output is outside `tol`
  std::string first_failed_set;
  double max_abs_error = 0;                // over every set
  std::vector<double> max_rel_error;       // per set: verify's max relative error
  std::vector<double> cosine;              // per set
  std::optional<TopKAgreement> agreement;  // classifier-shaped outputs (is_classifier_shaped)
};

struct DatasetQuality {
  size_t sets = 0;
  bool pass = true;  // every output of every set within its tolerance
  std::vector<OutputQuality> outputs;
};

// Checks every set's files against the model's signature before anything runs: as many inputs
// as the model takes, each of its dtype (or float32 for a bf16/f16 input) and shape, and no
// more reference outputs than it has, each of its output's shape. A mismatch throws
// CommandExit (exit code 1) naming the file, with the expected and found dtype or shape.
void check_dataset(const neuronc::Model& model, const std::vector<ReferenceSet>& sets);

// Runs `model` on every set (checked by check_dataset; each from the model's initial state) and
// compares each output that has a reference with it, under verify's tolerance: the bf16
// criterion when `auto_cast` or the output is 16-bit, then `overrides`. A failing run throws
// CommandExit with the loader's message.
DatasetQuality evaluate_dataset(const neuronc::Model& model, const std::vector<ReferenceSet>& sets,
                                bool auto_cast, const ToleranceOverrides& overrides);

// `outputs` of the JSON forms (docs/CLI.md, `verify --dataset`): per output its name, shape,
// tolerance, sets_failed, first_failed_set, max_abs_error, max_rel_error {max, p99, mean} over
// the sets, cosine {min, mean} and agreement {rows, classes, top1, top5} (null when the output is
// not classifier-shaped; top5 null with 5 classes or fewer).
nlohmann::ordered_json quality_json(const DatasetQuality& quality);

// The same figures of one output as table cells: "sets failed", "max rel error max / p99 /
// mean", "cosine min / mean", "top-1", "top-5".
std::vector<std::string> quality_cells(const OutputQuality& output, size_t sets);

}  // namespace neuronc::tools
