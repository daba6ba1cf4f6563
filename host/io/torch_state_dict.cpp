// torch.save's zip format read with a restricted unpickler of our own (see the header): LibTorch's
// zip reader (caffe2::serialize::PyTorchStreamReader) gives data.pkl and the storages, and the
// unpickler below knows only what a state_dict's pickle holds: OrderedDict, tensors rebuilt by
// torch._utils._rebuild_tensor_v2 from persistent storage ids, tuples, strings, numbers. Any other
// global is an error, so nothing from the file is ever called. (LibTorch's own torch::pickle_load
// turns a top-level OrderedDict into None, so it cannot read a state_dict.)
#include "host/io/torch_state_dict.hpp"

#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <variant>

#include "host/util/error.hpp"

namespace lrhost::io {
namespace {

// Python's `torch.load` then `torch.save` with the default zip format (PyTorch >= 1.6) rewrites a
// legacy file; the same for safetensors, which lrhost reads as well.
const char* kConvertHint =
    "convert it once where Python has torch: python -c \"import torch; "
    "torch.save(torch.load('OLD.pth', weights_only=True), 'NEW.pth')\" (zip format), or save the state_dict "
    "as .safetensors (safetensors.torch.save_file)";

struct Value;
using Ref = std::shared_ptr<Value>;
struct Global {
  std::string module, name;
};
struct Mark {};
struct Dict {
  std::vector<std::pair<Ref, Ref>> items;
};
struct Tuple {
  std::vector<Ref> items;
};
struct Storage {
  torch::Tensor bytes;  // 1-D, of the storage's dtype
};
struct Value {
  std::variant<std::monostate, bool, int64_t, double, std::string, Global, Tuple, Dict, Storage, torch::Tensor> v;
};

template <class T>
Ref make(T value) {
  return std::make_shared<Value>(Value{std::move(value)});
}

// torch.<Type>Storage -> dtype, for the storage types a state_dict uses.
torch::ScalarType storage_dtype(const std::string& name) {
  static const std::map<std::string, torch::ScalarType> types = {
      {"FloatStorage", torch::kFloat32},     {"DoubleStorage", torch::kFloat64}, {"HalfStorage", torch::kFloat16},
      {"BFloat16Storage", torch::kBFloat16}, {"LongStorage", torch::kInt64},     {"IntStorage", torch::kInt32},
      {"ShortStorage", torch::kInt16},       {"CharStorage", torch::kInt8},      {"ByteStorage", torch::kUInt8},
      {"BoolStorage", torch::kBool}};
  auto it = types.find(name);
  if (it == types.end()) throw util::DataError("unsupported storage type torch." + name);
  return it->second;
}

class StateDictUnpickler {
 public:
  StateDictUnpickler(const std::string& pickle, caffe2::serialize::PyTorchStreamReader& archive)
      : data_(pickle), archive_(archive) {}

