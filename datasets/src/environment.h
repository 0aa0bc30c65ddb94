// Dataset locations from the environment ($DTRAIN_MODELNET_DIR, ...).
#pragma once

#include <string>

namespace dtrain::datasets {

// The value of environment variable `name`, or `fallback` when it is unset
// or empty.
std::string env_or(const char* name, const std::string& fallback = {});

}  // namespace dtrain::datasets
