// The storage classes torch.save names (torch.FloatStorage, ...), both ways.
#include <array>
#include <utility>

#include "torch_save_format.h"

namespace dtrain::train::detail {

namespace {

const std::array<std::pair<at::ScalarType, const char*>, 12>& storage_classes() {
  static const std::array<std::pair<at::ScalarType, const char*>, 12> classes{{
      {at::kFloat, "FloatStorage"},
      {at::kDouble, "DoubleStorage"},
      {at::kHalf, "HalfStorage"},
      {at::kBFloat16, "BFloat16Storage"},
      {at::kLong, "LongStorage"},
      {at::kInt, "IntStorage"},
      {at::kShort, "ShortStorage"},
      {at::kChar, "CharStorage"},
      {at::kByte, "ByteStorage"},
      {at::kBool, "BoolStorage"},
      {at::kComplexFloat, "ComplexFloatStorage"},
      {at::kComplexDouble, "ComplexDoubleStorage"},
  }};
  return classes;
}

}  // namespace

std::optional<std::string> storage_class(at::ScalarType dtype) {
  for (const auto& [type, name] : storage_classes()) {
    if (type == dtype) {
      return name;
    }
  }
  return std::nullopt;
}

std::optional<at::ScalarType> storage_dtype(const std::string& class_name) {
  for (const auto& [type, name] : storage_classes()) {
    if (class_name == name) {
      return type;
    }
  }
  return std::nullopt;
}

}  // namespace dtrain::train::detail
