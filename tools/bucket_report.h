// How `compile` and `analyze` report a program's shape buckets (compiler/buckets.h): one JSON
// form and one text form, so the two commands say the same thing the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "compiler/buckets.h"

namespace neuronc::tools {

// [{symbol, values, padding: "zeros" | "edge" | "exact", not_padded}], in symbol order.
nlohmann::ordered_json buckets_json(const std::vector<compiler::BucketSymbol>& buckets);

// "  25 shape buckets (...):" and a line per symbol, on stdout; nothing without buckets.
void print_buckets(const std::vector<compiler::BucketSymbol>& buckets);

}  // namespace neuronc::tools
