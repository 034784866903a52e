// The one exception type the frontend throws. Every message names the input file and, where it
// applies, the archive entry and the JSON path or byte offset, and says expected vs found.
#pragma once

#include <stdexcept>
#include <string>

namespace neuronc::frontend {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace neuronc::frontend
