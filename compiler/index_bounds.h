// The values an integer user input may hold because it indexes a table. PyTorch raises on an
// embedding id outside the table (or a negative one); the device's indirect DMA stops on a row
// outside its table too, but only after the compiler narrowed the 64-bit ids to 32 bits, where
// 2^32 + 3 has become 3. So the compiler records a bound per input, and the loader checks every
// element against it before running and names the input, the element, its value and the bound
// (artifact::IndexBound).
#pragma once

#include <map>

#include "artifact_format/artifact.h"
#include "ir/graph.h"

namespace neuronc::compiler {

// For each integer user input of `g` that reaches, through element-preserving ops only (views,
// expands, permutes, squeezes, clones and widening integer casts), the index operand of
//  - aten.embedding: [0, rows of the table),
//  - aten.index_select: [0, size of the selected dim),
// the intersection of those ranges. Inputs with no such use, or whose tables have symbolic
// extents, have no entry.
std::map<const ir::Value*, artifact::IndexBound> index_bounds(const ir::Graph& g);

}  // namespace neuronc::compiler
