// TorchScript archives through libtorch 1.13 (PT2_FORMAT.md §8): torch::jit::load over the mapped
// bytes, eval(), freeze (parameters preserved as attributes so every weight keeps its FQN), inline,
// then one walk over the frozen graph:
//   - user input types come from <root>/traced_inputs.pkl (torch.jit.trace since 2.0 stores the
//     example inputs' sizes and dtypes there; loaded graphs carry only `Tensor`);
//   - scalar and list computations (aten::size, prim::ListConstruct, aten::Int, int arithmetic)
//     are evaluated here with libtorch's own operators, against meta tensors for the shapes;
//   - tensor ops whose operands are all constants are folded with libtorch (masks, arange);
//   - every other aten:: op becomes an IR node "aten.<name>.<overload>" with its tensor operands
//     in schema order, its other arguments as attributes, and output types from the registry's
//     shape rules (unregistered ops: from running the op on meta tensors).
// Weights become graph inputs whose payloads point at the at::Tensor storages libtorch loaded.
// Only this file includes torch headers. It is built as its own module, libneuronc_torchscript.so,
// which frontend/torchscript_reader.cpp loads on the first TorchScript file
// (frontend/torchscript_plugin.h says why and how).
#include "frontend/torchscript_plugin.h"

#include <ATen/Functions.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/import_read.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/op_registry.h"

namespace neuronc::frontend {
namespace jit = torch::jit;

namespace {

// libtorch reads the archive from our mapping instead of opening the file a second time.
class MappedReadAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit MappedReadAdapter(std::shared_ptr<MappedFile> f) : file_(std::move(f)) {}
  size_t size() const override { return file_->size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= file_->size()) return 0;
    size_t k = std::min<size_t>(n, file_->size() - static_cast<size_t>(pos));
    std::memcpy(buf, file_->data() + pos, k);
    return k;
  }

 private:
  std::shared_ptr<MappedFile> file_;
};

// c10::Error text without the C++ backtrace libtorch appends.
std::string torch_message(const std::exception& e) {
  std::string m;
  if (const auto* ce = dynamic_cast<const c10::Error*>(&e)) {
    m = ce->what_without_backtrace();
  } else {
    m = e.what();
  }
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  while (!m.empty() && (m.front() == '\n' || m.front() == ' ')) m.erase(m.begin());
  return m;
}

std::optional<ir::DType> dtype_from_torch(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return ir::DType::f64;
    case at::kFloat:
      return ir::DType::f32;
    case at::kHalf:
      return ir::DType::f16;
    case at::kBFloat16:
      return ir::DType::bf16;
    case at::kLong:
      return ir::DType::i64;
    case at::kInt:
      return ir::DType::i32;
    case at::kShort:
      return ir::DType::i16;
    case at::kChar:
      return ir::DType::i8;
    case at::kByte:
      return ir::DType::u8;
    case at::kBool:
      return ir::DType::boolean;
    case at::kComplexFloat:
      return ir::DType::c64;
    default:
      return std::nullopt;
  }
}

at::ScalarType dtype_to_torch(ir::DType t) {
  switch (t) {
    case ir::DType::f64:
      return at::kDouble;
    case ir::DType::f32:
      return at::kFloat;
    case ir::DType::f16:
      return at::kHalf;
    case ir::DType::bf16:
      return at::kBFloat16;
    case ir::DType::i64:
      return at::kLong;
    case ir::DType::i32:
      return at::kInt;
    case ir::DType::i16:
      return at::kShort;
    case ir::DType::i8:
      return at::kChar;
    case ir::DType::u8:
      return at::kByte;
    case ir::DType::boolean:
      return at::kBool;
    case ir::DType::c64:
      return at::kComplexFloat;
    default:
      return at::kFloat;  // f8 types never come out of libtorch 1.13
  }
}

// What a TorchScript value is during the walk.
struct Slot {
  enum class Kind : uint8_t { constant, tensor, object, sequence };
  Kind kind = Kind::constant;
  c10::IValue value;            // constant: its value (a tensor, scalar, list, None, ...)
  ir::Value* tensor = nullptr;  // tensor: the IR value computed at run time
  std::string path;             // object: module FQN prefix ("" for the root, "fc1.")
  std::vector<Slot> items;      // sequence: a list or tuple holding at least one run-time tensor
};

class Importer {
 public:
  Importer(std::string fname, jit::Module module, std::vector<at::Tensor> example_inputs)
      : fname_(std::move(fname)),
        module_(std::move(module)),
        examples_(std::move(example_inputs)) {}

  std::unique_ptr<ir::Graph> run(const jit::Graph& graph) {
    g_ = std::make_unique<ir::Graph>();
    read_inputs(graph);
    for (const jit::Node* n : graph.nodes()) import_node(n);
    for (const jit::Value* v : graph.outputs()) add_outputs(slot(v), "return value");
    return std::move(g_);
  }

