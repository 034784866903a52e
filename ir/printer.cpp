// Prints a Graph in the IR text form (see printer.h).
#include "ir/printer.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace neuronc::ir {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Shortest form that round-trips.
  for (int prec = 1; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string format_attribute(const Graph& g, const Attribute& a) {
  struct V {
    const Graph& g;
    std::string operator()(const NoneAttr&) const { return "none"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_float(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return quote(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      if (v.empty()) return "floats[]";
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_float(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<bool>& v) const {
      if (v.empty()) return "bools[]";
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i)
        s += std::string(i ? ", " : "") + (v[i] ? "true" : "false");
      return s + "]";
    }
    std::string operator()(const std::vector<std::string>& v) const {
      if (v.empty()) return "strings[]";
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + quote(v[i]);
      return s + "]";
    }
    std::string operator()(DType d) const { return "#" + std::string(dtype_name(d)); }
    std::string operator()(const DeviceAttr& d) const {
      return "device(" + quote(d.type) + (d.index >= 0 ? ", " + std::to_string(d.index) : "") + ")";
    }
    std::string operator()(MemoryFormat f) const {
      return std::string("#") + memory_format_name(f);
    }
    std::string operator()(Layout l) const { return std::string("#") + layout_name(l); }
    std::string operator()(const SymIntList& l) const { return g.shape_to_string(l.dims); }
    std::string operator()(const Dim& d) const { return g.dim_to_string(d); }
  };
  return std::visit(V{g}, a);
}

std::string print(const Graph& g, const PrintOptions& opts) {
  std::ostringstream os;
  os << "graph {\n";
  for (const Symbol& s : g.symbols()) {
    if (s.is_product()) continue;  // s0*s1: implied by its factors (the parser remakes it)
    os << "  sym " << s.name << " [" << s.min << ", ";
    if (s.max == INT64_MAX)
      os << "inf";
    else
      os << s.max;
    os << "]\n";
  }
  for (const GraphInput& in : g.inputs()) {
    os << "  " << input_role_name(in.role) << " %" << in.value->name() << " : "
       << g.type_to_string(in.value->type());
    if (in.role != InputRole::user_input) os << " " << quote(in.target);
    if (in.role == InputRole::buffer && !in.persistent) os << " nonpersistent";
    os << "\n";
  }
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    os << "  ";
    if (n.outputs().empty()) {
      os << "()";
    } else {
      for (size_t i = 0; i < n.outputs().size(); ++i) {
        const Value* v = n.outputs()[i];
        os << (i ? ", " : "") << "%" << v->name() << " : " << g.type_to_string(v->type());
      }
    }
    os << " = " << n.op() << "(";
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      os << (i ? ", " : "");
      if (n.inputs()[i])
        os << "%" << n.inputs()[i]->name();
      else
        os << "_";
    }
    os << ")";
    if (!n.attrs().empty()) {
      os << " {";
      for (size_t i = 0; i < n.attrs().size(); ++i) {
        os << (i ? ", " : "") << n.attrs()[i].name << " = "
           << format_attribute(g, n.attrs()[i].value);
      }
      os << "}";
    }
    // Zero-result nodes are named after their operator unless renamed.
    const std::string& op = n.op();
    const size_t b = op.find('.'), e = op.rfind('.');
    const std::string base = b != std::string::npos && e > b ? op.substr(b + 1, e - b - 1) : op;
    const bool default_name =
        !n.outputs().empty() ? n.name() == n.outputs()[0]->name() : n.name() == base;
    if (!default_name) os << " name(" << quote(n.name()) << ")";
    if (opts.locations && !n.location().empty()) {
      const SourceLocation& l = n.location();
      os << " loc(" << quote(l.file) << ", " << l.line << ", " << quote(l.module_path) << ")";
    }
    os << "\n";
  }
  for (const GraphOutput& o : g.outputs()) {
    os << "  output %" << o.value->name();
    if (o.role != OutputRole::user_output)
      os << " " << output_role_name(o.role) << " " << quote(o.target);
    os << "\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace neuronc::ir
