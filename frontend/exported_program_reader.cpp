// ExportedProgram JSON → ir::Graph. The steps, in order: a token pre-pass (bare Infinity/NaN,
// nesting depth), nlohmann parse, schema version, range_constraints → symbols, graph inputs with
// their signature roles, nodes (symbolic-int ops resolved into Dims and not emitted; runtime
// checks dropped; higher-order wrappers inlined), graph outputs with their roles.
// Unions are normalised by one function (PT2_FORMAT.md §3.3); unknown keys are ignored.
#include "frontend/exported_program_reader.h"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "frontend/error.h"
#include "ir/op_registry.h"
#include "ir/source_location.h"
#include "ir/symbol_value.h"
#include "ir/verifier.h"

namespace neuronc::frontend {

namespace {

// The dtype PyTorch gives a Python number passed where a Tensor is expected (a "wrapped
// number"), or nullopt when the attribute is not a number.
std::optional<ir::DType> wrapped_number_dtype(const ir::Attribute& a) {
  if (std::holds_alternative<int64_t>(a)) return ir::DType::i64;
  if (std::holds_alternative<double>(a)) return ir::DType::f32;
  if (std::holds_alternative<bool>(a)) return ir::DType::boolean;
  return std::nullopt;
}

using json = nlohmann::json;

constexpr size_t kMaxJsonDepth = 256;
constexpr size_t kMaxJsonBytes = size_t{2} << 30;
constexpr int kMaxGraphNesting = 16;

// ---------------------------------------------------------------------------------------------
// Text pre-pass: Python's json.dumps wrote bare Infinity, -Infinity and NaN up to ≈2.6. They are
// rewritten to the strings the newer writer uses, which the float readers below accept. The same
// scan bounds the nesting depth so no recursive walk can overflow the stack.

std::string line_col(std::string_view text, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Returns the rewritten text in `out` when a rewrite was needed; false when `text` is fine as is.
bool prepass(std::string_view text, const std::string& where, std::string& out) {
  bool in_str = false, esc = false, changed = false;
  size_t depth = 0, copied = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_str) {
      if (esc) {
        esc = false;
      } else if (c == '\\') {
        esc = true;
      } else if (c == '"') {
        in_str = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_str = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth) {
          throw Error(where + ":" + line_col(text, i) + ": JSON nesting deeper than " +
                      std::to_string(kMaxJsonDepth));
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: {
        std::string_view tok;
        size_t start = i;
        if (text.substr(i, 9) == "-Infinity") {
          tok = "-Infinity";
        } else if (text.substr(i, 8) == "Infinity") {
          tok = "Infinity";
        } else if (text.substr(i, 3) == "NaN") {
          tok = "NaN";
        }
        if (!tok.empty()) {
          if (!changed) out.reserve(text.size() + 64);
          out.append(text.substr(copied, start - copied));
          out.push_back('"');
          out.append(tok);
          out.push_back('"');
          i += tok.size() - 1;
          copied = i + 1;
          changed = true;
        }
      }
    }
  }
  if (changed) out.append(text.substr(copied));
  return changed;
}

json parse_json(std::string_view text, const std::string& where) {
  if (text.size() > kMaxJsonBytes) {
    throw Error(where + ": JSON of " + std::to_string(text.size()) +
                " bytes exceeds the limit of " + std::to_string(kMaxJsonBytes));
  }
  std::string rewritten;
  bool changed = prepass(text, where, rewritten);
  std::string_view src = changed ? std::string_view(rewritten) : text;
  try {
    return json::parse(src.begin(), src.end());
  } catch (const json::parse_error& e) {
    size_t pos = e.byte > 0 ? e.byte - 1 : 0;
    std::string msg = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 5: ".
    if (size_t k = msg.find(": "); k != std::string::npos && msg.starts_with("[json.")) {
      msg = msg.substr(k + 2);
      if (size_t k2 = msg.find(": "); k2 != std::string::npos && msg.starts_with("parse error")) {
        msg = msg.substr(k2 + 2);
      }
    }
    throw Error(where + ":" + line_col(src, pos) + ": invalid JSON: " + msg);
  } catch (const json::exception& e) {
    // Not a syntax error but still unreadable, e.g. out_of_range.406 for a number that does not
    // fit a double ("1e400"; Python writes Infinity instead).
    std::string msg = e.what();
    if (size_t k = msg.find("] "); k != std::string::npos && msg.starts_with("[json.")) {
      msg = msg.substr(k + 2);
    }
    throw Error(where + ": invalid JSON: " + msg);
  }
}

// ---------------------------------------------------------------------------------------------
// A JSON value together with its path, so every message can name the field.

class J {
 public:
  J(const json& v, std::string path, const std::string& where)
      : v_(&v), path_(std::move(path)), where_(&where) {}

  const json& raw() const { return *v_; }
  const std::string& path() const { return path_; }
  const std::string& where() const { return *where_; }

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(*where_ + ": " + (path_.empty() ? std::string("<root>") : path_) + ": " + msg);
  }
  std::string found() const {
    if (v_->is_number_integer()) return "integer " + v_->dump();
    if (v_->is_number_float()) return "number " + v_->dump();
    if (v_->is_string()) {
      std::string s = v_->get_ref<const std::string&>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "string \"" + s + "\"";
    }
    return v_->type_name();
  }

  bool is_null() const { return v_->is_null(); }
  bool is_object() const { return v_->is_object(); }
  bool is_array() const { return v_->is_array(); }
  bool is_string() const { return v_->is_string(); }
  bool is_int() const { return v_->is_number_integer(); }

  void expect_object() const {
    if (!v_->is_object()) fail("expected object, found " + found());
  }
  void expect_array() const {
    if (!v_->is_array()) fail("expected array, found " + found());
  }

  std::string child_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  // Required member.
  J at(std::string_view key) const {
    expect_object();
    auto it = v_->find(key);
    if (it == v_->end()) fail("missing field '" + std::string(key) + "'");
    return J(*it, child_path(key), *where_);
  }
  // Optional member: nullopt when absent or null.
  std::optional<J> get(std::string_view key) const {
    expect_object();
    auto it = v_->find(key);
    if (it == v_->end() || it->is_null()) return std::nullopt;
    return J(*it, child_path(key), *where_);
  }
  bool has(std::string_view key) const { return v_->is_object() && v_->contains(key); }
  size_t size() const {
    expect_array();
    return v_->size();
  }
  J operator[](size_t i) const {
    return J((*v_)[i], path_ + "[" + std::to_string(i) + "]", *where_);
  }
  std::vector<J> elements() const {
    expect_array();
    std::vector<J> out;
    out.reserve(v_->size());
    for (size_t i = 0; i < v_->size(); ++i) out.push_back((*this)[i]);
    return out;
  }
  // Object members in key order (nlohmann's std::map: deterministic).
  std::vector<std::pair<std::string, J>> members() const {
    expect_object();
    std::vector<std::pair<std::string, J>> out;
    for (auto it = v_->begin(); it != v_->end(); ++it) {
      out.emplace_back(it.key(), J(it.value(), child_path(it.key()), *where_));
    }
    return out;
  }

  int64_t i64() const {
    if (v_->is_number_unsigned()) {
      uint64_t u = v_->get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) fail("integer " + v_->dump() + " exceeds int64");
      return static_cast<int64_t>(u);
    }
    if (!v_->is_number_integer()) fail("expected integer, found " + found());
    return v_->get<int64_t>();
  }
  double f64() const {
    if (v_->is_number()) return v_->get<double>();
    if (v_->is_string()) {
      const std::string& s = v_->get_ref<const std::string&>();
      if (s == "Infinity") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    }
    fail("expected number, found " + found());
  }
  bool boolean() const {
    if (!v_->is_boolean()) fail("expected boolean, found " + found());
    return v_->get<bool>();
  }
  const std::string& str() const {
    if (!v_->is_string()) fail("expected string, found " + found());
    return v_->get_ref<const std::string&>();
  }

 private:
  const json* v_;
  std::string path_;
  const std::string* where_;
};

// ---------------------------------------------------------------------------------------------
// Union normalisation (PT2_FORMAT.md §3.3).

