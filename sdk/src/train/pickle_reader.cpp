// unpickle_weights (pickle_reader.h): torch.load's weights-only reading,
// in C++. The pickle runs on a stack machine that knows only what
// torch.load(weights_only=True) allows by default for a state dict: dicts,
// OrderedDicts, lists, tuples, plain values, tensors and parameters.
// Anything else (a class, a function) is refused by name, before it could
// be built: a weights file is data, never code.
#include "pickle_reader.h"

#include <bit>
#include <cstring>
#include <unordered_map>
#include <variant>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/util/errors.h"
#include "pickle_opcodes.h"
#include "torch_save_format.h"

namespace dtrain::train::detail {

namespace {

namespace op = pickle;

// The calls a state dict's pickle makes: REDUCE applies one to a tuple.
enum class Callable { kOrderedDict, kRebuildTensor, kRebuildParameter };
using Item = std::variant<c10::IValue, Callable>;

class Unpickler {
 public:
  Unpickler(std::string_view program, const StorageLoader& load_storage)
      : program_(program), load_storage_(load_storage) {}

  c10::IValue run() {
    while (true) {
      const auto opcode = static_cast<op::Opcode>(byte());
      if (opcode == op::kStop) {
        break;
      }
      if (!(plain_value(opcode) || container(opcode) || memo(opcode) || call(opcode))) {
        fail(fmt::format("opcode 0x{:02x}, which no state dict's pickle holds", opcode));
      }
    }
    if (stack_.size() != 1) {
      fail("the pickle leaves " + std::to_string(stack_.size()) + " values, not one");
    }
    return value(pop());
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IOError(fmt::format("{} (data.pkl, byte {})", what, position_));
  }

  std::string_view take(size_t count) {
    if (count > program_.size() - position_) {
      fail("the pickle ends early");
    }
    const std::string_view taken = program_.substr(position_, count);
    position_ += count;
    return taken;
  }
  uint8_t byte() { return static_cast<uint8_t>(take(1)[0]); }
  template <typename T>
  T little_endian() {
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
  }
  std::string line() {
    const size_t end = program_.find('\n', position_);
    if (end == std::string_view::npos) {
      fail("the pickle ends inside a name");
    }
    std::string text(program_.substr(position_, end - position_));
    position_ = end + 1;
    return text;
  }

  void push(Item item) { stack_.push_back(std::move(item)); }
  Item pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) {
      fail("the pickle takes a value from an empty stack");
    }
    Item item = std::move(stack_.back());
    stack_.pop_back();
    return item;
  }
  c10::IValue value(Item item) const {
    if (const auto* held = std::get_if<c10::IValue>(&item)) {
      return std::move(*held);
    }
    fail("a function where a value belongs");
  }
  c10::IValue pop_value() { return value(pop()); }
  std::vector<c10::IValue> pop_to_mark() {
    if (marks_.empty()) {
      fail("the pickle closes a group it never opened");
    }
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<c10::IValue> values;
    for (size_t i = mark; i < stack_.size(); ++i) {
      values.push_back(value(std::move(stack_[i])));
    }
    stack_.resize(mark);
    return values;
  }
  c10::impl::GenericDict top_dict() {
    if (stack_.empty() || !std::holds_alternative<c10::IValue>(stack_.back()) ||
        !std::get<c10::IValue>(stack_.back()).isGenericDict()) {
      fail("the pickle sets items of something that is no dict");
    }
    return std::get<c10::IValue>(stack_.back()).toGenericDict();
  }
  void set_items(c10::impl::GenericDict dict, std::vector<c10::IValue>& pairs) const {
    if (pairs.size() % 2 != 0) {
      fail("a dict's items come as an odd number of values");
    }
    for (size_t i = 0; i < pairs.size(); i += 2) {
      dict.insert_or_assign(std::move(pairs[i]), std::move(pairs[i + 1]));
    }
  }
  c10::impl::GenericList top_list() {
    if (stack_.empty() || !std::holds_alternative<c10::IValue>(stack_.back()) ||
        !std::get<c10::IValue>(stack_.back()).isList()) {
      fail("the pickle appends to something that is no list");
    }
    return std::get<c10::IValue>(stack_.back()).toList();
  }

