// Shape bucket reports (bucket_report.h).
#include "tools/bucket_report.h"

#include <cstdio>
#include <string>

namespace neuronc::tools {
namespace {

const char* padding_name(const compiler::BucketSymbol& b) {
  if (!b.padded) return "exact";
  return b.pad_with == passes::PadWith::zeros ? "zeros" : "edge";
}

}  // namespace

nlohmann::ordered_json buckets_json(const std::vector<compiler::BucketSymbol>& buckets) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const compiler::BucketSymbol& b : buckets)
    out.push_back({{"symbol", b.name},
                   {"values", b.values},
                   {"padding", padding_name(b)},
                   {"not_padded", b.not_padded}});
  return out;
}

void print_buckets(const std::vector<compiler::BucketSymbol>& buckets) {
  if (buckets.empty()) return;
  size_t entries = 1;
  for (const compiler::BucketSymbol& b : buckets) entries *= b.values.size();
  std::printf("  %zu shape buckets (the loader runs the smallest that fits):\n", entries);
  for (const compiler::BucketSymbol& b : buckets) {
    std::string values;
    for (int64_t v : b.values) values += (values.empty() ? "" : ", ") + std::to_string(v);
    std::printf("    %s in [%lld, %s]: %s; ", b.name.c_str(), static_cast<long long>(b.min),
                b.max == INT64_MAX ? "inf" : std::to_string(b.max).c_str(), values.c_str());
    if (b.padded)
      std::printf("smaller values padded with %s\n",
                  b.pad_with == passes::PadWith::zeros ? "zeros" : "copies of the last row");
    else
      std::printf("only these values (padding is not exact: %s)\n", b.not_padded.c_str());
  }
}

}  // namespace neuronc::tools
