#include "yaml_settings.h"

#include <array>
#include <set>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace dtrain::train::detail {

namespace {

// Words that YAML 1.1 readers (PyYAML's safe_load, for one) take for a
// boolean but yaml-cpp writes unquoted; "true" and "false" stay plain, as
// the switches' values they are.
bool reads_as_another_boolean(const std::string& value) {
  static constexpr std::array<std::string_view, 20> kWords = {
      "y",  "Y",  "yes", "Yes", "YES", "n",   "N",    "no",   "No",    "NO",
      "on", "On", "ON",  "off", "Off", "OFF", "True", "TRUE", "False", "FALSE"};
  for (std::string_view word : kWords) {
    if (value == word) {
      return true;
    }
  }
  return false;
}

std::string key_of(const std::string& name) {
  const auto dashes = name.find_first_not_of('-');
  return dashes == std::string::npos ? name : name.substr(dashes);
}

// The inputs of one key's value: a scalar, or a list of scalars.
std::vector<std::string> inputs_of(const YAML::Node& value, const std::string& key,
                                   const std::string& where) {
  if (value.IsScalar()) {
    return {value.Scalar()};
  }
  std::vector<std::string> inputs;
  if (value.IsSequence()) {
    for (const YAML::Node& element : value) {
      if (!element.IsScalar()) {
        throw CLI::ConfigError(where + ": key '" + key +
                               "': a list of values, not of lists or maps");
      }
      inputs.push_back(element.Scalar());
    }
  }
  if (inputs.empty()) {
    throw CLI::ConfigError(where + ": key '" + key + "' has no value" +
                           (value.IsMap() ? " (a map is not one)" : ""));
  }
  return inputs;
}

}  // namespace

std::string yaml_missing() {
  return "";
}

std::string settings_yaml(const std::vector<dist::Setting>& settings, const std::string& comment) {
  YAML::Emitter out;
  out << YAML::Comment(comment) << YAML::BeginMap;
  for (const dist::Setting& setting : settings) {
    out << YAML::Key << key_of(setting.name) << YAML::Value;
    if (reads_as_another_boolean(setting.value)) {
      out << YAML::DoubleQuoted;
    }
    out << setting.value;
  }
  out << YAML::EndMap << YAML::Newline;
  return out.c_str();
}

std::vector<CLI::ConfigItem> yaml_items(std::istream& input, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(input);
  } catch (const YAML::ParserException& e) {
    throw CLI::ConfigError(where + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  std::vector<CLI::ConfigItem> items;
  if (root.IsNull()) {
    return items;
  }
  if (!root.IsMap()) {
    throw CLI::ConfigError(where + ": not a map of flags to values (epochs: 20, amp: bf16)");
  }
  std::set<std::string> seen;
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    if (!seen.insert(key).second) {
      throw CLI::ConfigError(where + ": key '" + key + "' given twice");
    }
    CLI::ConfigItem item;
    item.name = key;
    item.inputs = inputs_of(entry.second, key, where);
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace dtrain::train::detail
