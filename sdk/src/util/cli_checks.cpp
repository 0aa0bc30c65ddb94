#include "dtrain/util/cli_checks.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace dtrain::util {

namespace {

// The whole text as a number; nullopt when it is not one (or has trailing text).
std::optional<double> as_number(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// A validator from a test of the number and the words for what it must be.
template <typename Test>
CLI::Validator number_check(const std::string& name, std::string must_be, Test test) {
  return CLI::Validator(
      [must_be, test](std::string& text) -> std::string {
        const auto value = as_number(text);
        if (!value) {
          return "must be a number, got '" + text + "'";
        }
        if (!test(*value)) {
          return "must be " + must_be + ", got " + text;
        }
        return "";
      },
      name);
}

}  // namespace

CLI::Validator positive() {
  return number_check("POSITIVE", "positive", [](double value) { return value > 0; });
}

CLI::Validator non_negative() {
  return number_check("NONNEGATIVE", ">= 0", [](double value) { return value >= 0; });
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc::result_out_of_range) {
          return "must be below 2^64 (18446744073709551616), got " + text;
        }
        if (error != std::errc() || end != text.data() + text.size()) {
          return "must be a whole number >= 0, got '" + text + "'";
        }
        return "";
      },
      "UINT64");
}

}  // namespace dtrain::util
