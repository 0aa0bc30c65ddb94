#include "dtrain/train/run_config.h"

#include <exception>
#include <filesystem>
#include <memory>
#include <set>

#include <spdlog/spdlog.h>

#include "atomic_write.h"
#include "dtrain/util/cli_help.h"
#include "yaml_settings.h"

namespace dtrain::train {

namespace {

// "--config FILE", for the messages about the file being read.
std::string config_source(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  const std::string file =
      config != nullptr && config->count() > 0 ? config->as<std::string>() : std::string("FILE");
  return "--config " + file;
}

// The flag that `key` sets, which must be one of the table's config_settings().
CLI::Option& flag_of(const FlagTable& flags, const std::string& key, const std::string& where) {
  CLI::Option* option = flags.app().get_option_no_throw("--" + key);
  std::set<std::string> settable;
  for (const dist::Setting& setting : flags.config_settings()) {
    settable.insert(setting.name);
  }
  if (option != nullptr && settable.count("--" + option->get_lnames().front()) > 0) {
    return *option;
  }
  if (option != nullptr) {  // --rank, --config, --help
    throw CLI::ConfigError(where + ": key '" + key + "' is not read from a run config; give --" +
                           key + " on the command line");
  }
  throw CLI::ConfigError(where + ": unknown key '" + key + "': no flag --" + key +
                         util::did_you_mean(flags.app(), "--" + key));
}

// Tries the item's value on its flag here, where the key and the file are
// known, so that a value the flag refuses is named with both, even where
// the command line gives the flag too; then puts back what the command
// line gave, for CLI11 to apply the item as it applies every config item:
// only to a flag the command line did not give, which is how the command
// line wins. (Trying sets the flag's variable, which CLI11 sets again.)
void try_value(CLI::Option& option, const CLI::ConfigItem& item, const CLI::Config& config,
               const std::string& where) {
  const std::string key = where + ": key '" + item.name + "'";
  if (item.inputs.size() > 1 && option.get_expected_max() <= 1) {
    throw CLI::ConfigError(key + ": --" + item.name + " takes one value, not a list");
  }
  const CLI::results_t given = option.results();
  option.clear();
  try {
    if (option.get_expected_min() == 0) {  // a switch
      option.add_result(option.get_flag_value(item.name, config.to_flag(item)));
    } else {
      option.add_result(item.inputs);
    }
    option.run_callback();
  } catch (const std::exception& e) {
    throw CLI::ConfigError(key + ": " + e.what());
  }
  option.clear();
  if (!given.empty()) {
    option.add_result(given);
  }
}

// Run configs as CLI11's config files: CLI11 applies each item to its flag
// unless the command line gave that flag.
class YamlConfig final : public CLI::Config {
 public:
  explicit YamlConfig(const FlagTable& flags) : flags_(&flags) {}

  // The table's values, whatever CLI11 asks: every flag is written as parsed.
  std::string to_config(const CLI::App* /*app*/, bool /*default_also*/, bool /*write_description*/,
                        std::string /*prefix*/) const override {
    return run_config_yaml(*flags_);
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string where = config_source(flags_->app());
    std::vector<CLI::ConfigItem> items = detail::yaml_items(input, where);
    for (const CLI::ConfigItem& item : items) {
      try_value(flag_of(*flags_, item.name, where), item, *this, where);
    }
    return items;
  }

 private:
  const FlagTable* flags_;
};

}  // namespace

void add_config_flag(FlagTable& flags, const std::vector<std::string>& not_replayed) {
  CLI::App& app = flags.app();
  for (const std::string& name : not_replayed) {
    app.get_option(name)->configurable(false);
  }
  app.config_formatter(std::make_shared<YamlConfig>(flags));
  app.set_config("--config", "",
                 "Take the flags' values from a run config (YAML: a run with --csv NAME.csv "
                 "writes its own as NAME.config.yaml); flags given beside it win")
      ->type_name("FILE")
      ->group("Output");
}

std::string run_config_path(const std::string& csv) {
  return std::filesystem::path(csv).replace_extension(".config.yaml").string();
}

std::string run_config_yaml(const FlagTable& flags) {
  const std::string program =
      flags.app().get_name().empty() ? "the program" : flags.app().get_name();
  return detail::settings_yaml(flags.config_settings(),
                               program + "'s flags as parsed; `" + program +
                                   " --config FILE` replays the run (flags given beside it win)");
}

void write_run_config(const FlagTable& flags, const std::string& csv) {
  if (csv.empty()) {
    return;
  }
  // Where the report cannot go, neither can its config: the report is named.
  detail::check_writable(csv, "CSV report");
  const std::string path = run_config_path(csv);
  if (const std::string missing = detail::yaml_missing(); !missing.empty()) {
    spdlog::warn("no run config written to {}: {}", path, missing);
    return;
  }
  detail::write_atomically(path, run_config_yaml(flags), "run config");
}

}  // namespace dtrain::train
