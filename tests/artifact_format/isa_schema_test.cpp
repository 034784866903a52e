// device/isa_schema.h against artifact.fbs itself: every instruction table lists the schema's
// fields by name, in order (a ScalarOperand as `<name>` and `<name>_ref`), and declares the
// schema's wire defaults. The codec's static_asserts check Create<Op>'s parameter types; this
// checks what types cannot tell apart (dst before src) and the defaults the decoder assumes.
#include "device/isa_schema.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "artifact_format/artifact_generated.h"
#include "artifact_format/instruction_text.h"

namespace neuronc::artifact {
namespace {

namespace d = ::neuronc::device;

struct FbsField {
  std::string name;
  std::string type;
  std::string default_value;  // empty when the schema declares none
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  const auto e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// table name -> fields, from artifact.fbs (comments dropped).
std::map<std::string, std::vector<FbsField>> parse_tables() {
  std::ifstream in(std::string(NEURONC_SOURCE_DIR) + "/artifact_format/artifact.fbs");
  std::string text, line;
  while (std::getline(in, line)) text += line.substr(0, line.find("//")) + "\n";
  std::map<std::string, std::vector<FbsField>> tables;
  for (size_t at = text.find("table "); at != std::string::npos; at = text.find("table ", at)) {
    const size_t open = text.find('{', at), close = text.find('}', at);
    const std::string name = trim(text.substr(at + 6, open - at - 6));
    std::stringstream body(text.substr(open + 1, close - open - 1));
    std::vector<FbsField>& fields = tables[name];
    std::string decl;
    while (std::getline(body, decl, ';')) {
      decl = trim(decl);
      if (decl.empty()) continue;
      const size_t colon = decl.find(':'), eq = decl.find('=');
      FbsField f{trim(decl.substr(0, colon)),
                 trim(decl.substr(colon + 1, eq == std::string::npos ? eq : eq - colon - 1)), ""};
      if (eq != std::string::npos) f.default_value = trim(decl.substr(eq + 1));
      fields.push_back(f);
    }
    at = close;
  }
  return tables;
}

// Whether artifact.fbs default `fbs` (empty: the type's zero) is the schema's `v`.
template <class M>
bool same_default(const std::string& fbs, const M& v) {
  if constexpr (std::is_enum_v<M>) {
    return (fbs.empty() ? std::string(d::EnumInfo<M>::name(static_cast<M>(0))) : fbs) ==
           d::EnumInfo<M>::name(v);
  } else if constexpr (std::is_same_v<M, bool>) {
    return (fbs == "true") == v;
  } else {
    return (fbs.empty() ? 0.0 : std::strtod(fbs.c_str(), nullptr)) == static_cast<double>(v);
  }
}

// The fields artifact.fbs should hold for T, as "name" and "name=default-ok" checks.
template <class T>
void expect_table(const std::vector<FbsField>& fbs, const char* table) {
  size_t i = 0;
  auto next = [&](const std::string& name) -> const FbsField* {
    if (i >= fbs.size()) {
      ADD_FAILURE() << table << ": the schema's field '" << name << "' is not in artifact.fbs";
      return nullptr;
    }
    const FbsField* f = &fbs[i++];
    EXPECT_EQ(f->name, name) << table << " field " << i - 1;
    return f;
  };
  d::for_each_field<T>([&](const auto& f) {
    using M = typename std::decay_t<decltype(f)>::Member;
    const std::string name(f.name);
    const FbsField* w = next(name);
    if (!w) return;
    if constexpr (std::is_same_v<M, d::ScalarOperand>) {
      EXPECT_TRUE(same_default(w->default_value, std::get<float>(f.wire_default)))
          << table << "." << name << " defaults to " << w->default_value;
      if (const FbsField* r = next(name + "_ref")) {
        EXPECT_EQ(r->type, "MemRef") << table << "." << name << "_ref";
      }
    } else if constexpr (std::is_same_v<M, d::MemRef> ||
                         std::is_same_v<M, std::optional<d::MemRef>>) {
      EXPECT_EQ(w->type, "MemRef") << table << "." << name;
    } else if constexpr (std::is_same_v<M, std::array<int32_t, 4>>) {
      EXPECT_EQ(w->type, "Iota4") << table << "." << name;
    } else {
      EXPECT_TRUE(same_default(w->default_value, f.wire_default))
          << table << "." << name << " defaults to '" << w->default_value << "' in artifact.fbs";
    }
  });
  EXPECT_EQ(i, fbs.size()) << table << ": artifact.fbs has fields the schema lacks";
}

template <size_t I = 0>
void expect_every_table(const std::map<std::string, std::vector<FbsField>>& tables) {
  if constexpr (I < std::variant_size_v<d::Operation>) {
    const char* name = fb::EnumNamesOperation()[I + 1];
    const auto it = tables.find(name);
    if (it == tables.end())
      ADD_FAILURE() << "artifact.fbs has no table " << name;
    else
      expect_table<std::variant_alternative_t<I, d::Operation>>(it->second, name);
    expect_every_table<I + 1>(tables);
  }
}

TEST(IsaSchema, MatchesArtifactFbsFieldByField) {
  const auto tables = parse_tables();
  ASSERT_GT(tables.size(), 20u);
  expect_every_table(tables);
}

// The text form is derived from the schema: `name=value` per field in schema order, a true bool
// as its bare name, an unused scalar operand left out.
TEST(IsaSchema, TextFormUsesSchemaNames) {
  d::TensorScalar ts;
  ts.dst = d::sbuf(0, 4, 0, d::DType::f32, 8);
  ts.src = d::sbuf(0, 4, 64, d::DType::f32, 8);
  ts.op0 = d::AluOp::add;
  ts.operand0 = 2.0f;
  ts.reverse0 = true;
  d::Instruction in;
  in.op = ts;
  EXPECT_EQ(instruction_text(in),
            "tensor_scalar dst=sbuf:f32[0:4]@0{8} src=sbuf:f32[0:4]@64{8} op0=add operand0=2 "
            "reverse0 op1=bypass");
}

}  // namespace
}  // namespace neuronc::artifact
