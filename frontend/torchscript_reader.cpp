// TorchScript archives: through libneuronc_torchscript.so when neuronc is built with libtorch
// (torchscript_plugin.h), opened on the first TorchScript file; without libtorch, an error
// naming the build option and the package.
#include "frontend/torchscript_reader.h"

#include <cstdlib>

#include "frontend/container.h"
#include "frontend/torchscript_plugin.h"

#ifdef NEURONC_HAVE_TORCH
#include <dlfcn.h>
#endif

namespace neuronc::frontend {

#ifdef NEURONC_HAVE_TORCH
namespace {

using ReadFn = decltype(&neuronc_read_torchscript);
using AbiFn = decltype(&neuronc_torchscript_plugin_abi);

struct Plugin {
  ReadFn read = nullptr;
  std::string path;
  std::string error;  // why it could not be used, when read is null
};

// NEURONC_TORCHSCRIPT_PLUGIN, when set, names the module; otherwise the one this build made.
const Plugin& plugin() {
  static const Plugin p = [] {
    Plugin r;
    const char* env = std::getenv("NEURONC_TORCHSCRIPT_PLUGIN");
    r.path = env != nullptr && *env != '\0' ? env : NEURONC_TORCHSCRIPT_PLUGIN_PATH;
    void* h = dlopen(r.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = dlerror();
      r.error = why != nullptr ? why : "dlopen failed";
      return r;
    }
    auto abi = reinterpret_cast<AbiFn>(dlsym(h, "neuronc_torchscript_plugin_abi"));
    auto read = reinterpret_cast<ReadFn>(dlsym(h, "neuronc_read_torchscript"));
    if (abi == nullptr || read == nullptr) {
      r.error = "it has no neuronc_torchscript_plugin_abi / neuronc_read_torchscript entry point";
    } else if (int v = abi(); v != kTorchScriptPluginAbi) {
      r.error = "it was built for plugin ABI " + std::to_string(v) + ", and this neuronc expects " +
                std::to_string(kTorchScriptPluginAbi);
    } else {
      r.read = read;
    }
    return r;
  }();
  return p;
}

}  // namespace

bool torchscript_supported() {
  return true;
}

LoadedProgram read_torchscript(std::shared_ptr<MappedFile> file) {
  const std::string fname = file->path();
  const Plugin& p = plugin();
  if (p.read == nullptr) {
    throw Error(fname + ": is a TorchScript archive (torch.jit.save), and neuronc's TorchScript " +
                "reader " + p.path + " cannot be loaded: " + p.error +
                ". Rebuild neuronc, or set NEURONC_TORCHSCRIPT_PLUGIN to the " +
                "libneuronc_torchscript.so of this build");
  }
  LoadedProgram out;
  TorchScriptUnknownOp unknown;
  if (p.read(file, out, unknown)) {
    out.container = container_kind_name(ContainerKind::torchscript);
    return out;
  }
  const std::string& op = unknown.op;
  // A library's own operator: list every call into such libraries, not just the first.
  if (!op.starts_with("aten::") && !op.starts_with("prim::") && !op.starts_with("prims::")) {
    std::vector<CustomKernelCall> calls = find_torchscript_custom_calls(unknown.code);
    if (!calls.empty()) throw custom_kernel_error(fname, std::move(calls));
  }
  std::string msg = fname + ": was written by a newer PyTorch than the libtorch 1.13 neuronc " +
                    "reads TorchScript with: its code calls " + op +
                    ", which libtorch 1.13 does not know. Export the model with " +
                    "torch.export.export(model, example_inputs) and " +
                    "torch.export.save(ep, 'model.pt2') instead";
  if (op == "aten::scaled_dot_product_attention") {
    msg += " (scaled_dot_product_attention is supported in .pt2 files)";
  }
  throw Error(msg);
}

#else  // !NEURONC_HAVE_TORCH

bool torchscript_supported() {
  return false;
}

LoadedProgram read_torchscript(std::shared_ptr<MappedFile> file) {
  throw Error(file->path() +
              ": is a TorchScript archive (torch.jit.save), and this neuronc was built without "
              "libtorch. Rebuild with -DNEURONC_WITH_TORCH=ON after installing the Debian package "
              "libtorch-dev, or export the model with torch.export.save to a .pt2 file");
}

#endif

}  // namespace neuronc::frontend
