// Parses the IR text form (see printer.h) back into a Graph.
#include <cctype>
#include <cmath>
#include <limits>

#include "ir/printer.h"

namespace neuronc::ir {
namespace {

enum class Tok { ident, value, number, string, punct, end };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  int line = 1, col = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token next() {
    skip();
    Token t;
    t.line = line_;
    t.col = col_;
    if (p_ >= s_.size()) return t;
    const char c = s_[p_];
    auto is_ident = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.';
    };
    if (c == '%') {
      advance();
      t.kind = Tok::value;
      while (p_ < s_.size() && is_ident(s_[p_])) t.text += advance();
      if (t.text.empty()) fail(t, "a value name after '%'");
      return t;
    }
    if (c == '"') {
      advance();
      t.kind = Tok::string;
      for (;;) {
        if (p_ >= s_.size()) fail(t, "a closing '\"'");
        char ch = advance();
        if (ch == '"') break;
        if (ch == '\\') {
          if (p_ >= s_.size()) fail(t, "an escape character");
          char e = advance();
          switch (e) {
            case 'n':
              t.text += '\n';
              break;
            case 't':
              t.text += '\t';
              break;
            case 'x': {
              if (p_ + 2 > s_.size()) fail(t, "two hex digits");
              std::string hex{advance(), advance()};
              t.text += static_cast<char>(std::stoi(hex, nullptr, 16));
              break;
            }
            default:
              t.text += e;
          }
        } else {
          t.text += ch;
        }
      }
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '-' && p_ + 1 < s_.size() &&
         (std::isdigit(static_cast<unsigned char>(s_[p_ + 1])) || s_.substr(p_ + 1, 3) == "inf"))) {
      t.kind = Tok::number;
      t.text += advance();
      while (p_ < s_.size()) {
        char ch = s_[p_];
        if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
            ((ch == '-' || ch == '+') && (t.text.back() == 'e' || t.text.back() == 'E'))) {
          t.text += advance();
        } else {
          break;
        }
      }
      return t;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      t.kind = Tok::ident;
      while (p_ < s_.size() && is_ident(s_[p_])) t.text += advance();
      return t;
    }
    t.kind = Tok::punct;
    t.text = std::string(1, advance());
    return t;
  }

  [[noreturn]] static void fail(const Token& at, const std::string& expected,
                                const std::string& found = "") {
    throw Error("line " + std::to_string(at.line) + ":" + std::to_string(at.col) + ": expected " +
                expected + (found.empty() ? "" : ", found " + found));
  }

 private:
  char advance() {
    char c = s_[p_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void skip() {
    while (p_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[p_]))) {
        advance();
      } else if (s_[p_] == '#' && p_ + 1 < s_.size() && s_[p_ + 1] == ' ') {
        while (p_ < s_.size() && s_[p_] != '\n') advance();  // "# comment"
      } else {
        break;
      }
    }
  }
  std::string_view s_;
  size_t p_ = 0;
  int line_ = 1, col_ = 1;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::end:
      return "end of input";
    case Tok::value:
      return "'%" + t.text + "'";
    case Tok::string:
      return "string \"" + t.text + "\"";
    default:
      return "'" + t.text + "'";
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) { tok_ = lex_.next(); }

  std::unique_ptr<Graph> parse() {
    g_ = std::make_unique<Graph>();
    expect_ident("graph");
    expect_punct("{");
    while (!is_punct("}")) {
      if (tok_.kind == Tok::end) fail("'}'");
      statement();
    }
    expect_punct("}");
    if (tok_.kind != Tok::end) fail("end of input");
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(const std::string& expected) {
    Lexer::fail(tok_, expected, describe(tok_));
  }
  void bump() { tok_ = lex_.next(); }
  bool is_punct(const char* p) const { return tok_.kind == Tok::punct && tok_.text == p; }
  bool is_ident(const char* p) const { return tok_.kind == Tok::ident && tok_.text == p; }
  void expect_punct(const char* p) {
    if (!is_punct(p)) fail(std::string("'") + p + "'");
    bump();
  }
  void expect_ident(const char* p) {
    if (!is_ident(p)) fail(std::string("'") + p + "'");
    bump();
  }
  std::string take_string() {
    if (tok_.kind != Tok::string) fail("a string");
    std::string s = tok_.text;
    bump();
    return s;
  }
  std::string take_ident() {
    if (tok_.kind != Tok::ident) fail("a name");
    std::string s = tok_.text;
    bump();
    return s;
  }
  int64_t take_int() {
    if (tok_.kind != Tok::number) fail("an integer");
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(tok_.text, &used);
    } catch (...) {
      fail("an integer");
    }
    if (used != tok_.text.size()) fail("an integer");
    bump();
    return v;
  }
  Value* take_value_ref() {
    if (tok_.kind != Tok::value) fail("a value");
    Value* v = g_->find_value(tok_.text);
    if (!v) Lexer::fail(tok_, "a defined value", "'%" + tok_.text + "' which is never defined");
    bump();
    return v;
  }

  // 4, s0, 4*s0, or a product of symbols s0*s1 (a product symbol, made on first use).
  Dim dim() {
    Monomial m;
    if (tok_.kind == Tok::number) {
      m.coeff = take_int();
      if (!is_punct("*")) return Dim::constant(m.coeff);
      bump();
    }
    m.symbols.push_back(symbol_ref());
    while (is_punct("*")) {
      bump();
      m.symbols.push_back(symbol_ref());
    }
    return g_->dim_of(m);
  }
  SymbolId symbol_ref() {
    if (tok_.kind != Tok::ident) fail("a dimension");
    auto id = g_->find_symbol(tok_.text);
    if (!id) Lexer::fail(tok_, "a declared symbol", "'" + tok_.text + "'");
    bump();
    return *id;
  }
  TensorType type() {
    if (tok_.kind != Tok::ident) fail("a dtype");
    auto dt = parse_dtype(tok_.text);
    if (!dt) fail("a dtype (f32, bf16, i64, bool, ...)");
    bump();
    TensorType t;
    t.dtype = *dt;
    expect_punct("[");
    while (!is_punct("]")) {
      t.shape.push_back(dim());
      if (!is_punct("]")) expect_punct(",");
    }
    bump();
    return t;
  }

  void statement() {
    if (is_ident("sym")) {
      bump();
      std::string name = take_ident();
      expect_punct("[");
      const int64_t lo = take_int();
      expect_punct(",");
      int64_t hi;
      if (is_ident("inf")) {
        bump();
        hi = INT64_MAX;
      } else {
        hi = take_int();
      }
      expect_punct("]");
      try {
        g_->add_symbol(name, lo, hi);
      } catch (const Error& e) {
        Lexer::fail(tok_, "a valid symbol", e.what());
      }
      return;
    }
    for (InputRole role : {InputRole::user_input, InputRole::parameter, InputRole::buffer,
                           InputRole::constant, InputRole::state, InputRole::symbol}) {
      if (is_ident(input_role_name(role))) {
        bump();
        input(role);
        return;
      }
    }
    if (is_ident("output")) {
      bump();
      Value* v = take_value_ref();
      OutputRole role = OutputRole::user_output;
      std::string target;
      if (is_ident("buffer_mutation") || is_ident("user_input_mutation")) {
        role = is_ident("buffer_mutation") ? OutputRole::buffer_mutation
                                           : OutputRole::user_input_mutation;
        bump();
        target = take_string();
      }
      g_->add_output(v, role, target);
      return;
    }
    node();
  }

  void input(InputRole role) {
    if (tok_.kind != Tok::value) fail("a value name");
    std::string name = tok_.text;
    if (g_->find_value(name)) Lexer::fail(tok_, "a new value name", "'%" + name + "' again");
    bump();
    expect_punct(":");
    TensorType t = type();
    std::string target;
    bool persistent = true;
    if (role != InputRole::user_input) target = take_string();
    if (role == InputRole::buffer && is_ident("nonpersistent")) {
      bump();
      persistent = false;
    }
    g_->add_input(name, t, role, target, persistent);
  }

  void node() {
    std::vector<std::string> names;
    std::vector<TensorType> types;
    if (is_punct("(")) {
      bump();
      expect_punct(")");
    } else {
      for (;;) {
        if (tok_.kind != Tok::value) fail("a result '%name' or a statement");
        if (g_->find_value(tok_.text))
          Lexer::fail(tok_, "a new value name", "'%" + tok_.text + "' again");
        names.push_back(tok_.text);
        bump();
        expect_punct(":");
        types.push_back(type());
        if (!is_punct(",")) break;
        bump();
      }
    }
    expect_punct("=");
    const Token op_tok = tok_;
    std::string op = take_ident();
    expect_punct("(");
    std::vector<Value*> operands;
    while (!is_punct(")")) {
      if (is_ident("_")) {
        bump();
        operands.push_back(nullptr);
      } else {
        operands.push_back(take_value_ref());
      }
      if (!is_punct(")")) expect_punct(",");
    }
    bump();
    std::vector<NamedAttr> attrs;
    if (is_punct("{")) {
      bump();
      while (!is_punct("}")) {
        std::string an = take_ident();
        expect_punct("=");
        attrs.push_back(NamedAttr{an, attribute()});
        if (!is_punct("}")) expect_punct(",");
      }
      bump();
    }
    std::string node_name;
    SourceLocation loc;
    for (;;) {
      if (is_ident("name")) {
        bump();
        expect_punct("(");
        node_name = take_string();
        expect_punct(")");
      } else if (is_ident("loc")) {
        bump();
        expect_punct("(");
        loc.file = take_string();
        expect_punct(",");
        loc.line = static_cast<int>(take_int());
        expect_punct(",");
        loc.module_path = take_string();
        expect_punct(")");
      } else {
        break;
      }
    }
    Node* n = nullptr;
    try {
      n = g_->append(op, operands, attrs, std::move(types), names, node_name);
    } catch (const Error& e) {
      Lexer::fail(op_tok, "a valid node", e.what());
    }
    n->set_location(loc);
  }

  Attribute attribute() {
    if (is_ident("none")) return bump(), NoneAttr{};
    if (is_ident("true")) return bump(), true;
    if (is_ident("false")) return bump(), false;
    if (is_ident("inf")) return bump(), std::numeric_limits<double>::infinity();
    if (is_ident("nan")) return bump(), std::numeric_limits<double>::quiet_NaN();
    if (tok_.kind == Tok::string) return take_string();
    if (is_ident("floats") || is_ident("bools") || is_ident("strings")) {
      std::string kind = take_ident();
      expect_punct("[");
      expect_punct("]");
      if (kind == "floats") return std::vector<double>{};
      if (kind == "bools") return std::vector<bool>{};
      return std::vector<std::string>{};
    }
    if (is_ident("device")) {
      bump();
      expect_punct("(");
      DeviceAttr d;
      d.type = take_string();
      if (is_punct(",")) {
        bump();
        d.index = take_int();
      }
      expect_punct(")");
      return d;
    }
    if (is_punct("#")) {
      bump();
      std::string name = take_ident();
      if (auto dt = parse_dtype(name)) return *dt;
      for (MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::preserve,
                             MemoryFormat::channels_last, MemoryFormat::channels_last_3d}) {
        if (name == memory_format_name(f)) return f;
      }
      for (Layout l : {Layout::strided, Layout::sparse_coo}) {
        if (name == layout_name(l)) return l;
      }
      fail("a dtype, memory format or layout after '#'");
    }
    if (is_punct("[")) return list();
    if (tok_.kind == Tok::number) {
      std::string text = tok_.text;
      if (text == "-inf") return bump(), -std::numeric_limits<double>::infinity();
      if (text.find_first_of(".eE") != std::string::npos || text.find("inf") != std::string::npos ||
          text.find("nan") != std::string::npos) {
        bump();
        try {
          return std::stod(text);
        } catch (...) {
          fail("a number");
        }
      }
      Dim d = dim();
      if (d.is_constant()) return d.value();
      return d;
    }
    if (tok_.kind == Tok::ident) return dim();  // a symbol
    fail("an attribute value");
  }

  Attribute list() {
    expect_punct("[");
    std::vector<Attribute> items;
    while (!is_punct("]")) {
      items.push_back(attribute());
      if (!is_punct("]")) expect_punct(",");
    }
    bump();
    bool all_int = true, any_float = false, any_sym = false, all_bool = true, all_str = true;
    for (const Attribute& a : items) {
      const bool i = std::holds_alternative<int64_t>(a), f = std::holds_alternative<double>(a),
                 s = std::holds_alternative<Dim>(a);
      all_int &= i || s;
      any_float |= f;
      any_sym |= s;
      all_bool &= std::holds_alternative<bool>(a);
      all_str &= std::holds_alternative<std::string>(a);
      if (!(i || f || s || std::holds_alternative<bool>(a) ||
            std::holds_alternative<std::string>(a))) {
        fail("a list of ints, floats, bools or strings");
      }
    }
    if (items.empty()) return std::vector<int64_t>{};
    if (all_bool) {
      std::vector<bool> v;
      for (const Attribute& a : items) v.push_back(std::get<bool>(a));
      return v;
    }
    if (all_str) {
      std::vector<std::string> v;
      for (const Attribute& a : items) v.push_back(std::get<std::string>(a));
      return v;
    }
    if (all_int && any_sym) {
      SymIntList l;
      for (const Attribute& a : items) {
        l.dims.push_back(std::holds_alternative<Dim>(a) ? std::get<Dim>(a)
                                                        : Dim::constant(std::get<int64_t>(a)));
      }
      return l;
    }
    if (all_int) {
      std::vector<int64_t> v;
      for (const Attribute& a : items) v.push_back(std::get<int64_t>(a));
      return v;
    }
    if (any_float && !any_sym) {
      std::vector<double> v;
      for (const Attribute& a : items) {
        if (std::holds_alternative<double>(a))
          v.push_back(std::get<double>(a));
        else if (std::holds_alternative<int64_t>(a))
          v.push_back(static_cast<double>(std::get<int64_t>(a)));
        else
          fail("a homogeneous list");
      }
      return v;
    }
    fail("a homogeneous list");
  }

  Lexer lex_;
  Token tok_;
  std::unique_ptr<Graph> g_;
};

}  // namespace

std::unique_ptr<Graph> parse(std::string_view text) {
  return Parser(text).parse();
}

}  // namespace neuronc::ir
