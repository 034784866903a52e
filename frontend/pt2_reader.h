// torch.export archives: the PT2 archive of PyTorch 2.8+ and the legacy export zip of 2.1-2.7
// (PT2_FORMAT.md §2). Both become a graph via exported_program_reader.h, then every parameter,
// buffer and constant input is bound to its bytes in the file (zero-copy), and the sample inputs
// are read when present.
#pragma once

#include <memory>
#include <string>

#include "frontend/load.h"
#include "frontend/zip_reader.h"

namespace neuronc::frontend {

// `zip` must view `file`'s bytes; `root` is the archive's top folder.
LoadedProgram read_pt2_archive(std::shared_ptr<MappedFile> file, const ZipArchive& zip,
                               const std::string& root);
LoadedProgram read_legacy_export_zip(std::shared_ptr<MappedFile> file, const ZipArchive& zip);

}  // namespace neuronc::frontend
