// torch_save_bytes (torch_save_format.h): the pickle torch.save writes for
// an OrderedDict of tensors, in LibTorch's zip container.
#include <bit>
#include <cstdint>
#include <limits>

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include "dtrain/util/errors.h"
#include "pickle_opcodes.h"
#include "torch_save_format.h"

namespace dtrain::train::detail {

namespace {

static_assert(std::endian::native == std::endian::little,
              "torch.save's records are little-endian, as this machine's memory");

namespace op = pickle;

// A pickle program, built opcode by opcode.
class PickleOut {
 public:
  PickleOut() {
    code(op::kProto);
    bytes_.push_back(2);  // torch.save's default protocol
  }

  void code(op::Opcode opcode) { bytes_.push_back(static_cast<char>(opcode)); }
  void text(const std::string& value) {
    code(op::kBinUnicode);
    little_endian(static_cast<uint32_t>(value.size()));
    bytes_ += value;
  }
  void global(const std::string& module, const std::string& name) {
    code(op::kGlobal);
    bytes_ += module + "\n" + name + "\n";
  }
  void integer(int64_t value) {
    if (value >= std::numeric_limits<int32_t>::min() &&
        value <= std::numeric_limits<int32_t>::max()) {
      code(op::kBinInt);
      little_endian(static_cast<int32_t>(value));
      return;
    }
    code(op::kLong1);  // a two's complement integer of the length given
    bytes_.push_back(8);
    little_endian(value);
  }
  void integers(c10::IntArrayRef values) {
    code(op::kMark);
    for (const int64_t value : values) {
      integer(value);
    }
    code(op::kTuple);
  }
  // collections.OrderedDict(): an empty one on the stack.
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    code(op::kEmptyTuple);
    code(op::kReduce);
  }
  std::string finish() {
    code(op::kStop);
    return std::move(bytes_);
  }

 private:
  template <typename T>
  void little_endian(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }

  std::string bytes_;
};

// torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
// requires_grad, backward_hooks), the storage a persistent id
// ("storage", torch.<Type>Storage, key, "cpu", numel) of a record.
void push_tensor(PickleOut& out, const at::Tensor& tensor, const std::string& key) {
  const std::optional<std::string> storage = storage_class(tensor.scalar_type());
  DTRAIN_CHECK_AS(IOError, storage.has_value(), "a tensor of dtype ", tensor.scalar_type(),
                  " has no storage type in PyTorch's file format");
  out.global("torch._utils", "_rebuild_tensor_v2");
  out.code(op::kMark);
  out.code(op::kMark);
  out.text("storage");
  out.global("torch", *storage);
  out.text(key);
  out.text("cpu");
  out.integer(tensor.numel());
  out.code(op::kTuple);
  out.code(op::kBinPersId);
  out.integer(0);  // storage offset
  out.integers(tensor.sizes());
  out.integers(tensor.strides());
  out.code(op::kNewFalse);  // requires_grad
  out.empty_ordered_dict();
  out.code(op::kTuple);
  out.code(op::kReduce);
}

}  // namespace

std::string torch_save_bytes(const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::vector<at::Tensor> storages;
  storages.reserve(tensors.size());
  PickleOut out;
  out.empty_ordered_dict();
  out.code(op::kMark);
  for (const auto& [name, tensor] : tensors) {
    DTRAIN_CHECK(tensor.defined(), "state dict entry '", name, "' holds no tensor");
    storages.push_back(tensor.detach().to(at::kCPU).contiguous());
    out.text(name);
    push_tensor(out, storages.back(), std::to_string(storages.size() - 1));
  }
  out.code(op::kSetItems);
  const std::string program = out.finish();

  std::string bytes;
  caffe2::serialize::PyTorchStreamWriter zip([&bytes](const void* data, size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  zip.writeRecord("data.pkl", program.data(), program.size());
  zip.writeRecord("byteorder", "little", 6);
  for (size_t i = 0; i < storages.size(); ++i) {
    zip.writeRecord("data/" + std::to_string(i), storages[i].const_data_ptr(),
                    storages[i].nbytes());
  }
  zip.writeEndOfFile();
  return bytes;
}

}  // namespace dtrain::train::detail
