// Internal: the YAML of run configs (dtrain/train/run_config.h), by
// yaml-cpp; a build without yaml-cpp compiles yaml_settings_unavailable.cpp
// instead, which says so.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dtrain/dist/setting.h"

namespace dtrain::train::detail {

// Why this build cannot read or write YAML ("this dtrain was built without
// yaml-cpp ..."); empty where it can.
std::string yaml_missing();

// `settings` as one YAML map in their order, after `comment` (a YAML
// comment): each name without its leading dashes as the key, each value as
// a string scalar, quoted where a YAML 1.1 reader would take it for a
// boolean ("off") or null.
std::string settings_yaml(const std::vector<dist::Setting>& settings, const std::string& comment);

// The top-level map of a YAML document as CLI11's config items, in the
// document's order: a scalar value is one input, a list of scalars one
// input each. An empty document has none. Throws CLI::ConfigError starting
// "`where`: " for text that is not YAML (naming the line), a document that
// is not a map, a key given twice, and a value that is a map or nothing.
std::vector<CLI::ConfigItem> yaml_items(std::istream& input, const std::string& where);

}  // namespace dtrain::train::detail
