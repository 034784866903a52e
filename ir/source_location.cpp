// Source locations from torch.export node metadata.
#include "ir/source_location.h"

#include <string_view>
#include <vector>

namespace neuronc::ir {

std::string SourceLocation::to_string() const {
  std::string s;
  if (!file.empty()) {
    s = file;
    if (line > 0) s += ":" + std::to_string(line);
  }
  if (!module_path.empty()) {
    if (!s.empty()) s += " ";
    s += "(" + module_path + ")";
  }
  return s;
}

namespace {

// Frames inside PyTorch itself (nn.Module plumbing, functional wrappers) are not what a user
// wants to see: "linear.py:134" says less than the line of the model that called nn.Linear.
bool is_torch_library_frame(const std::string& trace, size_t frame) {
  const size_t b = frame + 6;
  const size_t e = trace.find('"', b);
  if (e == std::string::npos) return false;
  const std::string file = trace.substr(b, e - b);
  return file.find("/torch/nn/") != std::string::npos ||
         file.find("/torch/_") != std::string::npos ||
         file.find("/torch/fx/") != std::string::npos ||
         file.find("/torch/utils/") != std::string::npos ||
         file.find("/torch/autograd/") != std::string::npos;
}

}  // namespace

SourceLocation parse_python_stack_trace(const std::string& trace) {
  // Frames look like:   File "/path/model.py", line 12, in forward\n    return self.fc(x)
  // The innermost frame is the last one; the innermost frame outside PyTorch's own library
  // code is preferred when there is one.
  SourceLocation loc;
  loc.stack_trace = trace;
  size_t pos = 0;
  size_t last = std::string::npos, last_user = std::string::npos;
  while ((pos = trace.find("File \"", pos)) != std::string::npos) {
    last = pos;
    if (!is_torch_library_frame(trace, pos)) last_user = pos;
    pos += 6;
  }
  if (last_user != std::string::npos) last = last_user;
  if (last == std::string::npos) return loc;
  const size_t name_begin = last + 6;
  const size_t name_end = trace.find('"', name_begin);
  if (name_end == std::string::npos) return loc;
  loc.file = trace.substr(name_begin, name_end - name_begin);
  size_t p = trace.find(", line ", name_end);
  const size_t eol = trace.find('\n', name_end);
  if (p != std::string::npos && (eol == std::string::npos || p < eol)) {
    p += 7;
    int line = 0;
    while (p < trace.size() && trace[p] >= '0' && trace[p] <= '9' && line < 100000000) {
      line = line * 10 + (trace[p] - '0');
      ++p;
    }
    loc.line = line;
    const size_t in = trace.find(", in ", p);
    if (in != std::string::npos && (eol == std::string::npos || in < eol)) {
      loc.function = trace.substr(in + 5, (eol == std::string::npos ? trace.size() : eol) - in - 5);
    }
  }
  if (eol != std::string::npos) {
    size_t b = eol + 1;
    size_t e = trace.find('\n', b);
    std::string code = trace.substr(b, e == std::string::npos ? std::string::npos : e - b);
    const size_t first = code.find_first_not_of(" \t");
    loc.code = first == std::string::npos ? "" : code.substr(first);
  }
  return loc;
}

}  // namespace neuronc::ir
