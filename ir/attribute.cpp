// Names of attribute kinds and enum values, for the text form and messages.
#include "ir/attribute.h"

namespace neuronc::ir {

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::none:
      return "none";
    case AttrKind::int_:
      return "int";
    case AttrKind::float_:
      return "float";
    case AttrKind::bool_:
      return "bool";
    case AttrKind::string:
      return "string";
    case AttrKind::ints:
      return "int list";
    case AttrKind::floats:
      return "float list";
    case AttrKind::bools:
      return "bool list";
    case AttrKind::strings:
      return "string list";
    case AttrKind::dtype:
      return "dtype";
    case AttrKind::device:
      return "device";
    case AttrKind::memory_format:
      return "memory format";
    case AttrKind::layout:
      return "layout";
    case AttrKind::sym_ints:
      return "symbolic int list";
    case AttrKind::sym_int:
      return "symbolic int";
  }
  return "?";
}

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::contiguous:
      return "contiguous_format";
    case MemoryFormat::preserve:
      return "preserve_format";
    case MemoryFormat::channels_last:
      return "channels_last";
    case MemoryFormat::channels_last_3d:
      return "channels_last_3d";
  }
  return "?";
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::strided:
      return "strided";
    case Layout::sparse_coo:
      return "sparse_coo";
  }
  return "?";
}

}  // namespace neuronc::ir
