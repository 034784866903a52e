// Container detection, following the order of PT2_FORMAT.md §1.
#include "frontend/container.h"

#include <cstring>

#include "frontend/error.h"

namespace neuronc::frontend {

const char* container_kind_name(ContainerKind k) {
  switch (k) {
    case ContainerKind::pt2_archive:
      return "pt2_archive";
    case ContainerKind::legacy_export_zip:
      return "legacy_export_zip";
    case ContainerKind::torchscript:
      return "torchscript";
    case ContainerKind::torch_save:
      return "torch_save";
    case ContainerKind::lite_interpreter:
      return "lite_interpreter";
    case ContainerKind::unknown:
      return "unknown";
  }
  return "unknown";
}

ContainerInfo classify_zip(const ZipArchive& zip) {
  if (zip.find("serialized_exported_program.json") != nullptr) {
    return {ContainerKind::legacy_export_zip, ""};
  }
  if (zip.entries().empty()) throw Error(zip.display_name() + ": zip archive has no entries");
  const std::string& first = zip.entries().front().name;
  size_t slash = first.find('/');
  if (slash == std::string::npos) {
    throw Error(zip.display_name() + ": file in archive is not in a subdirectory: " + first);
  }
  std::string root = first.substr(0, slash);
  auto has = [&](const char* rel) { return zip.find(root + "/" + rel) != nullptr; };
  if (const ZipEntry* f = zip.find(root + "/archive_format")) {
    if (zip.text(*f) == "pt2") return {ContainerKind::pt2_archive, root};  // throws if deflated
  }
  bool data_pkl = has("data.pkl"), constants_pkl = has("constants.pkl");
  if (data_pkl && constants_pkl) return {ContainerKind::torchscript, root};
  if (data_pkl) return {ContainerKind::torch_save, root};
  if (has("bytecode.pkl")) return {ContainerKind::lite_interpreter, root};
  std::string listing;
  size_t n = std::min<size_t>(zip.entries().size(), 5);
  for (size_t i = 0; i < n; ++i) listing += (i ? ", " : "") + zip.entries()[i].name;
  if (zip.entries().size() > n) listing += ", ...";
  throw Error(zip.display_name() +
              ": zip archive is not a PyTorch program (expected serialized_exported_program.json, "
              "<root>/archive_format = 'pt2', or <root>/data.pkl + <root>/constants.pkl); "
              "found entries: " +
              listing);
}

ContainerKind detect_container(std::span<const std::byte> bytes) {
  try {
    ZipArchive zip = ZipArchive::open(bytes, "");
    return classify_zip(zip).kind;
  } catch (const Error&) {
    return ContainerKind::unknown;
  }
}

ContainerInfo identify_container(std::span<const std::byte> bytes, const std::string& name,
                                 ZipArchive* zip_out) {
  // torch.save before 1.6: a raw pickle stream starting with PROTO 2, LONG1 10 bytes and the
  // magic number 0x1950a86a20f9469cfc6c.
  static const unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                               0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  bool is_zip = false;
  try {
    *zip_out = ZipArchive::open(bytes, name);
    is_zip = true;
  } catch (const Error&) {
    if (bytes.size() >= sizeof kLegacyMagic &&
        std::memcmp(bytes.data(), kLegacyMagic, sizeof kLegacyMagic) == 0) {
      throw Error(name +
                  ": this is a pre-1.6 torch.save file (legacy pickle format, not a zip); it is "
                  "not a program. Export the model with torch.export.save (PyTorch 2.1+)");
    }
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x03\x04", 4) != 0) {
      throw Error(name +
                  ": not a PyTorch program: not a zip archive (first bytes are not "
                  "'PK\\x03\\x04'); expected a torch.export .pt2 or a TorchScript .pt");
    }
    throw;  // a broken zip: the zip reader's message is precise
  }
  (void)is_zip;
  return classify_zip(*zip_out);
}

}  // namespace neuronc::frontend
