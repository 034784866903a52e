// A plain-text table for the human output of `verify --dataset` and `compare`: columns left
// aligned to their widest cell, two spaces apart.
#pragma once

#include <string>
#include <vector>

namespace neuronc::tools {

// `v` printed with the printf format `f` ("%.3g") for a cell of a table or a page.
std::string number_cell(const char* f, double v);

// `rows` (the first is the header) as lines; cells are ASCII. A row shorter than the header
// leaves its last columns empty; a row with a single cell after others spans the line.
std::string text_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace neuronc::tools