 private:
  // --- messages ---------------------------------------------------------------------------
  // "linear.py:134 (code/__torch__/zoo.py:12: `return torch.linear(x, weight, bias)`)".
  static std::string where(const jit::Node* n) {
    std::string out;
    const jit::SourceRange& r = n->sourceRange();
    if (auto orig = r.findSourceRangeThatGenerated()) {
      if (auto flc = orig->file_line_col()) {
        out = std::get<0>(*flc) + ":" + std::to_string(std::get<1>(*flc));
      }
    }
    if (auto flc = r.file_line_col()) {
      std::string code(r.text().str());
      if (auto nl = code.find('\n'); nl != std::string::npos) code.resize(nl);
      std::string ts = std::get<0>(*flc) + ":" + std::to_string(std::get<1>(*flc));
      if (!code.empty()) ts += ": `" + code + "`";
      out = out.empty() ? ts : out + " (" + ts + ")";
    }
    return out.empty() ? "unknown source line" : out;
  }

  [[noreturn]] void fail(const jit::Node* n, const std::string& msg) const {
    if (n == nullptr) throw Error(fname_ + ": " + msg);
    throw Error(fname_ + ": " + n->kind().toQualString() + " at " + where(n) + ": " + msg);
  }

  static ir::SourceLocation location_of(const jit::Node* n) {
    ir::SourceLocation loc;
    const jit::SourceRange& r = n->sourceRange();
    auto orig = r.findSourceRangeThatGenerated();
    const jit::SourceRange& best = orig ? *orig : r;
    if (auto flc = best.file_line_col()) {
      loc.file = std::get<0>(*flc);
      loc.line = static_cast<int>(std::get<1>(*flc));
    }
    if (auto cs = n->callstack()) {
      std::string path;
      for (const auto& e : (*cs)->vec()) {
        if (const auto& mi = std::get<2>(e)) {
          if (!path.empty()) path += ".";
          path += mi->instance_name();
        }
      }
      loc.module_path = path;
    }
    return loc;
  }

  // --- values -----------------------------------------------------------------------------
  Slot& slot(const jit::Value* v) {
    auto it = slots_.find(v);
    if (it == slots_.end()) {
      throw Error(fname_ + ": value %" + v->debugName() + " is used before it is defined");
    }
    return it->second;
  }

  static std::string ir_name(std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
  }

  // A constant tensor as a graph input whose payload is the tensor's storage. Tensors met twice
  // (one attribute read in several places) map to one input.
  // An empty `name` asks for a fresh "lifted_tensor_<k>" unless the tensor already has an input.
  ir::Value* materialize(const at::Tensor& t, ir::InputRole role, std::string fqn,
                         const jit::Node* user) {
    const void* impl = t.unsafeGetTensorImpl();
    if (fqn.empty()) {
      if (auto it = by_impl_.find(impl); it != by_impl_.end()) return it->second;
      fqn = "lifted_tensor_" + std::to_string(lifted_++);
    }
    auto key = std::make_pair(impl, fqn);
    if (auto it = materialized_.find(key); it != materialized_.end()) return it->second;
    auto dt = dtype_from_torch(t.scalar_type());
    if (!dt) {
      fail(user, "constant '" + fqn + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                     ", which neuronc does not support");
    }
    if (t.device().type() != at::kCPU || t.is_sparse() || t.is_quantized()) {
      fail(user, "constant '" + fqn + "' is not a dense CPU tensor");
    }
    ir::TensorType type{*dt, {}};
    for (int64_t s : t.sizes()) type.shape.push_back(ir::Dim::constant(s));
    std::string prefix = role == ir::InputRole::parameter ? "p_"
                         : role == ir::InputRole::buffer  ? "b_"
                                                          : "c_";
    ir::Value* v = g_->add_input(prefix + ir_name(fqn), type, role, fqn);
    auto owner = std::make_shared<at::Tensor>(t);
    ir::ConstantPayload p;
    p.data = static_cast<const std::byte*>(t.storage().data());
    p.nbytes = t.storage().nbytes();
    p.storage_offset = t.storage_offset();
    p.strides.assign(t.strides().begin(), t.strides().end());
    p.owner = std::shared_ptr<const void>(owner, owner.get());
    v->set_payload(std::move(p));
    materialized_.emplace(key, v);
    by_impl_.emplace(impl, v);
    return v;
  }

  // Frozen attributes keep their FQN ("self.fc.weight"); anonymous constants get "" (numbered
  // by materialize in order of first use, as torch.export numbers lifted tensors).
  static std::string constant_name(const jit::Value* v) {
    const std::string& name = v->debugName();
    return name.rfind("self.", 0) == 0 ? name.substr(5) : std::string();
  }

  // The IR value of a tensor operand (constants become `constant` graph inputs).
  ir::Value* tensor_of(const jit::Value* tv, const jit::Node* user) {
    Slot& s = slot(tv);
    if (s.kind == Slot::Kind::tensor) return s.tensor;
    if (s.kind == Slot::Kind::constant && s.value.isTensor()) {
      // The slot stays a constant so later uses can still be folded.
      return materialize(s.value.toTensor(), ir::InputRole::constant, constant_name(tv), user);
    }
    fail(user, "operand %" + tv->debugName() + " is not a tensor");
  }