struct Tagged {
  std::string tag;
  J value;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

Tagged union_of(const J& j, const char* type, const std::vector<std::string>& known) {
  if (!j.is_object())
    j.fail("union " + std::string(type) + ": expected object, found " + j.found());
  auto is_known = [&](const std::string& t) {
    for (const auto& k : known) {
      if (k == t) return true;
    }
    return false;
  };
  std::string tag;
  std::optional<J> value;
  if (j.has("$type")) {
    tag = j.at("$type").str();
    if (!j.has("$value")) j.fail("union " + std::string(type) + ": '$type' without '$value'");
    value = J(j.raw()["$value"], j.child_path("$value"), j.where());
  } else if (j.raw().size() == 1) {
    auto it = j.raw().begin();
    tag = it.key();
    value = J(it.value(), j.child_path(tag), j.where());
    if (value->is_null() && tag != "as_none") {
      j.fail("union " + std::string(type) + ": member '" + tag + "' is null");
    }
  } else {
    std::vector<std::string> non_null;
    for (auto it = j.raw().begin(); it != j.raw().end(); ++it) {
      if (!it.value().is_null()) non_null.push_back(it.key());
    }
    if (non_null.size() == 1) {
      tag = non_null[0];
      value = J(j.raw()[tag], j.child_path(tag), j.where());
    } else if (non_null.empty() && j.has("as_none")) {
      tag = "as_none";  // every member null: only as_none can be meant
      value = J(j.raw()["as_none"], j.child_path("as_none"), j.where());
    } else {
      j.fail("ambiguous union " + std::string(type) + ": non-null members [" + join(non_null) +
             "]");
    }
  }
  if (!is_known(tag)) {
    j.fail("unknown " + std::string(type) + " tag '" + tag + "' (known: " + join(known) + ")");
  }
  if (tag == "as_none") {
    const json& v = value->raw();
    bool ok = v.is_null() || (v.is_boolean() && v.get<bool>()) || (v.is_array() && v.empty());
    if (!ok) value->fail("as_none must be true, [] or null, found " + value->found());
  }
  return {tag, *value};
}

const std::vector<std::string> kArgumentTags = {"as_none",          "as_tensor",
                                                "as_tensors",       "as_int",
                                                "as_ints",          "as_float",
                                                "as_floats",        "as_string",
                                                "as_strings",       "as_sym_int",
                                                "as_sym_ints",      "as_scalar_type",
                                                "as_memory_format", "as_layout",
                                                "as_device",        "as_bool",
                                                "as_bools",         "as_sym_bool",
                                                "as_sym_bools",     "as_optional_tensors",
                                                "as_graph",         "as_custom_obj",
                                                "as_operator",      "as_sym_float",
                                                "as_sym_floats",    "as_optional_tensor",
                                                "as_complex",       "as_nested_tensors",
                                                "as_int_lists",     "as_string_to_argument",
                                                "as_float_lists"};
const std::vector<std::string> kSymIntTags = {"as_expr", "as_int"};
const std::vector<std::string> kSymIntArgTags = {"as_name", "as_int"};
const std::vector<std::string> kSymBoolArgTags = {"as_name", "as_bool"};
const std::vector<std::string> kSymFloatArgTags = {"as_name", "as_float"};
const std::vector<std::string> kOptTensorTags = {"as_tensor", "as_none"};
const std::vector<std::string> kInputSpecTags = {"user_input",      "parameter",  "buffer",
                                                 "tensor_constant", "custom_obj", "token",
                                                 "constant_input"};
const std::vector<std::string> kOutputSpecTags = {"user_output",           "loss_output",
                                                  "buffer_mutation",       "parameter_mutation",
                                                  "gradient_to_parameter", "gradient_to_user_input",
                                                  "user_input_mutation",   "token"};

// ---------------------------------------------------------------------------------------------
// Enums.

struct SchemaDtype {
  int64_t value;
  const char* name;
  std::optional<ir::DType> dtype;
};
const SchemaDtype kSchemaDtypes[] = {
    {1, "BYTE", ir::DType::u8},
    {2, "CHAR", ir::DType::i8},
    {3, "SHORT", ir::DType::i16},
    {4, "INT", ir::DType::i32},
    {5, "LONG", ir::DType::i64},
    {6, "HALF", ir::DType::f16},
    {7, "FLOAT", ir::DType::f32},
    {8, "DOUBLE", ir::DType::f64},
    {9, "COMPLEXHALF", std::nullopt},
    {10, "COMPLEXFLOAT", ir::DType::c64},
    {11, "COMPLEXDOUBLE", std::nullopt},
    {12, "BOOL", ir::DType::boolean},
    {13, "BFLOAT16", ir::DType::bf16},
    {28, "UINT16", std::nullopt},
    {29, "FLOAT8E4M3FN", ir::DType::f8e4m3fn},
    {30, "FLOAT8E5M2", ir::DType::f8e5m2},
    {31, "FLOAT8E4M3FNUZ", std::nullopt},
    {32, "FLOAT8E5M2FNUZ", std::nullopt},
    {33, "FLOAT8E8M0FNU", std::nullopt},
    {34, "UINT32", std::nullopt},
    {35, "UINT64", std::nullopt},
};

const SchemaDtype* find_schema_dtype(int64_t v) {
  for (const auto& d : kSchemaDtypes) {
    if (d.value == v) return &d;
  }
  return nullptr;
}

ir::DType dtype_from_json(const J& j, const std::string& what) {
  int64_t v = j.i64();
  const SchemaDtype* d = find_schema_dtype(v);
  if (d == nullptr) {
    j.fail(what + ": dtype " + std::to_string(v) +
           " is not an export ScalarType (expected 1-13 or 28-35)");
  }
  if (!d->dtype) {
    j.fail(what + ": dtype " + std::to_string(v) + " (" + d->name + ") is not supported");
  }
  return *d->dtype;
}

ir::MemoryFormat memory_format_from_json(const J& j) {
  switch (j.i64()) {
    case 1:
      return ir::MemoryFormat::contiguous;
    case 2:
      return ir::MemoryFormat::channels_last;
    case 3:
      return ir::MemoryFormat::channels_last_3d;
    case 4:
      return ir::MemoryFormat::preserve;
    default:
      j.fail("memory format " + j.raw().dump() +
             " is not supported (expected 1 contiguous, 2 channels_last, 3 channels_last_3d, 4 "
             "preserve)");
  }
}

ir::Layout layout_from_json(const J& j) {
  switch (j.i64()) {
    case 7:
      return ir::Layout::strided;
    case 1:
      return ir::Layout::sparse_coo;
    default:
      j.fail("layout " + j.raw().dump() + " is not supported (expected 7, strided)");
  }
}

ir::DeviceAttr device_from_json(const J& j) {
  ir::DeviceAttr d;
  d.type = j.at("type").str();
  if (auto idx = j.get("index")) d.index = idx->i64();
  return d;
}

// ---------------------------------------------------------------------------------------------
// Symbolic expressions: "s0", "4*s0", "s0*4", "12" and the sympy srepr forms
// "Symbol('s0', integer=True, positive=True)", "Mul(Integer(4), Symbol('s0', ...))",
// "Integer(12)". A product may hold one symbol; anything else (sums, powers, floordiv) is
// reported to the caller as unsupported.

struct SymTerm {
  int64_t coeff = 1;
  std::vector<std::string> symbols;  // a product; empty for a constant
};

class ExprParser {
 public:
  explicit ExprParser(std::string_view s) : s_(s) {}
  std::optional<SymTerm> parse() {
    auto t = product();
    skip();
    if (!t || pos_ != s_.size()) return std::nullopt;
    return t;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<SymTerm> multiply(SymTerm a, const SymTerm& b) {
    a.symbols.insert(a.symbols.end(), b.symbols.begin(), b.symbols.end());
    if (__builtin_mul_overflow(a.coeff, b.coeff, &a.coeff)) return std::nullopt;
    return a;
  }
  std::optional<SymTerm> product() {
    auto t = atom();
    if (!t) return std::nullopt;
    while (eat('*')) {
      skip();
      if (pos_ < s_.size() && s_[pos_] == '*') return std::nullopt;  // power
      auto u = atom();
      if (!u) return std::nullopt;
      t = multiply(*t, *u);
      if (!t) return std::nullopt;
    }
    return t;
  }
  std::optional<int64_t> integer() {
    skip();
    size_t start = pos_;
    bool neg = pos_ < s_.size() && s_[pos_] == '-';
    if (neg) ++pos_;
    int64_t v = 0;
    size_t digits = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) {
        return std::nullopt;
      }
      ++pos_;
      ++digits;
    }
    if (digits == 0) {
      pos_ = start;
      return std::nullopt;
    }
    return neg ? -v : v;
  }
  std::string ident() {
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(s_.substr(start, pos_ - start));
  }
  // Skips ", key=Value" pairs up to the closing parenthesis.
  bool skip_kwargs() {
    while (eat(',')) {
      ident();
      if (!eat('=')) return false;
      ident();
    }
    return eat(')');
  }
  std::optional<SymTerm> atom() {
    skip();
    if (pos_ >= s_.size()) return std::nullopt;
    char c = s_[pos_];
    if ((c >= '0' && c <= '9') || c == '-') {
      auto v = integer();
      if (!v) return std::nullopt;
      return SymTerm{*v, {}};
    }
    std::string id = ident();
    if (id.empty()) return std::nullopt;
    skip();
    if (pos_ >= s_.size() || s_[pos_] != '(') {
      if (id == "Symbol" || id == "Integer" || id == "Mul") return std::nullopt;
      return SymTerm{1, {id}};  // plain "s0"
    }
    ++pos_;
    if (id == "Integer") {
      auto v = integer();
      if (!v || !eat(')')) return std::nullopt;
      return SymTerm{*v, {}};
    }
    if (id == "Symbol") {
      if (!eat('\'')) return std::nullopt;
      std::string name = ident();
      if (name.empty() || !eat('\'') || !skip_kwargs()) return std::nullopt;
      return SymTerm{1, {name}};
    }
    if (id == "Mul") {
      auto t = product();
      if (!t) return std::nullopt;
      while (eat(',')) {
        auto u = product();
        if (!u) return std::nullopt;
        t = multiply(*t, *u);
        if (!t) return std::nullopt;
      }
      if (!eat(')')) return std::nullopt;
      return t;
    }
    return std::nullopt;  // Add, Pow, FloorDiv, Max, ...
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The importer.

struct HopNames {
  static bool is_inlined(std::string_view op) {
    return op == "wrap_with_set_grad_enabled" || op == "wrap_with_autocast";
  }
};

bool is_dropped_check(std::string_view op) {
  return op == "aten._assert_scalar.default" || op == "aten._assert_async.msg" ||
         op == "aten._assert_async.default" || op == "aten.sym_constrain_range_for_size.default" ||
         op == "aten.sym_constrain_range.default" || op == "aten._check_is_size.default" ||
         op == "aten._functional_assert_async.msg" ||
         op == "aten._functional_sym_constrain_range.default" ||
         op == "aten._functional_sym_constrain_range_for_size.default";
}

// A symbolic int name resolved at import time; `problem` says why it could not be represented.
// A symbolic int or float the program computed: an int the shapes can hold (`dim`), or, when a
// shape cannot hold it (s - 1, a float such as 1 / sqrt(s)), a 0-d tensor the graph computes
// from symbol inputs (`tensor`: i64 for an int, f32 for a float), which an op may read as an
// operand (never as an extent), or neither (`problem` says why).
struct SymValue {
  std::optional<ir::Dim> dim;
  std::string problem;
  ir::Value* tensor = nullptr;
};

struct Scope {
  std::unordered_map<std::string, ir::Value*> values;
  std::optional<J> tensor_values;  // this graph's {name: TensorMeta}
  std::optional<J> sym_int_values;
  std::unordered_map<std::string, SymValue> sym_ints;
  std::unordered_map<std::string, ir::Attribute> constants;  // constant_input placeholders
};

class Importer {
 public:
  Importer(const std::string& where, int hint_major) : where_(where), hint_major_(hint_major) {}

  ImportedProgram run(const json& doc) {
    J root(doc, "", where_);
    root.expect_object();
    ImportedProgram out;
    out.graph = std::make_unique<ir::Graph>();
    g_ = out.graph.get();
    read_version(root, out.info);
    if (auto tv = root.get("torch_version")) {
      out.info.torch_version = tv->str();
    } else {
      out.info.torch_version = "<=2.4";
    }
    if (auto v = root.get("verifiers")) {
      for (const J& e : v->elements()) out.info.verifiers.push_back(e.str());
    } else if (auto d = root.get("dialect")) {
      out.info.verifiers.push_back(d->str());
    }
    if (auto rc = root.get("range_constraints")) read_range_constraints(*rc);

    J gm = root.at("graph_module");
    J graph = gm.at("graph");
    Scope scope;
    init_scope(scope, graph);
    read_inputs(gm, graph, scope);
    read_nodes(graph.at("nodes"), scope, 0);
    read_outputs(gm, graph, scope);
    if (auto mcg = gm.get("module_call_graph")) {
      for (const J& entry : mcg->elements()) {
        auto fqn = entry.get("fqn");
        if (fqn && fqn->str().empty()) {
          if (auto sig = entry.get("signature")) {
            if (auto names = sig->get("forward_arg_names")) {
              for (const J& n : names->elements()) out.info.forward_arg_names.push_back(n.str());
            }
          }
        }
      }
    }
    out.info.dropped_nodes = dropped_;
    return out;
  }

 private:
  // --- header ----------------------------------------------------------------------------
  void read_version(const J& root, ExportedProgramInfo& info) {
    std::optional<J> sv = root.get("schema_version");
    if (!sv) {
      if (hint_major_ <= 0) root.fail("missing field 'schema_version'");
      major_ = hint_major_;
    } else if (sv->is_int()) {
      major_ = static_cast<int>(sv->i64());
    } else {
      sv->expect_object();
      int64_t ma = sv->at("major").i64();
      int64_t mi = sv->at("minor").i64();
      if (ma < 0 || ma > 1000 || mi < 0 || mi > 100000) sv->fail("implausible schema version");
      major_ = static_cast<int>(ma);
      info.schema_minor = static_cast<int>(mi);
    }
    info.schema_major = major_;
    if (major_ > kNewestSchemaMajor) {
      (sv ? *sv : root)
          .fail("schema major " + std::to_string(major_) + " is newer than the newest supported (" +
                std::to_string(kNewestSchemaMajor) + ")");
    }
    if (major_ < 1 && !(major_ == 0 && info.schema_minor == 0)) {
      (sv ? *sv : root).fail("schema major " + std::to_string(major_) + " is not valid");
    }
  }

  static int64_t bound(const J& j, bool is_min) {
    if (j.is_null()) return is_min ? 0 : INT64_MAX;
    if (j.is_string()) {
      double d = j.f64();  // "Infinity" / "-Infinity" from the pre-pass or the newer writer
      if (std::isinf(d)) return d > 0 ? INT64_MAX : 0;
      j.fail("expected integer or Infinity, found " + j.found());
    }
    if (j.raw().is_number_float()) {
      double d = j.raw().get<double>();
      if (std::isinf(d) || d >= 9.2e18) return d > 0 ? INT64_MAX : 0;
      j.fail("expected integer bound, found " + j.found());
    }
    if (j.raw().is_number_unsigned() && j.raw().get<uint64_t>() > uint64_t{INT64_MAX}) {
      return INT64_MAX;
    }
    return j.i64();
  }

  void read_range_constraints(const J& rc) {
    for (auto& [name, c] : rc.members()) {
      int64_t lo = 0, hi = INT64_MAX;
      if (c.is_object()) {
        if (c.has("min_val"))
          lo = bound(J(c.raw()["min_val"], c.child_path("min_val"), where_), true);
        if (c.has("max_val"))
          hi = bound(J(c.raw()["max_val"], c.child_path("max_val"), where_), false);
      } else {
        c.fail("expected RangeConstraint object, found " + c.found());
      }
      if (lo < 0) lo = 0;  // a size symbol; negative minima come from unbacked ints
      if (hi < lo) c.fail("empty range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      if (!g_->find_symbol(name)) g_->add_symbol(name, lo, hi);
    }
  }

  // --- types -----------------------------------------------------------------------------
  ir::SymbolId symbol_for(const std::string& name) {
    if (auto id = g_->find_symbol(name)) return *id;
    return g_->add_symbol(name, 0, INT64_MAX);
  }

  std::optional<ir::Dim> dim_from_term(const SymTerm& t) {
    ir::Monomial m;
    m.coeff = t.coeff;
    for (const std::string& s : t.symbols) m.symbols.push_back(symbol_for(s));
    return g_->dim_of(m);
  }

  // SymInt union {as_expr: SymExpr} | {as_int}.
  ir::Dim dim_from_symint(const J& j, const std::string& what) {
    Tagged t = union_of(j, "SymInt", kSymIntTags);
    if (t.tag == "as_int") return ir::Dim::constant(t.value.i64());
    J expr = t.value.is_string() ? t.value : t.value.at("expr_str");  // 2.1: plain string
    const std::string& s = expr.str();
    auto term = ExprParser(s).parse();
    if (!term) {
      expr.fail(what + ": symbolic expression '" + s +
                "' is not supported (expected a product of symbols and an integer, such as s0, "
                "4*s0 or s0*s1)");
    }
    return *dim_from_term(*term);
  }

  J tensor_meta_of(Scope& scope, const std::string& name, const J& user) {
    if (!scope.tensor_values) user.fail("graph has no tensor_values");
    if (!scope.tensor_values->raw().contains(name)) {
      user.fail("tensor '" + name + "' has no entry in tensor_values");
    }
    J m(scope.tensor_values->raw()[name], scope.tensor_values->child_path(name), where_);
    if (m.is_object() && m.has("meta") && !m.has("dtype")) return m.at("meta");  // 2.1 form
    return m;
  }

  ir::TensorType tensor_type(Scope& scope, const std::string& name, const J& user) {
    J m = tensor_meta_of(scope, name, user);
    m.expect_object();
    ir::TensorType t;
    t.dtype = dtype_from_json(m.at("dtype"), "tensor '" + name + "'");
    J sizes = m.at("sizes");
    size_t rank = sizes.size();
    if (rank > 64) sizes.fail("rank " + std::to_string(rank) + " exceeds the limit of 64");
    for (size_t i = 0; i < rank; ++i) {
      ir::Dim d = dim_from_symint(sizes[i], "tensor '" + name + "' size " + std::to_string(i));
      if (d.is_constant() && d.value() < 0) {
        sizes[i].fail("tensor '" + name + "' size " + std::to_string(i) + " is negative (" +
                      std::to_string(d.value()) + ")");
      }
      t.shape.push_back(d);
    }
    if (auto layout = m.get("layout")) {
      if (layout->i64() != 7) {
        layout->fail("tensor '" + name + "': layout " + layout->raw().dump() +
                     " is not supported (expected 7, strided)");
      }
    }
    return t;
  }

  // --- scopes and values -----------------------------------------------------------------
  void init_scope(Scope& scope, const J& graph) {
    graph.expect_object();
    scope.tensor_values = graph.at("tensor_values");
    scope.tensor_values->expect_object();
    if (auto s = graph.get("sym_int_values")) {
      s->expect_object();
      scope.sym_int_values = *s;
    }
  }

  ir::Value* lookup(Scope& scope, const std::string& name, const J& user, const std::string& node) {
    auto it = scope.values.find(name);
    if (it == scope.values.end()) {
      user.fail("node '" + node + "' uses '" + name + "' which is never defined");
    }
    return it->second;
  }

  static std::string tensor_name(const J& j) {
    if (j.is_string()) return j.str();  // 2.1 OptionalTensorArgument.as_tensor
    return j.at("name").str();
  }

  // Resolves a SymIntArgument {as_name} | {as_int}.
  ir::Dim sym_int_arg(Scope& scope, const J& j, const std::string& node) {
    if (j.is_int()) return ir::Dim::constant(j.i64());
    Tagged t = union_of(j, "SymIntArgument", kSymIntArgTags);
    if (t.tag == "as_int") return ir::Dim::constant(t.value.i64());
    const std::string& name = t.value.str();
    SymValue v = resolve_sym(scope, name, t.value);
    if (!v.dim)
      t.value.fail("node '" + node + "' uses symbolic int '" + name + "': " +
                   (v.tensor ? "it is not a product of symbols and an integer, so it can be an "
                               "operand but not a size"
                             : v.problem));
    return *v.dim;
  }

  SymValue resolve_sym(Scope& scope, const std::string& name, const J& user) {
    auto it = scope.sym_ints.find(name);
    if (it != scope.sym_ints.end()) return it->second;
    if (auto c = scope.constants.find(name); c != scope.constants.end()) {
      if (auto* i = std::get_if<int64_t>(&c->second)) return {ir::Dim::constant(*i), ""};
    }
    // Not produced by a node we evaluated: use its recorded expression.
    SymValue v;
    if (scope.sym_int_values && scope.sym_int_values->raw().contains(name)) {
      J e(scope.sym_int_values->raw()[name], scope.sym_int_values->child_path(name), where_);
      v = sym_from_values_entry(e);
    } else {
      user.fail("symbolic int '" + name + "' is never defined");
    }
    scope.sym_ints[name] = v;
    return v;
  }

  SymValue sym_from_values_entry(const J& e) {
    Tagged t = union_of(e, "SymInt", kSymIntTags);
    if (t.tag == "as_int") return {ir::Dim::constant(t.value.i64()), ""};
    J expr = t.value.is_string() ? t.value : t.value.at("expr_str");
    auto term = ExprParser(expr.str()).parse();
    if (!term) {
      return {std::nullopt, "expression '" + expr.str() +
                                "' is not supported (expected a product of symbols and an integer, "
                                "such as s0, 4*s0 or s0*s1)"};
    }
    return {dim_from_term(*term), ""};
  }

  // --- inputs ----------------------------------------------------------------------------
  struct InputRoleInfo {
    std::string kind;  // spec tag
    ir::InputRole role = ir::InputRole::user_input;
    std::string target;
    bool persistent = true;
  };

  void read_inputs(const J& gm, const J& graph, Scope& scope) {
    J inputs = graph.at("inputs");
    size_t n = inputs.size();
    std::vector<InputRoleInfo> roles(n);
    J sig = gm.at("signature");
    if (major_ == 1 || sig.has("inputs_to_parameters")) {
      roles_from_v1_signature(sig, inputs, roles);
    } else {
      J specs = sig.at("input_specs");
      if (specs.size() != n) {
        specs.fail("has " + std::to_string(specs.size()) + " entries but graph.inputs has " +
                   std::to_string(n));
      }
      for (size_t i = 0; i < n; ++i) roles[i] = input_spec(specs[i], inputs[i], scope);
    }
    for (size_t i = 0; i < n; ++i) {
      const InputRoleInfo& r = roles[i];
      if (r.kind == "token" || r.kind == "constant_input") continue;
      if (r.kind == "custom_obj") {
        inputs[i].fail("TorchBind object inputs (custom_obj '" + r.target + "') are not supported");
      }
      Tagged a = union_of(inputs[i], "Argument", kArgumentTags);
      if (a.tag == "as_sym_int" || a.tag == "as_sym_float" || a.tag == "as_sym_bool") {
        inputs[i].fail("symbolic scalar user inputs are not supported (only tensors)");
      }
      if (a.tag != "as_tensor") {
        // A non-tensor user input (int, float, None) is baked in like constant_input.
        if (a.tag == "as_none" || a.tag == "as_int" || a.tag == "as_float" || a.tag == "as_bool" ||
            a.tag == "as_string") {
          continue;
        }
        inputs[i].fail("expected a tensor input, found " + a.tag);
      }
      std::string name = tensor_name(a.value);
      if (scope.values.count(name) != 0)
        a.value.fail("graph input '" + name + "' is defined twice");
      ir::TensorType t = tensor_type(scope, name, a.value);
      ir::Value* v = g_->add_input(name, std::move(t), r.role, r.target, r.persistent);
      scope.values[name] = v;
    }
  }

  InputRoleInfo input_spec(const J& spec, const J& graph_input, Scope& scope) {
    Tagged t = union_of(spec, "InputSpec", kInputSpecTags);
    InputRoleInfo r;
    r.kind = t.tag;
    const J& p = t.value;
    auto check_name = [&](const J& arg) {
      Tagged gi = union_of(graph_input, "Argument", kArgumentTags);
      if (gi.tag != "as_tensor" && gi.tag != "as_custom_obj") return;
      std::string want = tensor_name(gi.value);
      std::string got = arg.has("name") ? arg.at("name").str() : "";
      if (arg.has("as_tensor")) got = tensor_name(arg.at("as_tensor"));
      if (!got.empty() && got != want) {
        arg.fail("names '" + got + "' but graph input is '" + want + "'");
      }
    };
    if (t.tag == "user_input") {
      r.role = ir::InputRole::user_input;
    } else if (t.tag == "parameter") {
      r.role = ir::InputRole::parameter;
      r.target = p.at("parameter_name").str();
      check_name(p.at("arg"));
    } else if (t.tag == "buffer") {
      r.role = ir::InputRole::buffer;
      r.target = p.at("buffer_name").str();
      if (auto ps = p.get("persistent")) r.persistent = ps->boolean();
      check_name(p.at("arg"));
    } else if (t.tag == "tensor_constant") {
      r.role = ir::InputRole::constant;
      r.target = p.at("tensor_constant_name").str();
      check_name(p.at("arg"));
    } else if (t.tag == "custom_obj") {
      r.target = p.at("custom_obj_name").str();
    } else if (t.tag == "constant_input") {
      // The graph input is a literal; node arguments naming it resolve to the value.
      std::string name = p.at("name").str();
      if (auto v = p.get("value")) {
        Tagged c = union_of(*v, "ConstantValue",
                            {"as_none", "as_int", "as_float", "as_string", "as_bool"});
        if (c.tag == "as_int") scope.constants[name] = c.value.i64();
        if (c.tag == "as_float") scope.constants[name] = c.value.f64();
        if (c.tag == "as_bool") scope.constants[name] = c.value.boolean();
        if (c.tag == "as_string") scope.constants[name] = c.value.str();
        if (c.tag == "as_none") scope.constants[name] = ir::NoneAttr{};
      }
    }
    return r;
  }

  void roles_from_v1_signature(const J& sig, const J& inputs, std::vector<InputRoleInfo>& roles) {
    std::map<std::string, std::string> params, buffers;
    if (auto m = sig.get("inputs_to_parameters")) {
      for (auto& [k, v] : m->members()) params[k] = v.str();
    }
    if (auto m = sig.get("inputs_to_buffers")) {
      for (auto& [k, v] : m->members()) buffers[k] = v.str();
    }
    for (size_t i = 0; i < roles.size(); ++i) {
      Tagged a = union_of(inputs[i], "Argument", kArgumentTags);
      if (a.tag != "as_tensor") continue;
      std::string name = tensor_name(a.value);
      if (auto it = params.find(name); it != params.end()) {
        roles[i] = {"parameter", ir::InputRole::parameter, it->second, true};
      } else if (auto it2 = buffers.find(name); it2 != buffers.end()) {
        roles[i] = {"buffer", ir::InputRole::buffer, it2->second, true};
      } else {
        roles[i] = {"user_input", ir::InputRole::user_input, "", true};
      }
    }
  }

  // --- outputs ---------------------------------------------------------------------------
  void read_outputs(const J& gm, const J& graph, Scope& scope) {
    J outputs = graph.at("outputs");
    size_t n = outputs.size();
    J sig = gm.at("signature");
    std::map<std::string, std::string> v1_mutations;
    std::optional<J> specs;
    if (major_ == 1 || sig.has("inputs_to_parameters")) {
      if (auto m = sig.get("buffers_to_mutate")) {
        for (auto& [k, v] : m->members()) v1_mutations[k] = v.str();
      }
    } else {
      specs = sig.at("output_specs");
      if (specs->size() != n) {
        specs->fail("has " + std::to_string(specs->size()) + " entries but graph.outputs has " +
                    std::to_string(n));
      }
    }
    for (size_t i = 0; i < n; ++i) {
      ir::OutputRole role = ir::OutputRole::user_output;
      std::string target;
      if (specs) {
        Tagged t = union_of((*specs)[i], "OutputSpec", kOutputSpecTags);
        if (t.tag == "token") continue;
        if (t.tag == "buffer_mutation") {
          role = ir::OutputRole::buffer_mutation;
          target = t.value.at("buffer_name").str();
        } else if (t.tag == "parameter_mutation") {
          role = ir::OutputRole::buffer_mutation;  // the IR has no separate role; FQN says which
          target = t.value.at("parameter_name").str();
        } else if (t.tag == "user_input_mutation") {
          role = ir::OutputRole::user_input_mutation;
          target = t.value.at("user_input_name").str();
        } else if (t.tag == "gradient_to_parameter" || t.tag == "gradient_to_user_input") {
          t.value.fail("joint (training) graphs with gradient outputs are not supported");
        }
      }
      Tagged a = union_of(outputs[i], "Argument", kArgumentTags);
      if (a.tag != "as_tensor") {
        outputs[i].fail("graph output " + std::to_string(i) + " is " + a.tag +
                        "; only tensor outputs are supported");
      }
      std::string name = tensor_name(a.value);
      if (!specs) {
        if (auto it = v1_mutations.find(name); it != v1_mutations.end()) {
          role = ir::OutputRole::buffer_mutation;
          target = it->second;
        }
      }
      ir::Value* v = lookup(scope, name, a.value, "output");
      g_->add_output(v, role, target);
    }
  }

  // --- nodes -----------------------------------------------------------------------------
  void read_nodes(const J& nodes, Scope& scope, int nesting) {
    for (const J& node : nodes.elements()) read_node(node, scope, nesting);
  }

  static ir::SourceLocation location_of(const J& node) {
    ir::SourceLocation loc;
    auto md = node.get("metadata");
    if (!md || !md->is_object()) return loc;
    if (auto st = md->get("stack_trace"); st && st->is_string()) {
      loc = ir::parse_python_stack_trace(st->str());
    }
    if (auto ms = md->get("nn_module_stack"); ms && ms->is_string()) {
      // "key,path,type;key,path,type": the innermost module is the last entry.
      const std::string& s = ms->str();
      size_t start = s.rfind(';');
      std::string last = s.substr(start == std::string::npos ? 0 : start + 1);
      size_t c1 = last.find(',');
      if (c1 != std::string::npos) {
        size_t c2 = last.find(',', c1 + 1);
        loc.module_path =
            last.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
      }
    }
    return loc;
  }

  std::string node_label(const J& node) {
    if (auto n = node.get("name"); n && n->is_string()) return n->str();
    if (auto outs = node.get("outputs"); outs && outs->is_array() && outs->size() > 0) {
      J o = (*outs)[0];
      if (o.is_object()) {
        if (o.has("as_tensor") && o.raw()["as_tensor"].is_object()) {
          auto nm = o.raw()["as_tensor"].find("name");
          if (nm != o.raw()["as_tensor"].end() && nm->is_string()) return *nm;
        }
        if (o.has("as_sym_int") && o.raw()["as_sym_int"].is_object()) {
          auto nm = o.raw()["as_sym_int"].find("as_name");
          if (nm != o.raw()["as_sym_int"].end() && nm->is_string()) return *nm;
        }
      }
    }
    return "";
  }

  void read_node(const J& node, Scope& scope, int nesting) {
    node.expect_object();
    const std::string& target = node.at("target").str();
    std::string label = node_label(node);
    J inputs = node.at("inputs");
    inputs.expect_array();
    J outputs = node.at("outputs");
    outputs.expect_array();

    if (target.starts_with("torch.ops.higher_order.")) {
      std::string hop = target.substr(23);
      if (!HopNames::is_inlined(hop)) {
        emit_opaque_hop(node, hop, inputs, outputs, scope, label);
        return;
      }
      inline_hop(node, inputs, outputs, scope, nesting, label);
      return;
    }
    if (target.starts_with("torch._functorch.predispatch.")) {
      read_vmap_node(node, target.substr(29), inputs, outputs, scope, label);
      return;
    }
    if (!target.starts_with("torch.ops.")) {
      eval_sym_op(node, target, inputs, outputs, scope, label);
      return;
    }
    std::string op = target.substr(10);
    if (is_dropped_check(op)) {
      apply_constraint(op, inputs, scope, label);
      ++dropped_;
      return;
    }
    if (op == "aten.sym_size.int" || op == "aten.sym_numel.default" ||
        op == "aten.sym_stride.int" || op == "aten.sym_storage_offset.default") {
      eval_sym_op(node, op, inputs, outputs, scope, label);
      return;
    }
    if ((op == "aten.item.default" || op == "aten._local_scalar_dense.default") &&
        data_dependent_scalar(op, outputs, scope, label)) {
      return;
    }
    emit_op(node, op, inputs, outputs, scope, label);
  }

  // A tensor's value read back as a Python scalar (item). XLM and FlauBERT compute
  // max(lengths).item() only to assert it against the sequence length, and runtime asserts are
  // dropped with the other checks; so the scalar is recorded as unknowable rather than refused
  // here, and any use that needs its value (a size, an argument) fails there naming this node.
  // Returns false when the output is a tensor (then it is an ordinary op).
  bool data_dependent_scalar(const std::string& op, const J& outputs, Scope& scope,
                             const std::string& label) {
    bool scalar = false;
    for (const J& o : outputs.elements()) {
      Tagged t = union_of(o, "Argument", kArgumentTags);
      if (t.tag != "as_sym_int" && t.tag != "as_sym_float" && t.tag != "as_sym_bool") continue;
      scalar = true;
      const auto& raw = t.value.raw();
      if (!raw.is_object() || !raw.contains("as_name") || !raw["as_name"].is_string()) continue;
      scope.sym_ints[raw["as_name"].get<std::string>()] =
          SymValue{std::nullopt, "it is the value of a tensor at run time (node '" + label + "' (" +
                                     op + ")): data-dependent scalars cannot be compiled"};
    }
    if (scalar) ++dropped_;
    return scalar;
  }

  // Records the value of each `as_sym_int` output of a node, if it can be computed.
  void eval_sym_op(const J& node, const std::string& op, const J& inputs, const J& outputs,
                   Scope& scope, const std::string& label) {
    ++dropped_;
    std::vector<J> args = inputs.elements();
    auto arg_named = [&](const char* name, size_t pos) -> std::optional<J> {
      for (const J& a : args) {
        if (a.at("name").str() == name) return a.at("arg");
      }
      if (pos < args.size() && args[pos].at("name").str().empty()) return args[pos].at("arg");
      return std::nullopt;
    };
    auto sym_operand = [&](size_t pos) -> std::optional<ir::Dim> {
      if (pos >= args.size()) return std::nullopt;
      J a = args[pos].at("arg");
      Tagged t = union_of(a, "Argument", kArgumentTags);
      if (t.tag == "as_int") return ir::Dim::constant(t.value.i64());
      if (t.tag != "as_sym_int") return std::nullopt;
      Tagged s = union_of(t.value, "SymIntArgument", kSymIntArgTags);
      if (s.tag == "as_int") return ir::Dim::constant(s.value.i64());
      SymValue v = resolve_sym(scope, s.value.str(), s.value);
      return v.dim;
    };

    std::optional<ir::Dim> result;
    std::string problem =
        "the result of " + op + " is not representable as an integer times a product of symbols";
    if (op == "aten.sym_size.int") {
      auto self = arg_named("self", 0);
      auto dim = arg_named("dim", 1);
      if (!self || !dim) node.fail("sym_size.int needs 'self' and 'dim'");
      Tagged st = union_of(*self, "Argument", kArgumentTags);
      if (st.tag != "as_tensor") self->fail("expected as_tensor, found " + st.tag);
      ir::Value* v = lookup(scope, tensor_name(st.value), st.value, label);
      int64_t d = union_of(*dim, "Argument", kArgumentTags).value.i64();
      int64_t rank = static_cast<int64_t>(v->shape().size());
      if (d < 0) d += rank;
      if (d < 0 || d >= rank) {
        dim->fail("sym_size dim out of range for rank " + std::to_string(rank));
      }
      result = v->shape()[static_cast<size_t>(d)];
    } else if (op == "_operator.mul" || op == "_operator.add" || op == "_operator.sub" ||
               op == "_operator.floordiv" || op == "_operator.mod" || op == "torch.sym_max" ||
               op == "torch.sym_min") {
      auto a = sym_operand(0), b = sym_operand(1);
      if (a && b) {
        if (a->is_constant() && b->is_constant()) {
          int64_t x = a->value(), y = b->value(), r = 0;
          bool ok = true;
          if (op == "_operator.mul") ok = !__builtin_mul_overflow(x, y, &r);
          if (op == "_operator.add") ok = !__builtin_add_overflow(x, y, &r);
          if (op == "_operator.sub") ok = !__builtin_sub_overflow(x, y, &r);
          if (op == "_operator.floordiv" || op == "_operator.mod") {
            ok = y != 0 && !(x == INT64_MIN && y == -1);
            if (ok) {
              int64_t q = x / y;
              if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
              r = op == "_operator.floordiv" ? q : x - q * y;
            }
          }
          if (op == "torch.sym_max") r = std::max(x, y);
          if (op == "torch.sym_min") r = std::min(x, y);
          if (ok) result = ir::Dim::constant(r);
        } else if (op == "_operator.mul") {
          ir::Monomial m = ir::Monomial::of(*a);
          m *= *b;
          if (m.coeff != INT64_MAX) result = m.coeff == 0 ? ir::Dim::constant(0) : g_->dim_of(m);
        } else if (op == "_operator.floordiv" && b->is_constant() && b->value() > 0 &&
                   a->coeff % b->value() == 0) {
          result = ir::Dim::sym(a->symbol, a->coeff / b->value());
        }
      }
    }
    // What no dim holds, the graph computes from symbol inputs (an operand, never a size), once.
    ir::Value* tensor = nullptr;
    std::string tensor_problem;
    bool computed = false;
    auto compute = [&]() -> ir::Value* {
      if (!computed) {
        computed = true;
        std::vector<SymOperand> operands;
        for (const J& a : args) operands.push_back(symbolic_operand(scope, a.at("arg")));
        try {
          tensor = symbolic_op(op, operands, label, tensor_problem);
        } catch (const ir::Error& e) {
          tensor_problem = e.what();
        }
      }
      return tensor;
    };
    // Record every sym-int and sym-float output; fall back on the file's own expression.
    for (const J& o : outputs.elements()) {
      Tagged t = union_of(o, "Argument", kArgumentTags);
      // Sym bools feed only checks we drop.
      if (t.tag != "as_sym_int" && t.tag != "as_sym_float") continue;
      Tagged s = t.tag == "as_sym_int" ? union_of(t.value, "SymIntArgument", kSymIntArgTags)
                                       : union_of(t.value, "SymFloatArgument", kSymFloatArgTags);
      if (s.tag != "as_name") continue;
      const std::string& name = s.value.str();
      SymValue v;
      if (t.tag == "as_sym_float") {
        v.tensor = compute();
        if (!v.tensor) v.problem = "node '" + label + "' (" + op + "): " + tensor_problem;
      } else if (result) {
        v.dim = result;
      } else if (scope.sym_int_values && scope.sym_int_values->raw().contains(name)) {
        J e(scope.sym_int_values->raw()[name], scope.sym_int_values->child_path(name), where_);
        v = sym_from_values_entry(e);
        if (!v.dim) v.problem = "node '" + label + "' (" + op + "): " + v.problem;
      } else {
        v.problem = problem;
      }
      if (t.tag == "as_sym_int" && !v.dim) v.tensor = compute();
      scope.sym_ints[name] = v;
    }
  }

  // An operand of symbolic arithmetic: an int the shapes hold, a float constant, or a 0-d tensor
  // computed from symbol inputs.
  struct SymOperand {
    std::optional<ir::Dim> dim;
    std::optional<double> number;
    ir::Value* tensor = nullptr;
    std::string problem;
  };

  SymOperand symbolic_operand(Scope& scope, const J& arg) {
    SymOperand o;
    Tagged t = union_of(arg, "Argument", kArgumentTags);
    if (t.tag == "as_int") {
      o.dim = ir::Dim::constant(t.value.i64());
    } else if (t.tag == "as_float") {
      o.number = t.value.f64();
    } else if (t.tag == "as_sym_int" || t.tag == "as_sym_float") {
      Tagged s = t.tag == "as_sym_int" ? union_of(t.value, "SymIntArgument", kSymIntArgTags)
                                       : union_of(t.value, "SymFloatArgument", kSymFloatArgTags);
      if (s.tag == "as_int") {
        o.dim = ir::Dim::constant(s.value.i64());
      } else if (s.tag == "as_float") {
        o.number = s.value.f64();
      } else {
        const std::string& name = s.value.str();
        auto it = scope.sym_ints.find(name);
        if (it == scope.sym_ints.end() && t.tag == "as_sym_int") {
          SymValue v = resolve_sym(scope, name, s.value);
          o.dim = v.dim, o.tensor = v.tensor, o.problem = v.problem;
        } else if (it != scope.sym_ints.end()) {
          o.dim = it->second.dim, o.tensor = it->second.tensor, o.problem = it->second.problem;
        } else {
          o.problem = "symbolic float '" + name + "' is never defined";
        }
      }
    } else {
      o.problem = "a " + t.tag + " argument";
    }
    return o;
  }

  // The 0-d tensor a symbolic int or float argument `v` names, when a dim cannot hold it.
  ir::Value* symbolic_tensor(Scope& scope, const J& v, const char* kind,
                             const std::vector<std::string>& tags) {
    Tagged s = union_of(v, kind, tags);
    if (s.tag != "as_name") return nullptr;
    auto it = scope.sym_ints.find(s.value.str());
    return it != scope.sym_ints.end() && !it->second.dim ? it->second.tensor : nullptr;
  }

  ir::Value* emit(std::string op, std::vector<ir::Value*> in, std::vector<ir::NamedAttr> attrs,
                  const std::string& label) {
    try {
      // Named after the symbolic node (never taking a name a later node of the file has).
      const std::string name = g_->unique_name("sym_" + label);
      return g_->append(std::move(op), std::move(in), std::move(attrs), std::nullopt, {name}, name)
          ->output();
    } catch (const ir::Error& e) {
      throw ir::Error("symbolic arithmetic of node '" + label + "': " + e.what());
    }
  }

  // `o` as a 0-d tensor (i64 for an int, f32 for a float); null for a constant.
  ir::Value* tensor_of(const SymOperand& o, const std::string& label) {
    if (o.tensor) return o.tensor;
    if (!o.dim || o.dim->is_constant()) return nullptr;
    // Named after the symbolic node, as emit() names what it makes.
    return ir::symbol_value(*g_, *o.dim, ir::DType::i64, nullptr, "sym_" + label);
  }

  // The constant `o` holds (an int or a float), 0 when it holds none.
  static ir::Attribute constant_of(const SymOperand& o) {
    if (o.number) return *o.number;
    if (o.dim && o.dim->is_constant()) return o.dim->value();
    return int64_t{0};
  }

  // Symbolic arithmetic a dim cannot hold, as ops on 0-d tensors: s - 1, float(s) ** 0.5,
  // 1.0 / s. Null, with `problem`, for an op or operands it does not compute.
  ir::Value* symbolic_op(const std::string& op, const std::vector<SymOperand>& in,
                         const std::string& label, std::string& problem) {
    for (const SymOperand& o : in)
      if (!o.dim && !o.number && !o.tensor) {
        problem = o.problem;
        return nullptr;
      }
    // Per operand: its tensor (null for a constant), and its constant (read only where there is
    // no tensor).
    std::vector<ir::Value*> t;
    std::vector<ir::Attribute> k;
    bool any = false;
    for (const SymOperand& o : in) {
      t.push_back(tensor_of(o, label));
      k.push_back(constant_of(o));
      any |= t.back() != nullptr;
    }
    if (!any) {
      problem = "its operands are constants it does not fold";
      return nullptr;
    }
    // Attribute lists built one by one (GCC 12 warns falsely on a braced list of variants).
    auto one = [](const char* name, ir::Attribute a) {
      std::vector<ir::NamedAttr> v;
      v.push_back({name, std::move(a)});
      return v;
    };
    auto two = [&](const char* n0, ir::Attribute a0, const char* n1, ir::Attribute a1) {
      std::vector<ir::NamedAttr> v = one(n0, std::move(a0));
      v.push_back({n1, std::move(a1)});
      return v;
    };
    auto to_float = [&](ir::Value* v) {
      return ir::is_floating(v->dtype())
                 ? v
                 : emit("aten._to_copy.default", {v}, one("dtype", ir::DType::f32), label);
    };
    const bool binary = in.size() == 2;
    // a op b with a tensor a, or a constant a and a tensor b where the op commutes or has a
    // reversed form.
    auto binary_op = [&](const char* tensor_op, const char* scalar_op,
                         const char* reversed) -> ir::Value* {
      if (t[0] && t[1]) return emit(tensor_op, {t[0], t[1]}, {}, label);
      if (t[0]) return emit(scalar_op, {t[0]}, one("other", k[1]), label);
      if (reversed) return emit(reversed, {t[1]}, one("other", k[0]), label);
      return nullptr;
    };
    ir::Value* r = nullptr;
    if (op == "_operator.add" && binary) {
      r = binary_op("aten.add.Tensor", "aten.add.Scalar", "aten.add.Scalar");
    } else if (op == "_operator.mul" && binary) {
      r = binary_op("aten.mul.Tensor", "aten.mul.Scalar", "aten.mul.Scalar");
    } else if (op == "_operator.sub" && binary) {
      r = binary_op("aten.sub.Tensor", "aten.sub.Scalar", "aten.rsub.Scalar");
    } else if (op == "_operator.truediv" && binary) {
      if (t[0]) t[0] = to_float(t[0]);
      if (t[0] || t[1]) {
        if (t[1] && !t[0]) {
          // c / b = c * (1 / b)
          r = emit("aten.reciprocal.default", {to_float(t[1])}, {}, label);
          r = emit("aten.mul.Scalar", {r}, one("other", k[0]), label);
        } else {
          r = binary_op("aten.div.Tensor", "aten.div.Scalar", nullptr);
        }
      }
    } else if ((op == "_operator.floordiv" || op == "_operator.mod") && binary && t[0]) {
      if (op == "_operator.floordiv")
        r = t[1] ? emit("aten.div.Tensor_mode", {t[0], t[1]},
                        one("rounding_mode", std::string("floor")), label)
                 : emit("aten.div.Scalar_mode", {t[0]},
                        two("other", k[1], "rounding_mode", std::string("floor")), label);
      else
        r = binary_op("aten.remainder.Tensor", "aten.remainder.Scalar", nullptr);
    } else if (op == "_operator.pow" && binary && t[0]) {
      r = t[1] ? emit("aten.pow.Tensor_Tensor", {t[0], t[1]}, {}, label)
               : emit("aten.pow.Tensor_Scalar", {t[0]}, one("exponent", k[1]), label);
    } else if (op == "_operator.neg" && in.size() == 1) {
      r = emit("aten.neg.default", {t[0]}, {}, label);
    } else if (op == "torch.sym_float" && in.size() == 1) {
      r = to_float(t[0]);
    } else if ((op == "torch._sym_sqrt" || op == "math.sqrt") && in.size() == 1) {
      r = emit("aten.sqrt.default", {to_float(t[0])}, {}, label);
    } else if ((op == "torch.sym_max" || op == "torch.sym_min") && binary) {
      const bool hi = op == "torch.sym_max";
      if (t[0] && t[1])
        r = emit(hi ? "aten.maximum.default" : "aten.minimum.default", {t[0], t[1]}, {}, label);
      else {
        const ir::Attribute bound = t[0] ? k[1] : k[0];
        r = emit(hi ? "aten.clamp_min.default" : "aten.clamp_max.default", {t[0] ? t[0] : t[1]},
                 one(hi ? "min" : "max", bound), label);
      }
    }
    if (!r)
      problem = op +
                " of these operands is not computed (expected +, -, *, /, //, %, **, "
                "sqrt, min, max or float() of sizes)";
    return r;
  }

  // sym_constrain_range_for_size(size, min, max): narrow the symbol's range when it is plain.
  void apply_constraint(const std::string& op, const J& inputs, Scope& scope,
                        const std::string& label) {
    if (op != "aten.sym_constrain_range_for_size.default" &&
        op != "aten.sym_constrain_range.default") {
      return;
    }
    std::optional<ir::Dim> size;
    std::optional<int64_t> lo, hi;
    for (const J& a : inputs.elements()) {
      const std::string& name = a.at("name").str();
      Tagged t = union_of(a.at("arg"), "Argument", kArgumentTags);
      if (name == "size" && t.tag == "as_sym_int") {
        size = sym_int_arg(scope, t.value, label);
      } else if (name == "min" && t.tag == "as_int") {
        lo = t.value.i64();
      } else if (name == "max" && t.tag == "as_int") {
        hi = t.value.i64();
      }
    }
    if (!size || !size->is_symbolic() || size->coeff != 1) return;
    ir::Symbol& s = g_->symbol(size->symbol);
    if (lo && *lo > s.min) s.min = *lo;
    if (hi && *hi < s.max && *hi >= s.min) s.max = *hi;
  }

  // wrap_with_set_grad_enabled(enabled, graph, *args) and wrap_with_autocast(device, dtype,
  // enabled, cache, graph, *args): inference is unaffected by grad mode, and autocast regions
  // are imported as written (the dtypes in tensor_values already reflect the casts).
  void inline_hop(const J& node, const J& inputs, const J& outputs, Scope& scope, int nesting,
                  const std::string& label) {
    if (nesting + 1 > kMaxGraphNesting) node.fail("higher-order ops nested too deeply");
    std::optional<J> sub;
    std::vector<ir::Value*> args;
    for (const J& in : inputs.elements()) {
      Tagged t = union_of(in.at("arg"), "Argument", kArgumentTags);
      if (t.tag == "as_graph") {
        if (sub) t.value.fail("higher-order op with several subgraphs");
        sub = t.value.at("graph");
      } else if (sub && t.tag == "as_tensor") {
        args.push_back(lookup(scope, tensor_name(t.value), t.value, label));
      } else if (sub) {
        t.value.fail("operand of '" + label + "' after the subgraph must be a tensor, found " +
                     t.tag);
      }
    }
    if (!sub) node.fail("higher-order op '" + label + "' has no as_graph argument");
    Scope inner;
    init_scope(inner, *sub);
    J sub_inputs = sub->at("inputs");
    if (sub_inputs.size() != args.size()) {
      sub_inputs.fail("subgraph takes " + std::to_string(sub_inputs.size()) + " inputs but '" +
                      label + "' passes " + std::to_string(args.size()));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      Tagged t = union_of(sub_inputs[i], "Argument", kArgumentTags);
      if (t.tag != "as_tensor") sub_inputs[i].fail("subgraph input must be a tensor");
      inner.values[tensor_name(t.value)] = args[i];
    }
    inner.sym_ints = scope.sym_ints;
    read_nodes(sub->at("nodes"), inner, nesting + 1);
    J sub_outputs = sub->at("outputs");
    std::vector<J> outs = outputs.elements();
    // A single-tensor return may be written as one as_tensor output or as an as_tensors list.
    std::vector<std::string> out_names;
    for (const J& o : outs) {
      Tagged t = union_of(o, "Argument", kArgumentTags);
      if (t.tag == "as_tensor") {
        out_names.push_back(tensor_name(t.value));
      } else if (t.tag == "as_tensors") {
        for (const J& e : t.value.elements()) out_names.push_back(tensor_name(e));
      } else if (t.tag != "as_none") {
        o.fail("higher-order op output must be a tensor, found " + t.tag);
      }
    }
    if (sub_outputs.size() != out_names.size()) {
      sub_outputs.fail("subgraph returns " + std::to_string(sub_outputs.size()) + " values but '" +
                       label + "' has " + std::to_string(out_names.size()) + " outputs");
    }
    for (size_t i = 0; i < out_names.size(); ++i) {
      Tagged t = union_of(sub_outputs[i], "Argument", kArgumentTags);
      if (t.tag != "as_tensor") sub_outputs[i].fail("subgraph output must be a tensor");
      scope.values[out_names[i]] = lookup(inner, tensor_name(t.value), t.value, label);
    }
    ++dropped_;
  }

  // An argument converted for the IR: tensor operands or one attribute.
  struct ConvertedArg {
    bool is_tensor = false;
    std::vector<ir::Value*> tensors;
    ir::Attribute attr;
  };

  ConvertedArg convert_arg(const J& arg, Scope& scope, const std::string& label) {
    Tagged t = union_of(arg, "Argument", kArgumentTags);
    ConvertedArg c;
    const J& v = t.value;
    const std::string& tag = t.tag;
    if (tag == "as_tensor") {
      c.is_tensor = true;
      c.tensors.push_back(lookup(scope, tensor_name(v), v, label));
    } else if (tag == "as_tensors") {
      c.is_tensor = true;
      for (const J& e : v.elements()) c.tensors.push_back(lookup(scope, tensor_name(e), e, label));
    } else if (tag == "as_optional_tensor" || tag == "as_optional_tensors") {
      c.is_tensor = true;
      std::vector<J> items = tag == "as_optional_tensor" ? std::vector<J>{v} : v.elements();
      for (const J& e : items) {
        Tagged o = union_of(e, "OptionalTensorArgument", kOptTensorTags);
        c.tensors.push_back(
            o.tag == "as_none" ? nullptr : lookup(scope, tensor_name(o.value), o.value, label));
      }
    } else if (tag == "as_none") {
      c.attr = ir::NoneAttr{};
    } else if (tag == "as_int") {
      c.attr = v.i64();
    } else if (tag == "as_ints") {
      std::vector<int64_t> xs;
      for (const J& e : v.elements()) xs.push_back(e.i64());
      c.attr = std::move(xs);
    } else if (tag == "as_float") {
      c.attr = v.f64();
    } else if (tag == "as_floats") {
      std::vector<double> xs;
      for (const J& e : v.elements()) xs.push_back(e.f64());
      c.attr = std::move(xs);
    } else if (tag == "as_string") {
      c.attr = v.str();
    } else if (tag == "as_strings") {
      std::vector<std::string> xs;
      for (const J& e : v.elements()) xs.push_back(e.str());
      c.attr = std::move(xs);
    } else if (tag == "as_bool") {
      c.attr = v.boolean();
    } else if (tag == "as_bools") {
      std::vector<bool> xs;
      for (const J& e : v.elements()) xs.push_back(e.boolean());
      c.attr = std::move(xs);
    } else if (tag == "as_sym_int" && symbolic_tensor(scope, v, "SymIntArgument", kSymIntArgTags)) {
      c.is_tensor = true;
      c.tensors.push_back(symbolic_tensor(scope, v, "SymIntArgument", kSymIntArgTags));
    } else if (tag == "as_sym_int") {
      ir::Dim d = sym_int_arg(scope, v, label);
      if (d.is_constant()) {
        c.attr = d.value();
      } else {
        c.attr = d;
      }
    } else if (tag == "as_sym_ints") {
      std::vector<ir::Dim> dims;
      bool all_const = true;
      for (const J& e : v.elements()) {
        dims.push_back(sym_int_arg(scope, e, label));
        all_const = all_const && dims.back().is_constant();
      }
      if (all_const) {
        std::vector<int64_t> xs;
        for (const auto& d : dims) xs.push_back(d.value());
        c.attr = std::move(xs);
      } else {
        c.attr = ir::SymIntList{std::move(dims)};
      }
    } else if (tag == "as_sym_float") {
      Tagged s = union_of(v, "SymFloatArgument", kSymFloatArgTags);
      if (s.tag == "as_float") {
        c.attr = s.value.f64();
      } else if (ir::Value* x = symbolic_tensor(scope, v, "SymFloatArgument", kSymFloatArgTags)) {
        c.is_tensor = true;
        c.tensors.push_back(x);
      } else {
        auto it = scope.sym_ints.find(s.value.str());
        v.fail("symbolic float '" + s.value.str() + "' is not supported" +
               (it != scope.sym_ints.end() && !it->second.problem.empty()
                    ? ": " + it->second.problem
                    : std::string(" (expected one computed from sizes by +, -, *, /, //, %, **, "
                                  "sqrt, min, max or float())")));
      }
    } else if (tag == "as_sym_bool") {
      Tagged s = union_of(v, "SymBoolArgument", kSymBoolArgTags);
      if (s.tag != "as_bool")
        v.fail("symbolic bool '" + s.value.raw().dump() + "' is not supported");
      c.attr = s.value.boolean();
    } else if (tag == "as_scalar_type") {
      c.attr = dtype_from_json(v, "node '" + label + "'");
    } else if (tag == "as_memory_format") {
      c.attr = memory_format_from_json(v);
    } else if (tag == "as_layout") {
      c.attr = layout_from_json(v);
    } else if (tag == "as_device") {
      c.attr = device_from_json(v);
    } else if (tag == "as_operator") {
      c.attr = v.str();
    } else {
      arg.fail("node '" + label + "': argument kind " + tag + " is not supported");
    }
    return c;
  }

  // True when every argument given as a tensor is a tensor in `info` and vice versa.
  static bool fits_overload(const ir::OpInfo& info, const std::vector<std::string>& names,
                            const std::vector<ConvertedArg>& conv) {
    for (size_t k = 0; k < names.size(); ++k) {
      int idx = info.arg_index(names[k]);
      if (idx < 0) {
        if (names[k].empty()) continue;
        return false;
      }
      const ir::ArgSpec& spec = info.args[static_cast<size_t>(idx)];
      bool none = !conv[k].is_tensor && std::holds_alternative<ir::NoneAttr>(conv[k].attr);
      if (spec.is_tensor() != conv[k].is_tensor && !(none && spec.optional)) return false;
    }
    return true;
  }

  void emit_op(const J& node, const std::string& op, const J& inputs, const J& outputs,
               Scope& scope, const std::string& label) {
    const ir::OpInfo* info = ir::OpRegistry::global().find(op);
    std::vector<J> args = inputs.elements();
    std::vector<ConvertedArg> conv;
    std::vector<std::string> names;
    conv.reserve(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      args[k].expect_object();
      std::string name = args[k].at("name").str();
      conv.push_back(convert_arg(args[k].at("arg"), scope, label));
      names.push_back(std::move(name));
    }

    // A Python number passed where the overload takes a Tensor (`x + 1` recorded as add.Tensor)
    // selects the Scalar overload, as PyTorch's wrapped numbers do.
    std::string op_name = op;
    if (info != nullptr && !fits_overload(*info, names, conv)) {
      std::string base = op.substr(0, op.rfind('.'));
      for (const char* ov :
           {".Scalar", ".Tensor_Scalar", ".ScalarOther", ".ScalarSelf", ".Scalar_Tensor"}) {
        const ir::OpInfo* alt = ir::OpRegistry::global().find(base + ov);
        if (alt != nullptr && fits_overload(*alt, names, conv)) {
          info = alt;
          op_name = base + ov;
          break;
        }
      }
    }

    std::vector<ir::Value*> operands;
    std::vector<ir::NamedAttr> attrs;
    if (info != nullptr) {
      std::vector<bool> used(args.size(), false);
      auto find_arg = [&](const ir::ArgSpec& spec, size_t schema_pos) -> int {
        for (size_t k = 0; k < args.size(); ++k) {
          if (!used[k] && names[k] == spec.name) return static_cast<int>(k);
        }
        // Positional entries without a name (older writers) fall back on schema order.
        if (schema_pos < args.size() && !used[schema_pos] && names[schema_pos].empty()) {
          return static_cast<int>(schema_pos);
        }
        return -1;
      };
      for (size_t s = 0; s < info->args.size(); ++s) {
        const ir::ArgSpec& spec = info->args[s];
        int k = find_arg(spec, s);
        if (k >= 0) used[static_cast<size_t>(k)] = true;
        if (spec.is_tensor()) {
          if (k < 0) {
            if (spec.type == ir::ArgType::tensor) {
              inputs.fail("node '" + label + "' (" + op + "): missing tensor argument '" +
                          spec.name + "'");
            }
            if (spec.type == ir::ArgType::opt_tensor) operands.push_back(nullptr);
            continue;
          }
          ConvertedArg& c = conv[static_cast<size_t>(k)];
          if (c.is_tensor) {
            if (spec.type == ir::ArgType::tensor || spec.type == ir::ArgType::opt_tensor) {
              if (c.tensors.size() != 1) {
                args[static_cast<size_t>(k)].fail("argument '" + spec.name +
                                                  "' expects one tensor, found " +
                                                  std::to_string(c.tensors.size()));
              }
            }
            operands.insert(operands.end(), c.tensors.begin(), c.tensors.end());
          } else if (std::holds_alternative<ir::NoneAttr>(c.attr) &&
                     spec.type == ir::ArgType::opt_tensor) {
            operands.push_back(nullptr);
          } else if (spec.type == ir::ArgType::tensor && wrapped_number_dtype(c.attr)) {
            // A Python number where the schema has a Tensor (core ATen writes `sub.Tensor(8,
            // x)`): PyTorch wraps it in a 0-d tensor whose dtype is i64, f32 (the default
            // dtype) or bool, which promotes exactly as the wrapped number does.
            std::vector<ir::NamedAttr> st;
            st.push_back({"s", c.attr});
            st.push_back({"dtype", *wrapped_number_dtype(c.attr)});
            operands.push_back(g_->append("aten.scalar_tensor.default", {}, std::move(st), {}, {},
                                          label + "_" + spec.name + "_scalar")
                                   ->output());
          } else {
            args[static_cast<size_t>(k)].fail("node '" + label + "' (" + op + "): argument '" +
                                              spec.name + "' expects a tensor");
          }
        } else if (k >= 0) {
          ConvertedArg& c = conv[static_cast<size_t>(k)];
          if (c.is_tensor) {
            args[static_cast<size_t>(k)].fail("node '" + label + "' (" + op + "): argument '" +
                                              spec.name + "' is a tensor but the schema says " +
                                              "it is not: " + info->schema);
          }
          attrs.push_back({spec.name, std::move(c.attr)});
        }
      }
      for (size_t k = 0; k < args.size(); ++k) {
        if (!used[k]) {
          args[k].fail("node '" + label + "' (" + op + "): argument '" + names[k] +
                       "' is not in the schema " + info->schema);
        }
      }
    } else {
      for (size_t k = 0; k < args.size(); ++k) {
        if (conv[k].is_tensor) {
          operands.insert(operands.end(), conv[k].tensors.begin(), conv[k].tensors.end());
        } else {
          std::string n = names[k].empty() ? "arg" + std::to_string(k) : names[k];
          attrs.push_back({std::move(n), std::move(conv[k].attr)});
        }
      }
    }

    if (batch_depth(operands) > 0) {
      emit_batched(node, op_name, info, std::move(operands), std::move(attrs), outputs, scope,
                   label);
      return;
    }

    append_recorded(node, op_name, op, std::move(operands), std::move(attrs), outputs, scope,
                    label);
  }

  // Appends `op_name` over `operands` with the outputs the file recorded (their names and types);
  // `op` names the node in errors.
  void append_recorded(const J& node, const std::string& op_name, const std::string& op,
                       std::vector<ir::Value*> operands, std::vector<ir::NamedAttr> attrs,
                       const J& outputs, Scope& scope, const std::string& label) {
    // Outputs, with the types the file recorded.
    std::vector<ir::TensorType> types;
    std::vector<std::string> out_names;
    for (const J& o : outputs.elements()) {
      Tagged t = union_of(o, "Argument", kArgumentTags);
      if (t.tag == "as_tensor") {
        std::string n = tensor_name(t.value);
        types.push_back(tensor_type(scope, n, t.value));
        out_names.push_back(n);
      } else if (t.tag == "as_tensors") {
        for (const J& e : t.value.elements()) {
          std::string n = tensor_name(e);
          types.push_back(tensor_type(scope, n, e));
          out_names.push_back(n);
        }
      } else if (t.tag == "as_none") {
        // An undefined tensor among the results: keep the position with an empty placeholder.
        types.push_back(ir::TensorType{ir::DType::f32, {ir::Dim::constant(0)}});
        out_names.push_back(label + "_none_" + std::to_string(types.size() - 1));
      } else {
        o.fail("node '" + label + "' (" + op + "): output kind " + t.tag +
               " is not supported (data-dependent scalars cannot be compiled)");
      }
    }
    for (const auto& n : out_names) {
      if (scope.values.count(n) != 0) outputs.fail("value '" + n + "' is defined twice");
    }
    ir::Node* n = nullptr;
    try {
      n = g_->append(op_name, std::move(operands), std::move(attrs), types, out_names, label);
    } catch (const ir::Error& e) {
      node.fail(std::string("cannot build node '") + label + "' (" + op_name + "): " + e.what());
    }
    n->set_location(location_of(node));
    for (size_t i = 0; i < out_names.size() && i < n->outputs().size(); ++i) {
      scope.values[out_names[i]] = n->output(i);
    }
  }

  // A higher-order call neuronc does not inline (a triton kernel, flex attention, control flow,
  // auto_functionalized): one opaque node "higher_order.<hop>" over its tensor operands, with the
  // outputs the file recorded. No lowering, host kernel or pass knows it, so `compile` refuses it
  // naming the node, and `analyze` lists it in the custom-kernel inventory.
  void emit_opaque_hop(const J& node, const std::string& hop, const J& inputs, const J& outputs,
                       Scope& scope, const std::string& label) {
    std::vector<ir::Value*> operands;
    for (const J& in : inputs.elements()) {
      Tagged t = union_of(in.at("arg"), "Argument", kArgumentTags);
      if (t.tag == "as_tensor") {
        operands.push_back(lookup(scope, tensor_name(t.value), t.value, label));
      } else if (t.tag == "as_tensors") {
        for (const J& e : t.value.elements())
          operands.push_back(lookup(scope, tensor_name(e), e, label));
      }
    }
    append_recorded(node, "higher_order." + hop, "higher_order." + hop, std::move(operands), {},
                    outputs, scope, label);
  }

  // --- torch.vmap regions -------------------------------------------------------------------
  // The training IR keeps a torch.vmap region (transformers' mask functions, Mamba's scan) as
  // predispatch calls: `_add_batch_dim(x, in_dim, level)` hides dim `in_dim` of x as the batch
  // of vmap level `level`; the ops in between see the tensor without it; `_remove_batch_dim(y,
  // level, size, out_dim)` brings it back at `out_dim`. The importer de-batches the region the
  // way functorch's batching rules do, as plain ops on the physical tensors:
  // - a value batched at depth d is held as [level 1, ..., level d, logical dims...], a level
  //   the value does not vary over being a size-1 dim;
  // - element-wise ops, comparisons, casts and aliases pad their operands to one depth and one
  //   logical rank, so that broadcasting lines the batch dims up;
  // - new_* factories make an unbatched tensor (their operand gives only the dtype);
  // - anything else that takes a batched tensor is refused, naming the node: the file's shapes
  //   are the logical ones, and guessing a batching rule could compute a wrong result.
  void read_vmap_node(const J& node, const std::string& fn, const J& inputs, const J& outputs,
                      Scope& scope, const std::string& label) {
    std::vector<J> args = inputs.elements();
    auto int_arg = [&](size_t k, const char* what) -> int64_t {
      if (k >= args.size()) {
        node.fail("node '" + label + "' (" + fn + "): missing argument '" + what + "'");
      }
      ConvertedArg c = convert_arg(args[k].at("arg"), scope, label);
      const int64_t* v = std::get_if<int64_t>(&c.attr);
      if (c.is_tensor || v == nullptr) {
        node.fail("node '" + label + "' (" + fn + "): argument '" + what +
                  "' must be a constant int");
      }
      return *v;
    };
    auto tensor_arg = [&]() -> ir::Value* {
      if (args.empty()) node.fail("node '" + label + "' (" + fn + "): missing its tensor");
      ConvertedArg c = convert_arg(args[0].at("arg"), scope, label);
      if (!c.is_tensor || c.tensors.size() != 1 || c.tensors[0] == nullptr) {
        node.fail("node '" + label + "' (" + fn + "): expected one tensor as its first argument");
      }
      return c.tensors[0];
    };
    auto define = [&](ir::Value* v, int depth) {
      std::vector<J> outs = outputs.elements();
      if (outs.size() != 1) node.fail("node '" + label + "' (" + fn + "): expected one output");
      Tagged t = union_of(outs[0], "Argument", kArgumentTags);
      if (t.tag != "as_tensor") node.fail("node '" + label + "' (" + fn + "): expected a tensor");
      std::string n = tensor_name(t.value);
      if (scope.values.count(n) != 0) outputs.fail("value '" + n + "' is defined twice");
      if (depth_of(v) != depth) {  // no data movement was needed: the same tensor, seen anew
        v = g_->append("aten.alias.default", {v}, {}, std::nullopt, {}, label)->output();
      }
      scope.values[n] = v;
      if (depth > 0) batch_depth_[v] = depth;
    };
    if (fn == "lazy_load_decompositions") return;
    if (fn == "_vmap_increment_nesting") {
      ++vmap_depth_;
      return;
    }
    if (fn == "_vmap_decrement_nesting") {
      if (vmap_depth_ == 0)
        node.fail("node '" + label + "': a vmap level closed that was never opened");
      --vmap_depth_;
      return;
    }
    if (fn == "_add_batch_dim") {
      ir::Value* x = tensor_arg();
      const int64_t in_dim = int_arg(1, "in_dim");
      const int64_t level = int_arg(2, "level");
      const int dx = depth_of(x);
      const int64_t rank = x->type().rank() - dx;
      if (level != vmap_depth_ || level <= dx) {
        node.fail("node '" + label + "' (_add_batch_dim): level " + std::to_string(level) +
                  " is not the innermost open vmap level (" + std::to_string(vmap_depth_) +
                  ") above its tensor's (" + std::to_string(dx) + ")");
      }
      if (in_dim < 0 || in_dim >= rank) {
        node.fail("node '" + label + "' (_add_batch_dim): in_dim " + std::to_string(in_dim) +
                  " is outside the tensor's " + std::to_string(rank) + " dims");
      }
      ir::Value* v = unsqueeze_at(x, dx, static_cast<int>(level) - 1 - dx, label);
      v = move_dim(v, level - 1 + in_dim, level - 1, label);
      define(v, static_cast<int>(level));
      return;
    }
    if (fn == "_remove_batch_dim") {
      ir::Value* y = tensor_arg();
      const int64_t level = int_arg(1, "level");
      const int64_t size = int_arg(2, "batch_size");
      const int64_t out_dim = int_arg(3, "out_dim");
      const int dy = depth_of(y);
      const int64_t rank = y->type().rank() - dy;
      if (level != vmap_depth_ || dy > level) {
        node.fail("node '" + label + "' (_remove_batch_dim): level " + std::to_string(level) +
                  " is not the innermost open vmap level (" + std::to_string(vmap_depth_) + ")");
      }
      if (out_dim < 0 || out_dim > rank || size < 0) {
        node.fail("node '" + label + "' (_remove_batch_dim): out_dim " + std::to_string(out_dim) +
                  " for a tensor of " + std::to_string(rank) + " dims, batch size " +
                  std::to_string(size));
      }
      ir::Value* v = unsqueeze_at(y, dy, static_cast<int>(level) - dy, label);
      v = move_dim(v, level - 1, level - 1 + out_dim, label);
      const ir::Dim& d = v->type().shape[static_cast<size_t>(level - 1 + out_dim)];
      if (!(d == ir::Dim::constant(size))) {
        if (!(d == ir::Dim::constant(1))) {
          node.fail("node '" + label + "' (_remove_batch_dim): the batch dim is " +
                    g_->dim_to_string(d) + ", expected " + std::to_string(size) + " or 1");
        }
        ir::Shape s = v->type().shape;
        s[static_cast<size_t>(level - 1 + out_dim)] = ir::Dim::constant(size);
        v = g_->append("aten.expand.default", {v}, {{"size", size_list(s)}}, std::nullopt, {},
                       label + "_expand")
                ->output();
      }
      define(v, static_cast<int>(level) - 1);
      return;
    }
    node.fail("node '" + label + "' (torch._functorch.predispatch." + fn +
              ") is not supported inside a torch.vmap region: expected lazy_load_decompositions, "
              "_vmap_increment_nesting, _vmap_decrement_nesting, _add_batch_dim or "
              "_remove_batch_dim");
  }

  int depth_of(const ir::Value* v) const {
    auto it = batch_depth_.find(v);
    return it == batch_depth_.end() ? 0 : it->second;
  }
  int batch_depth(const std::vector<ir::Value*>& operands) const {
    int d = 0;
    for (const ir::Value* v : operands) {
      if (v != nullptr) d = std::max(d, depth_of(v));
    }
    return d;
  }

  static ir::Attribute size_list(const ir::Shape& s) {
    std::vector<int64_t> ints;
    for (const ir::Dim& d : s) {
      if (!d.is_constant()) return ir::SymIntList{s};
      ints.push_back(d.value());
    }
    return ints;
  }

  // `count` size-1 dims inserted at `pos`.
  ir::Value* unsqueeze_at(ir::Value* v, int pos, int count, const std::string& label) {
    for (int i = 0; i < count; ++i) {
      v = g_->append("aten.unsqueeze.default", {v}, {{"dim", int64_t{pos}}}, std::nullopt, {},
                     label + "_unbatch")
              ->output();
    }
    return v;
  }

  // Dim `from` moved to position `to`, the others keeping their order (aten.movedim, which
  // canonicalize makes a permute).
  ir::Value* move_dim(ir::Value* v, int64_t from, int64_t to, const std::string& label) {
    if (from == to) return v;
    return g_
        ->append("aten.movedim.int", {v}, {{"source", from}, {"destination", to}}, std::nullopt, {},
                 label + "_unbatch")
        ->output();
  }

  void emit_batched(const J& node, const std::string& op, const ir::OpInfo* info,
                    std::vector<ir::Value*> operands, std::vector<ir::NamedAttr> attrs,
                    const J& outputs, Scope& scope, const std::string& label) {
    std::vector<std::string> names;
    for (const J& o : outputs.elements()) {
      Tagged t = union_of(o, "Argument", kArgumentTags);
      if (t.tag == "as_tensor") names.push_back(tensor_name(t.value));
    }
    bool shifted = false;
    try {
      shifted = shift_dims(op, operands, attrs, label);
    } catch (const ir::Error& e) {
      node.fail("node '" + label + "' (" + op + ") inside a torch.vmap region: " + e.what());
    }
    if (shifted) {
      const int depth = depth_of(operands[0]);
      append_batched(node, op, std::move(operands), std::move(attrs), names, depth, outputs, scope,
                     label);
      return;
    }
    const bool factory = op.starts_with("aten.new_");
    const bool pointwise =
        info != nullptr && (info->category == ir::OpCategory::elementwise ||
                            info->category == ir::OpCategory::comparison ||
                            info->category == ir::OpCategory::metadata ||
                            op.starts_with("aten.to.") || op == "aten._to_copy.default" ||
                            op == "aten.clone.default" || op == "aten.lift_fresh_copy.default" ||
                            op == "aten.detach.default" || op == "aten.detach_.default");
    if (!factory && !pointwise) {
      node.fail("node '" + label + "' (" + op +
                ") takes a tensor batched by torch.vmap: inside a vmap region only element-wise "
                "ops, comparisons, casts and new_* factories are de-batched; export the core ATen "
                "program (ep.run_decompositions()), where vmap is lowered");
    }
    if (info->category == ir::OpCategory::metadata && names.empty()) {
      ++dropped_;  // a check on the logical tensor (_assert_tensor_metadata)
      return;
    }
    int depth = 0;
    if (!factory) {
      depth = batch_depth(operands);
      int64_t rank = 0;
      for (const ir::Value* v : operands) {
        if (v != nullptr) rank = std::max(rank, v->type().rank() - depth_of(v));
      }
      for (ir::Value*& v : operands) {
        if (v == nullptr) continue;
        const int dv = depth_of(v);
        const int64_t missing = (depth - dv) + (rank - (v->type().rank() - dv));
        v = unsqueeze_at(v, dv, static_cast<int>(missing), label);
      }
    }
    append_batched(node, op, std::move(operands), std::move(attrs), names, depth, outputs, scope,
                   label);
  }

  // Appends `op` on de-batched operands (result types inferred: the file's are the logical
  // ones) and defines its results, batched at `depth`.
  void append_batched(const J& node, const std::string& op, std::vector<ir::Value*> operands,
                      std::vector<ir::NamedAttr> attrs, const std::vector<std::string>& names,
                      int depth, const J& outputs, Scope& scope, const std::string& label) {
    ir::Node* n = nullptr;
    try {
      n = g_->append(op, std::move(operands), std::move(attrs), std::nullopt, names, label);
    } catch (const ir::Error& e) {
      node.fail("cannot build node '" + label + "' (" + op +
                ") inside a torch.vmap region: " + e.what());
    }
    n->set_location(location_of(node));
    if (n->outputs().size() != names.size()) {
      node.fail("node '" + label + "' (" + op + "): " + std::to_string(n->outputs().size()) +
                " results, the file names " + std::to_string(names.size()));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (scope.values.count(names[i]) != 0)
        outputs.fail("value '" + names[i] + "' is defined twice");
      scope.values[names[i]] = n->output(i);
      if (depth > 0) batch_depth_[n->output(i)] = depth;
    }
  }

  // The batching rule of a view that names dims or sizes of its one tensor: its dims move past
  // the batch dims, and its sizes gain them in front. False for any other op.
  bool shift_dims(const std::string& op, std::vector<ir::Value*>& operands,
                  std::vector<ir::NamedAttr>& attrs, const std::string& label) {
    static const std::map<std::string, std::vector<std::string>, std::less<>> kDimArgs = {
        {"aten.unsqueeze.default", {"dim"}},
        {"aten.squeeze.dim", {"dim"}},
        {"aten.slice.Tensor", {"dim"}},
        {"aten.select.int", {"dim"}},
        {"aten.transpose.int", {"dim0", "dim1"}}};
    const bool permute = op == "aten.permute.default";
    const bool sizes =
        op == "aten.view.default" || op == "aten.reshape.default" || op == "aten.expand.default";
    auto it = kDimArgs.find(op);
    if (it == kDimArgs.end() && !permute && !sizes) return false;
    if (operands.size() != 1 || operands[0] == nullptr) return false;
    ir::Value* x = operands[0];
    const int depth = depth_of(x);
    const ir::Shape& shape = x->type().shape;
    const int64_t rank = x->type().rank() - depth;
    auto find = [&](const std::string& name) -> ir::Attribute* {
      for (ir::NamedAttr& a : attrs) {
        if (a.name == name) return &a.value;
      }
      attrs.push_back({name, int64_t{0}});  // the schema default of slice's dim
      return &attrs.back().value;
    };
    auto shift = [&](int64_t d, int64_t extent) {
      if (d < 0) d += extent;
      if (d < 0 || d >= extent) {
        throw ir::Error("dim " + std::to_string(d) + " is outside the logical tensor's " +
                        std::to_string(extent) + " dims");
      }
      return d + depth;
    };
    if (it != kDimArgs.end()) {
      const int64_t extent = op == "aten.unsqueeze.default" ? rank + 1 : rank;
      for (const std::string& name : it->second) {
        ir::Attribute* a = find(name);
        if (const int64_t* d = std::get_if<int64_t>(a)) *a = shift(*d, extent);
      }
      return true;
    }
    ir::Attribute* a = find(permute                                 ? "dims"
                            : sizes && op == "aten.reshape.default" ? "shape"
                                                                    : "size");
    if (permute) {
      const auto* dims = std::get_if<std::vector<int64_t>>(a);
      if (dims == nullptr) return false;
      std::vector<int64_t> p;
      for (int i = 0; i < depth; ++i) p.push_back(i);
      for (int64_t d : *dims) p.push_back(shift(d, rank));
      *a = std::move(p);
      return true;
    }
    std::vector<ir::Dim> want;
    if (const auto* ints = std::get_if<std::vector<int64_t>>(a)) {
      for (int64_t v : *ints) want.push_back(ir::Dim::constant(v));
    } else if (const auto* syms = std::get_if<ir::SymIntList>(a)) {
      want = syms->dims;
    } else {
      return false;
    }
    if (op == "aten.expand.default" && static_cast<int64_t>(want.size()) > rank) {
      operands[0] = unsqueeze_at(x, depth, static_cast<int>(want.size() - rank), label);
      batch_depth_[operands[0]] = depth;
    }
    ir::Shape full(shape.begin(), shape.begin() + depth);
    full.insert(full.end(), want.begin(), want.end());
    *a = size_list(full);
    return true;
  }

  const std::string& where_;
  int hint_major_;
  int major_ = 0;
  ir::Graph* g_ = nullptr;
  size_t dropped_ = 0;
  int vmap_depth_ = 0;
  std::unordered_map<const ir::Value*, int> batch_depth_;
};

StaticTensorMeta static_meta(const J& m, const std::string& what) {
  m.expect_object();
  StaticTensorMeta t;
  J dt = m.at("dtype");
  t.schema_dtype = dt.i64();
  const SchemaDtype* d = find_schema_dtype(t.schema_dtype);
  if (d == nullptr) {
    dt.fail(what + ": dtype " + std::to_string(t.schema_dtype) +
            " is not an export ScalarType (expected 1-13 or 28-35)");
  }
  t.dtype = d->dtype;
  t.dtype_name = d->name;
  auto ints = [&](const J& list, const char* field) {
    std::vector<int64_t> out;
    for (const J& e : list.elements()) {
      Tagged s = union_of(e, "SymInt", kSymIntTags);
      if (s.tag != "as_int")
        e.fail(what + ": " + field + " must be concrete (as_int) for a weight");
      out.push_back(s.value.i64());
    }
    return out;
  };
  t.sizes = ints(m.at("sizes"), "sizes");
  t.strides = ints(m.at("strides"), "strides");
  J off = m.at("storage_offset");
  if (off.is_int()) {
    t.storage_offset = off.i64();
  } else {
    Tagged s = union_of(off, "SymInt", kSymIntTags);
    if (s.tag != "as_int") off.fail(what + ": storage_offset must be concrete");
    t.storage_offset = s.value.i64();
  }
  if (auto l = m.get("layout")) t.layout = l->i64();
  if (auto dev = m.get("device")) t.device = dev->at("type").str();
  return t;
}

}  // namespace

std::optional<ir::DType> schema_dtype_to_ir(int64_t v) {
  const SchemaDtype* d = find_schema_dtype(v);
  return d ? d->dtype : std::nullopt;
}

const char* schema_dtype_name(int64_t v) {
  const SchemaDtype* d = find_schema_dtype(v);
  return d ? d->name : "";
}

ImportedProgram import_exported_program(std::string_view json_text, const std::string& where,
                                        int hint_major) {
  json doc = parse_json(json_text, where);
  Importer imp(where, hint_major);
  ImportedProgram p = imp.run(doc);
  std::vector<std::string> problems = ir::verify(*p.graph);
  if (!problems.empty()) {
    std::string msg = where + ": imported graph is malformed: " + problems.front();
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more)";
    throw Error(msg);
  }
  return p;
}

std::map<std::string, PayloadMeta> read_payload_config(std::string_view json_text,
                                                       const std::string& where) {
  json doc = parse_json(json_text, where);
  J root(doc, "", where);
  std::map<std::string, PayloadMeta> out;
  for (auto& [fqn, entry] : root.at("config").members()) {
    PayloadMeta m;
    m.path_name = entry.at("path_name").str();
    if (auto p = entry.get("is_param")) m.is_param = p->boolean();
    if (auto p = entry.get("use_pickle")) m.use_pickle = p->boolean();
    if (auto tm = entry.get("tensor_meta")) m.tensor_meta = static_meta(*tm, "'" + fqn + "'");
    out.emplace(fqn, std::move(m));
  }
  return out;
}

}  // namespace neuronc::frontend
