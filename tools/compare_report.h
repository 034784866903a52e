// `neuronc compare --report FILE.html`: one self-contained page (tools/html_page.h) with the
// comparison table and three inline SVG plots: simulated or measured latency per row, cost per
// million inferences per row, and latency against cost.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace neuronc::tools {

// The page of a run_compare() document (compare_command.h).
std::string render_compare_report(const nlohmann::ordered_json& report);

// Renders and writes the page. Throws CommandExit on I/O failure.
void write_compare_report(const std::string& path, const nlohmann::ordered_json& report);

}  // namespace neuronc::tools