  void read_inputs(const jit::Graph& graph) {
    auto inputs = graph.inputs();
    if (inputs.empty() || !inputs[0]->type()->cast<c10::ClassType>()) {
      throw Error(fname_ + ": forward() has no module `self` argument");
    }
    Slot self;
    self.kind = Slot::Kind::object;
    self.value = module_._ivalue();
    slots_[inputs[0]] = self;
    size_t n_user = inputs.size() - 1;
    if (examples_.size() != n_user) {
      throw Error(fname_ + ": forward() takes " + std::to_string(n_user) +
                  " inputs but traced_inputs.pkl holds " + std::to_string(examples_.size()) +
                  " tensors");
    }
    for (size_t i = 0; i < n_user; ++i) {
      const jit::Value* in = inputs[i + 1];
      if (!in->type()->cast<c10::TensorType>()) {
        throw Error(fname_ + ": forward() input '" + in->debugName() + "' has type " +
                    in->type()->repr_str() + "; only tensor inputs are supported");
      }
      const at::Tensor& ex = examples_[i];
      auto dt = dtype_from_torch(ex.scalar_type());
      if (!dt) {
        throw Error(fname_ + ": input '" + in->debugName() + "' has dtype " +
                    std::string(c10::toString(ex.scalar_type())) + ", which neuronc lacks");
      }
      ir::TensorType type{*dt, {}};
      for (int64_t s : ex.sizes()) type.shape.push_back(ir::Dim::constant(s));
      std::string name = in->debugName();
      if (auto dot = name.rfind('.'); dot != std::string::npos) name.resize(dot);  // "x.1" -> x
      Slot s;
      s.kind = Slot::Kind::tensor;
      s.tensor = g_->add_input(ir_name(name), type, ir::InputRole::user_input);
      slots_[in] = s;
    }
  }

  void add_outputs(const Slot& s, const std::string& what) {
    switch (s.kind) {
      case Slot::Kind::tensor:
        g_->add_output(s.tensor);
        return;
      case Slot::Kind::sequence:
        for (const Slot& e : s.items) add_outputs(e, what);
        return;
      case Slot::Kind::constant:
        if (s.value.isTensor()) {
          g_->add_output(materialize(s.value.toTensor(), ir::InputRole::constant, "", nullptr));
          return;
        }
        if (s.value.isTuple() || s.value.isList()) {
          std::vector<c10::IValue> elems =
              s.value.isTuple() ? s.value.toTupleRef().elements().vec() : s.value.toListRef().vec();
          for (const auto& e : elems) {
            Slot c;
            c.value = e;
            add_outputs(c, what);
          }
          return;
        }
        throw Error(fname_ + ": the " + what + " is a " + s.value.tagKind() +
                    ", only tensors (or tuples/lists of them) can be outputs");
      case Slot::Kind::object:
        throw Error(fname_ + ": the " + what + " is a module object, not a tensor");
    }
  }

  // --- nodes ------------------------------------------------------------------------------
  void import_node(const jit::Node* n) {
    const jit::Symbol k = n->kind();
    if (k == c10::prim::Constant) {
      Slot s;
      s.value = jit::toIValue(n->output()).value();
      slots_[n->output()] = s;
    } else if (k == c10::prim::GetAttr) {
      get_attr(n);
    } else if (k == c10::prim::ListConstruct || k == c10::prim::TupleConstruct) {
      construct(n);
    } else if (k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack) {
      unpack(n);
    } else if (k == c10::prim::TupleIndex || k == c10::aten::__getitem__) {
      if (slot(n->input(0)).kind == Slot::Kind::sequence) {
        index(n);
      } else {
        evaluate(n);
      }
    } else if (k.is_aten() || k == c10::prim::NumToTensor) {
      aten_node(n);
    } else if (k.is_prim() && !has_tensor_output(n)) {
      evaluate(n);  // prim::min, prim::max, prim::dtype, ... on constants
    } else {
      fail(n, "is not supported (control flow and other non-aten nodes cannot be compiled)");
    }
  }

  static bool has_tensor_output(const jit::Node* n) {
    for (const jit::Value* o : n->outputs()) {
      if (o->type()->cast<c10::TensorType>()) return true;
      if (auto l = o->type()->cast<c10::ListType>()) {
        if (l->getElementType()->cast<c10::TensorType>()) return true;
      }
    }
    return false;
  }

