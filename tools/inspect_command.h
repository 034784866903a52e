// `neuronc inspect ARTIFACT [--json] [--disasm]`: what is inside a .nca — format version,
// producer, source and its hash, target, options, signature, partitions, memory plan,
// instruction counts per engine, segment table; with --disasm every instruction stream, each
// instruction with its IR node and Python source line. Fields: docs/ARTIFACT_FORMAT.md.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace neuronc::tools {

void register_inspect_command(CLI::App& app);

// The report as text or JSON. Throws CommandExit when the file cannot be read at all; a file
// that reads but fails verification is reported with "verified": false and the reason.
std::string inspect_artifact(const std::string& path, bool json, bool disasm);

}  // namespace neuronc::tools
