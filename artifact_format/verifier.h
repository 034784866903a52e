// Semantic checks of decoded artifact contents before anything runs: every index (values,
// programs, constants, segments, symbols, debug nodes), every size and offset (constants inside
// their segments, bindings and constant placements inside the HBM arena and the program's HBM),
// the data flow of the plan (each value defined once, before use), and every device program
// against its target's limits through device::verify_program. Pure function; thread-safe.
#pragma once

#include "artifact_format/artifact.h"
#include "artifact_format/status.h"

namespace neuronc::artifact {

// Returns the first problem found, naming the table, the index and the numbers.
Status verify_contents(const ArtifactContents& contents);

}  // namespace neuronc::artifact