  void get_attr(const jit::Node* n) {
    Slot& owner = slot(n->input(0));
    if (owner.kind != Slot::Kind::object) fail(n, "GetAttr on a value that is not a module");
    const std::string& name = n->s(c10::attr::name);
    c10::intrusive_ptr<c10::ivalue::Object> obj = owner.value.toObject();
    c10::ClassTypePtr cls = obj->type();
    auto idx = cls->findAttributeSlot(name);
    if (!idx) fail(n, "module has no attribute '" + name + "'");
    c10::IValue v = obj->getSlot(*idx);
    std::string fqn = owner.path + name;
    Slot s;
    if (v.isObject()) {
      s.kind = Slot::Kind::object;
      s.value = v;
      s.path = fqn + ".";
    } else if (v.isTensor()) {
      ir::InputRole role = cls->is_parameter(*idx) ? ir::InputRole::parameter
                           : cls->is_buffer(*idx)  ? ir::InputRole::buffer
                                                   : ir::InputRole::constant;
      s.kind = Slot::Kind::tensor;
      s.tensor = materialize(v.toTensor(), role, fqn, n);
    } else {
      s.value = v;
    }
    slots_[n->output()] = s;
  }

  void construct(const jit::Node* n) {
    bool all_constant = true;
    for (const jit::Value* in : n->inputs()) {
      all_constant = all_constant && slot(in).kind == Slot::Kind::constant;
    }
    if (all_constant) {
      std::vector<c10::IValue> elems;
      for (const jit::Value* in : n->inputs()) elems.push_back(slot(in).value);
      Slot s;
      if (n->kind() == c10::prim::TupleConstruct) {
        s.value = c10::ivalue::Tuple::create(std::move(elems));
      } else {
        c10::impl::GenericList list(
            n->output()->type()->expectRef<c10::ListType>().getElementType());
        for (auto& e : elems) list.push_back(std::move(e));
        s.value = std::move(list);
      }
      slots_[n->output()] = s;
      return;
    }
    Slot s;
    s.kind = Slot::Kind::sequence;
    for (const jit::Value* in : n->inputs()) s.items.push_back(slot(in));
    slots_[n->output()] = s;
  }

  void unpack(const jit::Node* n) {
    Slot& in = slot(n->input(0));
    if (in.kind == Slot::Kind::constant && (in.value.isTuple() || in.value.isList())) {
      std::vector<c10::IValue> elems =
          in.value.isTuple() ? in.value.toTupleRef().elements().vec() : in.value.toListRef().vec();
      if (elems.size() != n->outputs().size()) {
        fail(n, "unpacks " + std::to_string(n->outputs().size()) + " values from a sequence of " +
                    std::to_string(elems.size()));
      }
      for (size_t i = 0; i < elems.size(); ++i) {
        Slot s;
        s.value = elems[i];
        slots_[n->output(i)] = s;
      }
      return;
    }
    if (in.kind != Slot::Kind::sequence || in.items.size() != n->outputs().size()) {
      fail(n, "unpacks " + std::to_string(n->outputs().size()) + " values from a sequence of " +
                  std::to_string(in.items.size()));
    }
    std::vector<Slot> items = in.items;
    for (size_t i = 0; i < items.size(); ++i) slots_[n->output(i)] = items[i];
  }

  void index(const jit::Node* n) {
    std::vector<Slot> items = slot(n->input(0)).items;
    Slot& idx = slot(n->input(1));
    if (idx.kind != Slot::Kind::constant || !idx.value.isInt()) fail(n, "index is not a constant");
    int64_t i = idx.value.toInt();
    int64_t size = static_cast<int64_t>(items.size());
    if (i < 0) i += size;
    if (i < 0 || i >= size) fail(n, "index out of range for " + std::to_string(size) + " items");
    slots_[n->output()] = items[static_cast<size_t>(i)];
  }

  // Runs node `n`'s operator with libtorch on its operands (constants, and meta tensors for
  // run-time tensors); a failure is fail(n, failure(libtorch's message)).
  template <typename Failure>
  jit::Stack run_with_libtorch(const jit::Node* n, const Failure& failure) {
    jit::Stack stack;
    for (const jit::Value* in : n->inputs()) stack.push_back(ivalue_for_eval(slot(in), n));
    try {
      jit::Operation op = n->getOperation();
      op(stack);
    } catch (const std::exception& e) {
      fail(n, failure(torch_message(e)));
    }
    return stack;
  }

  // Runs the node with libtorch on constants, with meta tensors standing in for run-time
  // tensors (enough for aten::size, aten::dim and similar); the results are constants.
  void evaluate(const jit::Node* n) {
    const jit::Stack stack = run_with_libtorch(
        n, [](const std::string& why) { return "cannot be evaluated at compile time: " + why; });
    if (stack.size() != n->outputs().size()) {
      fail(n, "produced " + std::to_string(stack.size()) + " values, expected " +
                  std::to_string(n->outputs().size()));
    }
    for (size_t i = 0; i < stack.size(); ++i) {
      const c10::IValue& v = stack[i];
      if (v.isTensor() && v.toTensor().is_meta()) {
        fail(n, "its value depends on the data of a run-time tensor");
      }
      Slot s;
      s.value = v;
      slots_[n->output(i)] = s;
    }
  }

