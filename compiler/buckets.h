// Shape buckets: which values of a program's symbolic dims `compile` writes an entry for, and
// which of those dims the loader may pad (passes/padding.h proves it exact). One artifact then
// serves every shape in range: the loader runs the smallest bucket that fits, padding the
// inputs and cutting the outputs back, or the exact bucket for a symbol it may not pad.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "ir/graph.h"
#include "passes/auto_cast.h"
#include "passes/padding.h"

namespace neuronc::compiler {

struct BucketSymbol {
  std::string name;
  ir::SymbolId id = -1;
  int64_t min = 0, max = 0;                           // the export's range
  std::vector<int64_t> values;                        // ascending
  bool padded = false;                                // smaller values run padded up to a bucket
  passes::PadWith pad_with = passes::PadWith::zeros;  // with what, when padded
  std::string not_padded;  // why not (the analysis' refusal), when !padded
};

struct BucketRequest {
  std::map<std::string, int64_t> dims;                  // --dim: bound, not bucketed
  std::map<std::string, std::vector<int64_t>> buckets;  // --buckets: the values per symbol
  int opt_level = 2;
  passes::AutoCastMode auto_cast = passes::AutoCastMode::none;
};

// The bucket plan of `prog`: one BucketSymbol per free symbol its shapes use and `--dim` leaves
// open, in symbol order, and the optimised graph they were checked on. No symbols when there is
// nothing to bucket (no such symbol), or when every such symbol would get one unpadded value, which
// is one ordinary compile at that value. Default values: a padded symbol gets the powers of two
// inside its range plus both ends, never 0 (an unbounded range ends at the sample input's value
// rounded up to a power of two); an unpadded one gets an exact bucket for every value of its range
// when that range holds at most 64 values (and the buckets number at most 256 in all), so the
// artifact still runs every size the export allows, else the sample input's value. Throws
// ir::Error for a --buckets symbol the program does not have, or a value outside its range.
struct BucketPlan {
  std::vector<BucketSymbol> symbols;
  std::unique_ptr<ir::Graph> graph;  // the optimised graph with the symbols open
};
BucketPlan plan_buckets(const frontend::LoadedProgram& prog, const BucketRequest& req);

// Every combination of the symbols' values, in lexicographic order (the first symbol slowest).
std::vector<std::map<std::string, int64_t>> bucket_combinations(
    const std::vector<BucketSymbol>& symbols);

// "main[s43=2,s53=16]": the entry name of one combination.
std::string bucket_entry_name(const std::string& group, const std::vector<BucketSymbol>& symbols,
                              const std::map<std::string, int64_t>& values);

}  // namespace neuronc::compiler
