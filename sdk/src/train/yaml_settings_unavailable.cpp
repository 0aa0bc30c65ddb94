// Run configs in a build without yaml-cpp (libyaml-cpp-dev): none is
// written, and --config is refused, saying why.
#include "yaml_settings.h"

#include "dtrain/util/errors.h"

namespace dtrain::train::detail {

namespace {

const char* const kWhy =
    "this dtrain was built without yaml-cpp (install libyaml-cpp-dev, then build again)";

}  // namespace

std::string yaml_missing() {
  return kWhy;
}

std::string settings_yaml(const std::vector<dist::Setting>&, const std::string&) {
  throw Error(std::string("cannot write a run config: ") + kWhy);
}

std::vector<CLI::ConfigItem> yaml_items(std::istream&, const std::string& where) {
  throw CLI::ConfigError(where + ": cannot read a run config: " + kWhy);
}

}  // namespace dtrain::train::detail
