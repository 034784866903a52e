// Scans TorchScript's serialized Python for calls into operator libraries other than PyTorch's.
// The code is what torch.jit.save wrote (`ops.<lib>.<name>(args)`), so a plain token scan is
// exact: identifiers cannot contain '.', and string literals holding "ops." are skipped.
#include "frontend/custom_kernels.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace neuronc::frontend {
namespace {

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool pytorch_library(std::string_view lib) {
  return lib == "aten" || lib == "prim" || lib == "prims";
}

void scan_file(std::string_view file, std::string_view text, std::vector<CustomKernelCall>& out) {
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    ++line_no;
    bool in_string = false;
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == quote)
          in_string = false;
        continue;
      }
      if (c == '"' || c == '\'') {
        in_string = true;
        quote = c;
        continue;
      }
      if (c == '#') break;
      // "ops.<lib>.<name>(" at an identifier boundary.
      if (line.compare(i, 4, "ops.") != 0 ||
          (i > 0 && (ident_char(line[i - 1]) || line[i - 1] == '.')))
        continue;
      size_t p = i + 4, lib_end = p;
      while (lib_end < line.size() && ident_char(line[lib_end])) ++lib_end;
      if (lib_end == p || lib_end >= line.size() || line[lib_end] != '.') continue;
      size_t name_end = lib_end + 1;
      while (name_end < line.size() && ident_char(line[name_end])) ++name_end;
      if (name_end == lib_end + 1 || name_end >= line.size() || line[name_end] != '(') continue;
      const std::string_view lib = line.substr(p, lib_end - p);
      if (pytorch_library(lib)) continue;
      std::string_view code = line;
      while (!code.empty() && code.front() == ' ') code.remove_prefix(1);
      out.push_back(
          {std::string(lib) + "." + std::string(line.substr(lib_end + 1, name_end - lib_end - 1)),
           std::string(file) + ":" + std::to_string(line_no) + ": `" + std::string(code) + "`"});
      i = name_end;
    }
    start = end + 1;
  }
}

}  // namespace

std::vector<CustomKernelCall> find_torchscript_custom_calls(std::span<const CodeFile> code) {
  std::vector<CustomKernelCall> out;
  for (const CodeFile& f : code) scan_file(f.name, f.text, out);
  std::stable_sort(
      out.begin(), out.end(),
      [](const CustomKernelCall& a, const CustomKernelCall& b) { return a.op < b.op; });
  return out;
}

CustomKernelError custom_kernel_error(const std::string& file,
                                      std::vector<CustomKernelCall> calls) {
  std::string msg = file + ": calls " + std::to_string(calls.size()) + " custom kernel" +
                    (calls.size() == 1 ? "" : "s") +
                    " from libraries other than PyTorch's (aten, prim), which libtorch cannot "
                    "load without them and neuronc has no Trainium implementation of:";
  for (const CustomKernelCall& c : calls) msg += "\n  " + c.op + " at " + c.location;
  msg +=
      "\nport each kernel to PyTorch operators (or give it an aten decomposition) and export "
      "again; `neuronc analyze` lists them";
  return CustomKernelError(msg, std::move(calls));
}

}  // namespace neuronc::frontend
