// Which of a few named kernels an environment variable asks for: tests and
// benchmarks force a path with DTRAIN_CPU_NEAREST and the like.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace dtrain::kernels::detail {

// The position of the variable's value among `choices`; 0 (the default)
// when it is unset or empty. Any other value throws std::invalid_argument
// naming the variable, the choices and the value.
inline std::size_t env_choice(const char* variable, std::initializer_list<const char*> choices) {
  const char* setting = std::getenv(variable);
  const std::string value = setting == nullptr ? "" : setting;
  if (value.empty()) {
    return 0;
  }
  std::size_t position = 0;
  std::string names;
  for (const char* choice : choices) {
    if (value == choice) {
      return position;
    }
    names += position == 0 ? "" : (position + 1 == choices.size() ? " or " : ", ");
    names += choice;
    ++position;
  }
  throw std::invalid_argument(std::string(variable) + " must be " + names + ", got '" + value +
                              "'");
}

}  // namespace dtrain::kernels::detail