  bool plain_value(op::Opcode opcode);
  bool container(op::Opcode opcode);
  bool memo(op::Opcode opcode);
  bool call(op::Opcode opcode);
  void push_global(const std::string& module, const std::string& name);
  c10::IValue apply(Callable callable, const c10::IValue& arguments);
  c10::IValue rebuild_tensor(const std::vector<c10::IValue>& arguments);
  c10::IValue storage(const c10::IValue& persistent_id);

  std::string_view program_;
  size_t position_ = 0;
  const StorageLoader& load_storage_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Item> memo_;
};

bool Unpickler::plain_value(op::Opcode opcode) {
  switch (opcode) {
    case op::kProto:
      if (const uint8_t protocol = byte(); protocol < 2 || protocol > 5) {
        fail("pickle protocol " + std::to_string(protocol) + " (torch.save writes 2 to 5)");
      }
      return true;
    case op::kFrame:
      take(8);  // the frame's length: the program is read whole anyway
      return true;
    case op::kNone:
      push(c10::IValue());
      return true;
    case op::kNewTrue:
    case op::kNewFalse:
      push(c10::IValue(opcode == op::kNewTrue));
      return true;
    case op::kBinInt1:
      push(c10::IValue(static_cast<int64_t>(byte())));
      return true;
    case op::kBinInt2:
      push(c10::IValue(static_cast<int64_t>(little_endian<uint16_t>())));
      return true;
    case op::kBinInt:
      push(c10::IValue(static_cast<int64_t>(little_endian<int32_t>())));
      return true;
    case op::kLong1: {
      const uint8_t length = byte();
      if (length > 8) {
        fail("an integer of " + std::to_string(length) + " bytes");
      }
      uint64_t bits = 0;
      const std::string_view digits = take(length);
      for (size_t i = 0; i < length; ++i) {
        bits |= static_cast<uint64_t>(static_cast<uint8_t>(digits[i])) << (8 * i);
      }
      if (length > 0 && length < 8 && (digits[length - 1] & 0x80) != 0) {
        bits |= ~uint64_t{0} << (8 * length);  // sign-extend
      }
      push(c10::IValue(static_cast<int64_t>(bits)));
      return true;
    }
    case op::kBinFloat: {
      const auto big_endian = little_endian<uint64_t>();
      push(c10::IValue(std::bit_cast<double>(__builtin_bswap64(big_endian))));
      return true;
    }
    case op::kShortBinUnicode:
      push(c10::IValue(std::string(take(byte()))));
      return true;
    case op::kBinUnicode:
      push(c10::IValue(std::string(take(little_endian<uint32_t>()))));
      return true;
    case op::kBinUnicode8:
      push(c10::IValue(std::string(take(little_endian<uint64_t>()))));
      return true;
    default:
      return false;
  }
}