  c10::IValue ivalue_for_eval(const Slot& s, const jit::Node* n) {
    switch (s.kind) {
      case Slot::Kind::constant:
      case Slot::Kind::object:
        return s.value;
      case Slot::Kind::tensor: {
        const ir::TensorType& t = s.tensor->type();
        std::vector<int64_t> sizes;
        for (const ir::Dim& d : t.shape) sizes.push_back(d.value());
        return at::empty(sizes,
                         at::TensorOptions().dtype(dtype_to_torch(t.dtype)).device(at::kMeta));
      }
      case Slot::Kind::sequence:
        fail(n, "takes a list of run-time tensors where a constant is needed");
    }
    return {};
  }

  // An aten:: node (or prim::NumToTensor): folded when its operands are constants, evaluated
  // when it yields no tensor, else an IR node.
  void aten_node(const jit::Node* n) {
    bool all_constant = true;
    for (const jit::Value* in : n->inputs()) {
      all_constant = all_constant && slot(in).kind == Slot::Kind::constant;
    }
    const c10::FunctionSchema* schema = n->maybeSchema();
    bool mutates = schema != nullptr && schema->is_mutable();
    if ((all_constant && !mutates && !n->isNondeterministic()) || !has_tensor_output(n)) {
      evaluate(n);
      return;
    }
    if (schema == nullptr) fail(n, "has no operator schema");
    emit(n, *schema);
  }

  // TorchScript spellings that torch.export writes differently.
  struct Alias {
    const char* from;
    const char* to;
  };
  static constexpr Alias kAliases[] = {
      // _convolution's extra flags (benchmark, deterministic, cudnn_enabled, allow_tf32) only
      // pick a CUDA/CPU kernel; the first nine arguments are convolution's.
      {"aten._convolution.default", "aten.convolution.default"},
  };

  void emit(const jit::Node* n, const c10::FunctionSchema& schema) {
    std::string base = schema.name();
    if (base.rfind("aten::", 0) == 0) base = "aten." + base.substr(6);
    const std::string& ov = schema.overload_name();
    std::string op = base + "." + (ov.empty() ? "default" : ov);
    for (const Alias& a : kAliases) {
      if (op == a.from) op = a.to;
    }
    const ir::OpInfo* info = ir::OpRegistry::global().find(op);
    if (info != nullptr && has_wrapped_number(n, schema, *info)) {
      // A Python number the trace recorded as a 0-d tensor constant (`x * 0.5`) selects the
      // Scalar overload, as the .pt2 reader does for torch.export's wrapped numbers.
      std::string stem = op.substr(0, op.rfind('.'));
      for (const char* suffix : {".Scalar", ".Tensor_Scalar", ".ScalarOther", ".Scalar_Tensor"}) {
        const ir::OpInfo* alt = ir::OpRegistry::global().find(stem + suffix);
        if (alt != nullptr && accepts_wrapped_numbers(n, schema, *info, *alt)) {
          info = alt;
          op = stem + suffix;
          break;
        }
      }
    }

    std::vector<ir::Value*> operands;
    std::vector<ir::NamedAttr> attrs;
    const auto& ts_args = schema.arguments();
    if (info != nullptr) {
      for (const ir::ArgSpec& spec : info->args) {
        auto k = schema.argumentIndexWithName(spec.name);
        if (!k || static_cast<size_t>(*k) >= n->inputs().size()) {
          if (spec.type == ir::ArgType::tensor) {
            fail(n, "the TorchScript schema '" + c10::toString(schema) + "' lacks argument '" +
                        spec.name + "' of " + info->schema);
          }
          if (spec.type == ir::ArgType::opt_tensor) operands.push_back(nullptr);
          continue;
        }
        const jit::Value* in = n->input(static_cast<size_t>(*k));
        if (spec.is_tensor()) {
          add_tensor_operands(n, in, spec, operands);
        } else {
          attrs.push_back({spec.name, attribute(n, slot(in), spec.type, spec.name)});
        }
      }
    } else {
      // Unregistered: tensors in schema order, everything else under its schema name.
      for (size_t i = 0; i < ts_args.size() && i < n->inputs().size(); ++i) {
        const jit::Value* in = n->input(i);
        const c10::TypePtr& t = ts_args[i].type();
        if (t->cast<c10::TensorType>() ||
            (t->cast<c10::OptionalType>() &&
             t->expectRef<c10::OptionalType>().getElementType()->cast<c10::TensorType>())) {
          Slot& s = slot(in);
          operands.push_back(s.kind == Slot::Kind::constant && s.value.isNone() ? nullptr
                                                                                : tensor_of(in, n));
        } else if (t->cast<c10::ListType>() &&
                   t->expectRef<c10::ListType>().getElementType()->cast<c10::TensorType>()) {
          ir::ArgSpec spec;
          spec.name = ts_args[i].name();
          spec.type = ir::ArgType::tensor_list;
          add_tensor_operands(n, in, spec, operands);
        } else {
          attrs.push_back({ts_args[i].name(), generic_attribute(n, slot(in))});
        }
      }
    }

    std::optional<std::vector<ir::TensorType>> types;
    if (info == nullptr) types = types_by_running(n);
    std::vector<std::string> out_names;
    for (const jit::Value* o : n->outputs()) {
      out_names.push_back(o->hasDebugName() ? ir_name(o->debugName()) : std::string());
    }
    if (n->outputs().size() == 1 && n->output()->type()->cast<c10::ListType>()) out_names.clear();
    ir::Node* node = nullptr;
    try {
      node = g_->append(op, std::move(operands), std::move(attrs), types, out_names);
    } catch (const ir::Error& e) {
      fail(n, std::string("cannot build ") + op + ": " + e.what());
    }
    node->set_location(location_of(n));

    // Results: one tensor per TorchScript output, or a Tensor[] output holding all of them.
    if (n->outputs().size() == 1 && n->output()->type()->cast<c10::ListType>()) {
      Slot s;
      s.kind = Slot::Kind::sequence;
      for (ir::Value* v : node->outputs()) {
        Slot e;
        e.kind = Slot::Kind::tensor;
        e.tensor = v;
        s.items.push_back(e);
      }
      slots_[n->output()] = s;
      return;
    }
    if (node->outputs().size() != n->outputs().size()) {
      fail(n, op + " has " + std::to_string(node->outputs().size()) + " results in the IR but " +
                  std::to_string(n->outputs().size()) + " in TorchScript");
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Slot s;
      s.kind = Slot::Kind::tensor;
      s.tensor = node->output(i);
      slots_[n->output(i)] = s;
    }
  }

