// The operator registry and the PyTorch schema-string parser it is built from.
#include "ir/op_registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/op_definitions.h"

namespace neuronc::ir {

const char* op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::matmul:
      return "matmul";
    case OpCategory::conv:
      return "conv";
    case OpCategory::elementwise:
      return "elementwise";
    case OpCategory::reduction:
      return "reduction";
    case OpCategory::norm:
      return "norm";
    case OpCategory::softmax:
      return "softmax";
    case OpCategory::attention:
      return "attention";
    case OpCategory::pooling:
      return "pooling";
    case OpCategory::data_movement:
      return "data_movement";
    case OpCategory::creation:
      return "creation";
    case OpCategory::comparison:
      return "comparison";
    case OpCategory::indexing:
      return "indexing";
    case OpCategory::metadata:
      return "metadata";
    case OpCategory::collective:
      return "collective";
  }
  return "?";
}

const char* placement_name(Placement p) {
  return p == Placement::device ? "device" : "host";
}

// --- schema parsing ------------------------------------------------------------------------

namespace {

class SchemaParser {
 public:
  explicit SchemaParser(std::string_view s) : s_(s) {}

  OpInfo parse() {
    OpInfo info;
    info.schema = std::string(s_);
    skip_ws();
    std::string ns = "aten", name = ident();
    if (peek() == ':') {  // "transformers::grouped_mm_fallback": another library's op
      expect(':');
      expect(':');
      ns = name;
      name = ident();
    }
    std::string overload = "default";
    if (peek() == '.') {
      ++p_;
      overload = ident();
    }
    info.name = ns + "." + name + "." + overload;
    expect('(');
    bool kwarg_only = false;
    skip_ws();
    if (peek() != ')') {
      for (;;) {
        skip_ws();
        if (peek() == '*') {
          ++p_;
          kwarg_only = true;
        } else {
          bool writes = false;
          ArgSpec a = argument(&writes);
          a.kwarg_only = kwarg_only;
          // In-place: the first argument carries a write annotation, "Tensor(a!) self".
          if (info.args.empty() && writes) info.inplace = true;
          info.args.push_back(std::move(a));
        }
        skip_ws();
        if (peek() == ',') {
          ++p_;
          continue;
        }
        break;
      }
    }
    expect(')');
    skip_ws();
    expect('-');
    expect('>');
    skip_ws();
    info.num_outputs = returns();
    skip_ws();
    if (p_ != s_.size()) fail("trailing text");
    return info;
  }

 private:
  char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  void skip_ws() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("schema '" + std::string(s_) + "' at " + std::to_string(p_) + ": " + what);
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  std::string ident() {
    skip_ws();
    size_t b = p_;
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_'))
      ++p_;
    if (b == p_) fail("expected a name");
    return std::string(s_.substr(b, p_ - b));
  }
  // Skips an alias annotation "(a)", "(a!)", "(a -> *)"; returns true when it marks a write.
  bool alias_annotation() {
    if (peek() != '(') return false;
    size_t e = s_.find(')', p_);
    if (e == std::string_view::npos) fail("unterminated alias annotation");
    const bool write = s_.substr(p_, e - p_).find('!') != std::string_view::npos;
    p_ = e + 1;
    return write;
  }

  ArgSpec argument(bool* writes) {
    ArgSpec a;
    std::string base = ident();
    *writes = alias_annotation();
    bool list = false;
    if (peek() == '[') {
      size_t e = s_.find(']', p_);
      if (e == std::string_view::npos) fail("unterminated list type");
      p_ = e + 1;
      list = true;
    }
    *writes |= alias_annotation();
    if (peek() == '?') {
      ++p_;
      a.optional = true;
    }
    // "Tensor?[]": optional elements inside a list.
    bool elem_optional = false;
    if (peek() == '[') {
      size_t e = s_.find(']', p_);
      if (e == std::string_view::npos) fail("unterminated list type");
      p_ = e + 1;
      elem_optional = a.optional;
      a.optional = false;
      list = true;
    }
    if (base == "Tensor") {
      if (list)
        a.type = elem_optional ? ArgType::opt_tensor_list : ArgType::tensor_list;
      else
        a.type = a.optional ? ArgType::opt_tensor : ArgType::tensor;
    } else if (base == "int" || base == "SymInt") {
      a.type = list ? ArgType::ints : ArgType::int_;
    } else if (base == "float") {
      a.type = list ? ArgType::floats : ArgType::float_;
    } else if (base == "bool") {
      a.type = list ? ArgType::bools : ArgType::bool_;
    } else if (base == "Scalar") {
      a.type = ArgType::scalar;
    } else if (base == "str") {
      a.type = ArgType::str;
    } else if (base == "ScalarType") {
      a.type = ArgType::dtype;
    } else if (base == "Layout") {
      a.type = ArgType::layout;
    } else if (base == "Device") {
      a.type = ArgType::device;
    } else if (base == "MemoryFormat") {
      a.type = ArgType::memory_format;
    } else {
      fail("unsupported argument type '" + base + "'");
    }
    a.name = ident();
    skip_ws();
    if (peek() == '=') {
      ++p_;
      a.default_value = default_value(a);
    }
    return a;
  }