bool Unpickler::container(op::Opcode opcode) {
  switch (opcode) {
    case op::kMark:
      marks_.push_back(stack_.size());
      return true;
    case op::kEmptyTuple:
    case op::kTuple:
    case op::kTuple1:
    case op::kTuple2:
    case op::kTuple3: {
      std::vector<c10::IValue> elements;
      if (opcode == op::kTuple) {
        elements = pop_to_mark();
      } else {
        const size_t count = opcode == op::kEmptyTuple ? 0 : opcode - op::kTuple1 + 1;
        elements.resize(count);
        for (size_t i = count; i-- > 0;) {
          elements[i] = pop_value();
        }
      }
      push(c10::IValue(c10::ivalue::Tuple::create(std::move(elements))));
      return true;
    }
    case op::kEmptyList:
    case op::kList: {
      c10::impl::GenericList list(c10::AnyType::get());
      if (opcode == op::kList) {
        for (c10::IValue& element : pop_to_mark()) {
          list.push_back(std::move(element));
        }
      }
      push(c10::IValue(std::move(list)));
      return true;
    }
    case op::kAppend: {
      c10::IValue element = pop_value();
      top_list().push_back(std::move(element));
      return true;
    }
    case op::kAppends: {
      std::vector<c10::IValue> elements = pop_to_mark();
      c10::impl::GenericList list = top_list();
      for (c10::IValue& element : elements) {
        list.push_back(std::move(element));
      }
      return true;
    }
    case op::kEmptyDict:
      push(c10::IValue(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get())));
      return true;
    case op::kDict: {
      std::vector<c10::IValue> pairs = pop_to_mark();
      c10::impl::GenericDict dict(c10::AnyType::get(), c10::AnyType::get());
      set_items(dict, pairs);
      push(c10::IValue(std::move(dict)));
      return true;
    }
    case op::kSetItem:
    case op::kSetItems: {
      std::vector<c10::IValue> pairs;
      if (opcode == op::kSetItems) {
        pairs = pop_to_mark();
      } else {
        c10::IValue item = pop_value();
        pairs = {pop_value(), std::move(item)};
      }
      set_items(top_dict(), pairs);
      return true;
    }
    default:
      return false;
  }
}

bool Unpickler::memo(op::Opcode opcode) {
  switch (opcode) {
    case op::kBinPut:
    case op::kLongBinPut:
    case op::kMemoize: {
      const uint32_t key = opcode == op::kBinPut       ? byte()
                           : opcode == op::kLongBinPut ? little_endian<uint32_t>()
                                                       : static_cast<uint32_t>(memo_.size());
      if (stack_.empty()) {
        fail("the pickle keeps a value from an empty stack");
      }
      memo_[key] = stack_.back();
      return true;
    }
    case op::kBinGet:
    case op::kLongBinGet: {
      const uint32_t key = opcode == op::kBinGet ? byte() : little_endian<uint32_t>();
      const auto kept = memo_.find(key);
      if (kept == memo_.end()) {
        fail("the pickle recalls value " + std::to_string(key) + ", which it never kept");
      }
      push(kept->second);
      return true;
    }
    case op::kPop:
      pop();
      return true;
    case op::kPopMark:
      pop_to_mark();
      return true;
    case op::kDup:
      if (stack_.empty()) {
        fail("the pickle copies a value from an empty stack");
      }
      push(stack_.back());
      return true;
    default:
      return false;
  }
}

bool Unpickler::call(op::Opcode opcode) {
  switch (opcode) {
    case op::kGlobal: {
      std::string module = line();
      push_global(module, line());
      return true;
    }
    case op::kStackGlobal: {
      const c10::IValue name = pop_value();
      const c10::IValue module = pop_value();
      if (!name.isString() || !module.isString()) {
        fail("a global named by something other than text");
      }
      push_global(module.toStringRef(), name.toStringRef());
      return true;
    }
    case op::kReduce: {
      const c10::IValue arguments = pop_value();
      const Item callable = pop();
      if (!std::holds_alternative<Callable>(callable)) {
        fail("the pickle calls a value that is no function");
      }
      push(apply(std::get<Callable>(callable), arguments));
      return true;
    }
    case op::kBuild:
      // The state of what is on the stack: an OrderedDict's attributes
      // (a state dict's _metadata, versions for old layouts) or a tensor
      // subclass's. A state dict needs neither.
      pop_value();
      return true;
    case op::kBinPersId:
      push(storage(pop_value()));
      return true;
    default:
      return false;
  }
}

