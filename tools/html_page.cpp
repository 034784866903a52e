// The page frame shared by neuronc's HTML reports (html_page.h).
#include "tools/html_page.h"

#include "tools/text_table.h"

namespace neuronc::tools::html {
namespace {

const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f8}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.note{color:#555;font-size:12px}#hover{position:fixed;right:12px;bottom:12px;background:#fffbe6;border:1px solid #e0d080;
padding:4px 8px;font-size:12px;display:none;max-width:480px}code{font-size:12px}
)css";

// Marks the page for tests and shows the hovered mark's title; no network, no eval.
const char* kScript = R"js(
(function () {
  var errors = [];
  function markErrors() { document.body.setAttribute('data-js-errors', errors.join(' | ')); }
  window.addEventListener('error', function (e) { errors.push(String(e.message)); markErrors(); });
  function drawn(svg) {
    var marks = svg.querySelectorAll('rect, circle, path');
    if (marks.length === 0) return false;
    var box = svg.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  }
  function ready() {
    var plots = document.querySelectorAll('svg.plot');
    var ok = 0;
    for (var i = 0; i < plots.length; i++) if (drawn(plots[i])) ok++;
    document.body.setAttribute('data-plots-drawn', ok + '/' + plots.length);
    var hover = document.getElementById('hover');
    document.body.addEventListener('mouseover', function (ev) {
      var t = ev.target.querySelector ? ev.target.querySelector('title') : null;
      if (!t) { hover.style.display = 'none'; return; }
      hover.textContent = t.textContent;
      hover.style.display = 'block';
    });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', ready); else ready();
})();
)js";

}  // namespace

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string fmt(const char* f, double v) {
  return number_cell(f, v);
}

std::string page_begin(const std::string& title) {
  return std::string(
             "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
             "<title>") +
         esc(title) + "</title><style>" + kStyle + "</style></head><body>\n";
}

std::string page_end() {
  return std::string("<div id=\"hover\"></div>\n<script>") + kScript +
         "</script>\n</body></html>\n";
}

}  // namespace neuronc::tools::html