  Attribute default_value(const ArgSpec& a) {
    skip_ws();
    size_t b = p_;
    int depth = 0;
    bool in_str = false;
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (in_str) {
        if (c == '\'' || c == '"') in_str = false;
      } else if (c == '\'' || c == '"') {
        in_str = true;
      } else if (c == '[') {
        ++depth;
      } else if (c == ']') {
        --depth;
      } else if ((c == ',' || c == ')') && depth == 0) {
        break;
      }
      ++p_;
    }
    std::string text(s_.substr(b, p_ - b));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return convert_default(a, text);
  }

  Attribute convert_default(const ArgSpec& a, const std::string& t) {
    if (t == "None") return NoneAttr{};
    if (t == "True") return true;
    if (t == "False") return false;
    if (t == "contiguous_format") return MemoryFormat::contiguous;
    if (t == "long") return DType::i64;
    if (!t.empty() && (t[0] == '\'' || t[0] == '"')) return t.substr(1, t.size() - 2);
    if (!t.empty() && t[0] == '[') {
      std::vector<int64_t> ints;
      std::vector<double> floats;
      std::string inner = t.substr(1, t.size() - 2);
      size_t q = 0;
      while (q < inner.size()) {
        size_t e = inner.find(',', q);
        std::string item = inner.substr(q, e == std::string::npos ? std::string::npos : e - q);
        if (item.find_first_not_of(" ") != std::string::npos) {
          if (a.type == ArgType::floats)
            floats.push_back(std::stod(item));
          else
            ints.push_back(std::stoll(item));
        }
        if (e == std::string::npos) break;
        q = e + 1;
      }
      if (a.type == ArgType::floats) return floats;
      return ints;
    }
    if (t == "inf") return std::numeric_limits<double>::infinity();
    if (t == "-inf") return -std::numeric_limits<double>::infinity();
    const bool is_float_text = t.find_first_of(".eE") != std::string::npos;
    if (a.type == ArgType::float_ || a.type == ArgType::floats || is_float_text) {
      try {
        return std::stod(t);
      } catch (...) {
        fail("bad default '" + t + "'");
      }
    }
    try {
      return static_cast<int64_t>(std::stoll(t));
    } catch (...) {
      fail("bad default '" + t + "'");
    }
  }

  int returns() {
    skip_ws();
    if (peek() == '(') {
      ++p_;
      int n = 0;
      skip_ws();
      if (peek() == ')') {
        ++p_;
        return 0;
      }
      for (;;) {
        one_return();
        ++n;
        skip_ws();
        if (peek() == ',') {
          ++p_;
          continue;
        }
        break;
      }
      expect(')');
      return n;
    }
    return one_return() ? -1 : 1;
  }
  // Returns true for a list return.
  bool one_return() {
    std::string base = ident();
    if (base != "Tensor") fail("unsupported return type '" + base + "'");
    alias_annotation();
    bool list = false;
    if (peek() == '[') {
      p_ += 2;
      list = true;
    }
    skip_ws();
    if (std::isalpha(static_cast<unsigned char>(peek()))) ident();  // named return
    return list;
  }

  std::string_view s_;
  size_t p_ = 0;
};

// ArgSpec::extent: whether a symbolic value of `a` only sets extents of the op's result.
bool sets_extent_only(const std::string& op, const ArgSpec& a) {
  const size_t b = op.find('.'), e = op.rfind('.');
  const std::string base = b != std::string::npos && e > b ? op.substr(b + 1, e - b - 1) : op;
  // A result's sizes (view, expand, a factory, sum_to_size): its dims; or a norm's trailing
  // dims, which the padding analysis follows through the norm's own rule.
  if (a.type == ArgType::ints &&
      (a.name == "size" || a.name == "shape" || a.name == "sizes" || a.name == "normalized_shape"))
    return true;
  // The strides of memory nothing has written yet, or of a contiguous view.
  if (a.type == ArgType::ints && a.name == "stride")
    return base == "empty_strided" || base == "new_empty_strided" || base == "_reshape_alias";
  // The end of a window that starts at a constant: its length.
  if (a.type == ArgType::int_ && a.name == "end") return base == "slice" || base == "slice_copy";
  if (a.type == ArgType::int_ && a.name == "length")
    return base == "narrow" || base == "narrow_copy";
  // arange's end: the count of a ramp whose elements are their indices.
  if (a.type == ArgType::scalar && a.name == "end") return base == "arange";
  return false;
}

}  // namespace

