// Evaluation sets and the quality of a compiled model over them (eval_dataset.h).
#include "tools/eval_dataset.h"

#include <neuronc/session.h>

#include <algorithm>
#include <cstdio>

#include "tools/cli_output.h"
#include "tools/percentile.h"
#include "tools/runner.h"
#include "tools/text_table.h"

namespace neuronc::tools {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void dataset_error(const std::string& message) {
  throw CommandExit{kExitError, message, ""};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string file_in(const fs::path& dir, const std::string& stem, size_t i) {
  return (dir / (stem + "_" + std::to_string(i) + ".npy")).string();
}

// "input_0 .. input_2" (or "input_0" for one).
std::string file_range(const std::string& stem, size_t n) {
  return n == 1 ? stem + "_0" : stem + "_0 .. " + stem + "_" + std::to_string(n - 1);
}

// "1 input", "2 inputs".
std::string count_of(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string names_of(const std::vector<neuronc::TensorSpec>& specs) {
  std::string s;
  for (const neuronc::TensorSpec& t : specs) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

NpyArray read_or_exit(const std::string& file) {
  try {
    return read_npy(file);
  } catch (const NpyError& e) {
    dataset_error(e.what());
  }
}

// The first dim of `shape` that `spec` does not allow, as "dim 1 is 8, expected 16"; empty when
// the shape fits (a symbolic dim: a multiple of its coefficient within its range).
std::string shape_misfit(const neuronc::TensorSpec& spec, const std::vector<int64_t>& shape) {
  if (shape.size() != spec.dims.size())
    return "rank " + std::to_string(shape.size()) + ", expected " +
           std::to_string(spec.dims.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    const neuronc::DimSpec& dim = spec.dims[d];
    const std::string at = "dim " + std::to_string(d) + " is " + std::to_string(shape[d]);
    if (!dim.is_symbolic()) {
      if (shape[d] != dim.value) return at + ", expected " + std::to_string(dim.value);
      continue;
    }
    const int64_t k = dim.coeff > 0 ? dim.coeff : 1;
    if (shape[d] % k != 0 || shape[d] / k < dim.min || shape[d] / k > dim.max)
      return at + ", expected " + (k != 1 ? std::to_string(k) + " x " : "") + dim.symbol +
             " with " + dim.symbol + " in [" + std::to_string(dim.min) + ", " +
             std::to_string(dim.max) + "]";
  }
  return "";
}

// Checks every file of `set` against the model's signature (counts, input dtypes, shapes).
void check_set(const neuronc::Model& model, const ReferenceSet& set) {
  const std::vector<neuronc::TensorSpec>& ins = model.inputs();
  const std::vector<neuronc::TensorSpec>& outs = model.outputs();
  if (set.inputs.size() < ins.size())
    dataset_error(file_in(set.dir, "input", set.inputs.size()) + " is missing: the model takes " +
                  count_of(ins.size(), "input") + " (" + names_of(ins) + "), found " +
                  file_range("input", set.inputs.size()));
  if (set.inputs.size() > ins.size())
    dataset_error(set.inputs[ins.size()] + ": the model takes " + count_of(ins.size(), "input") +
                  " (" + names_of(ins) + "), found " + file_range("input", set.inputs.size()));
  if (set.outputs.size() > outs.size())
    dataset_error(set.outputs[outs.size()] + ": the model has " + count_of(outs.size(), "output") +
                  " (" + names_of(outs) + "), found " + file_range("output", set.outputs.size()));
  for (size_t i = 0; i < ins.size(); ++i) {
    const NpyArray a = read_or_exit(set.inputs[i]);
    const neuronc::TensorSpec& spec = ins[i];
    const NpyType want = npy_type_of(spec.dtype);
    // A float32 array for a bf16 or f16 input is converted (runner.h's as_input).
    const bool widened_ok =
        a.type == NpyType::f32 && (want == NpyType::bf16 || want == NpyType::f16);
    const std::string who = "the model's input '" + spec.name + "', " + spec_text(spec);
    if (a.type != want && !widened_ok)
      dataset_error(set.inputs[i] + ": dtype " + npy_type_name(a.type) + ", expected " +
                    npy_type_name(want) + " (" + who + ")");
    if (const std::string misfit = shape_misfit(spec, a.shape); !misfit.empty())
      dataset_error(set.inputs[i] + ": shape " + shape_text(a.shape) + " does not fit " + who +
                    ": " + misfit);
  }
  for (size_t i = 0; i < set.outputs.size(); ++i) {
    const NpyArray a = read_or_exit(set.outputs[i]);
    const neuronc::TensorSpec& spec = outs[i];
    if (const std::string misfit = shape_misfit(spec, a.shape); !misfit.empty())
      dataset_error(set.outputs[i] + ": shape " + shape_text(a.shape) +
                    " does not fit the model's output '" + spec.name + "', " + spec_text(spec) +
                    ": " + misfit);
  }
}

double mean_of(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x / static_cast<double>(v.size());
  return v.empty() ? 0 : m;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      size_t is = i, js = j;  // skip leading zeros
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      if (const int c = a.compare(is, ie - is, b, js, je - js); c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();
  return a < b;
}

void check_dataset(const neuronc::Model& model, const std::vector<ReferenceSet>& sets) {
  for (const ReferenceSet& s : sets) check_set(model, s);
}

ReferenceSet reference_set(const fs::path& dir) {
  ReferenceSet s;
  s.dir = dir;
  for (size_t i = 0; fs::exists(file_in(dir, "input", i)); ++i)
    s.inputs.push_back(file_in(dir, "input", i));
  for (size_t i = 0; fs::exists(file_in(dir, "output", i)); ++i)
    s.outputs.push_back(file_in(dir, "output", i));
  return s;
}

std::vector<ReferenceSet> list_dataset(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    dataset_error("dataset " + dir +
                  (fs::exists(dir, ec) ? " is not a directory" : " does not exist") +
                  ": expected a directory with one subdirectory per input set");
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  if (ec) dataset_error("dataset " + dir + ": " + ec.message());
  if (names.empty())
    dataset_error("dataset " + dir +
                  " has no subdirectories: expected one per input set, each with input_<i>.npy "
                  "and PyTorch's output_<i>.npy");
  std::sort(names.begin(), names.end(), natural_less);
  std::vector<ReferenceSet> sets;
  for (const std::string& name : names) {
    ReferenceSet s = reference_set(fs::path(dir) / name);
    s.name = name;
    for (const auto& [stem, files] : {std::pair{"input", &s.inputs}, {"output", &s.outputs}}) {
      const std::string kind = stem;
      if (files->empty())
        dataset_error(file_in(s.dir, kind, 0) +
                      " is missing: every set holds input_<i>.npy and "
                      "PyTorch's output_<i>.npy");
      if (sets.empty()) continue;
      const ReferenceSet& first = sets.front();
      const size_t want = kind == "input" ? first.inputs.size() : first.outputs.size();
      const std::string than = "set '" + first.name + "' has " + file_range(kind, want);
      if (files->size() < want)
        dataset_error(file_in(s.dir, kind, files->size()) + " is missing: " + than);
      if (files->size() > want)
        dataset_error((*files)[want] + " is one " + kind + " too many: " + than + ", this set " +
                      file_range(kind, files->size()));
    }
    sets.push_back(std::move(s));
  }
  return sets;
}

std::vector<std::vector<int64_t>> input_shapes(const ReferenceSet& set) {
  std::vector<std::vector<int64_t>> shapes;
  for (const std::string& f : set.inputs) shapes.push_back(read_or_exit(f).shape);
  return shapes;
}

DatasetQuality evaluate_dataset(const neuronc::Model& model, const std::vector<ReferenceSet>& sets,
                                bool auto_cast, const ToleranceOverrides& overrides) {
  DatasetQuality q;
  neuronc::Session session(model);
  if (!session.status().is_ok()) throw CommandExit{kExitError, session.status().message(), ""};
  for (size_t k = 0; k < sets.size(); ++k) {
    const ReferenceSet& set = sets[k];
    progress("set " + std::to_string(k + 1) + "/" + std::to_string(sets.size()));
    if (!model.states().empty()) session.reset_state();
    const RunResult r = run_once(session, read_inputs(model, set.inputs));
    if (q.outputs.empty()) q.outputs.resize(set.outputs.size());
    for (size_t i = 0; i < set.outputs.size(); ++i) {
      const NpyArray want = read_or_exit(set.outputs[i]);
      const NpyArray& got = r.outputs[i];
      OutputQuality& o = q.outputs[i];
      const bool sixteen = got.type == NpyType::bf16 || got.type == NpyType::f16;
      const Comparison c =
          compare_output(r.names[i], got, want, output_tolerance(auto_cast || sixteen, overrides));
      if (!c.shape_ok)
        dataset_error(set.outputs[i] + ": the model's output '" + r.names[i] + "' has shape " +
                      shape_text(got.shape) + ", the reference " + shape_text(want.shape));
      if (k == 0) {
        o.name = r.names[i];
        o.shape = want.shape;
        o.tol = c.tol;
      }
      if (!c.pass && o.sets_failed++ == 0) o.first_failed_set = set.name;
      o.max_abs_error = std::max(o.max_abs_error, c.max_abs);
      o.max_rel_error.push_back(c.max_rel);
      o.cosine.push_back(c.cosine);
      if (is_classifier_shaped(want) && is_classifier_shaped(got)) {
        if (!o.agreement) o.agreement.emplace();
        count_top_k_agreement(got, want, *o.agreement);
      }
      q.pass &= c.pass;
    }
  }
  progress_done();
  q.sets = sets.size();
  return q;
}

nlohmann::ordered_json quality_json(const DatasetQuality& q) {
  using json = nlohmann::ordered_json;
  json outputs = json::array();
  for (const OutputQuality& o : q.outputs) {
    json j;
    j["name"] = o.name;
    j["shape"] = o.shape;
    j["tolerance"] = {{"atol", o.tol.atol},
                      {"atol_relative_to_max_ref", o.tol.atol_relative_to_max},
                      {"rtol", o.tol.rtol},
                      {"min_cosine", o.tol.min_cosine > -1 ? json(o.tol.min_cosine) : json()}};
    j["sets_failed"] = o.sets_failed;
    j["first_failed_set"] = o.sets_failed ? json(o.first_failed_set) : json();
    j["max_abs_error"] = o.max_abs_error;
    j["max_rel_error"] = {
        {"max", *std::max_element(o.max_rel_error.begin(), o.max_rel_error.end())},
        {"p99", percentile(o.max_rel_error, 99)},
        {"mean", mean_of(o.max_rel_error)}};
    j["cosine"] = {{"min", *std::min_element(o.cosine.begin(), o.cosine.end())},
                   {"mean", mean_of(o.cosine)}};
    if (o.agreement) {
      const TopKAgreement& a = *o.agreement;
      const double rows = static_cast<double>(a.rows);
      j["agreement"] = {
          {"rows", a.rows},
          {"classes", a.classes},
          {"top1", static_cast<double>(a.top1) / rows},
          {"top5", a.classes > 5 ? json(static_cast<double>(a.top5) / rows) : json()}};
    } else {
      j["agreement"] = nullptr;
    }
    outputs.push_back(std::move(j));
  }
  return outputs;
}

std::vector<std::string> quality_cells(const OutputQuality& o, size_t sets) {
  std::vector<std::string> cells;
  cells.push_back(std::to_string(o.sets_failed) + "/" + std::to_string(sets));
  cells.push_back(
      number_cell("%.3g", *std::max_element(o.max_rel_error.begin(), o.max_rel_error.end())) +
      " / " + number_cell("%.3g", percentile(o.max_rel_error, 99)) + " / " +
      number_cell("%.3g", mean_of(o.max_rel_error)));
  cells.push_back(number_cell("%.8f", *std::min_element(o.cosine.begin(), o.cosine.end())) + " / " +
                  number_cell("%.8f", mean_of(o.cosine)));
  const auto pct = [&](size_t n) {
    return number_cell("%.1f%%",
                       100.0 * static_cast<double>(n) / static_cast<double>(o.agreement->rows));
  };
  cells.push_back(o.agreement ? pct(o.agreement->top1) : "-");
  cells.push_back(o.agreement && o.agreement->classes > 5 ? pct(o.agreement->top5) : "-");
  return cells;
}

}  // namespace neuronc::tools
