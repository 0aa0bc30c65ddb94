// Internal: the pickle of a weights file (data.pkl in torch.save's zip),
// read as torch.load(weights_only=True) reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace dtrain::train::detail {

// (key, dtype, elements) -> that storage's elements, a flat CPU tensor.
using StorageLoader = std::function<at::Tensor(const std::string&, at::ScalarType, int64_t)>;

// The object `program` builds: dicts, lists, tuples, plain values and
// tensors (views of the storages `load_storage` gives). Throws
// dtrain::IOError naming what is wrong and the byte: a malformed or cut
// pickle, or any global beyond OrderedDict, tensors, parameters and
// storage types (a class named by its module and name).
c10::IValue unpickle_weights(std::string_view program, const StorageLoader& load_storage);

}  // namespace dtrain::train::detail