OpInfo parse_schema(std::string_view schema) {
  return SchemaParser(schema).parse();
}

int OpInfo::arg_index(std::string_view n) const {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

std::vector<const ArgSpec*> OpInfo::tensor_args() const {
  std::vector<const ArgSpec*> out;
  for (const ArgSpec& a : args) {
    if (a.is_tensor()) out.push_back(&a);
  }
  return out;
}

std::vector<const ArgSpec*> OpInfo::attr_args() const {
  std::vector<const ArgSpec*> out;
  for (const ArgSpec& a : args) {
    if (!a.is_tensor()) out.push_back(&a);
  }
  return out;
}

// --- registry ------------------------------------------------------------------------------

OpRegistry::OpRegistry() {
  register_matmul_ops(*this);
  register_conv_and_pool_ops(*this);
  register_elementwise_ops(*this);
  register_reduction_and_norm_ops(*this);
  register_data_movement_ops(*this);
  register_creation_and_indexing_ops(*this);
  register_collective_ops(*this);
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry* registry = new OpRegistry();
  return *registry;
}

const OpInfo* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(std::string(name));
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpInfo*> OpRegistry::all() const {
  std::vector<const OpInfo*> out;
  out.reserve(ops_.size());
  for (const auto& [name, info] : ops_) out.push_back(&info);
  std::sort(out.begin(), out.end(),
            [](const OpInfo* a, const OpInfo* b) { return a->name < b->name; });
  return out;
}

void OpRegistry::add(std::string_view schema, OpCategory category, Placement placement,
                     ShapeFn fn) {
  OpInfo info = parse_schema(schema);
  info.category = category;
  info.placement = placement;
  info.shape_fn = std::move(fn);
  for (ArgSpec& a : info.args) a.extent = sets_extent_only(info.name, a);
  if (ops_.count(info.name)) throw Error("operator '" + info.name + "' is registered twice");
  std::string key = info.name;
  ops_.emplace(std::move(key), std::move(info));
}

std::vector<TensorType> infer_types(const Graph& g, const OpInfo& info,
                                    const std::vector<const TensorType*>& inputs,
                                    const std::vector<NamedAttr>& attrs) {
  if (!info.shape_fn) throw Error(info.name + ": no shape rule");
  // Tensor operand count: every non-list tensor argument takes one slot.
  size_t fixed = 0;
  bool has_list = false;
  for (const ArgSpec& a : info.args) {
    if (a.type == ArgType::tensor || a.type == ArgType::opt_tensor) ++fixed;
    if (a.type == ArgType::tensor_list || a.type == ArgType::opt_tensor_list) has_list = true;
  }
  if ((!has_list && inputs.size() != fixed) || (has_list && inputs.size() < fixed)) {
    throw Error(info.name + ": expected " + (has_list ? "at least " : "") + std::to_string(fixed) +
                " tensor operands, found " + std::to_string(inputs.size()));
  }
  size_t slot = 0;
  for (const ArgSpec& a : info.args) {
    if (a.type == ArgType::tensor) {
      if (!inputs[slot]) throw Error(info.name + ": tensor operand '" + a.name + "' is missing");
      ++slot;
    } else if (a.type == ArgType::opt_tensor) {
      ++slot;
    } else if (a.type == ArgType::tensor_list || a.type == ArgType::opt_tensor_list) {
      slot += inputs.size() - fixed;
    }
  }
  for (const NamedAttr& na : attrs) {
    if (info.arg_index(na.name) < 0) {
      throw Error(info.name + ": unknown argument '" + na.name + "'");
    }
  }
  ShapeContext ctx(g, info, inputs, attrs);
  return info.shape_fn(ctx);
}

// --- ShapeContext --------------------------------------------------------------------------

const TensorType& ShapeContext::input(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i]) fail("operand " + std::to_string(i) + " is missing");
  return *inputs_[i];
}

