// Pickle interpreter for torch.save data (see pickle_reader.h). Opcode semantics follow
// CPython's Lib/pickle.py and Lib/pickletools.py; the allowed callables follow
// torch/_utils.py and torch/serialization.py (PT2_FORMAT.md §5.2).
#include "frontend/pickle_reader.h"

#include <bit>
#include <cstring>
#include <unordered_map>

#include "frontend/error.h"

namespace neuronc::frontend {

const char* py_kind_name(PyKind k) {
  switch (k) {
    case PyKind::none:
      return "None";
    case PyKind::boolean:
      return "bool";
    case PyKind::integer:
      return "int";
    case PyKind::floating:
      return "float";
    case PyKind::string:
      return "str";
    case PyKind::bytes:
      return "bytes";
    case PyKind::tuple:
      return "tuple";
    case PyKind::list:
      return "list";
    case PyKind::dict:
      return "dict";
    case PyKind::set:
      return "set";
    case PyKind::global:
      return "global";
    case PyKind::storage:
      return "storage";
    case PyKind::tensor:
      return "tensor";
    case PyKind::device:
      return "device";
  }
  return "?";
}

namespace {

struct StorageClass {
  const char* name;
  size_t element_size;
  std::optional<ir::DType> dtype;
  const char* dtype_name;
};

// torch/storage.py legacy typed storages, plus UntypedStorage (bytes).
const StorageClass kStorageClasses[] = {
    {"FloatStorage", 4, ir::DType::f32, "float32"},
    {"DoubleStorage", 8, ir::DType::f64, "float64"},
    {"HalfStorage", 2, ir::DType::f16, "float16"},
    {"BFloat16Storage", 2, ir::DType::bf16, "bfloat16"},
    {"LongStorage", 8, ir::DType::i64, "int64"},
    {"IntStorage", 4, ir::DType::i32, "int32"},
    {"ShortStorage", 2, ir::DType::i16, "int16"},
    {"CharStorage", 1, ir::DType::i8, "int8"},
    {"ByteStorage", 1, ir::DType::u8, "uint8"},
    {"BoolStorage", 1, ir::DType::boolean, "bool"},
    {"ComplexFloatStorage", 8, std::nullopt, "complex64"},
    {"ComplexDoubleStorage", 16, std::nullopt, "complex128"},
    {"UntypedStorage", 1, std::nullopt, "uint8"},
};

struct DtypeGlobal {
  const char* name;  // attribute of module torch
  size_t element_size;
  std::optional<ir::DType> dtype;
};

// torch.<dtype> objects as _rebuild_tensor_v3 receives them.
const DtypeGlobal kDtypes[] = {
    {"float32", 4, ir::DType::f32},
    {"float", 4, ir::DType::f32},
    {"float64", 8, ir::DType::f64},
    {"double", 8, ir::DType::f64},
    {"float16", 2, ir::DType::f16},
    {"half", 2, ir::DType::f16},
    {"bfloat16", 2, ir::DType::bf16},
    {"int64", 8, ir::DType::i64},
    {"long", 8, ir::DType::i64},
    {"int32", 4, ir::DType::i32},
    {"int", 4, ir::DType::i32},
    {"int16", 2, ir::DType::i16},
    {"short", 2, ir::DType::i16},
    {"int8", 1, ir::DType::i8},
    {"uint8", 1, ir::DType::u8},
    {"bool", 1, ir::DType::boolean},
    {"float8_e4m3fn", 1, ir::DType::f8e4m3fn},
    {"float8_e5m2", 1, ir::DType::f8e5m2},
    {"float8_e4m3fnuz", 1, std::nullopt},
    {"float8_e5m2fnuz", 1, std::nullopt},
    {"float8_e8m0fnu", 1, std::nullopt},
    {"uint16", 2, std::nullopt},
    {"uint32", 4, std::nullopt},
    {"uint64", 8, std::nullopt},
    {"complex32", 4, std::nullopt},
    {"complex64", 8, std::nullopt},
    {"complex128", 16, std::nullopt},
};

const StorageClass* find_storage_class(std::string_view qualified) {
  if (!qualified.starts_with("torch.")) return nullptr;
  std::string_view n = qualified.substr(6);
  for (const auto& s : kStorageClasses) {
    if (n == s.name) return &s;
  }
  return nullptr;
}

const DtypeGlobal* find_dtype(std::string_view qualified) {
  if (!qualified.starts_with("torch.")) return nullptr;
  std::string_view n = qualified.substr(6);
  for (const auto& d : kDtypes) {
    if (n == d.name) return &d;
  }
  return nullptr;
}

// Callables REDUCE may apply, and classes that may be referenced.
bool is_allowed_global(std::string_view q) {
  static const char* kAllowed[] = {
      "torch._utils._rebuild_tensor_v2",
      "torch._utils._rebuild_tensor_v3",
      "torch._utils._rebuild_parameter",
      "torch._utils._rebuild_parameter_with_state",
      "collections.OrderedDict",
      "torch.device",
      "torch.Size",
  };
  for (const char* a : kAllowed) {
    if (q == a) return true;
  }
  return find_storage_class(q) != nullptr || find_dtype(q) != nullptr;
}

}  // namespace

class PickleMachine {
 public:
  PickleMachine(std::span<const std::byte> bytes, const std::string& name,
                const PickleLimits& limits)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), n_(bytes.size()), limits_(limits) {
    doc_.name_ = name;
  }