  // A Tensor argument fed by an anonymous 0-d constant (not a module attribute).
  bool is_wrapped_number(const jit::Node* n, const c10::FunctionSchema& schema,
                         const std::string& arg) {
    auto k = schema.argumentIndexWithName(arg);
    if (!k || static_cast<size_t>(*k) >= n->inputs().size()) return false;
    const jit::Value* in = n->input(static_cast<size_t>(*k));
    const Slot& s = slot(in);
    return s.kind == Slot::Kind::constant && s.value.isTensor() && s.value.toTensor().dim() == 0 &&
           constant_name(in).empty();
  }

  bool has_wrapped_number(const jit::Node* n, const c10::FunctionSchema& schema,
                          const ir::OpInfo& info) {
    for (const ir::ArgSpec& a : info.args) {
      if (a.type == ir::ArgType::tensor && is_wrapped_number(n, schema, a.name)) return true;
    }
    return false;
  }

  // `alt` has the same arguments as `info`, with Scalar where `info` has a Tensor fed by a
  // wrapped number and the same kind everywhere else.
  bool accepts_wrapped_numbers(const jit::Node* n, const c10::FunctionSchema& schema,
                               const ir::OpInfo& info, const ir::OpInfo& alt) {
    if (alt.args.size() != info.args.size()) return false;
    for (size_t i = 0; i < info.args.size(); ++i) {
      const ir::ArgSpec& a = info.args[i];
      const ir::ArgSpec& b = alt.args[i];
      if (a.name != b.name) return false;
      bool wrapped = a.type == ir::ArgType::tensor && is_wrapped_number(n, schema, a.name);
      if (wrapped ? b.type != ir::ArgType::scalar : b.type != a.type) return false;
    }
    return true;
  }

  void add_tensor_operands(const jit::Node* n, const jit::Value* in, const ir::ArgSpec& spec,
                           std::vector<ir::Value*>& operands) {
    Slot& s = slot(in);
    bool none = s.kind == Slot::Kind::constant && s.value.isNone();
    switch (spec.type) {
      case ir::ArgType::tensor:
        operands.push_back(tensor_of(in, n));
        return;
      case ir::ArgType::opt_tensor:
        operands.push_back(none ? nullptr : tensor_of(in, n));
        return;
      case ir::ArgType::tensor_list:
      case ir::ArgType::opt_tensor_list: {
        if (none) return;
        if (s.kind == Slot::Kind::sequence) {
          for (Slot& e : s.items) {
            if (e.kind == Slot::Kind::tensor) {
              operands.push_back(e.tensor);
            } else if (e.kind == Slot::Kind::constant && e.value.isNone()) {
              operands.push_back(nullptr);
            } else if (e.kind == Slot::Kind::constant && e.value.isTensor()) {
              operands.push_back(materialize(e.value.toTensor(), ir::InputRole::constant, "", n));
            } else {
              fail(n, "argument '" + spec.name + "' holds a non-tensor element");
            }
          }
          return;
        }
        if (s.kind == Slot::Kind::constant && s.value.isList()) {
          for (const c10::IValue& e : s.value.toListRef()) {
            if (e.isNone()) {
              operands.push_back(nullptr);
            } else if (e.isTensor()) {
              operands.push_back(materialize(e.toTensor(), ir::InputRole::constant, "", n));
            } else {
              fail(n, "argument '" + spec.name + "' holds a non-tensor element");
            }
          }
          return;
        }
        fail(n, "argument '" + spec.name + "' is not a list of tensors");
      }
      default:
        fail(n, "argument '" + spec.name + "' is not a tensor argument");
    }
  }

