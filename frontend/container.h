// Which kind of PyTorch file a byte buffer holds, decided from its contents (PT2_FORMAT.md §1),
// never from the file extension.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "frontend/zip_reader.h"

namespace neuronc::frontend {

enum class ContainerKind {
  pt2_archive,        // torch.export.save, PyTorch 2.8+ (<root>/archive_format == "pt2")
  legacy_export_zip,  // torch.export.save, PyTorch 2.1-2.7 (serialized_exported_program.json)
  torchscript,        // torch.jit.save (<root>/data.pkl + <root>/constants.pkl)
  torch_save,         // torch.save checkpoint (<root>/data.pkl only): not a program
  lite_interpreter,   // mobile archive (<root>/bytecode.pkl): not supported
  unknown,
};

const char* container_kind_name(ContainerKind k);  // "pt2_archive", ...

// Never throws: `unknown` for anything that is not a readable zip of a known layout.
ContainerKind detect_container(std::span<const std::byte> bytes);

struct ContainerInfo {
  ContainerKind kind = ContainerKind::unknown;
  std::string root;  // top folder without '/', "" for the legacy export zip
};

// Classifies an opened zip. Throws frontend::Error for a zip whose layout is none of the known
// ones (listing the first entries) or whose first entry is not in a subdirectory.
ContainerInfo classify_zip(const ZipArchive& zip);

// Opens `bytes` as a zip and classifies it; a file that is not a zip at all gets a message
// that says what it looks like (e.g. the pre-1.6 torch.save format).
ContainerInfo identify_container(std::span<const std::byte> bytes, const std::string& name,
                                 ZipArchive* zip_out);

}  // namespace neuronc::frontend
