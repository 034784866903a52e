// Comma-separated option values of the commands that sweep settings (`verify --dataset
// --auto-cast none,matmul`, `compare --targets trn1,trn2`).
#pragma once

#include <string>
#include <vector>

namespace neuronc::tools {

// The items of `list` ("a,b,c") in the order given. Each must be one of `allowed`, and none may
// repeat; otherwise a usage error (CommandExit, exit code 2) naming `flag`, the item and the
// allowed values.
std::vector<std::string> parse_choice_list(const std::string& list,
                                           const std::vector<std::string>& allowed,
                                           const std::string& flag);

}  // namespace neuronc::tools
