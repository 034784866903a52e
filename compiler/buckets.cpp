// Shape buckets (buckets.h).
#include "compiler/buckets.h"

#include <algorithm>
#include <set>

#include "compiler/pipeline.h"
#include "passes/padding.h"
#include "passes/pass_manager.h"

namespace neuronc::compiler {
namespace {

// Powers of two strictly inside (lo, hi), with lo and hi.
std::vector<int64_t> default_values(int64_t lo, int64_t hi) {
  std::vector<int64_t> v{lo};
  for (int64_t p = 1; p < hi && p <= (int64_t{1} << 40); p *= 2)
    if (p > lo) v.push_back(p);
  if (hi != lo) v.push_back(hi);
  return v;
}

// An unpadded symbol gets an exact bucket for every value of a range at most this long, so one
// artifact still runs every size the export allows; beyond it, the sample input's value alone.
constexpr int64_t kMaxExactValues = 64;
// Nor more buckets in all than this (the product over the symbols).
constexpr size_t kMaxBuckets = 256;

int64_t round_up_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v && p <= (int64_t{1} << 40)) p *= 2;
  return p;
}

}  // namespace

BucketPlan plan_buckets(const frontend::LoadedProgram& prog, const BucketRequest& req) {
  const ir::Graph& g = *prog.graph;
  std::vector<BucketSymbol> out;
  const std::set<ir::SymbolId> used = used_symbols(g);
  for (ir::SymbolId id : used) {
    const ir::Symbol& s = g.symbol(id);
    if (!req.dims.count(s.name))
      out.push_back({s.name, id, s.min, s.max, {}, false, passes::PadWith::zeros, ""});
  }
  for (const auto& [name, values] : req.buckets) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&n = name](const BucketSymbol& b) { return b.name == n; });
    if (it == out.end()) {
      std::string names;
      for (const BucketSymbol& b : out) names += (names.empty() ? "" : ", ") + b.name;
      throw ir::Error(
          "--buckets " + name + ": the program has no open symbolic dim of that name" +
          (names.empty() ? std::string(" (it has none)") : ": expected one of " + names));
    }
    for (int64_t v : values)
      if (v < it->min || v > it->max)
        throw ir::Error("--buckets " + name + ": " + std::to_string(v) + " is outside the range [" +
                        std::to_string(it->min) + ", " +
                        (it->max == INT64_MAX ? std::string("inf") : std::to_string(it->max)) +
                        "] the export gives " + name);
  }
  if (out.empty()) return {};

  // Which symbols may be padded: checked on the optimised graph with the symbols open, adding
  // one symbol at a time (a symbol stays unpadded when padding it with the others is not exact).
  std::unique_ptr<ir::Graph> sym = g.clone();
  std::string pipeline_error;
  try {
    PipelineOptions popts;
    popts.dims = req.dims;
    for (const BucketSymbol& b : out) popts.symbol_values.insert(b.name);
    popts.opt_level = req.opt_level;
    popts.auto_cast = req.auto_cast;
    passes::PassManager pm;
    build_compile_pipeline(pm, popts);
    pm.run(*sym);
  } catch (const std::exception& e) {
    pipeline_error = std::string("the optimiser needs it bound: ") + e.what();
  }
  // Zeros first (a padded sequence needs them, for its mask to hide it), else copies of the last
  // real row (a padded batch whose zero rows would be fully masked).
  std::map<ir::SymbolId, passes::PadWith> padded;
  for (BucketSymbol& b : out) {
    if (!pipeline_error.empty()) {
      b.not_padded = pipeline_error;
      continue;
    }
    for (passes::PadWith with : {passes::PadWith::zeros, passes::PadWith::edge}) {
      auto trial = padded;
      trial[b.id] = with;
      const passes::PaddingVerdict v = passes::check_padding(*sym, trial);
      if (v.ok) {
        padded = std::move(trial);
        b.padded = true;
        b.pad_with = with;
        break;
      }
      if (with == passes::PadWith::zeros) b.not_padded = v.message();
    }
    if (b.padded) b.not_padded.clear();
  }

  const std::map<std::string, int64_t> samples =
      bind_symbolic_dims(g, prog.sample_inputs, req.dims, false);
  bool any_choice = false;
  std::vector<BucketSymbol*> exact;  // unpadded and not given: decided once the others are
  size_t combinations = 1;
  for (BucketSymbol& b : out) {
    auto given = req.buckets.find(b.name);
    const auto sample = samples.find(b.name);
    if (given != req.buckets.end()) {
      b.values = given->second;
    } else if (b.padded) {
      int64_t hi = b.max;
      if (hi == INT64_MAX) {
        if (sample == samples.end())
          throw ir::Error("symbolic dim " + b.name +
                          " has no upper bound and no sample value: pass "
                          "--buckets " +
                          b.name + "=V1,V2,... (or --dim " + b.name + "=N)");
        hi = std::max(round_up_pow2(sample->second), b.min);
      }
      // No bucket of 0: an empty dim runs in the smallest bucket, padded.
      b.values = default_values(std::max<int64_t>(b.min, 1), std::max<int64_t>(hi, 1));
    } else {
      exact.push_back(&b);
      continue;
    }
    std::sort(b.values.begin(), b.values.end());
    b.values.erase(std::unique(b.values.begin(), b.values.end()), b.values.end());
    combinations *= b.values.size();
    if (b.padded || b.values.size() > 1) any_choice = true;
  }
  // A symbol padding would change a value of (or that the optimiser needs bound): an exact
  // bucket for every size of a short range, so the artifact still runs every size the export
  // allows; else the sample input's value.
  for (BucketSymbol* b : exact) {
    const auto sample = samples.find(b->name);
    const int64_t lo = std::max<int64_t>(b->min, 1);
    const int64_t count = b->max == INT64_MAX ? INT64_MAX : b->max - lo + 1;
    if (pipeline_error.empty() && count <= kMaxExactValues &&
        combinations * static_cast<size_t>(count) <= kMaxBuckets) {
      for (int64_t v = lo; v <= b->max; ++v) b->values.push_back(v);
    } else if (sample != samples.end()) {
      b->values = {sample->second};
    } else {
      throw ir::Error("symbolic dim " + b->name + " in [" + std::to_string(b->min) + ", " +
                      (b->max == INT64_MAX ? std::string("inf") : std::to_string(b->max)) +
                      "] needs a value: pass --dim " + b->name + "=N or --buckets " + b->name +
                      "=V1,V2,... (" + b->not_padded + ")");
    }
    combinations *= b->values.size();
    if (b->values.size() > 1) any_choice = true;
  }
  if (!any_choice) return {};
  if (!pipeline_error.empty())
    throw ir::Error("--buckets: " + pipeline_error + " (pass --dim for each symbolic dim)");
  return {std::move(out), std::move(sym)};
}

std::vector<std::map<std::string, int64_t>> bucket_combinations(
    const std::vector<BucketSymbol>& symbols) {
  std::vector<std::map<std::string, int64_t>> out{{}};
  for (const BucketSymbol& b : symbols) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& partial : out)
      for (int64_t v : b.values) {
        auto m = partial;
        m[b.name] = v;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

std::string bucket_entry_name(const std::string& group, const std::vector<BucketSymbol>& symbols,
                              const std::map<std::string, int64_t>& values) {
  std::string s = group + "[";
  for (size_t i = 0; i < symbols.size(); ++i)
    s += (i ? "," : "") + symbols[i].name + "=" + std::to_string(values.at(symbols[i].name));
  return s + "]";
}

}  // namespace neuronc::compiler
