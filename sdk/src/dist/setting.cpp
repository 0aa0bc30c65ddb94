#include "dtrain/dist/setting.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dtrain::dist {
namespace {

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

}  // namespace dtrain::dist
