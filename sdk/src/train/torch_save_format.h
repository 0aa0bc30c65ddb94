// Internal: PyTorch's file format for torch.save and torch.load (a zip
// archive: data.pkl, a pickle whose tensors refer to storages stored as
// data/<key> records), for state dicts. LibTorch reads and writes the zip
// (caffe2::serialize::PyTorchStream{Reader,Writer}); the pickle is ours,
// because LibTorch's pickler tags dicts with a TorchScript type that
// torch.load refuses under weights_only, and its unpickler drops the
// OrderedDict that torch.save(model.state_dict()) writes.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace dtrain::train::detail {

// The bytes of the file torch.save(OrderedDict(tensors)) writes: each
// tensor a CPU storage of its own, in the given order. torch.load reads
// them with weights_only=True.
std::string torch_save_bytes(const std::vector<std::pair<std::string, at::Tensor>>& tensors);

// What torch.load(path, weights_only=True) would give, as a tree of
// values: dicts (OrderedDict too, without its attributes) and lists,
// tuples, strings, numbers, booleans, None and CPU tensors (parameters
// as plain tensors). Throws dtrain::IOError naming `path` when it is no
// such file (missing, truncated, of TorchScript or of another format) or
// holds any other Python object, named.
c10::IValue torch_load_file(const std::string& path);

// The class torch.save names a storage of `dtype` by ("FloatStorage", in
// module torch), and back; nullopt for a type it has none for.
std::optional<std::string> storage_class(at::ScalarType dtype);
std::optional<at::ScalarType> storage_dtype(const std::string& class_name);

}  // namespace dtrain::train::detail
