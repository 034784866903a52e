// Padded-dim analysis: may a program compiled for a larger value of some symbolic dims run
// inputs of a smaller one, padded with zeros at the end of those dims, and give on the real
// extent exactly the outputs the smaller shape would?
//
// That holds when no real output element reads a padded one in a way that changes it. The
// analysis follows, per tensor and axis, which padded symbols the axis carries and in which
// layout (a padded symbol outermost in its axis pads a suffix; anything else interleaves), and,
// for a suffix, what value the padded slab holds when the other axes are real (zero, a known
// constant such as an attention mask's -inf, or unknown). Element-wise work, views, matmuls
// over unpadded axes, norms over unpadded axes, causal attention and attention whose mask
// hides the padded keys keep the padding to itself; a sum over a padded axis is exact when the
// slab is zero, a max or softmax when it is -inf-like; anything else that reads across a padded
// axis (a mean, a convolution, a cat, a gather from a padded table, an operator without a rule)
// refuses, naming the node and why. Padded elements must stay finite: an operation that would
// make them NaN or infinite (a softmax row every element of which is masked, a division by a
// zero pad) refuses too, since a NaN next to real rows does not stay put on every engine.
// A padded symbol's size must never be read as data: an argument holding it that is not an
// extent of the result (ArgSpec::extent: view's size, slice's end) refuses, naming the node.
// symbol_values.h turns the reads it can (an operand, a fill value, a mean's count) into symbol
// inputs first; those hold the run's real size, unpadded values of unknown content here.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace neuronc::passes {

struct PaddingVerdict {
  bool ok = true;
  std::string node;      // the node that reads across a padded dim ("" for an output)
  std::string op;        // its operator
  std::string location;  // its Python source line
  std::string reason;    // what it does with the padding
  // "node 'x' (aten.mean.dim) at f.py:3: it averages over s1, whose padding changes the mean"
  std::string message() const;
};

// What the loader fills a padded dim with: zeros (what a padded sequence needs, so a sum skips
// it and a mask input hides it) or copies of the last real index (edge: the padded rows are the
// model's own results on real data, finite wherever the real ones are; what a padded batch
// needs when its zero rows would be fully masked attention rows, NaN in PyTorch's semantics,
// which a NeuronCore-v2 TensorE transpose spreads into the real rows beside them).
enum class PadWith : uint8_t { zeros, edge };

// Whether padding the free symbols in `padded` (a graph's symbol ids, each filled as given) is
// exact for `g`: every user output's padded axes must be suffixes (the loader cuts them back),
// no state may carry a padded axis, no node may mix padded elements into real ones, and none
// may make padded elements NaN or infinite (a fully masked softmax row, a division by a zero
// pad). `g` is the optimised graph with its symbols unbound.
PaddingVerdict check_padding(const ir::Graph& g, const std::map<ir::SymbolId, PadWith>& padded);

}  // namespace neuronc::passes
