#include "environment.h"

#include <cstdlib>

namespace dtrain::datasets {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace dtrain::datasets
