#include "dtrain/train/flag_table.h"

#include <utility>

#include <fmt/ranges.h>

namespace dtrain::train {

Agreement Agreement::partly(std::function<std::string()> compared, std::string free_part) {
  Agreement agreement(Kind::kPartly);
  agreement.compared_ = std::move(compared);
  agreement.free_part_ = std::move(free_part);
  return agreement;
}

FlagTable::FlagTable(CLI::App& app) : app_(&app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.parse_complete_callback([this] {
    for (const auto& check : checks_) {
      check();
    }
  });
}

CLI::Option* FlagTable::add_switch(const std::string& name, bool& value, const std::string& help,
                                   Agreement agreement) {
  CLI::Option* option = app_->add_flag(name, value, help);
  record(option, std::move(agreement), [&value] { return fmt::format("{}", value); });
  return option;
}

void FlagTable::topic(const std::string& name) {
  // CLI11 gives each new option the defaults' group.
  app_->option_defaults()->group(name);
}

void FlagTable::record(CLI::Option* option, Agreement agreement,
                       std::function<std::string()> value) {
  entries_.push_back({.name = "--" + option->get_lnames().front(),
                      .option = option,
                      .agreement = std::move(agreement),
                      .value = std::move(value)});
}

void FlagTable::check(std::function<void()> check) {
  checks_.push_back(std::move(check));
}

void FlagTable::advise(std::string words) {
  advice_.push_back(std::move(words));
}

std::vector<dist::Setting> FlagTable::same_settings() const {
  std::vector<dist::Setting> settings;
  for (const Entry& entry : entries_) {
    if (entry.agreement.kind_ == Agreement::Kind::kSame) {
      settings.push_back({entry.name, entry.value()});
    } else if (entry.agreement.kind_ == Agreement::Kind::kPartly) {
      settings.push_back({entry.name, entry.agreement.compared_()});
    }
  }
  return settings;
}

std::vector<dist::Setting> FlagTable::config_settings() const {
  std::vector<dist::Setting> settings;
  for (const Entry& entry : entries_) {
    if (entry.option->get_configurable()) {
      settings.push_back({entry.name, entry.value()});
    }
  }
  return settings;
}

std::string FlagTable::advice() const {
  std::vector<std::string> free;
  for (const Entry& entry : entries_) {
    if (entry.agreement.kind_ == Agreement::Kind::kMayDiffer) {
      free.push_back(entry.name);
    } else if (entry.agreement.kind_ == Agreement::Kind::kPartly) {
      free.push_back(entry.agreement.free_part_);
    }
  }
  std::string advice = "Start every process with the same flags";
  if (free.size() == 1) {
    advice += fmt::format(" (only {} may differ)", free.front());
  } else if (free.size() > 1) {
    advice += fmt::format(" (only {} and {} may differ)",
                          fmt::join(free.begin(), free.end() - 1, ", "), free.back());
  }
  for (const std::string& words : advice_) {
    advice += ", and " + words;
  }
  return advice;
}

}  // namespace dtrain::train