std::vector<const TensorType*> ShapeContext::list_inputs() const {
  size_t before = 0, fixed = 0;
  bool seen_list = false;
  for (const ArgSpec& a : info_.args) {
    if (a.type == ArgType::tensor || a.type == ArgType::opt_tensor) {
      ++fixed;
      if (!seen_list) ++before;
    }
    if (a.type == ArgType::tensor_list || a.type == ArgType::opt_tensor_list) seen_list = true;
  }
  const size_t count = inputs_.size() - fixed;
  return std::vector<const TensorType*>(
      inputs_.begin() + static_cast<std::ptrdiff_t>(before),
      inputs_.begin() + static_cast<std::ptrdiff_t>(before + count));
}

const Attribute* ShapeContext::attr(std::string_view name) const {
  for (const NamedAttr& a : attrs_) {
    if (a.name == name) return &a.value;
  }
  const int idx = info_.arg_index(name);
  if (idx >= 0 && info_.args[static_cast<size_t>(idx)].default_value)
    return &*info_.args[static_cast<size_t>(idx)].default_value;
  return nullptr;
}

void ShapeContext::fail(const std::string& message) const {
  throw Error(info_.name + ": " + message);
}

bool ShapeContext::is_none(std::string_view name) const {
  const Attribute* a = attr(name);
  return !a || std::holds_alternative<NoneAttr>(*a);
}

int64_t ShapeContext::get_int(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<int64_t>(a)) return *v;
    if (auto* b = std::get_if<bool>(a)) return *b;
    if (auto* d = std::get_if<Dim>(a); d && d->is_constant()) return d->value();
    if (auto* l = std::get_if<std::vector<int64_t>>(a); l && l->size() == 1) return (*l)[0];
  }
  fail("argument '" + std::string(name) + "': expected an int, found " +
       (a ? attr_kind_name(attr_kind(*a)) : "nothing"));
}

std::optional<int64_t> ShapeContext::get_opt_int(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return get_int(name);
}

std::optional<Dim> ShapeContext::get_opt_dim(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  if (const auto* d = std::get_if<Dim>(attr(name))) return *d;
  return Dim::constant(get_int(name));
}

double ShapeContext::get_float(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<double>(a)) return *v;
    if (auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
    if (auto* b = std::get_if<bool>(a)) return *b;
  }
  fail("argument '" + std::string(name) + "': expected a float, found " +
       (a ? attr_kind_name(attr_kind(*a)) : "nothing"));
}

bool ShapeContext::get_bool(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<bool>(a)) return *v;
    if (auto* i = std::get_if<int64_t>(a)) return *i != 0;
  }
  fail("argument '" + std::string(name) + "': expected a bool, found " +
       (a ? attr_kind_name(attr_kind(*a)) : "nothing"));
}

std::vector<Dim> ShapeContext::get_dims(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* s = std::get_if<SymIntList>(a)) return s->dims;
    if (auto* v = std::get_if<std::vector<int64_t>>(a)) {
      std::vector<Dim> out;
      for (int64_t x : *v) out.push_back(Dim::constant(x));
      return out;
    }
    if (auto* i = std::get_if<int64_t>(a)) return {Dim::constant(*i)};
    if (auto* d = std::get_if<Dim>(a)) return {*d};
  }
  fail("argument '" + std::string(name) + "': expected an int list, found " +
       (a ? attr_kind_name(attr_kind(*a)) : "nothing"));
}

std::vector<int64_t> ShapeContext::get_ints(std::string_view name) const {
  std::vector<int64_t> out;
  for (const Dim& d : get_dims(name)) {
    if (!d.is_constant()) {
      fail("argument '" + std::string(name) + "': expected constant ints, found symbolic " +
           graph_.dim_to_string(d));
    }
    out.push_back(d.value());
  }
  return out;
}

std::optional<std::vector<int64_t>> ShapeContext::get_opt_ints(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return get_ints(name);
}

std::optional<DType> ShapeContext::get_opt_dtype(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a || std::holds_alternative<NoneAttr>(*a)) return std::nullopt;
  if (auto* d = std::get_if<DType>(a)) return *d;
  fail("argument '" + std::string(name) + "': expected a dtype, found " +
       attr_kind_name(attr_kind(*a)));
}

std::string ShapeContext::get_string(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* s = std::get_if<std::string>(a)) return *s;
  }
  fail("argument '" + std::string(name) + "': expected a string, found " +
       (a ? attr_kind_name(attr_kind(*a)) : "nothing"));
}

}  // namespace neuronc::ir
