// Field-by-field translation between device::Program (device/isa.h) and the Program table of
// artifact.fbs. Decoding checks every enum value and every required operand, so the result is a
// well-formed device::Program; whether it fits the target is device::verify_program's job.
// Internal to artifact_format (it exposes generated FlatBuffers types).
#pragma once

#include <flatbuffers/flatbuffers.h>

#include "artifact_format/artifact.h"
#include "artifact_format/artifact_generated.h"
#include "artifact_format/status.h"

namespace neuronc::artifact {

flatbuffers::Offset<fb::Program> encode_program(flatbuffers::FlatBufferBuilder& fbb,
                                                const DeviceProgram& program);

Result<DeviceProgram> decode_program(const fb::Program& program);

}  // namespace neuronc::artifact
