// Test helper: renders one of neuronc's HTML pages (tools/html_page.h) in headless Chromium and
// reads back what its inline script recorded: how many plots were drawn, script errors, and
// every console line Chromium logged. Chromium comes from tests/tools/install_chromium.sh.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace neuronc::tools::testing {

inline bool have_chromium() {
  return std::system("command -v chromium >/dev/null 2>&1") == 0;
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct RenderedPage {
  int exit_code = -1;
  std::string command, dom, log;
  int plots_drawn = -1, plots = -1;  // from data-plots-drawn="K/N"; -1 when absent
  bool script_errors = false;        // the body carries data-js-errors
  std::vector<std::string> console;  // Chromium's ":CONSOLE" lines (log, warning, error, ...)
};

// Loads `html` (a file) in headless Chromium and dumps the DOM after the scripts ran;
// `scratch` holds the profile, the DOM and the log, named after `name`.
inline RenderedPage render_in_chromium(const std::string& html,
                                       const std::filesystem::path& scratch,
                                       const std::string& name) {
  RenderedPage p;
  const std::string profile = (scratch / ("chromium-" + name)).string();
  const std::string dom = (scratch / (name + ".dom.html")).string();
  const std::string log = (scratch / (name + ".chromium.log")).string();
  p.command =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
      "--disable-component-update --disable-sync --no-first-run --window-size=1300,2000 "
      "--user-data-dir=" +
      profile + " --enable-logging=stderr --v=0 --dump-dom file://" + html + " >" + dom + " 2>" +
      log;
  p.exit_code = std::system(p.command.c_str());
  p.dom = slurp(dom);
  p.log = slurp(log);
  std::smatch m;
  if (std::regex_search(p.dom, m, std::regex("data-plots-drawn=\"(\\d+)/(\\d+)\""))) {
    p.plots_drawn = std::stoi(m[1]);
    p.plots = std::stoi(m[2]);
  }
  p.script_errors = std::regex_search(p.dom, std::regex("<body[^>]*data-js-errors"));
  // Chromium prints every console message (log, warning, error, uncaught exception) as
  // "...:CONSOLE(line)] ..." or "...:CONSOLE:line] ..." on stderr.
  std::istringstream lines(p.log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos) p.console.push_back(line);
  return p;
}

}  // namespace neuronc::tools::testing
