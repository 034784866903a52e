// Comma-separated option values (option_lists.h).
#include "tools/option_lists.h"

#include <algorithm>

#include "tools/cli_output.h"

namespace neuronc::tools {

std::vector<std::string> parse_choice_list(const std::string& list,
                                           const std::vector<std::string>& allowed,
                                           const std::string& flag) {
  std::string choices;
  for (size_t i = 0; i < allowed.size(); ++i)
    choices += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  std::vector<std::string> items;
  for (size_t at = 0; at <= list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(at, end - at);
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end())
      throw CommandExit{kExitUsage,
                        flag + " '" + list +
                            "': " + (item.empty() ? "an empty item" : "'" + item + "'") +
                            ", expected " + choices + " (a comma-separated list)",
                        ""};
    if (std::find(items.begin(), items.end(), item) != items.end())
      throw CommandExit{kExitUsage, flag + " '" + list + "': '" + item + "' is given twice", ""};
    items.push_back(item);
    at = end + 1;
  }
  return items;
}

}  // namespace neuronc::tools