  Ref run() {
    for (;;) {
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80:
          byte();
          break;  // PROTO n
        case '(':
          marks_.push_back(stack_.size());
          break;
        case '.':
          return pop();  // STOP
        case 'N':
          push(make(std::monostate{}));
          break;
        case 0x88:
          push(make(true));
          break;
        case 0x89:
          push(make(false));
          break;
        case 'K':
          push(make<int64_t>(static_cast<unsigned char>(byte())));
          break;
        case 'M':
          push(make<int64_t>(little<uint16_t>()));
          break;
        case 'J':
          push(make<int64_t>(little<int32_t>()));
          break;
        case 0x8a:
          push(make<int64_t>(long1()));
          break;
        case 'G':
          push(make(binfloat()));
          break;
        case 'X':
          push(make(bytes(little<uint32_t>())));
          break;
        case 0x8c:
          push(make(bytes(static_cast<unsigned char>(byte()))));
          break;  // SHORT_BINUNICODE
        case 'c': {
          std::string module = line(), name = line();
          push(make(Global{module, name}));
          break;
        }
        case 'q':
          memo_[static_cast<unsigned char>(byte())] = top();
          break;
        case 'r':
          memo_[little<uint32_t>()] = top();
          break;
        case 'h':
          push(memo(static_cast<unsigned char>(byte())));
          break;
        case 'j':
          push(memo(little<uint32_t>()));
          break;
        case ')':
          push(make(Tuple{}));
          break;
        case 0x85:
          push(make(Tuple{take(1)}));
          break;
        case 0x86:
          push(make(Tuple{take(2)}));
          break;
        case 0x87:
          push(make(Tuple{take(3)}));
          break;
        case 't':
          push(make(Tuple{take(stack_.size() - pop_mark())}));
          break;
        case '}':
          push(make(Dict{}));
          break;
        case 's':
          set_items(2);
          break;
        case 'u':
          set_items(stack_.size() - pop_mark());
          break;
        case 'Q':
          push(persistent_load(pop()));
          break;
        case 'R': {
          auto args = pop();
          auto callable = pop();
          push(reduce(*callable, *args));
          break;
        }
        case 'b': {  // BUILD: an OrderedDict's instance attributes (a state_dict's _metadata)
          pop();
          if (!std::holds_alternative<Dict>(top()->v)) fail("BUILD on something other than an OrderedDict");
          break;
        }
        default:
          fail("unsupported pickle opcode 0x" + hex(op));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw util::DataError("data.pkl at byte " + std::to_string(at_) + ": " + what +
                          " (lrhost reads state_dicts of tensors only)");
  }
  static std::string hex(unsigned value) {
    const char* digits = "0123456789abcdef";
    return std::string{digits[(value >> 4) & 15], digits[value & 15]};
  }
  char byte() {
    if (at_ >= data_.size()) fail("truncated pickle");
    return data_[at_++];
  }
  std::string bytes(std::size_t n) {
    if (n > data_.size() - at_) fail("truncated pickle");
    std::string text = data_.substr(at_, n);
    at_ += n;
    return text;
  }
  template <class T>
  T little() {
    auto raw = bytes(sizeof(T));
    T value;
    std::memcpy(&value, raw.data(), sizeof(T));  // x86/ARM hosts are little-endian, as pickle is
    return value;
  }
  int64_t long1() {
    const auto n = static_cast<unsigned char>(byte());
    if (n > 8) fail("integer of " + std::to_string(n) + " bytes");
    auto raw = bytes(n);
    uint64_t value = 0;
    for (std::size_t i = 0; i < n; ++i) value |= static_cast<uint64_t>(static_cast<unsigned char>(raw[i])) << (8 * i);
    if (n > 0 && n < 8 && (raw[n - 1] & 0x80)) value |= ~uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<int64_t>(value);
  }
  double binfloat() {
    auto raw = bytes(8);
    uint64_t bits = 0;
    for (char c : raw) bits = (bits << 8) | static_cast<unsigned char>(c);  // big-endian
    double value;
    std::memcpy(&value, &bits, 8);
    return value;
  }
  std::string line() {
    auto end = data_.find('\n', at_);
    if (end == std::string::npos) fail("truncated pickle");
    std::string text = data_.substr(at_, end - at_);
    at_ = end + 1;
    return text;
  }
  void push(Ref value) { stack_.push_back(std::move(value)); }
  Ref top() const {
    if (stack_.empty()) fail("empty stack");
    return stack_.back();
  }
  Ref pop() {
    auto value = top();
    stack_.pop_back();
    return value;
  }
  Ref memo(uint32_t key) const {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("unknown memo entry " + std::to_string(key));
    return it->second;
  }
  std::size_t pop_mark() {
    if (marks_.empty() || marks_.back() > stack_.size()) fail("no MARK");
    auto mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  std::vector<Ref> take(std::size_t n) {
    if (n > stack_.size()) fail("stack underflow");
    std::vector<Ref> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return items;
  }
  void set_items(std::size_t n) {
    if (n % 2 != 0) fail("odd number of dict entries");
    auto items = take(n);
    auto* dict = std::get_if<Dict>(&top()->v);
    if (!dict) fail("SETITEM on something other than a dict");
    for (std::size_t i = 0; i < items.size(); i += 2) dict->items.emplace_back(items[i], items[i + 1]);
  }
  static const Tuple& tuple(const Value& value, const char* what, std::size_t min_size) {
    const auto* t = std::get_if<Tuple>(&value.v);
    if (!t || t->items.size() < min_size) throw util::DataError(std::string("malformed ") + what);
    return *t;
  }
  static int64_t integer(const Ref& value, const char* what) {
    const auto* i = std::get_if<int64_t>(&value->v);
    if (!i) throw util::DataError(std::string("malformed ") + what + " (expected an integer)");
    return *i;
  }
  static std::vector<int64_t> integers(const Ref& value, const char* what) {
    std::vector<int64_t> out;
    for (const auto& item : tuple(*value, what, 0).items) out.push_back(integer(item, what));
    return out;
  }

  // ('storage', torch.<Type>Storage, key, location, numel): the raw bytes of record data/<key>.
  Ref persistent_load(const Ref& id) {
    const auto& t = tuple(*id, "persistent id", 5);
    const auto* kind = std::get_if<std::string>(&t.items[0]->v);
    const auto* type = std::get_if<Global>(&t.items[1]->v);
    const auto* key = std::get_if<std::string>(&t.items[2]->v);
    if (!kind || *kind != "storage" || !type || type->module != "torch" || !key) fail("unsupported persistent id");
    const auto dtype = storage_dtype(type->name);
    const int64_t numel = integer(t.items[4], "storage size");
    auto storage = torch::empty({numel}, torch::TensorOptions().dtype(dtype));
    const auto needed = static_cast<std::size_t>(numel) * storage.element_size();
    if (numel > 0) {
      const std::string record = "data/" + *key;
      if (!archive_.hasRecord(record)) fail("no storage record " + record);
      const auto size = archive_.getRecord(record, storage.data_ptr(), needed);
      if (size != needed)
        fail(record + " holds " + std::to_string(size) + " bytes, " + std::to_string(needed) + " expected");
    }
    return make(Storage{storage});
  }

  Ref reduce(const Value& callable, const Value& args) {
    const auto* global = std::get_if<Global>(&callable.v);
    if (!global) fail("REDUCE of a non-global");
    if (global->module == "collections" && global->name == "OrderedDict") return make(Dict{});
    // LibTorch's own pickler (torch::pickle_save) tags typed containers: (value, type string).
    if (global->module == "torch.jit._pickle" && global->name == "restore_type_tag")
      return tuple(args, "restore_type_tag arguments", 1).items[0];
    if (global->module == "torch._utils" && global->name == "_rebuild_tensor_v2") {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
      const auto& t = tuple(args, "_rebuild_tensor_v2 arguments", 4);
      const auto* storage = std::get_if<Storage>(&t.items[0]->v);
      if (!storage) fail("_rebuild_tensor_v2 without a storage");
      const auto offset = integer(t.items[1], "storage offset");
      const auto sizes = integers(t.items[2], "tensor size"), strides = integers(t.items[3], "tensor stride");
      if (sizes.size() != strides.size()) fail("tensor size and stride differ in length");
      int64_t last = offset;  // the largest element index the view reaches
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] < 0 || strides[i] < 0) fail("negative tensor size or stride");
        if (sizes[i] == 0) last = -1;
        if (last >= 0) last += (sizes[i] - 1) * strides[i];
      }
      if (offset < 0 || last >= storage->bytes.numel()) fail("tensor view outside its storage");
      return make(storage->bytes.as_strided(sizes, strides, offset).clone());
    }
    fail("unsupported global " + global->module + "." + global->name);
  }

