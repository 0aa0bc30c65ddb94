#include "dtrain/dist/same_settings.h"

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

}  // namespace

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
