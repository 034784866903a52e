// Every parameter of a device::Target with its value and the kind of its source, as
// docs/DEVICE_MODEL.md's "Every parameter of device::Target" table gives them (a test keeps the
// two in step): what bench --json reports beside its figures, so that a reader sees which
// numbers are published, derived, fitted to named anchors, or assumed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "device/target.h"

namespace neuronc::device {

enum class SourceKind : uint8_t { published, derived, fitted, assumption };
std::string_view source_kind_name(SourceKind k);

struct Parameter {
  std::string_view name;  // the Target member
  std::string value;      // as a number, true / false, or text
  double number = 0;      // the value as a number (text: NaN)
  std::string_view unit;  // from the name's suffix: ns, GHz, cycles, bytes, GB/s, B/ns, x
  SourceKind kind = SourceKind::assumption;  // for this target's generation
};

// Every data member of `t`, in declaration order.
std::vector<Parameter> target_parameters(const Target& t);

}  // namespace neuronc::device