  // The argument as the registry's schema type wants it.
  ir::Attribute attribute(const jit::Node* n, const Slot& s, ir::ArgType type,
                          const std::string& name) {
    if (s.kind != Slot::Kind::constant) {
      fail(n, "argument '" + name + "' is computed from run-time data; it must be a constant");
    }
    const c10::IValue& v = s.value;
    if (v.isNone()) return ir::NoneAttr{};
    auto bad = [&](const char* expected) -> ir::Attribute {
      fail(n, "argument '" + name + "': expected " + expected + ", found " + v.tagKind());
    };
    switch (type) {
      case ir::ArgType::int_:
        if (v.isInt()) return v.toInt();
        return bad("an int");
      case ir::ArgType::ints:
        if (v.isIntList()) return v.toIntVector();
        if (v.isInt()) return std::vector<int64_t>{v.toInt()};
        return bad("an int list");
      case ir::ArgType::float_:
        if (v.isDouble()) return v.toDouble();
        if (v.isInt()) return static_cast<double>(v.toInt());
        return bad("a float");
      case ir::ArgType::floats:
        if (v.isDoubleList()) return v.toDoubleVector();
        return bad("a float list");
      case ir::ArgType::bool_:
        if (v.isBool()) return v.toBool();
        return bad("a bool");
      case ir::ArgType::bools:
        if (v.isBoolList()) {
          std::vector<bool> out;
          for (bool b : v.toBoolList()) out.push_back(b);
          return out;
        }
        return bad("a bool list");
      case ir::ArgType::scalar:
        if (v.isInt()) return v.toInt();
        if (v.isDouble()) return v.toDouble();
        if (v.isBool()) return v.toBool();
        if (v.isTensor() && v.toTensor().dim() == 0) {
          at::Tensor t = v.toTensor();
          if (t.is_floating_point()) return t.item<double>();
          if (t.scalar_type() == at::kBool) return t.item<bool>();
          return t.item<int64_t>();
        }
        return bad("a number");
      case ir::ArgType::str:
        if (v.isString()) return v.toStringRef();
        return bad("a string");
      case ir::ArgType::dtype:
        if (v.isInt()) {
          auto dt = dtype_from_torch(static_cast<at::ScalarType>(v.toInt()));
          if (!dt)
            fail(n, "argument '" + name + "': dtype " + std::to_string(v.toInt()) +
                        " is not supported");
          return *dt;
        }
        return bad("a dtype");
      case ir::ArgType::layout:
        if (v.isInt()) {
          if (v.toInt() == 0) return ir::Layout::strided;
          if (v.toInt() == 1) return ir::Layout::sparse_coo;
          fail(n, "argument '" + name + "': layout " + std::to_string(v.toInt()) +
                      " is not supported");
        }
        return bad("a layout");
      case ir::ArgType::device:
        if (v.isDevice()) {
          at::Device d = v.toDevice();
          return ir::DeviceAttr{c10::DeviceTypeName(d.type(), /*lower_case=*/true),
                                d.has_index() ? d.index() : -1};
        }
        if (v.isString()) {
          at::Device d(v.toStringRef());
          return ir::DeviceAttr{c10::DeviceTypeName(d.type(), true),
                                d.has_index() ? d.index() : -1};
        }
        return bad("a device");
      case ir::ArgType::memory_format:
        if (v.isInt() && v.toInt() >= 0 && v.toInt() <= 3) {
          return static_cast<ir::MemoryFormat>(v.toInt());  // c10 and ir orders agree
        }
        return bad("a memory format");
      default:
        return bad("a non-tensor value");
    }
  }

  // An argument of an unregistered op, by its runtime kind.
  ir::Attribute generic_attribute(const jit::Node* n, const Slot& s) {
    if (s.kind != Slot::Kind::constant) fail(n, "a non-tensor argument is computed at run time");
    const c10::IValue& v = s.value;
    if (v.isNone()) return ir::NoneAttr{};
    if (v.isInt()) return v.toInt();
    if (v.isDouble()) return v.toDouble();
    if (v.isBool()) return v.toBool();
    if (v.isString()) return v.toStringRef();
    if (v.isIntList()) return v.toIntVector();
    if (v.isDoubleList()) return v.toDoubleVector();
    if (v.isDevice()) {
      return ir::DeviceAttr{c10::DeviceTypeName(v.toDevice().type(), true), v.toDevice().index()};
    }
    fail(n, std::string("argument of kind ") + v.tagKind() + " is not supported");
  }

  // Output types of an op the registry does not know: run it on meta tensors.
  std::vector<ir::TensorType> types_by_running(const jit::Node* n) {
    const jit::Stack stack = run_with_libtorch(n, [](const std::string& why) {
      return "is not in neuronc's operator registry and its result types cannot be inferred (" +
             why + ")";
    });
    std::vector<ir::TensorType> out;
    for (const c10::IValue& v : stack) {
      if (!v.isTensor()) fail(n, "is not in the operator registry and returns a non-tensor");
      const at::Tensor& t = v.toTensor();
      auto dt = dtype_from_torch(t.scalar_type());
      if (!dt) fail(n, "returns dtype " + std::string(c10::toString(t.scalar_type())));
      ir::TensorType type{*dt, {}};
      for (int64_t s : t.sizes()) type.shape.push_back(ir::Dim::constant(s));
      out.push_back(std::move(type));
    }
    return out;
  }