  const std::string& data_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  std::size_t at_ = 0;
  std::vector<Ref> stack_;
  std::vector<std::size_t> marks_;
  std::map<uint32_t, Ref> memo_;
};

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> read_torch_state_dict(const std::filesystem::path& file) {
  char magic[4] = {};
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw util::IoError("cannot open '" + file.string() + "'");
    in.read(magic, 4);
  }
  // A zip archive starts with a local file header "PK\3\4"; the legacy format is a bare pickle
  // (protocol 2: 0x80 0x02) of torch's magic number.
  if (!(magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4))
    throw util::DataError(file.string() + (static_cast<unsigned char>(magic[0]) == 0x80
                                               ? ": torch.save's legacy (pre-PyTorch-1.6, non-zip) format, which "
                                                 "lrhost does not read"
                                               : ": not a torch.save file (no zip archive)"),
                          kConvertHint);
  try {
    caffe2::serialize::PyTorchStreamReader archive(file.string());
    if (archive.hasRecord("byteorder")) {
      auto [order, size] = archive.getRecord("byteorder");
      if (std::string(static_cast<const char*>(order.get()), size) != "little")
        throw util::DataError(file.string() + ": big-endian tensors, which lrhost does not read", kConvertHint);
    }
    auto [pickle_data, pickle_size] = archive.getRecord("data.pkl");
    const std::string pickle(static_cast<const char*>(pickle_data.get()), pickle_size);
    auto root = StateDictUnpickler(pickle, archive).run();
    const auto* dict = std::get_if<Dict>(&root->v);
    if (!dict) throw util::DataError(file.string() + ": expected a state_dict (a dict of name -> tensor)");
    std::vector<std::pair<std::string, torch::Tensor>> entries;
    for (const auto& [key, value] : dict->items) {
      const auto* name = std::get_if<std::string>(&key->v);
      const auto* tensor = std::get_if<torch::Tensor>(&value->v);
      if (!name || !tensor)
        throw util::DataError(file.string() +
                              ": expected a state_dict (a dict of name -> tensor), found another entry");
      entries.emplace_back(*name, *tensor);
    }
    return entries;
  } catch (const util::DataError& error) {
    const std::string what = error.what();
    if (what.rfind(file.string(), 0) == 0) throw;
    throw util::DataError(file.string() + ": " + what, kConvertHint);
  } catch (const c10::Error& error) {
    throw util::DataError(file.string() + ": unreadable torch.save archive: " + error.what_without_backtrace(),
                          kConvertHint);
  }
}

}  // namespace lrhost::io
