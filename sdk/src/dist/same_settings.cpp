#include "dtrain/dist/same_settings.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::dist {
namespace {

// Names and values separated by NUL bytes, which no command-line argument
// can hold (and no setting may: checked before any rank is contacted).
std::string encode(const std::vector<Setting>& settings) {
  std::string bytes;
  for (const Setting& setting : settings) {
    DTRAIN_CHECK(
        setting.name.find('\0') == std::string::npos &&
            setting.value.find('\0') == std::string::npos,
        "check_same_settings: setting '", setting.name.c_str(), "' holds a NUL byte in its ",
        setting.name.find('\0') != std::string::npos ? "name" : "value", "; settings are text");
    bytes += setting.name;
    bytes += '\0';
    bytes += setting.value;
    bytes += '\0';
  }
  return bytes;
}

std::vector<Setting> decode(const std::string& bytes) {
  std::vector<std::string> fields;
  size_t begin = 0;
  for (size_t end = bytes.find('\0'); end != std::string::npos; end = bytes.find('\0', begin)) {
    fields.push_back(bytes.substr(begin, end - begin));
    begin = end + 1;
  }
  std::vector<Setting> settings;
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    settings.push_back({fields[i], fields[i + 1]});
  }
  return settings;
}

// "rank 3", "ranks 0-2, 5".
std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) {
      ++j;
    }
    runs.push_back(j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(runs, ", "));
}

}  // namespace

std::vector<std::string> settings_disagreements(const std::vector<std::vector<Setting>>& per_rank) {
  // Names in the order they first appear, rank 0's first.
  std::vector<std::string> names;
  std::vector<std::map<std::string, std::string>> values(per_rank.size());
  for (size_t rank = 0; rank < per_rank.size(); ++rank) {
    for (const Setting& setting : per_rank[rank]) {
      if (std::find(names.begin(), names.end(), setting.name) == names.end()) {
        names.push_back(setting.name);
      }
      values[rank][setting.name] = setting.value;
    }
  }
  std::vector<std::string> disagreements;
  for (const std::string& name : names) {
    // Each value with its ranks, in the order of their lowest rank.
    std::vector<std::pair<std::string, std::vector<int>>> holders;
    for (size_t rank = 0; rank < values.size(); ++rank) {
      const auto found = values[rank].find(name);
      const std::string value =
          found == values[rank].end() ? "(none)" : fmt::format("\"{}\"", found->second);
      auto held = std::find_if(holders.begin(), holders.end(),
                               [&](const auto& holder) { return holder.first == value; });
      if (held == holders.end()) {
        holders.push_back({value, {}});
        held = std::prev(holders.end());
      }
      held->second.push_back(static_cast<int>(rank));
    }
    if (holders.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& [value, ranks] : holders) {
        parts.push_back(fmt::format("{} on {}", value, rank_list(ranks)));
      }
      disagreements.push_back(fmt::format("{}: {}", name, fmt::join(parts, ", ")));
    }
  }
  return disagreements;
}

void check_same_settings(const std::vector<Setting>& settings, const std::string& advice,
                         const ProcessGroupPtr& group) {
  const ProcessGroupPtr members = group ? group : default_group();
  if (members->size() == 1) {
    return;
  }
  std::vector<std::vector<Setting>> per_rank;
  for (const std::string& bytes : all_gather_strings(encode(settings), members)) {
    per_rank.push_back(decode(bytes));
  }
  const std::vector<std::string> disagreements = settings_disagreements(per_rank);
  DTRAIN_CHECK(
      disagreements.empty(), "the processes of this job were started with different settings: ",
      fmt::format("{}", fmt::join(disagreements, "; ")), advice.empty() ? "" : ". ", advice);
}

}  // namespace dtrain::dist