  std::string fname_;
  jit::Module module_;
  std::vector<at::Tensor> examples_;
  std::unique_ptr<ir::Graph> g_;
  std::unordered_map<const jit::Value*, Slot> slots_;
  std::map<std::pair<const void*, std::string>, ir::Value*> materialized_;
  std::unordered_map<const void*, ir::Value*> by_impl_;
  size_t lifted_ = 0;
};

// Sizes and dtypes of the example inputs torch.jit.trace stored (the tensor data is not saved:
// the storages are zero-byte records, so only the metadata is used).
std::vector<at::Tensor> read_traced_inputs(const std::shared_ptr<MappedFile>& file,
                                           const std::string& fname) {
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<MappedReadAdapter>(file));
  if (!reader.hasRecord("traced_inputs.pkl")) {
    throw Error(fname +
                ": has no traced_inputs.pkl, so the input shapes are unknown (the archive was "
                "made by torch.jit.script, or by torch.jit.trace before PyTorch 2.0); export the "
                "model with torch.export.save to a .pt2 file");
  }
  c10::IValue iv = jit::readArchiveAndTensors("traced_inputs", "", "traced_inputs/", c10::nullopt,
                                              c10::nullopt, at::Device(at::kCPU), reader);
  if (!iv.isGenericDict()) {
    throw Error(fname + ": traced_inputs.pkl: expected a dict, found " + iv.tagKind());
  }
  c10::IValue forward;
  for (const auto& kv : iv.toGenericDict()) {
    if (kv.key().isString() && kv.key().toStringRef() == "forward") forward = kv.value();
  }
  if (!forward.isList()) {
    throw Error(fname + ": traced_inputs.pkl has no list of inputs for 'forward'");
  }
  std::vector<at::Tensor> out;
  for (const c10::IValue& e : forward.toListRef()) {
    if (!e.isTensor()) {
      throw Error(fname + ": traced_inputs.pkl: forward input " + std::to_string(out.size()) +
                  " is a " + e.tagKind() + "; only tensor inputs are supported");
    }
    out.push_back(e.toTensor());
  }
  return out;
}

// The archive's serialized code (`code/...py`), read with libtorch's own reader: torch.jit.save
// deflates these records, which frontend's zip reader does not inflate.
std::vector<CodeFile> code_files(const std::shared_ptr<MappedFile>& file) {
  std::vector<CodeFile> out;
  try {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<MappedReadAdapter>(file));
    for (const std::string& name : reader.getAllRecords()) {
      if (!name.starts_with("code/") || !name.ends_with(".py")) continue;
      auto [data, size] = reader.getRecord(name);
      out.push_back({name, std::string(static_cast<const char*>(data.get()), size)});
    }
  } catch (const std::exception&) {
    // An archive libtorch cannot even list: the caller reports libtorch's own load error.
  }
  return out;
}

}  // namespace

}  // namespace neuronc::frontend

extern "C" int neuronc_torchscript_plugin_abi() {
  return neuronc::frontend::kTorchScriptPluginAbi;
}

extern "C" bool neuronc_read_torchscript(const std::shared_ptr<neuronc::frontend::MappedFile>& file,
                                         neuronc::frontend::LoadedProgram& out,
                                         neuronc::frontend::TorchScriptUnknownOp& unknown) {
  using namespace neuronc::frontend;
  const std::string fname = file->path();
  jit::Module module;
  try {
    module = jit::load(std::make_shared<MappedReadAdapter>(file), at::Device(at::kCPU));
  } catch (const std::exception& e) {
    std::string m = torch_message(e);
    const std::string unknown_op = "Unknown builtin op: ";
    if (auto p = m.find(unknown_op); p != std::string::npos) {
      std::string op = m.substr(p + unknown_op.size());
      unknown.op = op.substr(0, op.find_first_of(".\n "));
      unknown.code = code_files(file);
      return false;
    }
    throw Error(fname + ": libtorch cannot load this TorchScript archive: " + m);
  }

  try {
    std::vector<at::Tensor> examples = read_traced_inputs(file, fname);
    module.eval();
    jit::Module frozen = jit::freeze_module(module, {}, /*freezeInterfaces=*/true,
                                            /*preserveParameters=*/true);
    std::shared_ptr<jit::Graph> graph = frozen.get_method("forward").graph()->copy();
    jit::Inline(*graph);
    Importer importer(fname, frozen, std::move(examples));
    out.graph = importer.run(*graph);
    out.torch_version = "unknown (TorchScript)";
    out.file = file;
    return true;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fname + ": " + torch_message(e));
  }
}
