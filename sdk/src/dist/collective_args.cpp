#include "collective_args.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <optional>

#include "dtrain/util/errors.h"

namespace dtrain::dist::detail {

namespace {

constexpr std::array<const char*, kDtypes.size()> kDtypeNames = {
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"};

std::optional<std::size_t> position_of(at::ScalarType type) {
  const auto found = std::find(kDtypes.begin(), kDtypes.end(), type);
  if (found == kDtypes.end()) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(found - kDtypes.begin());
}

}  // namespace

std::string dtype_name(at::ScalarType type) {
  const auto position = position_of(type);
  return position ? kDtypeNames[*position] : c10::toString(type);
}

std::size_t dtype_index(at::ScalarType type, const std::string& backend) {
  if (const auto position = position_of(type)) {
    return *position;
  }
  std::string names;
  for (std::size_t i = 0; i < kDtypes.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == kDtypes.size() ? " and " : ", ") + std::string(kDtypeNames[i]);
  }
  throw Error(backend + " supports " + names + " tensors, got " + c10::toString(type));
}

void check_same(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  DTRAIN_CHECK(b.defined() && a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type(), what,
               ": every tensor must match the input's shape ", a.sizes(), " and dtype ",
               a.scalar_type(), ", got ", b.defined() ? b.sizes() : at::IntArrayRef{}, " ",
               b.defined() ? b.scalar_type() : at::ScalarType::Undefined);
}

void check_count(const std::vector<at::Tensor>& list, int size, const std::string& what,
                 const char* name) {
  DTRAIN_CHECK(static_cast<int>(list.size()) == size, what, ": ", name, " must hold ", size,
               " tensors (one per rank), got ", list.size());
}

void check_one_per_rank(const std::vector<at::Tensor>& list, const at::Tensor& like, int size,
                        const std::string& what, const char* name) {
  check_count(list, size, what, name);
  for (const auto& tensor : list) {
    check_same(like, tensor, what);
  }
}

void check_root(int root, int size, const std::string& what) {
  DTRAIN_CHECK(root >= 0 && root < size, what, ": root ", root, " is outside the group of size ",
               size);
}

void check_peer(int peer, int rank, int size, const std::string& what) {
  DTRAIN_CHECK(peer >= 0 && peer < size && peer != rank, what, ": peer rank ", peer,
               " must be another rank of the group of size ", size);
}

void check_avg(ReduceOp op, const at::Tensor& tensor, const std::string& what) {
  DTRAIN_CHECK(op != ReduceOp::kAvg || at::isFloatingType(tensor.scalar_type()), what,
               ": AVG needs a floating-point tensor, got ", tensor.scalar_type());
}

std::vector<at::Tensor*> pointers_to(std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor*> pointers;
  pointers.reserve(tensors.size());
  for (at::Tensor& tensor : tensors) {
    pointers.push_back(&tensor);
  }
  return pointers;
}

WorkPtr staged_on(const c10::Device& device, c10::DeviceType from, const std::string& what,
                  const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor*>& outputs,
                  const StagedRun& run) {
  auto copy_to_device = [&](const at::Tensor& tensor) {
    DTRAIN_CHECK(tensor.defined(), what, ": the tensor is undefined");
    DTRAIN_CHECK(tensor.device().type() == from, what, ": mixes ", c10::DeviceTypeName(from),
                 " and ", c10::DeviceTypeName(tensor.device().type()),
                 " tensors; use one device per call");
    return tensor.to(device);
  };
  std::vector<at::Tensor> staged_inputs;
  for (const at::Tensor& tensor : inputs) {
    staged_inputs.push_back(copy_to_device(tensor));
  }
  std::vector<at::Tensor> staged_outputs;
  for (const at::Tensor* tensor : outputs) {
    staged_outputs.push_back(copy_to_device(*tensor));
  }
  run(staged_inputs, staged_outputs)->wait();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    outputs[i]->copy_(staged_outputs[i]);  // waits for the copy, whichever way it goes
  }
  auto work = std::make_shared<Work>(what);
  work->finish();
  return work;
}

void on_contiguous(at::Tensor& tensor, c10::function_ref<void(at::Tensor&)> body) {
  if (tensor.is_contiguous()) {
    body(tensor);
    return;
  }
  at::Tensor dense = tensor.contiguous();
  body(dense);
  tensor.copy_(dense);
}

at::Tensor flat_cat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) {
    flat.push_back(t.reshape({-1}));
  }
  return at::cat(flat);
}

void split_into(const at::Tensor& flat, std::vector<at::Tensor>& outputs) {
  int64_t offset = 0;
  for (auto& out : outputs) {
    out.copy_(flat.narrow(0, offset, out.numel()).view(out.sizes()));
    offset += out.numel();
  }
}

}  // namespace dtrain::dist::detail