void Unpickler::push_global(const std::string& module, const std::string& name) {
  if (module == "collections" && name == "OrderedDict") {
    push(Callable::kOrderedDict);
  } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
    push(Callable::kRebuildTensor);
  } else if (module == "torch._utils" &&
             (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state")) {
    push(Callable::kRebuildParameter);
  } else if (const auto dtype = module == "torch" ? storage_dtype(name) : std::nullopt) {
    // Only ever an element of a storage's persistent id.
    push(c10::IValue(static_cast<int64_t>(*dtype)));
  } else if (module.starts_with("__torch__")) {
    fail("it holds TorchScript class '" + module + "." + name +
         "': a TorchScript archive (torch::save, torch.jit.save, a dtrain checkpoint), not a "
         "state dict");
  } else {
    fail("it holds Python object '" + module + "." + name +
         "', which a state dict (tensors by name) never holds; save model.state_dict()");
  }
}

c10::IValue Unpickler::apply(Callable callable, const c10::IValue& arguments) {
  if (!arguments.isTuple()) {
    fail("a call's arguments are no tuple");
  }
  const auto& elements = arguments.toTupleRef().elements();
  switch (callable) {
    case Callable::kOrderedDict:
      if (!elements.empty()) {
        fail("OrderedDict is called with arguments");
      }
      return c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
    case Callable::kRebuildTensor:
      return rebuild_tensor(elements.vec());
    case Callable::kRebuildParameter:
      if (elements.empty() || !elements[0].isTensor()) {
        fail("a parameter without its tensor");
      }
      return elements[0];
  }
  fail("an unknown call");
}

std::vector<int64_t> int_tuple(const c10::IValue& value) {
  std::vector<int64_t> ints;
  if (value.isTuple()) {
    for (const c10::IValue& element : value.toTupleRef().elements()) {
      if (!element.isInt()) {
        return {-1};
      }
      ints.push_back(element.toInt());
    }
  }
  return ints;
}

c10::IValue Unpickler::rebuild_tensor(const std::vector<c10::IValue>& arguments) {
  if (arguments.size() < 4 || !arguments[0].isTensor() || !arguments[1].isInt() ||
      !arguments[2].isTuple() || !arguments[3].isTuple()) {
    fail("a tensor's arguments are not (storage, offset, size, stride, ...)");
  }
  const at::Tensor& storage = arguments[0].toTensor();
  const int64_t offset = arguments[1].toInt();
  const std::vector<int64_t> sizes = int_tuple(arguments[2]);
  const std::vector<int64_t> strides = int_tuple(arguments[3]);
  // The last element the view reaches must lie in its storage.
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < sizes.size() && i < strides.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) {
      fail("a tensor of negative size or stride");
    }
    empty = empty || sizes[i] == 0;
    last += (sizes[i] - 1) * strides[i];
  }
  if (sizes.size() != strides.size() || offset < 0 || (!empty && last >= storage.numel())) {
    fail("a tensor that reaches beyond its storage");
  }
  return at::empty({0}, storage.options()).set_(storage.storage(), offset, sizes, strides);
}

c10::IValue Unpickler::storage(const c10::IValue& persistent_id) {
  if (!persistent_id.isTuple() || persistent_id.toTupleRef().elements().size() < 5) {
    fail("a persistent id other than ('storage', type, key, location, elements)");
  }
  const auto& id = persistent_id.toTupleRef().elements();
  if (!id[0].isString() || id[0].toStringRef() != "storage" || !id[1].isInt() ||
      !id[2].isString() || !id[4].isInt() || id[4].toInt() < 0) {
    fail("a persistent id other than ('storage', type, key, location, elements)");
  }
  return load_storage_(id[2].toStringRef(), static_cast<at::ScalarType>(id[1].toInt()),
                       id[4].toInt());
}

}  // namespace

c10::IValue unpickle_weights(std::string_view program, const StorageLoader& load_storage) {
  return Unpickler(program, load_storage).run();
}

}  // namespace dtrain::train::detail