  PickleDocument run() {
    if (n_ > limits_.max_bytes) {
      fail_at(0, "pickle of " + std::to_string(n_) + " bytes exceeds the limit of " +
                     std::to_string(limits_.max_bytes));
    }
    doc_.objects_.reserve(std::min<size_t>(n_ / 2 + 1, 1 << 16));
    while (true) {
      if (pos_ >= n_) fail_at(pos_, "pickle ends without STOP");
      op_pos_ = pos_;
      uint8_t op = p_[pos_++];
      if (op == '.') break;
      step(op);
      if (stack_.size() > limits_.max_stack) fail("stack deeper than the limit");
    }
    if (stack_.empty()) fail("STOP with an empty stack");
    doc_.root_ = stack_.back();
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& msg) const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "@0x%zx: ", at);
    throw Error(doc_.name_ + buf + msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(op_pos_, msg); }

  // --- reading operands ---
  const uint8_t* take(size_t k, const char* what) {
    if (k > n_ - pos_) {
      fail(std::string(what) + " needs " + std::to_string(k) + " bytes but only " +
           std::to_string(n_ - pos_) + " remain");
    }
    const uint8_t* q = p_ + pos_;
    pos_ += k;
    return q;
  }
  uint64_t le(size_t k, const char* what) {
    const uint8_t* q = take(k, what);
    uint64_t v = 0;
    for (size_t i = 0; i < k; ++i) v |= uint64_t{q[i]} << (8 * i);
    return v;
  }
  std::string line(const char* what) {
    size_t start = pos_;
    while (pos_ < n_ && p_[pos_] != '\n') {
      if (pos_ - start > 256) fail(std::string(what) + " longer than 256 bytes");
      ++pos_;
    }
    if (pos_ >= n_) fail(std::string(what) + " is not terminated by a newline");
    std::string s(reinterpret_cast<const char*>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }

  // --- objects ---
  uint32_t make(PyObject o) {
    doc_.objects_.push_back(std::move(o));
    return static_cast<uint32_t>(doc_.objects_.size() - 1);
  }
  uint32_t make_kind(PyKind k) {
    PyObject o;
    o.kind = k;
    return make(std::move(o));
  }
  PyObject& obj(uint32_t id) { return doc_.objects_[id]; }
  void push(uint32_t id) { stack_.push_back(id); }
  uint32_t pop(const char* opname) {
    if (stack_.size() <= mark_base()) fail(std::string(opname) + ": stack underflow");
    uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  uint32_t top(const char* opname) {
    if (stack_.size() <= mark_base()) fail(std::string(opname) + ": stack underflow");
    return stack_.back();
  }
  size_t mark_base() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<uint32_t> pop_mark(const char* opname) {
    if (marks_.empty()) fail(std::string(opname) + ": no MARK on the stack");
    size_t base = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<ptrdiff_t>(base), stack_.end());
    stack_.resize(base);
    return items;
  }
  uint32_t make_seq(PyKind k, std::vector<uint32_t> items) {
    PyObject o;
    o.kind = k;
    o.items = std::move(items);
    return make(std::move(o));
  }
  uint32_t make_string(PyKind k, const uint8_t* s, size_t len) {
    PyObject o;
    o.kind = k;
    o.str.assign(reinterpret_cast<const char*>(s), len);
    return make(std::move(o));
  }
  uint32_t make_int(int64_t v) {
    PyObject o;
    o.kind = PyKind::integer;
    o.i = v;
    return make(std::move(o));
  }
  std::string kind_of(uint32_t id) { return py_kind_name(obj(id).kind); }

  void expect_kind(uint32_t id, PyKind k, const std::string& what) {
    if (obj(id).kind != k) {
      fail(what + ": expected " + py_kind_name(k) + ", found " + kind_of(id));
    }
  }
  int64_t get_int(uint32_t id, const std::string& what) {
    if (obj(id).kind == PyKind::boolean) return obj(id).b ? 1 : 0;
    expect_kind(id, PyKind::integer, what);
    return obj(id).i;
  }
  std::vector<int64_t> get_int_tuple(uint32_t id, const std::string& what) {
    const PyObject& o = obj(id);
    if (o.kind != PyKind::tuple && o.kind != PyKind::list) {
      fail(what + ": expected tuple of ints, found " + kind_of(id));
    }
    std::vector<int64_t> out;
    for (uint32_t it : std::vector<uint32_t>(o.items)) out.push_back(get_int(it, what));
    return out;
  }

  void memo_put(uint64_t idx) {
    uint32_t v = top("PUT");
    if (memo_.size() >= (size_t{1} << 24) && memo_.count(idx) == 0) fail("memo is too large");
    memo_[idx] = v;
  }
  void memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) fail("GET of memo index " + std::to_string(idx) + " never stored");
    push(it->second);
  }

  void set_items(uint32_t dict, const std::vector<uint32_t>& kv, const char* opname) {
    if (obj(dict).kind != PyKind::dict) {
      fail(std::string(opname) + " on " + kind_of(dict) + ", expected dict");
    }
    if (kv.size() % 2 != 0) fail(std::string(opname) + ": odd number of keys and values");
    for (size_t i = 0; i < kv.size(); i += 2) {
      // Replace an existing string/int key, as Python would; other keys are appended.
      bool replaced = false;
      const PyObject& k = obj(kv[i]);
      if (k.kind == PyKind::string || k.kind == PyKind::integer) {
        auto& items = obj(dict).items;
        for (size_t j = 0; j < items.size(); j += 2) {
          const PyObject& e = obj(items[j]);
          if (e.kind == k.kind && e.str == k.str && e.i == k.i) {
            items[j + 1] = kv[i + 1];
            replaced = true;
            break;
          }
        }
      }
      if (!replaced) {
        obj(dict).items.push_back(kv[i]);
        obj(dict).items.push_back(kv[i + 1]);
      }
    }
  }

  uint32_t make_global(std::string module, std::string name) {
    std::string q = module + "." + name;
    if (!is_allowed_global(q)) {
      fail("GLOBAL '" + module + " " + name +
           "' is not allowed (only tensor rebuild functions, storage classes, dtypes, "
           "OrderedDict, torch.device and torch.Size)");
    }
    PyObject o;
    o.kind = PyKind::global;
    o.str = std::move(q);
    return make(std::move(o));
  }

  // BINPERSID: ("storage", <storage class>, key, location, numel).
  uint32_t persistent_load(uint32_t pid) {
    const PyObject& t = obj(pid);
    if (t.kind != PyKind::tuple || t.items.size() != 5) {
      fail("persistent id must be a 5-tuple ('storage', class, key, location, numel), found " +
           kind_of(pid) + (t.kind == PyKind::tuple ? " of " + std::to_string(t.items.size()) : ""));
    }
    std::vector<uint32_t> it = t.items;
    if (obj(it[0]).kind != PyKind::string || obj(it[0]).str != "storage") {
      fail("persistent id tag must be 'storage'");
    }
    if (obj(it[1]).kind != PyKind::global) {
      fail("persistent id storage class: expected a storage GLOBAL, found " + kind_of(it[1]));
    }
    const StorageClass* sc = find_storage_class(obj(it[1]).str);
    if (sc == nullptr) fail("persistent id class '" + obj(it[1]).str + "' is not a storage class");
    if (obj(it[2]).kind != PyKind::string)
      fail("persistent id key: expected str, found " + kind_of(it[2]));
    if (obj(it[3]).kind != PyKind::string) {
      fail("persistent id location: expected str, found " + kind_of(it[3]));
    }
    int64_t numel = get_int(it[4], "persistent id numel");
    if (numel < 0) fail("persistent id numel is negative (" + std::to_string(numel) + ")");
    TensorRecord r;
    r.storage_key = obj(it[2]).str;
    r.storage_class = sc->name;
    r.location = obj(it[3]).str;
    r.storage_numel = numel;
    r.storage_element_size = sc->element_size;
    r.dtype = sc->dtype;
    r.dtype_name = sc->dtype_name;
    doc_.tensors_.push_back(std::move(r));
    PyObject o;
    o.kind = PyKind::storage;
    o.ref = static_cast<uint32_t>(doc_.tensors_.size() - 1);
    return make(std::move(o));
  }

  uint32_t rebuild_tensor(const std::vector<uint32_t>& a, bool v3) {
    const char* fn = v3 ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2";
    size_t need = v3 ? 7 : 6;
    if (a.size() != need && a.size() != need + 1) {
      fail(std::string(fn) + " takes " + std::to_string(need) + " or " + std::to_string(need + 1) +
           " arguments, found " + std::to_string(a.size()));
    }
    expect_kind(a[0], PyKind::storage, std::string(fn) + " storage");
    TensorRecord r = doc_.tensors_[obj(a[0]).ref];
    r.storage_offset = get_int(a[1], std::string(fn) + " storage_offset");
    r.sizes = get_int_tuple(a[2], std::string(fn) + " size");
    r.strides = get_int_tuple(a[3], std::string(fn) + " stride");
    r.requires_grad = get_int(a[4], std::string(fn) + " requires_grad") != 0;
    if (r.sizes.size() != r.strides.size()) {
      fail(std::string(fn) + ": size has " + std::to_string(r.sizes.size()) +
           " dims but stride has " + std::to_string(r.strides.size()));
    }
    if (v3) {
      if (obj(a[6]).kind != PyKind::global) {
        fail("_rebuild_tensor_v3 dtype: expected a torch dtype GLOBAL, found " + kind_of(a[6]));
      }
      const DtypeGlobal* d = find_dtype(obj(a[6]).str);
      if (d == nullptr) fail("_rebuild_tensor_v3 dtype '" + obj(a[6]).str + "' is not a dtype");
      r.dtype = d->dtype;
      r.dtype_name = obj(a[6]).str.substr(6);
    }
    doc_.tensors_.push_back(std::move(r));
    PyObject o;
    o.kind = PyKind::tensor;
    o.ref = static_cast<uint32_t>(doc_.tensors_.size() - 1);
    return make(std::move(o));
  }

  uint32_t call(uint32_t callable, uint32_t args_id) {
    if (obj(callable).kind != PyKind::global) {
      fail("REDUCE on a " + kind_of(callable) + ", expected an allowed GLOBAL");
    }
    if (obj(args_id).kind != PyKind::tuple) {
      fail("REDUCE arguments: expected tuple, found " + kind_of(args_id));
    }
    std::string q = obj(callable).str;
    std::vector<uint32_t> a = obj(args_id).items;
    if (q == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a, false);
    if (q == "torch._utils._rebuild_tensor_v3") return rebuild_tensor(a, true);
    if (q == "torch._utils._rebuild_parameter" ||
        q == "torch._utils._rebuild_parameter_with_state") {
      if (a.size() < 3) fail(q + " takes at least 3 arguments, found " + std::to_string(a.size()));
      expect_kind(a[0], PyKind::tensor, q + " data");
      TensorRecord r = doc_.tensors_[obj(a[0]).ref];
      r.is_parameter = true;
      r.requires_grad = get_int(a[1], q + " requires_grad") != 0;
      doc_.tensors_.push_back(std::move(r));
      PyObject o;
      o.kind = PyKind::tensor;
      o.ref = static_cast<uint32_t>(doc_.tensors_.size() - 1);
      return make(std::move(o));
    }
    if (q == "collections.OrderedDict") {
      uint32_t d = make_kind(PyKind::dict);
      if (a.size() == 1) {  // OrderedDict(list of pairs)
        const PyObject& src = obj(a[0]);
        std::vector<uint32_t> kv;
        if (src.kind == PyKind::dict) {
          kv = src.items;
        } else if (src.kind == PyKind::list || src.kind == PyKind::tuple) {
          for (uint32_t pr : std::vector<uint32_t>(src.items)) {
            if (obj(pr).kind != PyKind::tuple || obj(pr).items.size() != 2) {
              fail("OrderedDict argument: expected (key, value) pairs");
            }
            kv.push_back(obj(pr).items[0]);
            kv.push_back(obj(pr).items[1]);
          }
        } else {
          fail("OrderedDict argument: expected dict or list, found " + kind_of(a[0]));
        }
        set_items(d, kv, "OrderedDict");
      } else if (!a.empty()) {
        fail("OrderedDict takes 0 or 1 arguments, found " + std::to_string(a.size()));
      }
      return d;
    }
    if (q == "torch.device") {
      if (a.empty() || a.size() > 2 || obj(a[0]).kind != PyKind::string) {
        fail("torch.device: expected ('type'[, index])");
      }
      PyObject o;
      o.kind = PyKind::device;
      o.str = obj(a[0]).str;
      if (a.size() == 2) o.str += ":" + std::to_string(get_int(a[1], "torch.device index"));
      return make(std::move(o));
    }
    if (q == "torch.Size") {
      if (a.size() != 1) fail("torch.Size takes 1 argument, found " + std::to_string(a.size()));
      get_int_tuple(a[0], "torch.Size");
      return make_seq(PyKind::tuple, obj(a[0]).items);
    }
    fail("REDUCE of '" + q + "' is not allowed (it may only be referenced)");
  }

  // Framing, marks, the stack and the memo: PROTO, FRAME, MARK, POP, POP_MARK, DUP, the PUT
  // and GET forms.
  bool step_stack(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        uint64_t v = le(1, "PROTO");
        if (v > 5) fail("pickle protocol " + std::to_string(v) + " is not supported (max 5)");
        return true;
      }
      case 0x95:
        le(8, "FRAME");
        return true;  // FRAME: framing is irrelevant in memory
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case '0':
        pop("POP");
        return true;
      case '1':
        pop_mark("POP_MARK");
        return true;
      case '2':
        push(top("DUP"));
        return true;
      case 'q':
        memo_put(le(1, "BINPUT"));
        return true;
      case 'r':
        memo_put(le(4, "LONG_BINPUT"));
        return true;
      case 0x94:
        memo_put(memo_.size());
        return true;
      case 'h':
        memo_get(le(1, "BINGET"));
        return true;
      case 'j':
        memo_get(le(4, "LONG_BINGET"));
        return true;
      default:
        return false;
    }
  }

  // Literal values: None, booleans, integers, floats, strings and bytes.
  bool step_literal(uint8_t op) {
    switch (op) {
      case 'N':
        push(make_kind(PyKind::none));
        return true;
      case 0x88:
      case 0x89: {
        PyObject o;
        o.kind = PyKind::boolean;
        o.b = op == 0x88;
        push(make(std::move(o)));
        return true;
      }
      case 'K':
        push(make_int(static_cast<int64_t>(le(1, "BININT1"))));
        return true;
      case 'M':
        push(make_int(static_cast<int64_t>(le(2, "BININT2"))));
        return true;
      case 'J':
        push(make_int(static_cast<int32_t>(static_cast<uint32_t>(le(4, "BININT")))));
        return true;
      case 0x8a:
      case 0x8b: {  // LONG1 / LONG4: little-endian two's complement
        uint64_t len = op == 0x8a ? le(1, "LONG1") : le(4, "LONG4");
        if (len > 8) fail("integer of " + std::to_string(len) + " bytes does not fit in int64");
        const uint8_t* q = take(len, "LONG");
        uint64_t v = 0;
        for (size_t i = 0; i < len; ++i) v |= uint64_t{q[i]} << (8 * i);
        if (len > 0 && len < 8 && (q[len - 1] & 0x80)) v |= ~uint64_t{0} << (8 * len);
        push(make_int(static_cast<int64_t>(v)));
        return true;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const uint8_t* q = take(8, "BINFLOAT");
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | q[i];
        PyObject o;
        o.kind = PyKind::floating;
        o.f = std::bit_cast<double>(bits);
        push(make(std::move(o)));
        return true;
      }
      case 'X':
      case 0x8c:
      case 0x8d: {  // BINUNICODE / SHORT_BINUNICODE / BINUNICODE8
        uint64_t len = le(op == 'X' ? 4 : op == 0x8c ? 1 : 8, "string length");
        if (len > n_ - pos_) {
          fail("string of " + std::to_string(len) + " bytes but only " + std::to_string(n_ - pos_) +
               " remain");
        }
        push(make_string(PyKind::string, take(len, "string"), len));
        return true;
      }
      case 'B':
      case 'C':
      case 0x8e: {  // BINBYTES / SHORT_BINBYTES / BINBYTES8
        uint64_t len = le(op == 'B' ? 4 : op == 'C' ? 1 : 8, "bytes length");
        if (len > n_ - pos_) {
          fail("bytes of " + std::to_string(len) + " but only " + std::to_string(n_ - pos_) +
               " remain");
        }
        push(make_string(PyKind::bytes, take(len, "bytes"), len));
        return true;
      }
      default:
        return false;
    }
  }

  // Tuples, lists, dicts and sets, and the opcodes that fill them.
  bool step_container(uint8_t op) {
    switch (op) {
      case ')':
        push(make_seq(PyKind::tuple, {}));
        return true;
      case 't':
        push(make_seq(PyKind::tuple, pop_mark("TUPLE")));
        return true;
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t k = op - 0x84u;
        if (stack_.size() < mark_base() + k)
          fail("TUPLE" + std::to_string(k) + ": stack underflow");
        std::vector<uint32_t> items(stack_.end() - static_cast<ptrdiff_t>(k), stack_.end());
        stack_.resize(stack_.size() - k);
        push(make_seq(PyKind::tuple, std::move(items)));
        return true;
      }
      case ']':
        push(make_seq(PyKind::list, {}));
        return true;
      case '}':
        push(make_kind(PyKind::dict));
        return true;
      case 0x8f:
        push(make_kind(PyKind::set));
        return true;
      case 'a': {
        uint32_t v = pop("APPEND");
        uint32_t l = top("APPEND");
        if (obj(l).kind != PyKind::list) fail("APPEND on " + kind_of(l) + ", expected list");
        obj(l).items.push_back(v);
        return true;
      }
      case 'e': {
        std::vector<uint32_t> items = pop_mark("APPENDS");
        uint32_t l = top("APPENDS");
        if (obj(l).kind != PyKind::list) fail("APPENDS on " + kind_of(l) + ", expected list");
        obj(l).items.insert(obj(l).items.end(), items.begin(), items.end());
        return true;
      }
      case 0x90: {
        std::vector<uint32_t> items = pop_mark("ADDITEMS");
        uint32_t s = top("ADDITEMS");
        if (obj(s).kind != PyKind::set) fail("ADDITEMS on " + kind_of(s) + ", expected set");
        obj(s).items.insert(obj(s).items.end(), items.begin(), items.end());
        return true;
      }
      case 0x91:
        push(make_seq(PyKind::set, pop_mark("FROZENSET")));
        return true;
      case 's': {
        uint32_t v = pop("SETITEM");
        uint32_t k = pop("SETITEM");
        set_items(top("SETITEM"), {k, v}, "SETITEM");
        return true;
      }
      case 'u': {
        std::vector<uint32_t> kv = pop_mark("SETITEMS");
        set_items(top("SETITEMS"), kv, "SETITEMS");
        return true;
      }
      default:
        return false;
    }
  }

  // Globals, calls (REDUCE, NEWOBJ), BUILD and persistent ids.
  bool step_object(uint8_t op) {
    switch (op) {
      case 'c': {
        std::string module = line("GLOBAL module");
        std::string name = line("GLOBAL name");
        push(make_global(std::move(module), std::move(name)));
        return true;
      }
      case 0x93: {  // STACK_GLOBAL
        uint32_t name = pop("STACK_GLOBAL");
        uint32_t module = pop("STACK_GLOBAL");
        if (obj(name).kind != PyKind::string || obj(module).kind != PyKind::string) {
          fail("STACK_GLOBAL: expected two strings");
        }
        push(make_global(obj(module).str, obj(name).str));
        return true;
      }
      case 'R': {
        uint32_t args = pop("REDUCE");
        uint32_t fn = pop("REDUCE");
        push(call(fn, args));
        return true;
      }
      case 0x81: {  // NEWOBJ cls args: only OrderedDict() in practice
        uint32_t args = pop("NEWOBJ");
        uint32_t cls = pop("NEWOBJ");
        push(call(cls, args));
        return true;
      }
      case 'b': {  // BUILD: state on a dict (OrderedDict._metadata) or a tensor is ignored
        uint32_t state = pop("BUILD");
        uint32_t target = top("BUILD");
        PyKind k = obj(target).kind;
        if (k != PyKind::dict && k != PyKind::tensor) {
          fail("BUILD on " + kind_of(target) + ", expected dict or tensor");
        }
        (void)state;
        return true;
      }
      case 'Q':
        push(persistent_load(pop("BINPERSID")));
        return true;
      default:
        return false;
    }
  }
  // One opcode; each family's step returns whether the opcode is one of its own.
  void step(uint8_t op) {
    if (step_stack(op) || step_literal(op) || step_container(op) || step_object(op)) return;
    char buf[64];
    std::snprintf(buf, sizeof buf, "unknown or unsupported opcode 0x%02x", op);
    fail(buf);
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  PickleLimits limits_;
  PickleDocument doc_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

PickleDocument read_pickle(std::span<const std::byte> bytes, const std::string& display_name,
                           const PickleLimits& limits) {
  PickleMachine m(bytes, display_name, limits);
  return m.run();
}

}  // namespace neuronc::frontend
