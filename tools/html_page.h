// The frame of neuronc's self-contained HTML pages (`compile --report`, `compare --report`):
// a strict Content-Security-Policy (no network), one style sheet, and an inline script that
// shows a hovered mark's title and marks the page for tests (`data-plots-drawn="K/N"`: K of the
// N `svg.plot` elements have marks and a non-empty box; `data-js-errors` on a script error).
// Plots are inline SVG drawn by the pages themselves.
#pragma once

#include <string>

namespace neuronc::tools::html {

// `s` with & < > " ' escaped, for text and attribute values.
std::string esc(const std::string& s);
// `v` printed with the printf format `f` ("%.2f").
std::string fmt(const char* f, double v);

// From <!DOCTYPE html> to the opening <body>, with `title` (escaped here).
std::string page_begin(const std::string& title);
// The hover box, the script and the closing tags.
std::string page_end();

}  // namespace neuronc::tools::html
