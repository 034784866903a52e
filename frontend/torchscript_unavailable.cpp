// The TorchScript reader when neuronc is built without libtorch.
#include "frontend/torchscript_reader.h"

namespace neuronc::frontend {

bool torchscript_supported() {
  return false;
}

LoadedProgram read_torchscript(std::shared_ptr<MappedFile> file) {
  throw Error(file->path() +
              ": is a TorchScript archive (torch.jit.save), and this neuronc was built without "
              "libtorch. Rebuild with -DNEURONC_WITH_TORCH=ON after installing the Debian package "
              "libtorch-dev, or export the model with torch.export.save to a .pt2 file");
}

}  // namespace neuronc::frontend
